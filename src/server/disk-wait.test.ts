import { test } from "node:test";
import assert from "node:assert/strict";
import { DiskWaitPolicy } from "./disk-wait.ts";

const opts = { slowMs: 10, backoffMs: 1000, concurrentMs: 500, loneAfter: 3 };

test("a one-entry save waits on the loop when every request since the last save proposed", () => {
  const p = new DiskWaitPolicy(opts);
  assert.equal(p.onLoop(0, 0, 0, 1), true, "a follower replicating, no clients");
  assert.equal(p.onLoop(1, 1, 1, 1), true, "one PUT, its proposal in this save");
  assert.equal(p.onLoop(3, 1, 3, 1), true, "the member's own proposals (SYNC, lease) count for nobody");
});

test("concurrent writers, a read beside a write or a batch keep the save off the loop, and the next ones for a while", () => {
  const p = new DiskWaitPolicy(opts);
  assert.equal(p.onLoop(0, 2, 1, 1), false, "a GET arrived beside the PUT");
  assert.equal(p.onLoop(1, 3, 2, 1), false, "one PUT since the previous save, but clients were concurrent 1 ms ago");
  assert.equal(p.onLoop(501, 4, 3, 1), true, "counted from the previous save on, and the while is over");
  assert.equal(p.onLoop(502, 6, 5, 2), false, "two PUTs");
  assert.equal(p.onLoop(1100, 6, 5, 3), false, "a follower's batch of three entries");
  assert.equal(p.onLoop(1599, 6, 5, 1), false);
  assert.equal(p.onLoop(1600, 6, 5, 1), true);
});

test("the second look says no when a client request began in between, and so do the next saves for a while", () => {
  const p = new DiskWaitPolicy(opts);
  assert.equal(p.onLoop(0, 1, 1, 1), true);
  assert.equal(p.stillQuiet(0, 1), true);
  assert.equal(p.stillQuiet(0, 2), false, "a client request");
  assert.equal(p.onLoop(10, 2, 2, 1), false);
  assert.equal(p.onLoop(500, 2, 2, 1), true);
});

test("a slow wait keeps saves off the loop for the back-off, then lets them back", () => {
  const p = new DiskWaitPolicy(opts);
  p.took(100, 9);
  assert.equal(p.onLoop(101, 0, 0, 1), true, "under the limit");
  p.took(200, 11);
  assert.equal(p.onLoop(201, 0, 0, 1), false);
  assert.equal(p.onLoop(1199, 0, 0, 1), false);
  assert.equal(p.onLoop(1200, 0, 0, 1), true);
});

test("only the part of a wait not spent waiting for a CPU marks the disk slow", () => {
  const p = new DiskWaitPolicy(opts);
  assert.equal(p.mayBeSlow(9), false, "not worth reading the CPU wait");
  assert.equal(p.mayBeSlow(11), true);
  p.took(100, 40, 35);
  assert.equal(p.onLoop(101, 0, 0, 1), true, "5 ms on the disk, 35 ms waiting for a CPU");
  p.took(200, 40, 29);
  assert.equal(p.onLoop(201, 0, 0, 1), false, "11 ms on the disk");
  assert.equal(p.onLoop(1200, 0, 0, 1), true);
  p.took(1300, 40);
  assert.equal(p.onLoop(1301, 0, 0, 1), false, "no CPU wait known: the wall time counts");
});

test("a lone writer's saves skip the second look once it found the loop quiet loneAfter times in a row; what the first look sees brings it back", () => {
  const p = new DiskWaitPolicy(opts);
  let requests = 0;
  const lone = (now: number): boolean => {
    requests++;
    assert.equal(p.onLoop(now, requests, requests, 1), true);
    if (p.lone) return true;
    assert.equal(p.stillQuiet(now, requests), true);
    return false;
  };
  assert.deepEqual([lone(0), lone(1), lone(2), lone(3), lone(4)], [false, false, false, true, true]);
  // A second writer's request, read while the lone save blocked the loop, shows at the next save.
  requests += 2;
  assert.equal(p.onLoop(5, requests, requests, 2), false);
  assert.equal(p.lone, false);
  assert.equal(p.onLoop(600, ++requests, requests, 1), true);
  assert.equal(p.lone, false, "the run starts again");
  // A look that finds a request ends a run too.
  assert.equal(p.stillQuiet(600, requests), true);
  assert.equal(p.stillQuiet(600, requests), true);
  assert.equal(p.stillQuiet(600, requests + 1), false);
  assert.equal(p.lone, false);
  // So does a save the back-off keeps off the loop.
  const q = new DiskWaitPolicy(opts);
  for (let i = 1; i <= 3; i++) {
    q.onLoop(i, i, i, 1);
    q.stillQuiet(i, i);
  }
  assert.equal(q.lone, true);
  q.took(10, 50);
  assert.equal(q.onLoop(11, 4, 4, 1), false);
  assert.equal(q.lone, false);
});
