// The Lock and Election services' steps: the pure builders, then the services on a real key
// space and watch hub behind a minimal V3Backend (writes are applied a turn later, as a
// proposal would be). The same scenarios against real members, kvctl and etcd, are in
// test/integration/v3-lock-election.test.ts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { GrpcCode, V3Error, V3Errors } from "../../api/v3-errors.ts";
import { SortOrder, SortTarget, V3KeySpace, WatchHub, type LeaseId, type TxnResponse, type WriteResult } from "../../store/v3/index.ts";
import type { V3Backend, V3CallContext, V3WatchRegistration } from "./v3-backend.ts";
import {
  ErrElectionNoLeader,
  ErrElectionNotLeader,
  ErrMissingLeaderKey,
  SESSION_TTL_SECONDS,
  V3Concurrency,
  asClientError,
  firstCreated,
  goHex,
  lockPosition,
  lockTxn,
  ownKey,
  prefixOf,
  type ConcurrencyCall,
  type LeaderResult,
} from "./v3-concurrency.ts";

const b = (s: string): Buffer => Buffer.from(s);

describe("pure parts", () => {
  test("keys are <name>/<lease in Go's %x>, negative leases with a sign", () => {
    assert.equal(goHex(0x694d71ddacfda227n), "694d71ddacfda227");
    assert.equal(goHex(-5n), "-5");
    assert.equal(ownKey(prefixOf(b("my-lock")), 255n).toString(), "my-lock/ff");
    assert.equal(ownKey(prefixOf(b("")), 1n).toString(), "/1");
  });

  test("Mutex.Lock's txn: create the key if absent, else read it; read the oldest key of the prefix either way", () => {
    const t = lockTxn(b("l/"), b("l/a"), 10n);
    assert.deepEqual(t.compare, [{ key: b("l/a"), rangeEnd: Buffer.alloc(0), result: 0, target: 1, createRevision: 0 }]);
    assert.deepEqual(t.success[0], { put: { key: b("l/a"), value: Buffer.alloc(0), lease: 10n, prevKv: false, ignoreValue: false, ignoreLease: false } });
    const owner = firstCreated(b("l/"));
    assert.deepEqual([owner.key.toString(), owner.rangeEnd.toString(), owner.limit, owner.sortTarget, owner.sortOrder], ["l/", "l0", 1, SortTarget.CREATE, SortOrder.ASCEND]);
    assert.deepEqual(t.success[1], { range: owner });
    assert.deepEqual(t.failure, [{ range: { ...owner, key: b("l/a"), rangeEnd: Buffer.alloc(0), limit: 0, sortTarget: 0, sortOrder: 0 } }, { range: owner }]);
    const last = firstCreated(b("l/"), "last", 41);
    assert.deepEqual([last.sortOrder, last.maxCreateRevision, last.limit], [SortOrder.DESCEND, 41, 1]);
  });

  test("lockPosition: the key's create revision (the txn's, or the existing key's) against the oldest key", () => {
    const kv = (createRevision: number) => ({ key: b("k"), createRevision, modRevision: createRevision, version: 1, value: b(""), lease: 1n });
    const range = (kvs: ReturnType<typeof kv>[]) => ({ range: { revision: 9, kvs, more: false, count: kvs.length } });
    const created = (owner: number | undefined): TxnResponse => ({ revision: 9, succeeded: true, responses: [{ put: { revision: 9 } }, range(owner === undefined ? [] : [kv(owner)])] });
    assert.deepEqual(lockPosition(created(9)), { myRev: 9, owner: true });
    assert.deepEqual(lockPosition(created(undefined)), { myRev: 9, owner: true });
    assert.deepEqual(lockPosition(created(4)), { myRev: 9, owner: false });
    const existing: TxnResponse = { revision: 9, succeeded: false, responses: [range([kv(6)]), range([kv(4)])] };
    assert.deepEqual(lockPosition(existing), { myRev: 6, owner: false });
  });

  test("an inner call's error comes back as code 2 with its text (clientv3's toErr)", () => {
    const e = asClientError(V3Errors.leaseNotFound());
    assert.deepEqual([e.code, e.message], [GrpcCode.Unknown, "etcdserver: requested lease not found"]);
    assert.deepEqual([asClientError(new Error("boom")).code, asClientError(new Error("boom")).message], [2, "boom"]);
  });
});

/** A member in miniature: a key space, its hub, writes applied a turn later. */
class MiniBackend {
  readonly ks = new V3KeySpace();
  readonly hub = new WatchHub(this.ks);
  readonly tokens: Array<string | undefined> = [];
  #nextWatch = 1;
  #nextLease = 0x100n;

  header(revision?: number): { clusterId: string; memberId: string; revision: number; raftTerm: number } {
    return { clusterId: "1", memberId: "2", revision: revision ?? this.ks.revision, raftTerm: 3 };
  }

  async #apply<R>(ctx: V3CallContext, write: () => WriteResult<R>): Promise<R> {
    this.tokens.push(ctx.token);
    await new Promise((r) => setImmediate(r));
    const w = write();
    if (w.changes !== undefined) this.hub.notify(w.changes);
    return w.response;
  }

  async range(req: Parameters<V3Backend["range"]>[0], ctx: V3CallContext): ReturnType<V3Backend["range"]> {
    this.tokens.push(ctx.token);
    await new Promise((r) => setImmediate(r));
    return this.ks.range(req);
  }
  txn(req: Parameters<V3Backend["txn"]>[0], ctx: V3CallContext): ReturnType<V3Backend["txn"]> {
    return this.#apply(ctx, () => this.ks.txn(req));
  }
  deleteRange(req: Parameters<V3Backend["deleteRange"]>[0], ctx: V3CallContext): ReturnType<V3Backend["deleteRange"]> {
    return this.#apply(ctx, () => this.ks.deleteRange(req));
  }
  put(req: Parameters<V3Backend["put"]>[0], ctx: V3CallContext): ReturnType<V3Backend["put"]> {
    return this.#apply(ctx, () => this.ks.put(req));
  }
  async leaseGrant(req: { id: LeaseId; ttl: number }, ctx: V3CallContext): ReturnType<V3Backend["leaseGrant"]> {
    this.tokens.push(ctx.token);
    return this.ks.leaseGrant({ id: req.id === 0n ? this.#nextLease++ : req.id, ttl: req.ttl }, Date.now());
  }
  leaseRevoke(id: LeaseId, ctx: V3CallContext): ReturnType<V3Backend["leaseRevoke"]> {
    return this.#apply(ctx, () => this.ks.leaseRevoke(id));
  }
  async watch(create: Parameters<V3Backend["watch"]>[0], sink: Parameters<V3Backend["watch"]>[1], ctx: V3CallContext): Promise<V3WatchRegistration> {
    this.tokens.push(ctx.token);
    const id = this.#nextWatch++;
    const status = this.hub.watch({ ...create, id }, sink);
    return { id, status, cancel: () => void this.hub.cancel(id), resume: () => void this.hub.resume(id) };
  }
}

function setup(): { m: MiniBackend; svc: V3Concurrency; call: (token?: string) => ConcurrencyCall & { end(): void } } {
  const m = new MiniBackend();
  const svc = new V3Concurrency(m as unknown as V3Backend);
  const call = (token?: string): ConcurrencyCall & { end(): void } => {
    const ac = new AbortController();
    return { ctx: { token }, signal: ac.signal, end: () => ac.abort() };
  };
  return { m, svc, call };
}

/** Whether `p` settled by the time the key space is idle again (a few turns). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  return done;
}

const keysOf = (m: MiniBackend, prefix: string): string[] => m.ks.range(firstCreated(b(prefix))).kvs.length === 0 ? [] : m.ks.range({ ...firstCreated(b(prefix)), limit: 0 }).kvs.map((kv) => kv.key.toString());

describe("Lock", () => {
  test("the second locker waits until the first unlocks, the third until the second's lease is revoked", async () => {
    const { m, svc, call } = setup();
    for (const id of [1n, 2n, 3n]) m.ks.leaseGrant({ id, ttl: 60 }, Date.now());
    const first = await svc.lock({ name: b("q"), lease: 1n }, call());
    assert.equal(first.key.toString(), "q/1");
    const second = svc.lock({ name: b("q"), lease: 2n }, call());
    assert.equal(await settled(second), false);
    const third = svc.lock({ name: b("q"), lease: 3n }, call());
    assert.equal(await settled(third), false);
    assert.deepEqual(keysOf(m, "q/"), ["q/1", "q/2", "q/3"]);

    await svc.unlock(first.key, call());
    const got = await second;
    assert.equal(got.key.toString(), "q/2");
    // The header is the read that found no older key: after the delete.
    assert.equal(got.revision, m.ks.revision);
    assert.equal(await settled(third), false);
    await m.leaseRevoke(2n, { token: undefined });
    assert.equal((await third).key.toString(), "q/3");
    assert.equal(m.hub.size, 0, "no watcher left");
  });

  test("locking again with the same lease is the same key at once; lease 0 grants a 60 s lease", async () => {
    const { m, svc, call } = setup();
    m.ks.leaseGrant({ id: 7n, ttl: 60 }, Date.now());
    const a = await svc.lock({ name: b("l"), lease: 7n }, call());
    const again = await svc.lock({ name: b("l"), lease: 7n }, call());
    assert.deepEqual([again.key.toString(), again.revision], [a.key.toString(), a.revision]);
    const own = svc.lock({ name: b("own"), lease: 0n }, call());
    const r = await own;
    const lease = m.ks.leases().find((l) => l.id !== 7n);
    assert.ok(lease !== undefined);
    assert.equal(lease.ttl, SESSION_TTL_SECONDS);
    assert.equal(r.key.toString(), `own/${lease.id.toString(16)}`);
  });

  test("a missing lease: code 2, etcd's text; an empty key to unlock: code 2 'key is not provided'", async () => {
    const { svc, call } = setup();
    await assert.rejects(svc.lock({ name: b("l"), lease: 99n }, call()), new V3Error(2, "etcdserver: requested lease not found"));
    await assert.rejects(svc.unlock(Buffer.alloc(0), call()), new V3Error(2, "etcdserver: key is not provided"));
  });

  test("a waiting locker whose call ends takes its key back and leaves no watcher", async () => {
    const { m, svc, call } = setup();
    m.ks.leaseGrant({ id: 1n, ttl: 60 }, Date.now());
    m.ks.leaseGrant({ id: 2n, ttl: 60 }, Date.now());
    await svc.lock({ name: b("q"), lease: 1n }, call());
    const c = call();
    const waiting = svc.lock({ name: b("q"), lease: 2n }, c);
    assert.equal(await settled(waiting), false);
    assert.equal(m.hub.size, 1);
    c.end();
    await assert.rejects(waiting, new V3Error(2, "context canceled"));
    assert.deepEqual(keysOf(m, "q/"), ["q/1"]);
    assert.equal(m.hub.size, 0);
  });

  test("a call that ends while the lock's txn is in flight still deletes the key the txn made", async () => {
    const { m, svc, call } = setup();
    m.ks.leaseGrant({ id: 1n, ttl: 60 }, Date.now());
    const c = call();
    const p = svc.lock({ name: b("q"), lease: 1n }, c);
    c.end();
    await assert.rejects(p, new V3Error(2, "context canceled"));
    assert.deepEqual(keysOf(m, "q/"), []);
  });

  test("a txn over --max-request-bytes: code 2 'request is too large', nothing written", async () => {
    const m = new MiniBackend();
    const svc = new V3Concurrency(m as unknown as V3Backend, { maxRequestBytes: 1024 });
    m.ks.leaseGrant({ id: 1n, ttl: 60 }, Date.now());
    const c = { ctx: { token: undefined }, signal: new AbortController().signal };
    await assert.rejects(svc.campaign({ name: b("e"), lease: 1n, value: Buffer.alloc(1024) }, c), new V3Error(2, "etcdserver: request is too large"));
    assert.deepEqual(keysOf(m, "e/"), []);
    assert.equal((await svc.campaign({ name: b("e"), lease: 1n, value: Buffer.alloc(900) }, c)).leader.key.toString(), "e/1");
  });

  test("every inner call is made as the caller", async () => {
    const { m, svc, call } = setup();
    m.ks.leaseGrant({ id: 1n, ttl: 60 }, Date.now());
    await svc.lock({ name: b("q"), lease: 1n }, call("tok-a"));
    await svc.unlock(b("q/1"), call("tok-a"));
    assert.ok(m.tokens.length >= 2);
    assert.deepEqual(new Set(m.tokens), new Set(["tok-a"]));
  });
});

describe("Election", () => {
  test("Campaign, Leader, Proclaim, Resign; a second campaigner leads once the first resigns", async () => {
    const { m, svc, call } = setup();
    m.ks.leaseGrant({ id: 1n, ttl: 60 }, Date.now());
    m.ks.leaseGrant({ id: 2n, ttl: 60 }, Date.now());
    await assert.rejects(svc.leader(b("e"), call()), new V3Error(2, ErrElectionNoLeader));
    const one = await svc.campaign({ name: b("e"), lease: 1n, value: b("one") }, call());
    assert.deepEqual([one.leader.key.toString(), one.leader.rev, one.leader.lease, one.leader.name.toString()], ["e/1", one.revision, 1n, "e"]);
    const two = svc.campaign({ name: b("e"), lease: 2n, value: b("two") }, call());
    assert.equal(await settled(two), false);

    await svc.proclaim(one.leader, b("one-b"), call());
    const l = await svc.leader(b("e"), call());
    assert.deepEqual([l.kv.key.toString(), l.kv.value.toString(), l.revision], ["e/1", "one-b", m.ks.revision]);
    await assert.rejects(svc.proclaim({ ...one.leader, rev: one.leader.rev + 1 }, b("x"), call()), new V3Error(2, ErrElectionNotLeader));
    await assert.rejects(svc.proclaim(undefined, b("x"), call()), new V3Error(2, ErrMissingLeaderKey));
    await assert.rejects(svc.resign(undefined, call()), new V3Error(2, ErrMissingLeaderKey));

    // A stale resignation deletes nothing and is not an error.
    await svc.resign({ ...one.leader, rev: 1 }, call());
    assert.equal(await settled(two), false);
    await svc.resign(one.leader, call());
    const won = await two;
    assert.equal(won.leader.key.toString(), "e/2");
    // Campaign's header is its first txn's, not the wait's.
    assert.equal(won.revision, won.leader.rev);
    assert.ok(won.revision < m.ks.revision);
    await assert.rejects(svc.proclaim(one.leader, b("late"), call()), new V3Error(2, ErrElectionNotLeader));
  });

  test("campaigning again with the same lease and another value proclaims it; the header is the first txn's", async () => {
    const { m, svc, call } = setup();
    m.ks.leaseGrant({ id: 1n, ttl: 60 }, Date.now());
    const a = await svc.campaign({ name: b("e"), lease: 1n, value: b("a") }, call());
    const again = await svc.campaign({ name: b("e"), lease: 1n, value: b("b") }, call());
    assert.equal(again.leader.rev, a.leader.rev);
    assert.equal(again.revision, a.revision);
    assert.equal((await svc.leader(b("e"), call())).kv.value.toString(), "b");
  });

  test("a waiting campaigner whose call ends resigns", async () => {
    const { m, svc, call } = setup();
    m.ks.leaseGrant({ id: 1n, ttl: 60 }, Date.now());
    m.ks.leaseGrant({ id: 2n, ttl: 60 }, Date.now());
    await svc.campaign({ name: b("e"), lease: 1n, value: b("one") }, call());
    const c = call();
    const p = svc.campaign({ name: b("e"), lease: 2n, value: b("two") }, c);
    assert.equal(await settled(p), false);
    c.end();
    await assert.rejects(p, new V3Error(2, "context canceled"));
    assert.deepEqual(keysOf(m, "e/"), ["e/1"]);
    assert.equal(m.hub.size, 0);
  });

  test("Observe: the first leader once there is one, its new values, then the next leader; nothing left when the call ends", async () => {
    const { m, svc, call } = setup();
    m.ks.leaseGrant({ id: 1n, ttl: 60 }, Date.now());
    m.ks.leaseGrant({ id: 2n, ttl: 60 }, Date.now());
    const seen: string[] = [];
    const c = call();
    const done = svc.observe(b("e"), c, {
      send: (r: LeaderResult) => {
        seen.push(`${r.kv.value.toString()}@${r.revision}`);
        return true;
      },
      drained: () => Promise.resolve(),
    });
    await settled(done);
    const one = await svc.campaign({ name: b("e"), lease: 1n, value: b("one") }, call());
    const two = svc.campaign({ name: b("e"), lease: 2n, value: b("two") }, call());
    await settled(two);
    await svc.proclaim(one.leader, b("one-b"), call());
    await svc.resign(one.leader, call());
    const won = await two;
    await svc.proclaim(won.leader, b("two-b"), call());
    await settled(done);
    c.end();
    await done;
    const r = one.leader.rev;
    assert.deepEqual(seen, [`one@${r}`, `one-b@${r + 2}`, `two@${r + 3}`, `two-b@${r + 4}`]);
    assert.equal(m.hub.size, 0);
  });

  test("Observe with a client that does not read: the watcher pauses and catches up, nothing is lost", async () => {
    const { m, svc, call } = setup();
    m.ks.leaseGrant({ id: 1n, ttl: 60 }, Date.now());
    const one = await svc.campaign({ name: b("e"), lease: 1n, value: b("v0") }, call());
    const seen: string[] = [];
    let full = true;
    let release: () => void = () => undefined;
    const c = call();
    const done = svc.observe(b("e"), c, {
      send: (r) => {
        seen.push(r.kv.value.toString());
        return !full;
      },
      drained: () => new Promise<void>((r) => (release = r)),
    });
    await settled(done);
    for (let i = 1; i <= 3; i++) await svc.proclaim(one.leader, b(`v${i}`), call());
    assert.deepEqual(seen, ["v0"], "held while the client's buffer is full");
    full = false;
    release();
    await settled(done);
    assert.deepEqual(seen, ["v0", "v1", "v2", "v3"]);
    c.end();
    await done;
    assert.equal(m.hub.size, 0);
  });
});
