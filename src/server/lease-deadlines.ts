// The leader's lease deadlines (etcd's primary lessor: lease/lessor.go Renew, Promote,
// Demote, findExpiredLeases). Keepalives only move a deadline here, in the leader's memory:
// they never enter the log, so a renewal costs no entry, no fsync and no apply. Which leases
// exist, and their granted TTLs, stay replicated state (the v3 key space); this table only
// says when the leader will propose revoking each one.
//
// Pure: the clock is injected, nothing here proposes or schedules anything. The lease
// keeper (lease-keeper.ts) asks `due()` and proposes the revocations.
//
// Invariants:
// - Not primary (a follower, or a leader before it applied its term's first entry): the
//   table is empty and every lease lives forever, as etcd's followers hold them.
// - Primary: one deadline per lease the member knew when promoted or applied a grant of
//   since; `#byDeadline` holds exactly one {deadline, id} per entry.
// - A lease handed out by `due()` is "revoking": it can no longer be renewed (its revoke is
//   in the log or about to be); it is offered again only after `retryMs`, in case that
//   proposal was lost.

import { createRequire } from "node:module";
import type { LeaseId } from "../store/v3/index.ts";

// sorted-btree is CommonJS: require() spares the ESM loader's scan of its source (see store/v3/btree.ts).
type BTreeModule = typeof import("sorted-btree");
const BTree = (createRequire(import.meta.url)("sorted-btree") as BTreeModule).default;
type BTree<K, V> = InstanceType<typeof BTree<K, V>>;

/** etcd's expiredLeaseRetryInterval: how long a proposed revocation has before it is proposed again. */
export const REVOKE_RETRY_MS = 3000;

interface Deadline {
  readonly id: LeaseId;
  /** Granted TTL, seconds. */
  readonly ttl: number;
  /** ms on the injected clock: the lease is expired once now >= deadline. */
  deadline: number;
  revoking: boolean;
}

interface DeadlineKey {
  deadline: number;
  id: LeaseId;
}

function compareKeys(a: DeadlineKey, b: DeadlineKey): number {
  if (a.deadline !== b.deadline) return a.deadline < b.deadline ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** What a renewal found: the granted TTL, or that the lease is gone or already expired. */
export type RenewResult = { ttl: number } | { notFound: true };

/** Asked of a table that is not primary: the caller must wait for promotion or go to the leader. */
export class NotPrimaryError extends Error {
  constructor() {
    super("not a primary lessor");
    this.name = "NotPrimaryError";
  }
}

export class LeaseDeadlines {
  readonly #now: () => number;
  readonly #retryMs: number;
  #primary = false;
  #leases = new Map<LeaseId, Deadline>();
  #byDeadline: BTree<DeadlineKey, Deadline> = new BTree<DeadlineKey, Deadline>(undefined, compareKeys);

  constructor(opts: { now: () => number; retryMs?: number }) {
    this.#now = opts.now;
    this.#retryMs = opts.retryMs ?? REVOKE_RETRY_MS;
  }

  get primary(): boolean {
    return this.#primary;
  }

  get size(): number {
    return this.#leases.size;
  }

  /**
   * etcd's Promote: this member leads and has applied every entry of earlier terms. Every
   * lease gets its full TTL again plus `extendMs` (the election timeout), so that clients
   * whose keepalives went to the old leader, or found no leader, do not lose their leases.
   */
  promote(leases: Iterable<{ id: LeaseId; ttl: number }>, extendMs: number): void {
    this.#clear();
    this.#primary = true;
    const now = this.#now();
    for (const l of leases) this.#set({ id: l.id, ttl: l.ttl, deadline: now + extendMs + l.ttl * 1000, revoking: false });
  }

  /** etcd's Demote: no longer the leader; leases live forever here until the next promotion. */
  demote(): void {
    this.#primary = false;
    this.#clear();
  }

  /** A grant was applied: the lease runs its TTL from now (etcd refreshes it at apply). */
  granted(id: LeaseId, ttl: number): void {
    if (!this.#primary) return;
    this.#remove(id);
    this.#set({ id, ttl, deadline: this.#now() + ttl * 1000, revoking: false });
  }

  /** A revocation was applied (by a client, or the expiry this table asked for). */
  revoked(id: LeaseId): void {
    this.#remove(id);
  }

  /**
   * A keepalive: the lease lives `ttl` seconds from now. A lease past its deadline is not
   * found even before its revocation is applied (etcd waits for that revocation, then says
   * not found).
   */
  renew(id: LeaseId): RenewResult {
    if (!this.#primary) throw new NotPrimaryError();
    const l = this.#leases.get(id);
    const now = this.#now();
    if (l === undefined || l.revoking || l.deadline <= now) return { notFound: true };
    this.#byDeadline.delete({ deadline: l.deadline, id });
    l.deadline = now + l.ttl * 1000;
    this.#byDeadline.set({ deadline: l.deadline, id }, l);
    return { ttl: l.ttl };
  }

  /** ms left before the lease expires (never below 0); undefined for a lease not in the table. */
  remainingMs(id: LeaseId): number | undefined {
    if (!this.#primary) throw new NotPrimaryError();
    const l = this.#leases.get(id);
    if (l === undefined) return undefined;
    return l.revoking ? 0 : Math.max(0, l.deadline - this.#now());
  }

  /**
   * The leases whose deadline has passed, earliest first (ties by id), at most `limit`
   * (etcd revokes at most 500 per 500 ms). They become revoking: offered again only after
   * the retry interval, should their revocation not be applied by then.
   */
  due(limit = Number.POSITIVE_INFINITY): LeaseId[] {
    if (!this.#primary) return [];
    const now = this.#now();
    const out: Deadline[] = [];
    for (const [k, l] of this.#byDeadline.entries()) {
      if (k.deadline > now || out.length >= limit) break;
      out.push(l);
    }
    for (const l of out) {
      this.#byDeadline.delete({ deadline: l.deadline, id: l.id });
      l.revoking = true;
      l.deadline = now + this.#retryMs;
      this.#byDeadline.set({ deadline: l.deadline, id: l.id }, l);
    }
    return out.map((l) => l.id);
  }

  /** The earliest deadline (revoking leases included: their retry time); undefined when none. */
  nextDeadline(): number | undefined {
    return this.#byDeadline.minKey()?.deadline;
  }

  #set(l: Deadline): void {
    this.#leases.set(l.id, l);
    this.#byDeadline.set({ deadline: l.deadline, id: l.id }, l);
  }

  #remove(id: LeaseId): void {
    const l = this.#leases.get(id);
    if (l === undefined) return;
    this.#byDeadline.delete({ deadline: l.deadline, id });
    this.#leases.delete(id);
  }

  #clear(): void {
    this.#leases.clear();
    this.#byDeadline.clear();
  }
}
