import assert from "node:assert/strict";
import { test } from "node:test";
import { summarizeElections } from "./election.ts";

const t = (ms: number | undefined): { target: string; timing: { newLeaderMs: number | undefined; capMs: number } } => ({ target: "m0 (leader)", timing: { newLeaderMs: ms, capMs: 5000 } });

test("summarizeElections reports max and median and flags none when all are within the limit", () => {
  const s = summarizeElections([t(700), t(300), t(900), t(500)], 1500);
  assert.deepEqual(s, { count: 4, maxMs: 900, medianMs: 600, limitMs: 1500, slow: [] });
});

test("summarizeElections flags an election slower than the limit and one that never ended", () => {
  const s = summarizeElections([t(400), t(1600), t(undefined)], 1500);
  assert.equal(s.medianMs, 1000);
  assert.equal(s.maxMs, 1600);
  assert.deepEqual(s.slow, ["m0 (leader): new leader after 1600 ms", "m0 (leader): no new leader within 5000 ms"]);
});

test("summarizeElections of no leader kill has no max or median", () => {
  assert.deepEqual(summarizeElections([], 1500), { count: 0, maxMs: undefined, medianMs: undefined, limitMs: 1500, slow: [] });
});

test("summarizeElections appends the notes of a slow election (a disk stall it overlapped), not of a quick one", () => {
  const s = summarizeElections([{ ...t(1642), notes: ["during a disk stall: m3 fdatasync took 1.063 s"] }, { ...t(500), notes: ["ignored"] }], 1500);
  assert.deepEqual(s.slow, ["m0 (leader): new leader after 1642 ms — during a disk stall: m3 fdatasync took 1.063 s"]);
});
