import { test } from "node:test";
import assert from "node:assert/strict";
import { nextBackoff } from "./peer.ts";
import { LatencyTracker, RateWindow } from "./stats.ts";
import { defaultLimits } from "./types.ts";

test("LatencyTracker reports zeros when nothing was recorded", () => {
  assert.deepStrictEqual(new LatencyTracker().snapshot(), { current: 0, average: 0, minimum: 0, maximum: 0, standardDeviation: 0 });
});

test("LatencyTracker computes current, mean, extremes and standard deviation", () => {
  const t = new LatencyTracker();
  for (const ms of [2, 4, 4, 4, 5, 5, 7, 9]) t.record(ms);
  assert.deepStrictEqual(t.snapshot(), { current: 9, average: 5, minimum: 2, maximum: 9, standardDeviation: 2 });
});

test("RateWindow gives samples and bytes per second over its window", () => {
  const w = new RateWindow({ capacity: 3, idleMs: 1000 });
  assert.deepStrictEqual(w.rate(0), [0, 0]);
  w.add(1000, 100);
  assert.deepStrictEqual(w.rate(1000), [0, 0], "one sample spans no time");
  w.add(1250, 100);
  w.add(1500, 100);
  assert.deepStrictEqual(w.rate(1500), [6, 600]);
  w.add(1500, 400); // evicts the sample at 1000: window 1250..1500
  assert.deepStrictEqual(w.rate(1500), [12, 2400]);
});

test("RateWindow reports 0 and forgets its samples once idle", () => {
  const w = new RateWindow({ capacity: 10, idleMs: 1000 });
  w.add(0, 10);
  w.add(100, 10);
  assert.deepStrictEqual(w.rate(1101), [0, 0]);
  w.add(1200, 10);
  assert.deepStrictEqual(w.rate(1200), [0, 0], "old samples were dropped");
});

test("nextBackoff starts at the minimum, doubles, and stays at the maximum", () => {
  const seq: number[] = [];
  let b = 0;
  for (let i = 0; i < 8; i++) seq.push((b = nextBackoff(b, defaultLimits)));
  assert.deepStrictEqual(seq, [50, 100, 200, 400, 800, 1600, 2000, 2000]);
});
