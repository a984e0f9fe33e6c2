// The lanes of scripts/run-lanes.mjs get disjoint copies of the tests' default port ranges.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LANE_PORT_OFFSET, laneRange } from "./ports.test-helper.ts";

test("laneRange: lane 0, no lane and a lane that is not a whole number keep the range; lane k is shifted k offsets", () => {
  assert.deepEqual(laneRange([23310, 23349], {}), [23310, 23349]);
  assert.deepEqual(laneRange([23310, 23349], { TEST_PORT_LANE: "0" }), [23310, 23349]);
  assert.deepEqual(laneRange([23310, 23349], { TEST_PORT_LANE: "x" }), [23310, 23349]);
  assert.deepEqual(laneRange([23310, 23349], { TEST_PORT_LANE: "1.5" }), [23310, 23349]);
  assert.deepEqual(laneRange([23310, 23349], { TEST_PORT_LANE: "1" }), [23310 + LANE_PORT_OFFSET, 23349 + LANE_PORT_OFFSET]);
  assert.deepEqual(laneRange([23500, 23599], { TEST_PORT_LANE: "2" }), [23500 + 2 * LANE_PORT_OFFSET, 23599 + 2 * LANE_PORT_OFFSET]);
});

test("laneRange: lane 1's copies of the tests' default ranges overlap none of the defaults and stay below the ephemeral ports", () => {
  const defaults: [number, number][] = [[23310, 23349], [23350, 23399], [23500, 23599]];
  for (const r of defaults) {
    const [lo, hi] = laneRange(r, { TEST_PORT_LANE: "1" });
    assert.ok(hi < 32768, `${lo}-${hi}`);
    for (const [dlo, dhi] of [...defaults, [27000, 27999] as [number, number]]) assert.ok(hi < dlo || lo > dhi, `${lo}-${hi} overlaps ${dlo}-${dhi}`);
  }
});
