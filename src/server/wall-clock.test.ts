import assert from "node:assert/strict";
import { test } from "node:test";
import { wallClockNs } from "./wall-clock.ts";

test("wallClockNs stays within a ms of Date.now(), moves forward and has nanosecond digits", () => {
  let prev = -1n;
  let withNs = 0;
  for (let i = 0; i < 2000; i++) {
    const before = Date.now();
    const t = wallClockNs();
    const after = Date.now();
    assert.ok(Number.isInteger(t.ms) && Number.isInteger(t.ns) && t.ns >= 0 && t.ns < 1_000_000);
    assert.ok(t.ms >= before - 1 && t.ms <= after + 1, `${t.ms} not near [${before}, ${after}]`);
    const total = BigInt(t.ms) * 1_000_000n + BigInt(t.ns);
    assert.ok(total >= prev, "never backwards");
    prev = total;
    if (t.ns % 1000 !== 0) withNs++;
  }
  assert.ok(withNs > 1000, `only ${withNs} of 2000 readings had sub-microsecond digits`);
});
