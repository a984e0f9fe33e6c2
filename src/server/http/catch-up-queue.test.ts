import assert from "node:assert/strict";
import { test } from "node:test";
import { CatchUpQueue } from "./catch-up-queue.ts";

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

test("steps run in later turns, in order, for about turnMs a turn; a step queued by a step waits for the next turn", async () => {
  let clock = 0;
  const q = new CatchUpQueue({ turnMs: 5, now: () => clock });
  const ran: string[] = [];
  const step = (name: string, ms: number, again?: string) => () => {
    ran.push(name);
    clock += ms;
    if (again !== undefined) q.push(step(again, ms));
  };
  q.push(step("a", 2, "a2"));
  q.push(step("b", 2));
  q.push(step("c", 2));
  q.push(step("d", 2));
  assert.deepEqual(ran, [], "nothing runs synchronously");
  await turn();
  assert.deepEqual(ran, ["a", "b", "c"], "stops once the turn's 5 ms passed");
  assert.equal(q.size, 2);
  await turn();
  assert.deepEqual(ran, ["a", "b", "c", "d", "a2"]);
  assert.equal(q.size, 0);
  q.push(step("e", 1, "e2"));
  q.push(step("f", 1));
  await turn();
  assert.deepEqual(ran.slice(5), ["e", "f"], "scheduled again once empty; e2, queued by e, waits for the next turn");
  await turn();
  assert.deepEqual(ran.slice(7), ["e2"]);
});
