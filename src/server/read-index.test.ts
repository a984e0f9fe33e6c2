import { test } from "node:test";
import assert from "node:assert/strict";
import { ReadIndexBatcher } from "./read-index.ts";

function host() {
  const sent: string[] = [];
  let applied = 0;
  return {
    sent,
    setApplied: (n: number) => (applied = n),
    h: { requestReadIndex: (ctx: Uint8Array) => void sent.push(Buffer.from(ctx).toString()), appliedIndex: () => applied },
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
  const { sent, h } = host();
  const b = new ReadIndexBatcher(h, 120, 30);
  const r = b.read();
  await assert.rejects(r, /request timed out/);
  assert.ok(sent.length >= 3, `expected retries, sent ${sent.join(",")}`);
});

test("ReadIndexBatcher ignores answers to superseded requests", async () => {
  const { sent, h, setApplied } = host();
  const b = new ReadIndexBatcher(h, 5000, 20);
  const r = b.read();
  await new Promise((res) => setTimeout(res, 50));
  assert.ok(sent.length >= 2);
  b.onReadState(3, Buffer.from("r1")); // a late answer to the first try: ignored
  setApplied(100);
  b.release();
  b.onReadState(4, Buffer.from(sent.at(-1)!));
  b.release();
  await r;
  b.failAll(new Error("stop"));
});
