import { test } from "node:test";
import assert from "node:assert/strict";
import { DiskWaitPolicy } from "./disk-wait.ts";

test("a one-entry save waits on the loop when every request since the last save proposed", () => {
  const p = new DiskWaitPolicy({ slowMs: 10, backoffMs: 1000 });
  assert.equal(p.onLoop(0, 0, 0, 1), true, "a follower replicating, no clients");
  assert.equal(p.onLoop(1, 1, 1, 1), true, "one PUT, its proposal in this save");
  assert.equal(p.onLoop(3, 1, 3, 1), true, "the member's own proposals (SYNC, lease) count for nobody");
});

test("concurrent writers, a read beside a write or a batch keep the save off the loop", () => {
  const p = new DiskWaitPolicy({ slowMs: 10, backoffMs: 1000 });
  assert.equal(p.onLoop(0, 2, 1, 1), false, "a GET arrived beside the PUT");
  assert.equal(p.onLoop(1, 3, 2, 1), true, "counted from the previous save on");
  assert.equal(p.onLoop(2, 5, 4, 2), false, "two PUTs");
  assert.equal(p.onLoop(3, 5, 4, 3), false, "a follower's batch of three entries");
  assert.equal(p.onLoop(4, 5, 4, 1), true);
});

test("the second look says no when a client request began in between", () => {
  const p = new DiskWaitPolicy({ slowMs: 10, backoffMs: 1000 });
  assert.equal(p.onLoop(0, 1, 1, 1), true);
  assert.equal(p.stillQuiet(1), true);
  assert.equal(p.stillQuiet(2), false, "a client request");
});

test("a slow wait keeps saves off the loop for the back-off, then lets them back", () => {
  const p = new DiskWaitPolicy({ slowMs: 10, backoffMs: 1000 });
  p.took(100, 9);
  assert.equal(p.onLoop(101, 0, 0, 1), true, "under the limit");
  p.took(200, 11);
  assert.equal(p.onLoop(201, 0, 0, 1), false);
  assert.equal(p.onLoop(1199, 0, 0, 1), false);
  assert.equal(p.onLoop(1200, 0, 0, 1), true);
});
