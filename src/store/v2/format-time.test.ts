import assert from "node:assert/strict";
import { test } from "node:test";
import { formatRfc3339Nano, ttlSeconds } from "./format-time.ts";

const base = Date.UTC(2026, 10, 22, 4, 15, 28); // 2026-11-22T04:15:28Z

const formatCases: [ms: number, want: string][] = [
  [base, "2026-11-22T04:15:28Z"],
  [base + 985, "2026-11-22T04:15:28.985Z"],
  [base + 900, "2026-11-22T04:15:28.9Z"],
  [base + 985.4, "2026-11-22T04:15:28.9854Z"],
  [base + 985.402294, "2026-11-22T04:15:28.985402Z"], // sub-microsecond digits are float noise
  [base + 0.5, "2026-11-22T04:15:28.0005Z"],
  [base + 999.9999, "2026-11-22T04:15:29Z"], // rounds up into the next second
  [base + 0.001, "2026-11-22T04:15:28.000001Z"],
  [0, "1970-01-01T00:00:00Z"],
  [Date.UTC(1999, 11, 31, 23, 59, 59, 1), "1999-12-31T23:59:59.001Z"],
];
for (const [ms, want] of formatCases) {
  test(`formatRfc3339Nano renders ${ms} as ${want}`, () => {
    assert.equal(formatRfc3339Nano(ms), want);
  });
}

test("formatRfc3339Nano keeps at most 6 significant fraction digits and no trailing zeros", () => {
  for (let i = 0; i < 1000; i++) {
    const s = formatRfc3339Nano(base + i * 0.123457);
    assert.match(s, /^2026-11-22T04:15:\d\d(\.\d{0,5}[1-9])?Z$/);
  }
});

const ttlCases: [name: string, expire: number, now: number, want: number][] = [
  ["exact seconds", base + 5000, base, 5],
  ["a fraction left rounds up", base + 4001, base, 5],
  ["fractional now does not add a second", base + 0.830374 + 100_000, base + 0.830374, 100],
  ["due now", base, base, 0],
  ["just past", base - 300, base, 0],
  ["long past", base - 1500, base, -1],
];
for (const [name, expire, now, want] of ttlCases) {
  test(`ttlSeconds gives ${want} when ${name}`, () => {
    assert.equal(ttlSeconds(expire, now), want);
    assert.ok(!Object.is(ttlSeconds(expire, now), -0));
  });
}

test("formatRfc3339Nano prints the nanoseconds carried beside the ms, as etcd's RFC3339Nano", () => {
  assert.equal(formatRfc3339Nano(base + 550, 621324), "2026-11-22T04:15:28.550621324Z");
  assert.equal(formatRfc3339Nano(base + 550, 621000), "2026-11-22T04:15:28.550621Z");
  assert.equal(formatRfc3339Nano(base + 999, 999999), "2026-11-22T04:15:28.999999999Z");
  assert.equal(formatRfc3339Nano(base, 1), "2026-11-22T04:15:28.000000001Z");
  // A wrapped TTL lands before 1970: the ns count up from the (negative) ms below.
  assert.equal(formatRfc3339Nano(Date.UTC(1688, 5, 13, 14, 21, 26, 275), 892514), "1688-06-13T14:21:26.275892514Z");
});

test("ttlSeconds adds the nanoseconds and saturates as Go's Time.Sub", () => {
  assert.equal(ttlSeconds(base + 5000, base + 0.5, 500_000), 5);
  assert.equal(ttlSeconds(base + 5000, base + 0.5, 501_000), 6);
  assert.equal(ttlSeconds(Date.UTC(1688, 5, 13), base), -9223372036);
  assert.equal(ttlSeconds(Date.UTC(2400, 0, 1), base), 9223372037);
});
