// Unit tests of lib/stats.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cpuMsFromStat, median, percentileSorted, statFields, stealPct } from "./stats.ts";

const medianCases: { xs: (number | null)[]; want: number | null }[] = [
  { xs: [], want: null },
  { xs: [3], want: 3 },
  { xs: [5, 1, 3], want: 3 },
  { xs: [4, 1, 3, 2], want: 2.5 },
  { xs: [null, 7, Number.NaN, 1], want: 4 },
];
for (const c of medianCases) {
  test(`median returns ${c.want} when given [${c.xs.join(", ")}]`, () => assert.equal(median(c.xs), c.want));
}

test("percentileSorted uses the shared scripts' floor(p/100*n) rank", () => {
  const s = Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.equal(percentileSorted(s, 50), 6);
  assert.equal(percentileSorted(s, 99), 10);
  assert.equal(percentileSorted(s, 100), 10);
  assert.equal(percentileSorted(s, 0), 1);
  assert.equal(percentileSorted(new Float64Array(0), 50), null);
});

test("stealPct is the stolen share of all ticks between two samples", () => {
  assert.equal(stealPct({ total: 1000, steal: 10 }, { total: 2000, steal: 60 }), 5);
  assert.equal(stealPct(null, { total: 1, steal: 0 }), null);
  assert.equal(stealPct({ total: 5, steal: 0 }, { total: 5, steal: 0 }), 0);
});

test("cpuMsFromStat adds utime and stime, counting fields after the command name's last parenthesis", () => {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
  const stat = "4242 (node (x) y) S 1 4242 4242 0 -1 4194304 100 0 0 0 123 45 0 0 20 0 11 0";
  assert.equal(cpuMsFromStat(stat), 1680);
  assert.equal(cpuMsFromStat(stat, 1000), 168);
  assert.equal(cpuMsFromStat("garbage"), null);
  assert.equal(cpuMsFromStat("1 (x) S 1"), null);
});

test("statFields starts at the state, whatever the command name holds", () => {
  assert.deepEqual(statFields("7 (a) b) c) S 1 7"), ["S", "1", "7"]);
  assert.equal(statFields("no name"), null);
});
