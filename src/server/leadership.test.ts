import { test } from "node:test";
import assert from "node:assert/strict";
import { Leadership, type LeadershipHost } from "./leadership.ts";
import { RequestTimeoutError } from "./errors.ts";
import type { Deadline } from "./deadline.ts";
import type { Logger } from "./logger.ts";

/** A member that leads (id 1) and whose transfers never finish unless `follow` says so. */
function host(electionTimeoutMs: number, follow = false): LeadershipHost & { transfers: number[] } {
  let lead = 1;
  const transfers: number[] = [];
  return {
    memberId: 1,
    electionTimeoutMs,
    log: { info: () => undefined } as unknown as Logger,
    leaderId: () => lead,
    status: () => ({}) as ReturnType<LeadershipHost["status"]>,
    confState: () => ({ voters: [1, 2], learners: [] }) as unknown as ReturnType<LeadershipHost["confState"]>,
    transferLeader: (to) => {
      transfers.push(to);
      if (follow) setTimeout(() => (lead = to), 5);
    },
    transfers,
  };
}

function deadlineIn(ms: number): Deadline {
  const at = Date.now() + ms;
  return {
    get expired() {
      return Date.now() >= at;
    },
    onExpire: (fn) => {
      const t = setTimeout(fn, Math.max(0, at - Date.now()));
      return () => clearTimeout(t);
    },
  };
}

const transferTimeout = (err: unknown): boolean => err instanceof RequestTimeoutError && err.kind === "timeoutLeaderTransfer" && err.message === "etcdserver: request timed out, leader transfer took too long";

test("MoveLeader waits until the caller's deadline, as etcd's, then answers the leader-transfer timeout", async () => {
  const h = host(20);
  const t0 = Date.now();
  await assert.rejects(new Leadership(h).moveTo(2, deadlineIn(200)), transferTimeout);
  assert.ok(Date.now() - t0 >= 190, `answered after ${Date.now() - t0} ms, not at the deadline (two election timeouts: 40 ms)`);
  assert.deepEqual(h.transfers, [2]);
});

test("MoveLeader without a deadline gives up after two election timeouts", async () => {
  const t0 = Date.now();
  await assert.rejects(new Leadership(host(50)).moveTo(2), transferTimeout);
  const took = Date.now() - t0;
  assert.ok(took >= 95 && took < 2000, `took ${took} ms`);
});

test("MoveLeader resolves once the transferee leads", async () => {
  await new Leadership(host(1000, true)).moveTo(2, deadlineIn(5000));
});
