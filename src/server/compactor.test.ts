import assert from "node:assert/strict";
import { test } from "node:test";
import { createCompactor, REVISION_COMPACT_INTERVAL_MS } from "./compactor.ts";

const H = 60 * 60 * 1000;

test("periodic 1h: samples every 6 min, first compaction after an hour to the revision of an hour ago", () => {
  const c = createCompactor({ mode: "periodic", retention: H }, 0)!;
  assert.equal(c.stepMs, 6 * 60 * 1000);
  const asked: Array<[number, number]> = [];
  let rev = 100;
  for (let t = c.stepMs; t <= 3 * H; t += c.stepMs) {
    rev += 10;
    const r = c.step(t, rev);
    if (r !== undefined) {
      asked.push([t / 60000, r]);
      c.done(t, true);
    }
  }
  // Sampled at 6, 12, ... min (rev 110, 120, ...): at 60 min the window reaches back to 0-6 min.
  assert.deepEqual(asked[0], [60, 110]);
  // Then every hour, each time to the revision sampled an hour before.
  assert.deepEqual(asked.slice(1).map(([m]) => m), [120, 180]);
  assert.equal(asked[1]![1], 200, "the revision sampled at 60 min");
});

test("periodic 30m: every 30 minutes; a failed compaction is retried at the next step", () => {
  const c = createCompactor({ mode: "periodic", retention: 30 * 60 * 1000 }, 0)!;
  assert.equal(c.stepMs, 3 * 60 * 1000);
  let t = 0;
  let first: number | undefined;
  for (; first === undefined; ) {
    t += c.stepMs;
    first = c.step(t, t / 1000);
  }
  assert.equal(t, 30 * 60 * 1000);
  c.done(t, false);
  t += c.stepMs;
  assert.notEqual(c.step(t, t / 1000), undefined, "retried after a failure");
  c.done(t, true);
  t += c.stepMs;
  assert.equal(c.step(t, t / 1000), undefined, "not again right after a success");
});

test("periodic above an hour compacts hourly to the revision one retention ago", () => {
  const c = createCompactor({ mode: "periodic", retention: 10 * H }, 0)!;
  assert.equal(c.stepMs, 6 * 60 * 1000);
  let t = 0;
  const at: number[] = [];
  for (let i = 1; t < 12 * H; i++) {
    t = i * c.stepMs;
    const r = c.step(t, i);
    if (r !== undefined) {
      at.push(t / H);
      c.done(t, true);
    }
  }
  assert.deepEqual(at, [10, 11, 12]);
});

test("revision: every 5 minutes to current - retention, never the same revision twice", () => {
  const c = createCompactor({ mode: "revision", retention: 1000 }, 0)!;
  assert.equal(c.stepMs, REVISION_COMPACT_INTERVAL_MS);
  assert.equal(c.step(0, 500), undefined);
  assert.equal(c.step(0, 1500), 500);
  c.done(0, true);
  assert.equal(c.step(0, 1500), undefined);
  assert.equal(c.step(0, 1600), 600);
});

test("retention 0 turns automatic compaction off", () => {
  assert.equal(createCompactor({ mode: "periodic", retention: 0 }, 0), undefined);
  assert.equal(createCompactor({ mode: "revision", retention: 0 }, 0), undefined);
});
