// Which path a Txn takes on a member, decided as etcd 3.4's EtcdServer.Txn decides it:
// ranges only (top level) is a read, and a read whose ranges are all serializable waits
// for no ReadIndex round; anything else, a nested txn included, goes through the log.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V3Errors } from "../api/v3-errors.ts";
import { V3AuthState } from "../auth/index.ts";
import { MvccStore } from "../store/v3/mvcc-store.ts";
import type { TxnRequest } from "../store/v3/types.ts";
import { cmpVersion, opPut, opRange, opTxn, putReq, rangeReq, txnReq } from "../store/v3/v3.test-helper.ts";
import { CompareResult as R } from "../store/v3/types.ts";
import { DeadlineExceededError } from "./deadline.ts";
import { LeaderChangedError } from "./errors.ts";
import { ServerMetrics } from "./metrics/server-metrics.ts";
import { V3Service, type V3ServiceHost } from "./v3-service.ts";

type Path = "local" | "read index" | "log";

/** A member that records whether a txn made a ReadIndex round or a proposal. */
function member(): { service: V3Service; taken: () => Path } {
  const v3 = new MvccStore();
  v3.put(putReq("a", "1"));
  let reads = 0;
  let proposals = 0;
  const kv = {
    config: { authToken: { type: "simple" } },
    v3,
    v3auth: new V3AuthState(),
    metrics: new ServerMetrics(),
    quotaAvailable: () => true,
    linearizableRead: async () => {
      reads++;
    },
    propose: async () => {
      proposals++;
      return { ok: true, v3: { revision: v3.revision, succeeded: true, responses: [] } };
    },
  };
  const service = new V3Service(kv as unknown as V3ServiceHost);
  return {
    service,
    taken: () => {
      assert.ok(reads + proposals <= 1, `one path at most (${reads} reads, ${proposals} proposals)`);
      return proposals === 1 ? "log" : reads === 1 ? "read index" : "local";
    },
  };
}

async function pathOf(req: TxnRequest): Promise<Path> {
  const m = member();
  await m.service.txn(req, { token: undefined });
  return m.taken();
}

const ser = { serializable: true };

test("a txn whose ranges are all serializable is served locally, with no ReadIndex round", async () => {
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser)], failure: [opRange("b", ser), opRange("c", ser)] })), "local");
  const m = member();
  const res = await m.service.txn(txnReq({ success: [opRange("a", ser)] }), { token: undefined });
  assert.equal(res.succeeded, true);
  assert.equal((res.responses[0] as { range: { kvs: { value: Buffer }[] } }).range.kvs[0]!.value.toString(), "1");
});

test("a txn with no ops is served locally, as etcd's isTxnSerializable holds for it", async () => {
  assert.equal(await pathOf(txnReq({ compare: [cmpVersion("a", R.EQUAL, 1)] })), "local");
});

test("one linearizable range, in either branch, makes the read wait for a ReadIndex round", async () => {
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser), opRange("b")] })), "read index");
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser)], failure: [opRange("b")] })), "read index");
});

test("a put among serializable ranges goes through the log", async () => {
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser)], failure: [opPut("a", "2")] })), "log");
});

test("a nested txn goes through the log, even of serializable ranges only", async () => {
  assert.equal(await pathOf(txnReq({ success: [opTxn({ success: [opRange("a", ser)] })] })), "log");
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser)], failure: [opTxn({ failure: [opRange("a")] })] })), "log");
});

// Put and Range take a path without async steps when auth is off (and the quota has
// room): the same answers and errors as the async path, and never a synchronous throw.
function hotMember(over: Partial<Record<"propose" | "linearizableRead" | "quotaAvailable", unknown>> = {}): { service: V3Service; proposed: unknown[]; reads: () => number } {
  // The key space's alarm list (a member's V3KeySpace has one; the bare store not).
  const v3 = Object.assign(new MvccStore(), { alarms: () => [] });
  v3.put(putReq("a", "1"));
  const proposed: unknown[] = [];
  let reads = 0;
  const kv = {
    config: { authToken: { type: "simple" } },
    clusterId: 11,
    memberId: 22,
    term: 3,
    v3,
    v3auth: new V3AuthState(),
    metrics: new ServerMetrics(),
    quotaAvailable: () => true,
    linearizableRead: async () => {
      reads++;
    },
    propose: async (body: unknown) => {
      proposed.push(body);
      return { ok: true, v3: { revision: 9 } };
    },
    ...over,
  };
  return { service: new V3Service(kv as unknown as V3ServiceHost), proposed, reads: () => reads };
}

test("put with auth off: one proposal of the put, its answer; errors as etcd's, as rejections", async () => {
  const m = hotMember();
  assert.deepEqual(await m.service.put(putReq("k", "v"), { token: undefined }), { revision: 9 });
  assert.equal((m.proposed[0] as { op: { k: string } }).op.k, "put");

  const refused = hotMember({ propose: async () => ({ ok: false, error: V3Errors.leaseNotFound() }) });
  await assert.rejects(refused.service.put(putReq("k", "v"), { token: undefined }), V3Errors.leaseNotFound());
  const timedOut = hotMember({ propose: () => Promise.reject(new DeadlineExceededError(true)) });
  await assert.rejects(timedOut.service.put(putReq("k", "v"), { token: undefined }), V3Errors.timeout());
  const throwing = hotMember({
    propose: () => {
      throw new LeaderChangedError();
    },
  });
  let p: Promise<unknown> | undefined;
  assert.doesNotThrow(() => (p = throwing.service.put(putReq("k", "v"), { token: undefined })));
  await assert.rejects(p!, V3Errors.leaderChanged());
});

test("put over the quota: NOSPACE, and the alarm proposed (the checked path)", async () => {
  const m = hotMember({ quotaAvailable: () => false });
  await assert.rejects(m.service.put(putReq("k", "v"), { token: undefined }), V3Errors.noSpace());
  assert.equal((m.proposed[0] as { op: { k: string } }).op.k, "alarm");
});

test("range with auth off: serializable without a ReadIndex round, linearizable after one; its failure as etcd's", async () => {
  const m = hotMember();
  const r = await m.service.range({ ...rangeReq("a"), serializable: true }, { token: undefined });
  assert.equal(r.kvs[0]!.value.toString(), "1");
  assert.equal(m.reads(), 0);
  await m.service.range(rangeReq("a"), { token: undefined });
  assert.equal(m.reads(), 1);
  const lost = hotMember({ linearizableRead: () => Promise.reject(new LeaderChangedError()) });
  await assert.rejects(lost.service.range(rangeReq("a"), { token: undefined }), V3Errors.leaderChanged());
});

test("auth off, an empty token is still a token: invalid auth token, as etcd's AuthInfoFromCtx (a token metadata or Authorization header present but empty)", async () => {
  const m = hotMember();
  await assert.rejects(m.service.range({ ...rangeReq("a"), serializable: true }, { token: "" }), V3Errors.invalidAuthToken());
  await assert.rejects(m.service.put(putReq("k", "v"), { token: "" }), V3Errors.invalidAuthToken());
  assert.equal(m.proposed.length, 0);
});

test("MemberAdd judges its URLs before its caller, as etcd's ClusterServer: bad URLs with a bad token are bad URLs", async () => {
  const m = hotMember();
  for (const peerUrls of [[], ["foo"]]) await assert.rejects(m.service.memberAdd({ peerUrls, isLearner: false }, { token: "junk" }), V3Errors.memberBadURLs(), JSON.stringify(peerUrls));
  await assert.rejects(m.service.memberAdd({ peerUrls: ["http://a:1"], isLearner: false }, { token: "junk" }), V3Errors.invalidAuthToken());
});

test("the header's ids follow the member's (decimal strings of the current ids)", () => {
  const host = { config: { authToken: { type: "simple" } }, clusterId: 11, memberId: 22, term: 3, v3: { revision: 4 } };
  const s = new V3Service(host as unknown as V3ServiceHost);
  assert.deepEqual(s.header(), { clusterId: "11", memberId: "22", revision: 4, raftTerm: 3 });
  // A member learns its cluster's id when it joins one.
  host.clusterId = 2 ** 53 - 1;
  assert.deepEqual(s.header(7), { clusterId: "9007199254740991", memberId: "22", revision: 7, raftTerm: 3 });
});

// etcd 3.4.23's MoveLeader: a member that does not exist or is a learner is a bad
// transferee; the leader itself is not (Raft drops the transfer and the call succeeds).
test("MoveLeader to the leader itself succeeds without a transfer; a learner or a missing member is refused", async () => {
  const moved: number[] = [];
  const members = new Map([
    [22, { id: 22 }],
    [33, { id: 33 }],
    [44, { id: 44, isLearner: true }],
  ]);
  const host = {
    config: { authToken: { type: "simple" } },
    memberId: 22,
    isLeader: true,
    v3auth: new V3AuthState(),
    membership: { get: (id: number) => members.get(id) },
    transferLeadershipTo: async (id: number) => {
      moved.push(id);
    },
  };
  const s = new V3Service(host as unknown as V3ServiceHost);
  await s.moveLeader("22", { token: undefined });
  assert.deepEqual(moved, []);
  await assert.rejects(s.moveLeader("44", { token: undefined }), V3Errors.badLeaderTransferee());
  await assert.rejects(s.moveLeader("55", { token: undefined }), V3Errors.badLeaderTransferee());
  // etcd looks any target up as a member: 0 and IDs no member has are bad transferees too.
  for (const id of ["0", "18446744073709551615"]) await assert.rejects(s.moveLeader(id, { token: undefined }), V3Errors.badLeaderTransferee(), id);
  await s.moveLeader("33", { token: undefined });
  assert.deepEqual(moved, [33]);
});
