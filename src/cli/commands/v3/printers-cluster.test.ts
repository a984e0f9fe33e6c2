// The member/endpoint/move-leader printers against text taken from etcdctl 3.4.23 run
// against a 3-member kvctl cluster (same server answers, gateway shapes below), and Go's
// Duration String and strconv.ParseUint for the values etcdctl formats with them.

import { test } from "node:test";
import assert from "node:assert/strict";
import { parseHexUint64 } from "./go-format.ts";
import { peerUrlsError } from "./peer-urls.ts";
import { goDuration, healthLines, printHealth, printMemberAdd, printMemberChange, printMemberList, printMoveLeader, printStatus, type WireMembersResponse } from "./printers-cluster.ts";

const o = (format: string) => ({ format, hex: false });

// The gateway's answer: 64-bit IDs as decimal strings.
const list: WireMembersResponse = {
  header: { cluster_id: "1200014576235010", member_id: "3869818436980090", raft_term: "2" },
  members: [
    { ID: "224946573415476", name: "m1", peerURLs: ["http://127.0.0.1:30111"], clientURLs: ["http://127.0.0.1:30110"] },
    { ID: "269404304728928", name: "m2", peerURLs: ["http://127.0.0.1:30121"], clientURLs: ["http://127.0.0.1:30120"] },
    { ID: "3869818436980090", name: "m0", peerURLs: ["http://127.0.0.1:30101"], clientURLs: ["http://127.0.0.1:30100"] },
  ],
};

test("member list: simple, json, table, fields as etcdctl prints them", () => {
  assert.equal(
    printMemberList(list, o("simple")),
    "cc96749a1434, started, m1, http://127.0.0.1:30111, http://127.0.0.1:30110, false\n" +
      "f50593e26360, started, m2, http://127.0.0.1:30121, http://127.0.0.1:30120, false\n" +
      "dbf9451480d7a, started, m0, http://127.0.0.1:30101, http://127.0.0.1:30100, false\n",
  );
  assert.equal(
    printMemberList(list, o("json")),
    '{"header":{"cluster_id":1200014576235010,"member_id":3869818436980090,"raft_term":2},"members":[' +
      '{"ID":224946573415476,"name":"m1","peerURLs":["http://127.0.0.1:30111"],"clientURLs":["http://127.0.0.1:30110"]},' +
      '{"ID":269404304728928,"name":"m2","peerURLs":["http://127.0.0.1:30121"],"clientURLs":["http://127.0.0.1:30120"]},' +
      '{"ID":3869818436980090,"name":"m0","peerURLs":["http://127.0.0.1:30101"],"clientURLs":["http://127.0.0.1:30100"]}]}\n',
  );
  assert.equal(
    printMemberList(list, o("table")),
    [
      "+---------------+---------+------+------------------------+------------------------+------------+",
      "|      ID       | STATUS  | NAME |       PEER ADDRS       |      CLIENT ADDRS      | IS LEARNER |",
      "+---------------+---------+------+------------------------+------------------------+------------+",
      "|  cc96749a1434 | started |   m1 | http://127.0.0.1:30111 | http://127.0.0.1:30110 |      false |",
      "|  f50593e26360 | started |   m2 | http://127.0.0.1:30121 | http://127.0.0.1:30120 |      false |",
      "| dbf9451480d7a | started |   m0 | http://127.0.0.1:30101 | http://127.0.0.1:30100 |      false |",
      "+---------------+---------+------+------------------------+------------------------+------------+",
      "",
    ].join("\n"),
  );
  const fields = String(printMemberList(list, o("fields")));
  assert.ok(fields.startsWith('"ClusterID" : 1200014576235010\n"MemberID" : 3869818436980090\n"Revision" : 0\n"RaftTerm" : 2\n'));
  assert.ok(fields.endsWith('"ID" : 3869818436980090\n"Name" : "m0"\n"PeerURL" : "http://127.0.0.1:30101"\n"ClientURL" : "http://127.0.0.1:30100"\n"IsLearner" : false\n\n'));
});

test("member list: an unstarted learner has no name and no client URLs", () => {
  const r: WireMembersResponse = { members: [{ ID: "732256819619890", peerURLs: ["http://127.0.0.1:30131"], isLearner: true }] };
  assert.equal(printMemberList(r, o("simple")), "299fbd39e2832, unstarted, , http://127.0.0.1:30131, , true\n");
  assert.equal(printMemberList(r, o("json")), '{"members":[{"ID":732256819619890,"peerURLs":["http://127.0.0.1:30131"],"isLearner":true}]}\n');
});

test("member add: %16x IDs, then the new member's variables (simple only)", () => {
  const r: WireMembersResponse = {
    header: { cluster_id: "1200014576235010" },
    member: { ID: "732256819619890", peerURLs: ["http://127.0.0.1:30131"], isLearner: true },
    members: [list.members![0]!, { ID: "732256819619890", peerURLs: ["http://127.0.0.1:30131"], isLearner: true }, list.members![2]!],
  };
  assert.equal(
    printMemberAdd(r, "m3", "http://127.0.0.1:30131", o("simple")),
    "Member    299fbd39e2832 added to cluster    443682a8ab202\n\n" +
      'ETCD_NAME="m3"\n' +
      'ETCD_INITIAL_CLUSTER="m1=http://127.0.0.1:30111,m3=http://127.0.0.1:30131,m0=http://127.0.0.1:30101"\n' +
      'ETCD_INITIAL_ADVERTISE_PEER_URLS="http://127.0.0.1:30131"\nETCD_INITIAL_CLUSTER_STATE="existing"\n',
  );
  assert.match(String(printMemberAdd(r, "m3", "x", o("json"))), /^\{"header":\{"cluster_id":1200014576235010\},"member":\{"ID":732256819619890,/);
  // etcdctl's fields and table printers have no MemberAdd: exit 4 after the request.
  assert.throws(() => printMemberAdd(r, "m3", "x", o("fields")), /fields not supported as output format/);
  assert.throws(() => printMemberAdd(r, "m3", "x", o("table")), /table not supported as output format/);
});

test("member remove/update/promote lines", () => {
  const r: WireMembersResponse = { header: { cluster_id: "1200014576235010" } };
  assert.equal(printMemberChange("removed from", "732256819619890", r, o("simple")), "Member    299fbd39e2832 removed from cluster    443682a8ab202\n");
  assert.equal(printMemberChange("updated in", "18446744073709551615", r, o("simple")), "Member ffffffffffffffff updated in cluster    443682a8ab202\n");
  assert.equal(printMemberChange("promoted in", "1", r, o("json")), '{"header":{"cluster_id":1200014576235010}}\n');
});

const status = {
  header: { cluster_id: "1200014576235010", member_id: "3869818436980090", revision: "1", raft_term: "2" },
  version: "3.4.23",
  dbSize: "73728",
  leader: "224946573415476",
  raftIndex: "8",
  raftTerm: "2",
  raftAppliedIndex: "8",
  dbSizeInUse: "32768",
};

test("endpoint status in the four formats", () => {
  const rows = [{ ep: "http://127.0.0.1:30100", resp: status }, { ep: "http://127.0.0.1:30110", resp: { ...status, header: { ...status.header, member_id: "224946573415476" } } }];
  assert.equal(
    printStatus(rows, o("simple")),
    "http://127.0.0.1:30100, dbf9451480d7a, 3.4.23, 74 kB, false, false, 2, 8, 8, \nhttp://127.0.0.1:30110, cc96749a1434, 3.4.23, 74 kB, true, false, 2, 8, 8, \n",
  );
  assert.equal(
    printStatus(rows.slice(0, 1), o("json")),
    '[{"Endpoint":"http://127.0.0.1:30100","Status":{"header":{"cluster_id":1200014576235010,"member_id":3869818436980090,"revision":1,"raft_term":2},' +
      '"version":"3.4.23","dbSize":73728,"leader":224946573415476,"raftIndex":8,"raftTerm":2,"raftAppliedIndex":8,"dbSizeInUse":32768}}]\n',
  );
  assert.equal(
    printStatus(rows.slice(0, 1), o("table")).split("\n")[3],
    "| http://127.0.0.1:30100 | dbf9451480d7a |  3.4.23 |   74 kB |     false |      false |         2 |          8 |                  8 |        |",
  );
  assert.equal(
    printStatus([{ ep: "e", resp: { ...status, errors: ["memberID:1 alarm:NOSPACE ", "x"] } }], o("fields")),
    '"ClusterID" : 1200014576235010\n"MemberID" : 3869818436980090\n"Revision" : 1\n"RaftTerm" : 2\n"Version" : "3.4.23"\n"DBSize" : 73728\n' +
      '"Leader" : 224946573415476\n"IsLearner" : false\n"RaftIndex" : 8\n"RaftTerm" : 2\n"RaftAppliedIndex" : 8\n"Errors" : [memberID:1 alarm:NOSPACE  x]\n"Endpoint" : "e"\n\n',
  );
  assert.equal(printStatus([], o("table")), "+----------+----+---------+---------+-----------+------------+-----------+------------+--------------------+--------+\n" +
    "| ENDPOINT | ID | VERSION | DB SIZE | IS LEADER | IS LEARNER | RAFT TERM | RAFT INDEX | RAFT APPLIED INDEX | ERRORS |\n" +
    "+----------+----+---------+---------+-----------+------------+-----------+------------+--------------------+--------+\n" +
    "+----------+----+---------+---------+-----------+------------+-----------+------------+--------------------+--------+\n");
});

test("endpoint health: simple goes to stderr, the others to stdout", () => {
  const hs = [
    { ep: "http://127.0.0.1:30110", health: true, took: "17.939299ms", error: "" },
    { ep: "http://127.0.0.1:30199", health: false, took: "1.2ms", error: "context deadline exceeded" },
  ];
  assert.equal(
    healthLines(hs),
    "http://127.0.0.1:30110 is healthy: successfully committed proposal: took = 17.939299ms\n" +
      "http://127.0.0.1:30199 is unhealthy: failed to commit proposal: context deadline exceeded\n",
  );
  assert.equal(printHealth(hs, o("simple")), "");
  assert.equal(
    printHealth(hs, o("json")),
    '[{"endpoint":"http://127.0.0.1:30110","health":true,"took":"17.939299ms"},{"endpoint":"http://127.0.0.1:30199","health":false,"took":"1.2ms","error":"context deadline exceeded"}]\n',
  );
  assert.equal(printHealth(hs.slice(0, 1), o("fields")), '"Endpoint" : "http://127.0.0.1:30110"\n"Health" : true\n"Took" : 17.939299ms\n"Error" : \n\n');
  assert.equal(printHealth(hs.slice(0, 1), o("table")).split("\n")[3], "| http://127.0.0.1:30110 |   true | 17.939299ms |       |");
  assert.throws(() => printHealth(hs, o("protobuf")), /protobuf not supported/);
});

test("move-leader: types.ID hex; json is the response", () => {
  assert.equal(printMoveLeader("224946573415476", "269404304728928", {}, o("simple")), "Leadership transferred from cc96749a1434 to f50593e26360\n");
  assert.equal(printMoveLeader("1", "2", { header: { cluster_id: "5" } }, o("json")), '{"header":{"cluster_id":5}}\n');
  assert.throws(() => printMoveLeader("1", "2", {}, o("fields")), /fields not supported/);
});

test("Go's Duration String", () => {
  assert.equal(goDuration(0n), "0s");
  assert.equal(goDuration(850n), "850ns");
  assert.equal(goDuration(1_500n), "1.5µs");
  assert.equal(goDuration(17_939_299n), "17.939299ms");
  assert.equal(goDuration(20_000_000n), "20ms");
  assert.equal(goDuration(1_200_000_000n), "1.2s");
  assert.equal(goDuration(123_500_000_000n), "2m3.5s");
  assert.equal(goDuration(3_600_000_000_000n), "1h0m0s");
});

test("strconv.ParseUint(s, 16, 64) and the peer URL check", () => {
  assert.deepEqual(parseHexUint64("cc96749a1434"), { ok: true, value: "224946573415476" });
  assert.deepEqual(parseHexUint64("ffffffffffffffff"), { ok: true, value: "18446744073709551615" });
  assert.deepEqual(parseHexUint64("10000000000000000"), { ok: false, error: 'strconv.ParseUint: parsing "10000000000000000": value out of range' });
  assert.deepEqual(parseHexUint64("zz"), { ok: false, error: 'strconv.ParseUint: parsing "zz": invalid syntax' });
  assert.deepEqual(parseHexUint64("-1"), { ok: false, error: 'strconv.ParseUint: parsing "-1": invalid syntax' });
  assert.equal(peerUrlsError(["http://127.0.0.1:2380", "https://[::1]:2380"]), undefined);
  assert.equal(peerUrlsError(["foo"]), "URL scheme must be http, https, unix, or unixs: foo");
  assert.equal(peerUrlsError(["http://a"]), 'URL address does not have the form "host:port": http://a');
  assert.equal(peerUrlsError(["http://a:1/"]), "URL must not contain a path: http://a:1/");
  assert.equal(peerUrlsError(["http://a:1", "ftp://b:2"]), "URL scheme must be http, https, unix, or unixs: ftp://b:2");
});
