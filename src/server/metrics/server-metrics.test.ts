import { test } from "node:test";
import assert from "node:assert/strict";
import type { Command } from "../request.ts";
import type { ApplyResult } from "../apply.ts";
import type { V3Answer } from "../v3-results.ts";
import { Registry } from "./registry.ts";
import { SLOW_APPLY_MS, ServerMetrics } from "./server-metrics.ts";

const v3 = (op: unknown): Command => ({ t: "v3", m: 1, id: 1, time: 0, op }) as Command;
// Partial answers: the metrics read only what a txn's answer says of its branch.
const ok = (v3Result?: unknown): ApplyResult => ({ ok: true, v3: v3Result as V3Answer });
function expose(m: ServerMetrics): string {
  const r = new Registry();
  for (const f of m.families()) r.register(f);
  return r.expose();
}
const put = (key = "k", value = "v", ignoreValue = false): { key: Buffer; value: Buffer; ignoreValue: boolean } => ({ key: Buffer.from(key), value: Buffer.from(value), ignoreValue });

test("mvcc counters as etcd's metricsTxnWrite: puts, deletes, a txn's ops in the branch it took", () => {
  const m = new ServerMetrics();
  m.applied(v3({ k: "put", r: put() }), ok(), 1);
  m.applied(v3({ k: "deleteRange", r: {} }), ok(), 1);
  const txn = { compare: [], success: [{ put: put() }, { range: {} }, { put: put() }], failure: [{ deleteRange: {} }] };
  m.applied(v3({ k: "txn", r: txn }), ok({ succeeded: true, responses: [] }), 1);
  m.applied(v3({ k: "txn", r: txn }), ok({ succeeded: false, responses: [] }), 1);
  // A refused write (e.g. an alarm) changed nothing.
  m.applied(v3({ k: "put", r: put() }), { ok: false, error: new Error("x") } as ApplyResult, 1);
  assert.equal(m.mvccPut.value(), 3);
  assert.equal(m.mvccRange.value(), 1);
  assert.equal(m.mvccDelete.value(), 2);
  assert.equal(m.mvccTxn.value(), 1, "the one-op txn does not count as a txn");
});

test("nested txns count their inner branch; read-only txns count their ranges", () => {
  const m = new ServerMetrics();
  const inner = { compare: [], success: [{ put: put() }, { put: put() }], failure: [] };
  const outer = { compare: [], success: [{ txn: inner }], failure: [] };
  m.applied(v3({ k: "txn", r: outer }), ok({ succeeded: true, responses: [{ txn: { succeeded: true, responses: [] } }] }), 1);
  assert.equal(m.mvccPut.value(), 2);
  m.readOnlyTxn({ compare: [], success: [{ range: {} }, { range: {} }], failure: [] } as never, { revision: 1, succeeded: true, responses: [] });
  assert.equal(m.mvccRange.value(), 2);
  assert.equal(m.mvccTxn.value(), 2);
});

test("put sizes as etcd's metricsTxnWrite adds them: key and value, a txn's puts in its branch, ignore_value's kept value", () => {
  const m = new ServerMetrics();
  assert.match(expose(m), /^etcd_debugging_mvcc_total_put_size_in_bytes 0$/m, "at 0 from the start, as etcd's gauge");
  m.applied(v3({ k: "put", r: put("k1", "v1") }), ok(), 1);
  const txn = { compare: [], success: [{ put: put("k3", "xyz") }, { range: {} }], failure: [{ put: put("never", "counted") }] };
  m.applied(v3({ k: "txn", r: txn }), ok({ succeeded: true, responses: [] }), 1);
  m.applied(v3({ k: "put", r: put("k2", "", true) }), ok(), 1);
  assert.equal(m.mvccPutSize.value(), 4 + 5 + 2, "without the server's lookup, ignore_value counts the key");
  m.valueLength = (key) => (key.toString() === "k2" ? 11 : 0);
  m.applied(v3({ k: "put", r: put("k2", "", true) }), ok(), 1);
  m.applied(v3({ k: "put", r: put("k9", "v") }), { ok: false, error: new Error("x") } as ApplyResult, 1);
  assert.equal(m.mvccPutSize.value(), 11 + 13);
});

test("a compaction's apply is the index compaction pause, in whole ms; each snapshot save's marshalling and total, in seconds", () => {
  const m = new ServerMetrics();
  m.applied(v3({ k: "compact", r: { revision: 4, physical: false } }), ok({ revision: 9 }), 2.7);
  m.applied(v3({ k: "compact", r: { revision: 99, physical: false } }), { ok: false, error: new Error("future") } as ApplyResult, 1);
  m.snapshotObserver.saved({ marshallingMs: 3, totalMs: 40 });
  const t = expose(m);
  assert.match(t, /^etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds_sum 2$/m);
  assert.match(t, /^etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds_count 1$/m);
  assert.match(t, /^etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds_bucket\{le="0.5"\} 0$/m);
  assert.match(t, /^etcd_debugging_snap_save_marshalling_duration_seconds_sum 0.003$/m);
  assert.match(t, /^etcd_debugging_snap_save_total_duration_seconds_sum 0.04$/m);
  assert.match(t, /^etcd_debugging_snap_save_total_duration_seconds_count 1$/m);
});

test("slow applies, leases, proposals, disk latencies in seconds", () => {
  const m = new ServerMetrics();
  // The TTL observed is the one granted (the store raised 1 to its minimum), as etcd's lessor observes it.
  m.applied(v3({ k: "leaseGrant", id: 1n, ttl: 1 }), ok({ revision: 1, id: 1n, ttl: 2 }), SLOW_APPLY_MS + 1);
  m.applied(v3({ k: "leaseGrant", id: 2n, ttl: 100000 }), ok({ revision: 1, id: 2n, ttl: 100000 }), 1);
  m.applied(v3({ k: "leaseRevoke", id: 1n }), ok(), 1);
  m.applied({ t: "sync", m: 1, id: 1, time: 0 }, ok(), 2);
  assert.equal(m.slowApply.value(), 1);
  assert.equal(m.leaseGranted.value(), 2);
  assert.equal(m.leaseRevoked.value(), 1);
  assert.equal(m.leaseTtl.count(), 2);
  const ttl = (suffix: string, le?: string): number | undefined => m.leaseTtl.samples().find((s) => s.suffix === suffix && s.labels["le"] === le)?.value;
  assert.equal(ttl("_sum"), 100002);
  assert.equal(ttl("_bucket", "1"), 0);
  assert.equal(ttl("_bucket", "2"), 1);
  assert.equal(ttl("_bucket", "65536"), 1);
  assert.equal(ttl("_bucket", "131072"), 2);
  assert.equal(ttl("_bucket", "8.388608e+06"), 2, "24 buckets: 1 s to 97 days");
  m.proposalStarted();
  m.proposalStarted();
  assert.equal(m.proposalsPending.value(), 2);
  m.proposalEnded(false);
  m.proposalEnded(true);
  assert.equal(m.proposalsPending.value(), 0);
  assert.equal(m.proposalsFailed.value(), 1);
  m.walSynced(3);
  assert.equal(m.walFsync.count(), 1);
  assert.ok(m.walFsync.samples().some((s) => s.suffix === "_sum" && Math.abs(s.value - 0.003) < 1e-12));
  m.peerSent("a1", 10);
  m.peerSent("a1", 5);
  m.peerRoundTripMs("a1", 0.25);
  assert.equal(m.peerSentBytes.value({ To: "a1" }), 15);
  assert.equal(m.peerRoundTrip.count({ To: "a1" }), 1);
});

test("each cluster version applied is kept (major.minor), for etcd_cluster_version's series", () => {
  const m = new ServerMetrics();
  const ver = (v: string): Command => ({ t: "ver", m: 1, id: 1, time: 0, v });
  m.applied(ver("3.0.0"), { ok: true }, 1);
  m.applied(ver("3.4.0"), { ok: true }, 1);
  assert.deepEqual([...m.clusterVersionsApplied], ["3.0", "3.4"]);
});

test("peer links as etcd's peerStatus: active up and down per remote, each going down a disconnection", () => {
  const m = new ServerMetrics();
  m.peerActive("a", "b", true);
  m.peerActive("a", "c", true);
  m.peerActive("a", "b", false);
  assert.equal(m.activePeers.value({ Local: "a", Remote: "b" }), 0);
  assert.equal(m.activePeers.value({ Local: "a", Remote: "c" }), 1);
  assert.equal(m.disconnectedPeers.value({ Local: "a", Remote: "b" }), 1);
  assert.equal(m.disconnectedPeers.value({ Local: "a", Remote: "c" }), 0);
  m.peerSendFailed("b", 3);
  m.peerSendFailed("b", 1);
  assert.equal(m.peerSentFailures.value({ To: "b" }), 4);
});

test("client requests by type and client-api-version, unknown when the caller sent none", () => {
  const m = new ServerMetrics();
  m.clientRequest("unary", "3.4");
  m.clientRequest("unary", "3.4");
  m.clientRequest("stream", "3.4");
  m.clientRequest("unary", undefined);
  assert.equal(m.clientRequests.value({ type: "unary", client_api_version: "3.4" }), 2);
  assert.equal(m.clientRequests.value({ type: "stream", client_api_version: "3.4" }), 1);
  assert.equal(m.clientRequests.value({ type: "unary", client_api_version: "unknown" }), 1);
  assert.equal(m.clientRequests.value({ type: "stream", client_api_version: "unknown" }), 0);
});
