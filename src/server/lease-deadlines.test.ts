import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaseDeadlines, NotPrimaryError } from "./lease-deadlines.ts";

function table(start = 1_000_000): { t: LeaseDeadlines; advance(ms: number): void } {
  let now = start;
  const t = new LeaseDeadlines({ now: () => now, retryMs: 3000 });
  return { t, advance: (ms) => void (now += ms) };
}

test("a follower's table renews nothing and expires nothing", () => {
  const { t, advance } = table();
  t.granted(1n, 5);
  advance(60_000);
  assert.equal(t.primary, false);
  assert.equal(t.size, 0);
  assert.deepEqual(t.due(), []);
  assert.throws(() => t.renew(1n), NotPrimaryError);
  assert.throws(() => t.remainingMs(1n), NotPrimaryError);
});

test("promote gives every lease its TTL plus the extension; renew moves the deadline to now + TTL", () => {
  const { t, advance } = table();
  t.promote([{ id: 1n, ttl: 5 }, { id: 2n, ttl: 10 }], 1000);
  assert.equal(t.remainingMs(1n), 6000);
  assert.equal(t.remainingMs(2n), 11_000);
  advance(4000);
  assert.deepEqual(t.renew(1n), { ttl: 5 });
  assert.equal(t.remainingMs(1n), 5000, "renewal has no extension");
  advance(4500);
  assert.deepEqual(t.due(), [], "renewed at 4 s: due at 9 s, not 6 s");
  advance(500);
  assert.deepEqual(t.due(), [1n]);
  advance(2000);
  assert.deepEqual(t.due(), [2n]);
});

test("due() answers earliest first, ties by id, at most `limit`, and each once per retry interval", () => {
  const { t, advance } = table();
  t.promote([{ id: 9n, ttl: 2 }, { id: 3n, ttl: 2 }, { id: 5n, ttl: 4 }, { id: 7n, ttl: 3 }], 0);
  advance(10_000);
  assert.deepEqual(t.due(2), [3n, 9n]);
  assert.deepEqual(t.due(), [7n, 5n]);
  assert.deepEqual(t.due(), [], "all four are revoking");
  advance(2999);
  assert.deepEqual(t.due(), []);
  advance(1);
  assert.deepEqual(t.due(), [3n, 5n, 7n, 9n], "not revoked within the retry interval: offered again (same retry time: by id)");
});

test("a lease past its deadline, or revoking, cannot be renewed; a revoked or unknown one is not found", () => {
  const { t, advance } = table();
  t.promote([{ id: 1n, ttl: 2 }, { id: 2n, ttl: 2 }, { id: 3n, ttl: 60 }], 0);
  advance(2000);
  assert.deepEqual(t.renew(1n), { notFound: true }, "deadline reached, revocation not yet proposed");
  assert.deepEqual(t.due(), [1n, 2n]);
  assert.deepEqual(t.renew(2n), { notFound: true }, "revoking");
  assert.equal(t.remainingMs(2n), 0);
  t.revoked(3n);
  assert.deepEqual(t.renew(3n), { notFound: true });
  assert.equal(t.remainingMs(3n), undefined);
  assert.deepEqual(t.renew(42n), { notFound: true });
  t.revoked(1n);
  t.revoked(2n);
  assert.equal(t.size, 0);
  assert.equal(t.nextDeadline(), undefined);
});

test("a grant applied after promotion runs its TTL from now, without the extension", () => {
  const { t, advance } = table();
  t.promote([], 1000);
  advance(500);
  t.granted(4n, 3);
  assert.equal(t.remainingMs(4n), 3000);
  assert.equal(t.nextDeadline(), 1_000_000 + 500 + 3000);
  advance(2999);
  assert.deepEqual(t.due(), []);
  advance(1);
  assert.deepEqual(t.due(), [4n]);
  // The same ID granted again after its revocation starts afresh.
  t.revoked(4n);
  t.granted(4n, 3);
  assert.deepEqual(t.renew(4n), { ttl: 3 });
});

test("demote forgets every deadline; a later promotion starts from the leases it is given", () => {
  const { t, advance } = table();
  t.promote([{ id: 1n, ttl: 2 }], 1000);
  advance(5000);
  t.demote();
  assert.equal(t.primary, false);
  assert.deepEqual(t.due(), []);
  advance(60_000);
  t.promote([{ id: 1n, ttl: 2 }], 1000);
  assert.equal(t.remainingMs(1n), 3000, "a new leader refreshes the lease the old one let lapse");
  assert.deepEqual(t.due(), []);
});

function checkpointing(intervalMs: number, start = 1_000_000): { t: LeaseDeadlines; advance(ms: number): void } {
  let now = start;
  const t = new LeaseDeadlines({ now: () => now, retryMs: 3000, checkpointIntervalMs: intervalMs });
  return { t, advance: (ms) => void (now += ms) };
}

test("promotion starts a lease from its last checkpoint's seconds left, not its full TTL", () => {
  const { t } = table();
  t.promote([{ id: 1n, ttl: 60, remainingTtl: 12 }, { id: 2n, ttl: 60 }, { id: 3n, ttl: 60, remainingTtl: 0 }], 1000);
  assert.equal(t.remainingMs(1n), 13_000, "checkpointed: 12 s + the extension");
  assert.equal(t.remainingMs(2n), 61_000, "never checkpointed: the full TTL");
  assert.equal(t.remainingMs(3n), 61_000, "a cleared checkpoint (0) is none");
  // A renewal gives it the full TTL again, as before.
  assert.deepEqual(t.renew(1n), { ttl: 60 });
  assert.equal(t.remainingMs(1n), 60_000);
});

test("without an interval the table never asks for checkpoints", () => {
  const { t, advance } = table();
  t.promote([{ id: 1n, ttl: 600 }], 0);
  t.granted(2n, 600);
  advance(3_600_000);
  assert.deepEqual(t.dueCheckpoints(), []);
  assert.equal(t.nextCheckpoint(), undefined);
});

test("a lease is checkpointed an interval after its grant with its seconds left rounded up, then after each checkpoint applied", () => {
  const { t, advance } = checkpointing(5000);
  t.promote([], 1000);
  t.granted(1n, 20);
  assert.equal(t.nextCheckpoint(), 1_005_000);
  advance(4999);
  assert.deepEqual(t.dueCheckpoints(), []);
  advance(1);
  assert.deepEqual(t.dueCheckpoints(), [{ id: 1n, remainingTtl: 15 }]);
  assert.equal(t.nextCheckpoint(), undefined, "none until this one is applied or lost");
  advance(300);
  t.checkpointed(1n, 15);
  assert.equal(t.nextCheckpoint(), 1_010_300);
  advance(5000);
  assert.deepEqual(t.dueCheckpoints(), [{ id: 1n, remainingTtl: 10 }], "19.7 s -> ceil(9.7) = 10");
  t.checkpointed(1n, 10);
  advance(5000);
  assert.deepEqual(t.dueCheckpoints(), [{ id: 1n, remainingTtl: 5 }]);
  t.checkpointed(1n, 5);
  assert.equal(t.nextCheckpoint(), undefined, "5 s left is not more than the 5 s interval: no further checkpoint (etcd)");
  // A keepalive's clearing checkpoint (0) schedules the next one from the full TTL.
  assert.deepEqual(t.renew(1n), { ttl: 20 });
  t.checkpointed(1n, 0);
  assert.equal(t.nextCheckpoint() !== undefined, true);
});

test("checkpoints skip leases past their deadline or revoking; a lease just renewed is checkpointed an interval later", () => {
  const { t, advance } = checkpointing(2000);
  t.promote([{ id: 1n, ttl: 3 }, { id: 2n, ttl: 10 }, { id: 3n, ttl: 10 }, { id: 4n, ttl: 2 }], 0);
  assert.equal(t.size, 4);
  advance(1999);
  assert.deepEqual(t.renew(3n), { ttl: 10 });
  advance(1);
  // 1: 1 s left; 2: 8 s left; 3: renewed 1 ms ago, its full TTL left; 4: TTL 2 is not above the 2 s interval, never scheduled.
  assert.deepEqual(t.dueCheckpoints(), [{ id: 1n, remainingTtl: 1 }, { id: 2n, remainingTtl: 8 }]);
  assert.equal(t.nextCheckpoint(), 1_004_000, "lease 3 again an interval later");
  advance(2000);
  t.due(); // 1 and 4 are past their deadlines now: revoking
  assert.deepEqual(t.dueCheckpoints(), [{ id: 3n, remainingTtl: 8 }]);
  t.checkpointed(1n, 1);
  t.checkpointed(2n, 8);
  t.checkpointed(3n, 8);
  advance(2000);
  t.due();
  assert.deepEqual(t.dueCheckpoints().map((c) => c.id), [2n, 3n], "lease 1 is revoking, and had 1 s left by its checkpoint: nothing more");
});

test("a checkpoint that was lost is due again an interval later; demotion drops the schedule; at most `limit` per call", () => {
  const { t, advance } = checkpointing(1000);
  t.promote([{ id: 1n, ttl: 30 }, { id: 2n, ttl: 30 }, { id: 3n, ttl: 30 }], 0);
  advance(1000);
  assert.deepEqual(t.dueCheckpoints(2).map((c) => c.id), [1n, 2n]);
  assert.deepEqual(t.dueCheckpoints(2).map((c) => c.id), [3n]);
  t.checkpointsLost([1n, 2n]);
  t.checkpointed(3n, 29);
  advance(1000);
  assert.deepEqual(t.dueCheckpoints().map((c) => c.id), [1n, 2n, 3n]);
  t.revoked(2n);
  t.checkpointsLost([1n, 2n, 3n]);
  assert.equal(t.nextCheckpoint(), 1_003_000);
  t.demote();
  assert.equal(t.nextCheckpoint(), undefined);
  t.checkpointed(1n, 10);
  t.checkpointsLost([1n]);
  assert.deepEqual(t.dueCheckpoints(), [], "a follower schedules nothing");
});
