import { test } from "node:test";
import assert from "node:assert/strict";
import { loadStats, perfVerdict, randomKey } from "./check.ts";
import { replaceFirst } from "./make-mirror.ts";

test("keys: Go's PutVarint of a non-negative int63 (zig-zag: even) in a zeroed buffer", () => {
  for (let i = 0; i < 50; i++) {
    const k = randomKey(256);
    assert.equal(k.length, 256);
    assert.equal((k[0] ?? 1) & 1, 0);
    let end = 0;
    while (((k[end] ?? 0) & 0x80) !== 0) end++;
    assert.ok(end < 10);
    assert.ok(k.subarray(end + 1).every((b) => b === 0));
  }
});

test("perf verdict: etcdctl's lines and rules", () => {
  const ok = perfVerdict(loadStats([0.01, 0.02, 0.03], new Map(), 3 / 150), 150);
  assert.equal(ok.ok, true);
  assert.equal(ok.lines, "PASS: Throughput is 151 writes/s\nPASS: Slowest request took 0.030000s\nPASS: Stddev is 0.008165s\nPASS\n");
  const bad = perfVerdict(loadStats([0.6, 0.01], new Map([["etcdserver: too many requests", 2]]), 1), 150);
  assert.equal(bad.ok, false);
  assert.equal(
    bad.lines,
    "FAIL: too many errors\nFAIL: ERROR(etcdserver: too many requests) -> 2\nFAIL: Throughput too low: 3 writes/s\n" +
      "Slowest request took too long: 0.600000s\nStddev too high: 0.295000s\nFAIL\n",
  );
  // 90% of the rate exactly is too low (etcdctl: RPS/limit <= 0.9 fails).
  assert.equal(perfVerdict(loadStats(Array(135).fill(0.01), new Map(), 1), 150).ok, false);
});

test("make-mirror renames as Go's strings.Replace(key, prefix, dest, 1)", () => {
  const r = (k: string, from: string, to: string): string => replaceFirst(Buffer.from(k), Buffer.from(from), Buffer.from(to)).toString();
  assert.equal(r("/a/x", "/a/", "/b/"), "/b/x");
  assert.equal(r("x/a/y/a/", "/a/", "/b/"), "x/b/y/a/");
  assert.equal(r("key", "", "/p/"), "/p/key");
  assert.equal(r("/a/x", "/a/", ""), "x");
  assert.equal(r("other", "/a/", "/b/"), "other");
});
