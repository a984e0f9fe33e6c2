import assert from "node:assert/strict";
import { test } from "node:test";
import { ProposalDroppedError, type Status } from "../raft/index.ts";
import { bestTransferee } from "./leadership.ts";
import { ServerMetrics } from "./metrics/server-metrics.ts";
import { Proposals, type ProposalHost } from "./proposals.ts";
import { decodeCommand } from "./request.ts";

function host(over: Partial<ProposalHost> = {}): ProposalHost & { sent: Uint8Array[] } {
  const sent: Uint8Array[] = [];
  return {
    memberId: 7,
    requestTimeoutMs: 200,
    metrics: new ServerMetrics(),
    stopped: () => false,
    propose: (data) => void sent.push(data),
    proposeConfChange: () => {},
    kick: () => {},
    sent,
    ...over,
  };
}

test("a proposal carries this member and a fresh id; apply's result reaches only its waiter", async () => {
  const h = host();
  const p = new Proposals(h, 1000);
  const a = p.propose({ t: "sync", time: 1 });
  const b = p.propose({ t: "sync", time: 2 });
  const [ca, cb] = h.sent.map((d) => decodeCommand(d));
  assert.equal(ca?.m, 7);
  assert.notEqual(ca?.id, cb?.id);
  p.applied(cb!.id, { ok: true });
  p.applied(ca!.id, { ok: true });
  assert.deepEqual(await Promise.all([a, b]), [{ ok: true }, { ok: true }]);
  assert.equal(p.count, 2);
});

test("a proposal dropped for want of a leader goes again once one is known", async () => {
  let leader = false;
  const h = host({
    propose: (data) => {
      if (!leader) throw new ProposalDroppedError("no leader");
      h.sent.push(data);
    },
  });
  const p = new Proposals(h, 1000);
  const r = p.propose({ t: "sync", time: 1 });
  await new Promise((res) => setImmediate(res));
  assert.equal(h.sent.length, 0);
  leader = true;
  p.leaderKnown();
  await new Promise((res) => setImmediate(res));
  assert.equal(h.sent.length, 1);
  p.applied(decodeCommand(h.sent[0]!)!.id, { ok: true });
  assert.deepEqual(await r, { ok: true });
});

test("every waiter ends: timeout, stop, and a stopped member refuses at once", async () => {
  const h = host({ requestTimeoutMs: 30 });
  const p = new Proposals(h, 1000);
  await assert.rejects(p.propose({ t: "sync", time: 1 }), /request timed out/);
  const pending = p.propose({ t: "sync", time: 2 });
  p.failAll(new Error("etcdserver: server stopped"));
  await assert.rejects(pending, /server stopped/);
  const stopped = new Proposals(host({ stopped: () => true }), 1000);
  await assert.rejects(stopped.propose({ t: "sync", time: 3 }), /server stopped/);
});

test("a stop ends a proposal still waiting for a leader at once, and its rejection is handled", async () => {
  let stopped = false;
  const h = host({
    requestTimeoutMs: 10_000,
    stopped: () => stopped,
    propose: () => {
      throw new ProposalDroppedError("no leader");
    },
  });
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown): void => void unhandled.push(err);
  process.on("unhandledRejection", onUnhandled);
  try {
    const p = new Proposals(h, 1000);
    const pending = p.propose({ t: "sync", time: 1 });
    await new Promise((res) => setImmediate(res));
    const t0 = Date.now();
    stopped = true;
    p.failAll(new Error("etcdserver: server stopped"));
    await assert.rejects(pending, /server stopped/);
    // The waiter, rejected while the proposal still waited for a leader, counted as handled.
    await new Promise((res) => setTimeout(res, 20));
    assert.ok(Date.now() - t0 < 1_000, "ended by the stop, not by the request timeout");
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});

test("a conf change resolves when this member applies it; another proposer's does not wake it", async () => {
  let context: Uint8Array | undefined;
  const p = new Proposals(host({ proposeConfChange: (cc) => void (context = cc.context) }), 1000);
  const done = p.proposeConfChange(2, 9);
  const ctx = JSON.parse(Buffer.from(context!).toString()) as { proposer: number; reqId: number };
  p.confApplied({ proposer: 8, reqId: ctx.reqId });
  let settled = false;
  void done.then(() => (settled = true));
  await new Promise((res) => setImmediate(res));
  assert.equal(settled, false);
  p.confApplied(ctx);
  await done;
});

test("leadership goes to the voter furthest along, never to a learner or to itself", () => {
  const progress = new Map([
    [1, { match: 90 }],
    [2, { match: 80 }],
    [3, { match: 95 }],
    [4, { match: 99 }],
  ]) as unknown as NonNullable<Status["progress"]>;
  const status = { progress } as Status;
  assert.equal(bestTransferee(1, status, { voters: [1, 2, 3], learners: [4] }), 3);
  assert.equal(bestTransferee(1, status, { voters: [1], learners: [4] }), 0);
  assert.equal(bestTransferee(1, {} as Status, { voters: [1, 2], learners: [] }), 0);
});

test("a slow apply's warning names the command: kind and key or path", async () => {
  const { describeCommand } = await import("./kv-server.ts");
  assert.equal(describeCommand({ t: "v3", m: 1, id: 2, time: 3, op: { k: "put", r: { key: Buffer.from("a/b"), value: Buffer.from("v"), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false } } }), 'v3 put "a/b"');
  assert.equal(describeCommand({ t: "sync", m: 1, id: 2, time: 3 }), "sync");
});

test("a caller's deadline: before the entry is in Raft 'context deadline exceeded', after it 'request timed out'; the waiter goes", async () => {
  const { CallDeadline } = await import("./grpc/deadline.ts");
  const { DeadlineExceededError } = await import("./deadline.ts");
  // No leader: the proposal waits for one, and the deadline ends that wait long before the request timeout.
  const leaderless = host({ requestTimeoutMs: 5000, propose: () => { throw new ProposalDroppedError("no leader"); } });
  const p1 = new Proposals(leaderless, 1000);
  const t0 = performance.now();
  await assert.rejects(p1.propose({ t: "sync", time: 1 }, new CallDeadline(40)), (e: unknown) => e instanceof DeadlineExceededError && !e.proposed);
  assert.ok(performance.now() - t0 < 1000);
  // A deadline already passed: no wait at all.
  await assert.rejects(p1.propose({ t: "sync", time: 1 }, new CallDeadline(0)), (e: unknown) => e instanceof DeadlineExceededError && !e.proposed);
  // Proposed, never applied: the deadline drops the waiter; a late apply finds nobody.
  const h = host({ requestTimeoutMs: 5000 });
  const p2 = new Proposals(h, 1000);
  const r = p2.propose({ t: "sync", time: 1 }, new CallDeadline(30));
  await assert.rejects(r, (e: unknown) => e instanceof DeadlineExceededError && e.proposed);
  p2.applied(decodeCommand(h.sent[0]!)!.id, { ok: true });
  // Applied in time: the deadline changes nothing.
  const d = new CallDeadline(1000);
  const ok = p2.propose({ t: "sync", time: 2 }, d);
  p2.applied(decodeCommand(h.sent[1]!)!.id, { ok: true });
  assert.deepEqual(await ok, { ok: true });
  d.cancel();
});
