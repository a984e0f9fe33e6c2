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
