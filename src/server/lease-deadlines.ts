// The leader's lease deadlines (etcd's primary lessor: lease/lessor.go Renew, Promote,
// Demote, findExpiredLeases). Keepalives only move a deadline here, in the leader's memory:
// they never enter the log, so a renewal costs no entry, no fsync and no apply. Which leases
// exist, and their granted TTLs, stay replicated state (the v3 key space); this table only
// says when the leader will propose revoking each one.
//
// Pure: the clock is injected, nothing here proposes or schedules anything. The lease
// keeper (lease-keeper.ts) asks `due()` and proposes the revocations.
//
// With lease checkpoints (--experimental-enable-lease-checkpoint; etcd's
// scheduleCheckpointIfNeeded, findDueScheduledCheckpoints) the table also says when to
// tell the other members how long each lease has left: a lease whose TTL (or last
// checkpoint) exceeds the interval gets a checkpoint one interval after its grant, the
// promotion, or its last checkpoint's apply. A new leader then starts each lease from its
// last checkpoint instead of its full TTL.
//
// Invariants:
// - Not primary (a follower, or a leader before it applied its term's first entry): the
//   table is empty and every lease lives forever, as etcd's followers hold them.
// - Primary: one deadline per lease the member knew when promoted or applied a grant of
//   since; `#byDeadline` holds exactly one {deadline, id} per entry.
// - A lease handed out by `due()` is "revoking": it can no longer be renewed (its revoke is
//   in the log or about to be); it is offered again only after `retryMs`, in case that
//   proposal was lost.
// - `#byCheckpoint` holds exactly one {checkpointAt, id} per lease with a checkpoint
//   scheduled; a lease handed out by `dueCheckpoints()` has none until its checkpoint is
//   applied (`checkpointed`) or lost (`checkpointsLost`).

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
  /** The replicated remaining TTL of the last checkpoint applied, seconds; 0: none. */
  remainingTtl: number;
  /** ms on the injected clock of the next checkpoint; undefined: none scheduled. */
  checkpointAt: number | undefined;
}

interface DeadlineKey {
  deadline: number;
  id: LeaseId;
}

function compareKeys(a: DeadlineKey, b: DeadlineKey): number {
  if (a.deadline !== b.deadline) return a.deadline < b.deadline ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** A lease's seconds left, for a LeaseCheckpoint proposal. */
export interface LeaseCheckpoint {
  id: LeaseId;
  remainingTtl: number;
}

/** What a lease is promoted with: its granted TTL and, if a checkpoint is in effect, its seconds left then. */
export interface PromotedLease {
  id: LeaseId;
  ttl: number;
  remainingTtl?: number;
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
  /** 0: no checkpoints (etcd without --experimental-enable-lease-checkpoint). */
  readonly #checkpointMs: number;
  #primary = false;
  #leases = new Map<LeaseId, Deadline>();
  #byDeadline: BTree<DeadlineKey, Deadline> = new BTree<DeadlineKey, Deadline>(undefined, compareKeys);
  /** Keyed by checkpointAt (the `deadline` field of the key). */
  #byCheckpoint: BTree<DeadlineKey, Deadline> = new BTree<DeadlineKey, Deadline>(undefined, compareKeys);

  /** `checkpointIntervalMs`: how often each lease's seconds left are checkpointed (absent or 0: never). */
  constructor(opts: { now: () => number; retryMs?: number; checkpointIntervalMs?: number }) {
    this.#now = opts.now;
    this.#retryMs = opts.retryMs ?? REVOKE_RETRY_MS;
    this.#checkpointMs = Math.max(0, opts.checkpointIntervalMs ?? 0);
  }

  get primary(): boolean {
    return this.#primary;
  }

  get size(): number {
    return this.#leases.size;
  }

  /**
   * etcd's Promote: this member leads and has applied every entry of earlier terms. Every
   * lease gets its full TTL again, or the seconds left at its last checkpoint, plus
   * `extendMs` (the election timeout), so that clients whose keepalives went to the old
   * leader, or found no leader, do not lose their leases.
   */
  promote(leases: Iterable<PromotedLease>, extendMs: number): void {
    this.#clear();
    this.#primary = true;
    const now = this.#now();
    for (const l of leases) {
      const remainingTtl = l.remainingTtl !== undefined && l.remainingTtl > 0 ? l.remainingTtl : 0;
      const d: Deadline = { id: l.id, ttl: l.ttl, deadline: now + extendMs + (remainingTtl || l.ttl) * 1000, revoking: false, remainingTtl, checkpointAt: undefined };
      this.#set(d);
      this.#scheduleCheckpoint(d, now);
    }
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
    const now = this.#now();
    const d: Deadline = { id, ttl, deadline: now + ttl * 1000, revoking: false, remainingTtl: 0, checkpointAt: undefined };
    this.#set(d);
    this.#scheduleCheckpoint(d, now);
  }

  /**
   * A checkpoint was applied: the lease's replicated seconds left are now `remainingTtl` (0:
   * none). Its deadline here stays; the next checkpoint is one interval away if the lease
   * still has more than an interval to live by that count (etcd's Checkpoint on the primary).
   */
  checkpointed(id: LeaseId, remainingTtl: number): void {
    if (!this.#primary) return;
    const d = this.#leases.get(id);
    if (d === undefined) return;
    d.remainingTtl = remainingTtl > 0 ? remainingTtl : 0;
    this.#scheduleCheckpoint(d, this.#now());
  }

  /**
   * The checkpoints due now, earliest first (ties by id), at most `limit`: each lease's
   * seconds left, rounded up (etcd's findDueScheduledCheckpoints). A lease past its deadline
   * or revoking gets none. A lease renewed less than a second ago (as much left as its TTL)
   * needs none now and gets its next one an interval later (etcd drops it from its schedule
   * until the next promotion).
   */
  dueCheckpoints(limit = Number.POSITIVE_INFINITY): LeaseCheckpoint[] {
    if (!this.#primary || this.#checkpointMs === 0) return [];
    const now = this.#now();
    const due: Deadline[] = [];
    for (const [k, d] of this.#byCheckpoint.entries()) {
      if (k.deadline > now || due.length >= limit) break;
      due.push(d);
    }
    const out: LeaseCheckpoint[] = [];
    for (const d of due) {
      this.#unscheduleCheckpoint(d);
      if (d.revoking || d.deadline <= now) continue;
      const remainingTtl = Math.ceil((d.deadline - now) / 1000);
      if (remainingTtl >= d.ttl) {
        this.#setCheckpoint(d, now + this.#checkpointMs);
        continue;
      }
      out.push({ id: d.id, remainingTtl });
    }
    return out;
  }

  /** Checkpoints that were proposed but not applied (leadership lost, timeout): due again an interval from now. */
  checkpointsLost(ids: Iterable<LeaseId>): void {
    if (!this.#primary || this.#checkpointMs === 0) return;
    const now = this.#now();
    for (const id of ids) {
      const d = this.#leases.get(id);
      if (d !== undefined && d.checkpointAt === undefined) this.#setCheckpoint(d, now + this.#checkpointMs);
    }
  }

  /** The earliest checkpoint time; undefined when none is scheduled. */
  nextCheckpoint(): number | undefined {
    return this.#byCheckpoint.minKey()?.deadline;
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
    this.#unscheduleCheckpoint(l);
    this.#leases.delete(id);
  }

  #clear(): void {
    this.#leases.clear();
    this.#byDeadline.clear();
    this.#byCheckpoint.clear();
  }

  /**
   * etcd's scheduleCheckpointIfNeeded: the next checkpoint one interval from `now`, when the
   * lease's seconds left by the last count (its checkpoint, else its TTL) exceed the
   * interval's whole seconds; none otherwise.
   */
  #scheduleCheckpoint(d: Deadline, now: number): void {
    this.#unscheduleCheckpoint(d);
    if (this.#checkpointMs === 0) return;
    const left = d.remainingTtl > 0 ? d.remainingTtl : d.ttl;
    if (left > Math.trunc(this.#checkpointMs / 1000)) this.#setCheckpoint(d, now + this.#checkpointMs);
  }

  #setCheckpoint(d: Deadline, at: number): void {
    this.#unscheduleCheckpoint(d);
    d.checkpointAt = at;
    this.#byCheckpoint.set({ deadline: at, id: d.id }, d);
  }

  #unscheduleCheckpoint(d: Deadline): void {
    if (d.checkpointAt === undefined) return;
    this.#byCheckpoint.delete({ deadline: d.checkpointAt, id: d.id });
    d.checkpointAt = undefined;
  }
}
