import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeConfChange, ConfChangeType } from "../../raft/index.ts";
import { encodeCommand } from "../request.ts";
import { SNAPSHOT_MAGIC } from "../snapshot-data.ts";
import { backupIds, backupSnapshotData, rewriteEntries } from "./data-dir.ts";

const v2 = encodeCommand({ t: "v2", m: 1, id: 1, time: 0, r: { method: "PUT", path: "/a", val: "1", dir: false, prevValue: "", prevIndex: 0, recursive: false, sorted: false } });
const attr = encodeCommand({ t: "attr", m: 1, id: 2, time: 0, a: { id: 0xabc, name: "n1", clientUrls: ["http://127.0.0.1:1"] } });
const v3put = encodeCommand({ t: "v3", m: 1, id: 3, time: 0, op: { k: "put", r: { key: Buffer.from("k"), value: Buffer.from("v"), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false } } });
const cc = encodeConfChange({ type: ConfChangeType.AddNode, nodeId: 7, context: new Uint8Array(0) });
const log = [
  { term: 2, index: 11, type: 0, data: new Uint8Array(0) },
  { term: 2, index: 12, type: 1, data: cc },
  { term: 2, index: 13, type: 0, data: attr },
  { term: 3, index: 14, type: 0, data: v2 },
  { term: 3, index: 15, type: 0, data: v3put },
];

test("rewriteEntries: conf changes and attribute publishes become empty normal entries at the same index", () => {
  const lines: string[] = [];
  const { entries, ignored } = rewriteEntries(log, { withV3: true, log: (l) => lines.push(l) });
  assert.deepEqual(entries.map((e) => [e.term, e.index, e.type, e.data.length]), [
    [2, 11, 0, 0],
    [2, 12, 0, 0],
    [2, 13, 0, 0],
    [3, 14, 0, v2.length],
    [3, 15, 0, v3put.length],
  ]);
  assert.deepEqual(ignored, { confChanges: 1, memberAttributes: 1, v3: 0 });
  assert.deepEqual(lines, ["ignoring EntryConfChange raft entry", "ignoring member attribute update on /0/members/abc/attributes"]);
});

test("rewriteEntries: without --with-v3 the v3 entries go too, the v2 ones stay byte for byte", () => {
  const lines: string[] = [];
  const { entries, ignored } = rewriteEntries(log, { withV3: false, log: (l) => lines.push(l) });
  assert.equal(entries[4]!.data.length, 0);
  assert.equal(entries[4]!.index, 15);
  assert.deepEqual(Buffer.from(entries[3]!.data), Buffer.from(v2));
  assert.equal(ignored.v3, 1);
  assert.equal(lines.at(-1), "ignoring v3 raft entry");
});

test("backupIds: etcd's idutil generator seeded with the clock, member first, cluster next", () => {
  const now = Date.UTC(2026, 10, 27);
  const { memberId, clusterId } = backupIds(now);
  assert.equal(memberId, (now % 2 ** 40) * 256 + 1);
  assert.equal(clusterId, memberId + 1);
  assert.ok(Number.isSafeInteger(clusterId) && clusterId < 2 ** 48);
  assert.notEqual(backupIds(now + 1).memberId, memberId);
});

test("backupSnapshotData: only the header line changes; the members stay for --force-new-cluster to remove", () => {
  const header = { membership: { clusterId: 5, members: [{ id: 9, name: "a", peerUrls: ["http://x"], clientUrls: [] }] }, v3auth: { users: [] } };
  const body = '{"node":"line"}\n';
  const data = Buffer.concat([SNAPSHOT_MAGIC, Buffer.from(JSON.stringify(header) + "\n" + body)]);
  const split = (out: Buffer): [typeof header, string] => {
    const text = out.subarray(SNAPSHOT_MAGIC.length).toString();
    return [JSON.parse(text.slice(0, text.indexOf("\n"))) as typeof header, text.slice(text.indexOf("\n") + 1)];
  };
  const [withV3, rest] = split(backupSnapshotData(data, 77, true));
  assert.equal(withV3.membership.clusterId, 77);
  assert.deepEqual(withV3.membership.members, header.membership.members);
  assert.deepEqual(withV3.v3auth, header.v3auth);
  assert.equal(rest, body);
  // Without --with-v3 the v3 auth state goes, as etcd's goes with its database.
  const [v2only, rest2] = split(backupSnapshotData(data, 77, false));
  assert.equal(v2only.v3auth, undefined);
  assert.equal(rest2, body);
  // Format 1 (one JSON text) as well.
  const f1 = JSON.parse(backupSnapshotData(Buffer.from(JSON.stringify({ store: "s", ...header, v3: {} })), 78, false).toString()) as typeof header & { v3?: unknown; store: string };
  assert.equal(f1.membership.clusterId, 78);
  assert.equal(f1.v3, undefined);
  assert.equal(f1.store, "s");
});
