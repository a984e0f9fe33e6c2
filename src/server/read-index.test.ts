import { test } from "node:test";
import assert from "node:assert/strict";
import { until } from "../until.test-helper.ts";
import { LeaderChangedError } from "./errors.ts";
import { ReadIndexBatcher } from "./read-index.ts";
import { ReadOnly } from "../raft/read-only.ts";
import { EntryType, MessageType, message } from "../raft/types.ts";

function host() {
  const sent: string[] = [];
  let applied = 0;
  // etcd_server_slow_read_indexes_total and etcd_server_read_indexes_failed_total.
  const counts = { slow: 0, failed: 0 };
  return {
    sent,
    counts,
    setApplied: (n: number) => (applied = n),
    h: {
      requestReadIndex: (ctx: Uint8Array) => void sent.push(Buffer.from(ctx).toString()),
      appliedIndex: () => applied,
      slowReadIndex: () => void counts.slow++,
      readIndexFailed: () => void counts.failed++,
    },
  };
}

test("ReadIndexBatcher shares one round among reads that arrive while it is in flight", async () => {
  const { sent, h, setApplied } = host();
  const b = new ReadIndexBatcher(h, 5000, 1000);
  const r1 = b.read();
  const r2 = b.read();
  const r3 = b.read();
  assert.deepEqual(sent, ["r1"], "r2 and r3 wait for the next round");
  b.onReadState(7, Buffer.from("r1"));
  assert.deepEqual(sent, ["r1", "r2"]);
  setApplied(7);
  b.release();
  await r1;
  b.onReadState(8, Buffer.from("r2"));
  setApplied(8);
  b.release();
  await Promise.all([r2, r3]);
  b.failAll(new Error("stop"));
});

test("ReadIndexBatcher resolves a read only once the read index is applied", async () => {
  const { h, setApplied } = host();
  const b = new ReadIndexBatcher(h, 5000, 1000);
  let done = false;
  const r = b.read().then(() => (done = true));
  b.onReadState(10, Buffer.from("r1"));
  setApplied(9);
  b.release();
  await new Promise((res) => setImmediate(res));
  assert.equal(done, false);
  setApplied(10);
  b.release();
  await r;
  assert.equal(done, true);
});

test("ReadIndexBatcher re-sends an unanswered request and fails only at the deadline", async () => {
  const { sent, h, counts } = host();
  const b = new ReadIndexBatcher(h, 120, 30);
  const r = b.read();
  await assert.rejects(r, /request timed out/);
  assert.ok(sent.length >= 3, `expected retries, sent ${sent.join(",")}`);
  assert.deepEqual(counts, { slow: 1, failed: 0 }, "a timed-out round is one slow read index; its re-sends are not");
});

test("ReadIndexBatcher ignores answers to superseded requests", async () => {
  const { sent, h, setApplied, counts } = host();
  const b = new ReadIndexBatcher(h, 5000, 20);
  const r = b.read();
  await until(() => sent.length >= 2, "the request sent again");
  b.onReadState(3, Buffer.from("r1")); // a late answer to the first try: ignored
  assert.equal(counts.slow, 1, "an ignored out-of-date answer is a slow read index, as etcd counts it");
  setApplied(100);
  b.release();
  b.onReadState(4, Buffer.from(sent.at(-1)!));
  b.release();
  await r;
  assert.deepEqual(counts, { slow: 1, failed: 0 });
  b.failAll(new Error("stop"));
});

test("a new leader fails the unanswered round's reads that ask for it ('leader changed') and sends the others again", async () => {
  const { sent, h, setApplied, counts } = host();
  const b = new ReadIndexBatcher(h, 5000, 1000);
  const answered = b.read({ failOnLeaderChange: true });
  const v3 = b.read({ failOnLeaderChange: true });
  const v2 = b.read();
  b.onReadState(7, Buffer.from("r1")); // r1's index is known: it only waits for apply
  assert.deepEqual(sent, ["r1", "r2"], "v3 and v2 share r2");
  const next = b.read({ failOnLeaderChange: true }); // waits for the round after r2
  b.leaderChanged();
  await assert.rejects(v3, (e: unknown) => e instanceof LeaderChangedError && e.message === "etcdserver: leader changed");
  assert.deepEqual(sent, ["r1", "r2", "r3"], "v2 and the next read go again at once");
  b.onReadState(9, Buffer.from("r3"));
  setApplied(9);
  b.release();
  await Promise.all([answered, v2, next]);
  b.leaderChanged(); // nothing in flight: nothing to do
  assert.deepEqual(sent, ["r1", "r2", "r3"]);
  assert.deepEqual(counts, { slow: 0, failed: 1 }, "one failed read index: the round cut by the new leader");
});

test("a read that arrives while a round is sent again waits for the next round, and a new leader does not fail it", async () => {
  const { sent, h, setApplied } = host();
  const b = new ReadIndexBatcher(h, 5000, 20);
  const first = b.read({ failOnLeaderChange: true });
  await until(() => sent.length >= 2, "the request sent again");
  const n = sent.length;
  const late = b.read({ failOnLeaderChange: true });
  assert.equal(sent.length, n, "the late read did not start a round of its own");
  b.leaderChanged();
  await assert.rejects(first, LeaderChangedError);
  assert.equal(sent.length, n + 1, "the late read's round");
  b.onReadState(5, Buffer.from(sent.at(-1)!));
  setApplied(5);
  b.release();
  await late;
  b.failAll(new Error("stop"));
});

test("ReadIndexBatcher: two members' rounds stay two requests at the leader", async () => {
  // The leader keys pending reads by ctx and drops a duplicate (etcd's read_only.go), so
  // a ctx must be unique in the cluster, as etcd's request ids are (member id bits in
  // each): a round dropped there is not answered, and its reads wait for the re-send.
  const ctxs: Uint8Array[] = [];
  const member = (id: number) =>
    new ReadIndexBatcher({ requestReadIndex: (ctx) => void ctxs.push(ctx), appliedIndex: () => 0 }, 5000, 1000, id);
  const b2 = member(0x2a);
  const b3 = member(0x3b);
  const reads = [b2.read(), b3.read()].map((r) => r.catch(() => undefined));
  const leader = new ReadOnly();
  for (const [i, ctx] of ctxs.entries()) {
    leader.addRequest(5, message({ type: MessageType.MsgReadIndex, from: i + 2, entries: [{ term: 0, index: 0, type: EntryType.Normal, data: ctx }] }));
  }
  assert.equal(leader.queue.length, 2);
  b2.failAll(new Error("stop"));
  b3.failAll(new Error("stop"));
  await Promise.all(reads);
});
