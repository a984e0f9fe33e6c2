import assert from "node:assert/strict";
import { test } from "node:test";
import { GrpcCode } from "../api/v3-errors.ts";
import { BcryptBusyError, BcryptCancelledError, BcryptQueue } from "./bcrypt-queue.ts";

/** A job the test finishes by hand, recording when it started. */
function gate(log: string[], name: string): { job: () => Promise<string>; finish: () => void } {
  let finish: () => void = () => assert.fail(`${name} finished before it started`);
  const job = (): Promise<string> => {
    log.push(`start ${name}`);
    return new Promise<string>((resolve) => {
      finish = () => resolve(name);
    });
  };
  return { job, finish: () => finish() };
}

test("at most `slots` jobs run; the rest wait and start in order as slots free", async () => {
  const log: string[] = [];
  const q = new BcryptQueue({ slots: 2, maxQueued: 8 });
  const [a, b, c, d] = ["a", "b", "c", "d"].map((n) => gate(log, n));
  const results = [a!, b!, c!, d!].map((g) => q.run(g.job));
  assert.deepEqual(log, ["start a", "start b"]);
  assert.equal(q.running, 2);
  assert.equal(q.queued, 2);
  b!.finish();
  assert.equal(await results[1], "b");
  assert.deepEqual(log, ["start a", "start b", "start c"]);
  a!.finish();
  c!.finish();
  await Promise.all([results[0], results[2]]);
  assert.deepEqual(log, ["start a", "start b", "start c", "start d"]);
  d!.finish();
  assert.deepEqual(await Promise.all(results), ["a", "b", "c", "d"]);
  assert.equal(q.running, 0);
  assert.equal(q.queued, 0);
});

test("a full queue refuses at once with etcd's 'too many requests' (ResourceExhausted); no work is queued for it", async () => {
  const log: string[] = [];
  const q = new BcryptQueue({ slots: 1, maxQueued: 2 });
  const gates = ["a", "b", "c", "d"].map((n) => gate(log, n));
  const results = gates.slice(0, 3).map((g) => q.run(g.job));
  const refused = q.run(gates[3]!.job);
  await assert.rejects(refused, (err: unknown) => {
    assert.ok(err instanceof BcryptBusyError);
    assert.equal(err.code, GrpcCode.ResourceExhausted);
    assert.equal(err.message, "etcdserver: too many requests");
    return true;
  });
  assert.equal(q.queued, 2);
  for (const g of gates.slice(0, 3)) {
    g.finish();
    await new Promise((r) => setImmediate(r));
  }
  assert.deepEqual(await Promise.all(results), ["a", "b", "c"]);
  assert.deepEqual(log, ["start a", "start b", "start c"], "the refused job never ran");
  // Room again once the queue drained.
  const e = gate(log, "e");
  const late = q.run(e.job);
  e.finish();
  assert.equal(await late, "e");
});

test("a waiting job whose signal fires leaves the queue unrun, with the signal's reason; a started one runs on", async () => {
  const log: string[] = [];
  const q = new BcryptQueue({ slots: 1, maxQueued: 4 });
  const [a, b, c] = ["a", "b", "c"].map((n) => gate(log, n));
  const runningCtl = new AbortController();
  const waitingCtl = new AbortController();
  const ra = q.run(a!.job, runningCtl.signal);
  const rb = q.run(b!.job, waitingCtl.signal);
  const rc = q.run(c!.job);
  assert.equal(q.queued, 2);
  const reason = new Error("deadline passed");
  waitingCtl.abort(reason);
  await assert.rejects(rb, (err: unknown) => err === reason);
  assert.equal(q.queued, 1, "dropped from the queue at once, not when its turn comes");
  runningCtl.abort(new Error("too late"));
  a!.finish();
  assert.equal(await ra, "a", "a started job is not cut short");
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(log, ["start a", "start c"], "b never ran");
  c!.finish();
  assert.equal(await rc, "c");
});

test("a signal that already fired is refused before any work; a reason that is no Error becomes 'context canceled'", async () => {
  const log: string[] = [];
  const q = new BcryptQueue({ slots: 1, maxQueued: 4 });
  const ctl = new AbortController();
  ctl.abort("gone");
  await assert.rejects(q.run(gate(log, "a").job, ctl.signal), (err: unknown) => {
    assert.ok(err instanceof BcryptCancelledError);
    assert.equal(err.code, GrpcCode.Cancelled);
    return true;
  });
  assert.deepEqual(log, []);
  assert.equal(q.running, 0);
});

test("setSlots(1) lets running jobs finish and then starts one at a time; a job that throws frees its slot", async () => {
  const log: string[] = [];
  const q = new BcryptQueue({ slots: 2, maxQueued: 8 });
  const [a, b, c, d] = ["a", "b", "c", "d"].map((n) => gate(log, n));
  const results = [a!, b!, c!, d!].map((g) => q.run(g.job));
  q.setSlots(1);
  a!.finish();
  await results[0];
  assert.deepEqual(log, ["start a", "start b"], "b still holds the one slot");
  b!.finish();
  await results[1];
  assert.deepEqual(log, ["start a", "start b", "start c"]);
  c!.finish();
  await results[2];
  assert.deepEqual(log, ["start a", "start b", "start c", "start d"]);
  d!.finish();
  await Promise.all(results);
  const thrown = q.run(() => {
    throw new Error("sync failure");
  });
  await assert.rejects(thrown, /sync failure/);
  assert.equal(q.running, 0);
});
