import { test } from "node:test";
import assert from "node:assert/strict";
import type { KeyValue } from "../../store/v3/index.ts";
import type { V3Header } from "./v3-backend.ts";
import {
  encodeAlarms,
  encodeDeleteRange,
  encodeKeepAlive,
  encodeLeaseGrant,
  encodeMembers,
  encodePut,
  encodeRange,
  encodeRolePerms,
  encodeTimeToLive,
  encodeTxn,
  encodeWatchResponse,
  streamLine,
  type JsonObject,
} from "./v3-encode.ts";

const h: V3Header = { clusterId: "10144879847569953045", memberId: "12428976124636271536", revision: 10, raftTerm: 2 };
const H = { cluster_id: "10144879847569953045", member_id: "12428976124636271536", revision: "10", raft_term: "2" };
const kv = (key: string, value: string, rev: number, extra: Partial<KeyValue> = {}): KeyValue => ({
  key: Buffer.from(key),
  value: Buffer.from(value),
  createRevision: rev,
  modRevision: rev,
  version: 1,
  lease: 0n,
  ...extra,
});

// Expected bodies are shaped as etcd 3.4.23's gateway printed them in conformance/golden/v3.
const cases: Array<{ what: string; got: () => JsonObject; want: unknown }> = [
  {
    what: "a range of a missing key has only the header",
    got: () => encodeRange(h, { revision: 10, kvs: [], more: false, count: 0 }),
    want: { header: H },
  },
  {
    what: "a range lists kvs (empty value and zero lease omitted), more and count as text",
    got: () => encodeRange(h, { revision: 10, kvs: [kv("a", "", 8), kv("b", "v", 9, { modRevision: 10, version: 2, lease: 7n })], more: true, count: 3 }),
    want: {
      header: H,
      kvs: [
        { key: "YQ==", create_revision: "8", mod_revision: "8", version: "1" },
        { key: "Yg==", create_revision: "9", mod_revision: "10", version: "2", value: "dg==", lease: "7" },
      ],
      more: true,
      count: "3",
    },
  },
  { what: "a count-only range", got: () => encodeRange(h, { revision: 10, kvs: [], more: false, count: 3 }), want: { header: H, count: "3" } },
  { what: "a put with prev_kv", got: () => encodePut(h, { revision: 10, prevKv: kv("a", "x", 4) }), want: { header: H, prev_kv: { key: "YQ==", create_revision: "4", mod_revision: "4", version: "1", value: "eA==" } } },
  { what: "a delete of nothing", got: () => encodeDeleteRange(h, { revision: 10, deleted: 0, prevKvs: [] }), want: { header: H } },
  {
    what: "a delete with prev_kvs",
    got: () => encodeDeleteRange(h, { revision: 10, deleted: 1, prevKvs: [kv("a", "1", 3)] }),
    want: { header: H, deleted: "1", prev_kvs: [{ key: "YQ==", create_revision: "3", mod_revision: "3", version: "1", value: "MQ==" }] },
  },
  {
    what: "a txn: nested responses carry a header with the revision only",
    got: () =>
      encodeTxn(h, {
        revision: 10,
        succeeded: true,
        responses: [
          { put: { revision: 10 } },
          { range: { revision: 10, kvs: [kv("a", "1", 10)], more: false, count: 1 } },
          { deleteRange: { revision: 10, deleted: 0, prevKvs: [] } },
          { txn: { revision: 10, succeeded: false, responses: [] } },
        ],
      }),
    want: {
      header: H,
      succeeded: true,
      responses: [
        { response_put: { header: { revision: "10" } } },
        { response_range: { header: { revision: "10" }, kvs: [{ key: "YQ==", create_revision: "10", mod_revision: "10", version: "1", value: "MQ==" }], count: "1" } },
        { response_delete_range: { header: { revision: "10" } } },
        { response_txn: { header: { revision: "10" } } },
      ],
    },
  },
  { what: "a failed txn without responses", got: () => encodeTxn(h, { revision: 10, succeeded: false, responses: [] }), want: { header: H } },
  { what: "a lease grant", got: () => encodeLeaseGrant(h, { revision: 10, id: 4242n, ttl: 30 }), want: { header: H, ID: "4242", TTL: "30" } },
  { what: "a keepalive of an unknown lease", got: () => encodeKeepAlive(h, 777n, undefined), want: { header: H, ID: "777" } },
  { what: "a timetolive of an unknown lease", got: () => encodeTimeToLive(h, 5n, undefined), want: { header: H, ID: "5", TTL: "-1" } },
  {
    what: "a timetolive with keys",
    got: () => encodeTimeToLive(h, 5n, { revision: 10, id: 5n, ttl: 29, grantedTtl: 30, keys: [Buffer.from("a")] }),
    want: { header: H, ID: "5", TTL: "29", grantedTTL: "30", keys: ["YQ=="] },
  },
  {
    what: "a member list: no revision in the header, no name for an unstarted member",
    got: () => encodeMembers(h, [{ id: "6094581469650864925", name: "", peerUrls: ["http://127.0.0.1:2380"], clientUrls: [], isLearner: true }]),
    want: { header: { cluster_id: H.cluster_id, member_id: H.member_id, raft_term: "2" }, members: [{ ID: "6094581469650864925", peerURLs: ["http://127.0.0.1:2380"], isLearner: true }] },
  },
  { what: "no alarms", got: () => encodeAlarms([]), want: {} },
  { what: "an alarm", got: () => encodeAlarms([{ memberId: "1", alarm: 1 }]), want: { alarms: [{ memberID: "1", alarm: "NOSPACE" }] } },
  // jsonpb writes an enum number the proto does not know bare, unquoted.
  { what: "an alarm of a type etcd does not know", got: () => encodeAlarms([{ memberId: "5", alarm: 9 }]), want: { alarms: [{ memberID: "5", alarm: 9 }] } },
  {
    what: "a permission of a type etcd does not know",
    got: () => encodeRolePerms(h, [{ permType: 9, key: Buffer.from("k"), rangeEnd: Buffer.alloc(0) }]),
    want: { header: H, perm: [{ permType: 9, key: "aw==" }] },
  },
  {
    what: "role permissions (READ is the zero value)",
    got: () => encodeRolePerms(h, [{ permType: 1, key: Buffer.from("k"), rangeEnd: Buffer.alloc(0) }, { permType: 0, key: Buffer.from("a"), rangeEnd: Buffer.from("b") }]),
    want: { header: H, perm: [{ permType: "WRITE", key: "aw==" }, { key: "YQ==", range_end: "Yg==" }] },
  },
  {
    what: "watch events: PUT type omitted, DELETE named, watch_id 0 omitted",
    got: () =>
      encodeWatchResponse({
        header: h,
        watchId: 0,
        events: [
          { type: 0, kv: kv("a", "1", 10) },
          { type: 1, kv: { ...kv("a", "", 0), modRevision: 11, version: 0 } },
        ],
      }),
    want: { header: H, events: [{ kv: { key: "YQ==", create_revision: "10", mod_revision: "10", version: "1", value: "MQ==" } }, { type: "DELETE", kv: { key: "YQ==", mod_revision: "11" } }] },
  },
  {
    what: "a refused watch",
    got: () => encodeWatchResponse({ header: h, watchId: -1, created: true, canceled: true, cancelReason: "x" }),
    want: { header: H, watch_id: "-1", created: true, canceled: true, cancel_reason: "x" },
  },
  {
    what: "a compacted watch (no header revision)",
    got: () => encodeWatchResponse({ header: { ...h, revision: 0 }, watchId: 3, canceled: true, compactRevision: 4 }),
    want: { header: { cluster_id: H.cluster_id, member_id: H.member_id, raft_term: "2" }, watch_id: "3", canceled: true, compact_revision: "4" },
  },
];
for (const c of cases) {
  test(`the encoder prints ${c.what} as etcd does`, () => {
    assert.deepEqual(JSON.parse(JSON.stringify(c.got())), c.want);
  });
}

test("the encoder writes fields in proto order (as jsonpb does)", () => {
  assert.equal(
    JSON.stringify(encodeRange(h, { revision: 10, kvs: [kv("a", "x", 4)], more: true, count: 2 })),
    '{"header":{"cluster_id":"10144879847569953045","member_id":"12428976124636271536","revision":"10","raft_term":"2"},' +
      '"kvs":[{"key":"YQ==","create_revision":"4","mod_revision":"4","version":"1","value":"eA=="}],"more":true,"count":"2"}',
  );
});

test("streamLine wraps a message in result and ends it with a newline", () => {
  assert.equal(streamLine({ a: "1" }), '{"result":{"a":"1"}}\n');
});
