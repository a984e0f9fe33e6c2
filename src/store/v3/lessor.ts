// The lease table (etcd's lessor), pure: which leases exist, their granted TTLs and keys,
// the same on every member. When a lease expires is not decided here: the leader keeps
// the deadlines in memory, renews them without the log and proposes the revocation of a
// lease past its deadline (server/lease-keeper.ts). `expiry` (the entry's time + TTL at
// grant) is replicated state for older logs, whose keepalives (`renew`), promotions
// (`refreshAll`) and SYNC expiries (`expired`) went through the log and replay as before.
//
// A lease checkpoint (etcd's LeaseCheckpoint, --experimental-enable-lease-checkpoint) sets
// a lease's remaining TTL as the leader saw it; a new leader starts the lease from that
// instead of its full TTL. 0 clears it (a keepalive gave the lease its full TTL again).
//
// Which keys use a lease is not part of the image: it follows from the live keys of the
// store and is rebuilt on restore.

import { BTree } from "./btree.ts";
import { V3Errors } from "../../api/v3-errors.ts";
import type { LeaseHooks } from "./mvcc-store.ts";
import type { KeyId } from "./keys.ts";
import { compareKeyIds } from "./keys.ts";
import type { LeaseId, LeaseStatus } from "./types.ts";
import type { LeaseRecord, MvccBackend } from "./backend.ts";
import { NO_LEASE } from "./types.ts";

/** etcd's minimum TTL with the default 1 s election timeout: ceil(1.5 s). */
export const MIN_LEASE_TTL = 2;
/** etcd's MaxLeaseTTL (seconds). */
export const MAX_LEASE_TTL = 9_000_000_000;

interface Lease {
  readonly id: LeaseId;
  /** Granted TTL in seconds (>= MIN_LEASE_TTL). */
  readonly ttl: number;
  /** ms since the epoch; the lease is due when expiry <= now. */
  expiry: number;
  /** Seconds left at the last checkpoint; 0: none in effect. */
  remainingTtl: number;
  readonly keys: Set<KeyId>;
}

interface ExpiryKey {
  expiry: number;
  id: LeaseId;
}

function compareExpiry(a: ExpiryKey, b: ExpiryKey): number {
  if (a.expiry !== b.expiry) return a.expiry < b.expiry ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function compareIds(a: LeaseId, b: LeaseId): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export interface LessorImage {
  format: "kvctl-lessor/1";
  /** By id; id as a decimal string. */
  leases: { id: string; ttl: number; expiry: number }[];
}

/** The part of the backend the lessor writes to. */
export type LeaseSink = Pick<MvccBackend, "putLease" | "checkpointLease" | "removeLease">;

export class Lessor implements LeaseHooks {
  #leases = new Map<LeaseId, Lease>();
  /** Told of every grant, renewal and removal (the backend's lease table); none in tests. */
  #sink: LeaseSink | undefined;

  constructor(opts: { sink?: LeaseSink } = {}) {
    this.#sink = opts.sink;
  }

  /** The leases a backend kept (attach their keys afterwards from the store). */
  static restore(leases: Iterable<LeaseRecord>, opts: { sink?: LeaseSink } = {}): Lessor {
    const lessor = new Lessor(opts);
    for (const l of leases) {
      if (l.id === NO_LEASE || lessor.#leases.has(l.id)) throw new Error(`Cannot restore leases: bad lease id ${l.id}`);
      const lease: Lease = { id: l.id, ttl: l.ttl, expiry: l.expiry, remainingTtl: l.remainingTtl ?? 0, keys: new Set() };
      lessor.#leases.set(l.id, lease);
      lessor.#byExpiry.set({ expiry: lease.expiry, id: l.id }, lease);
    }
    return lessor;
  }
  /** Invariant: holds exactly one entry {lease.expiry, lease.id} per lease. */
  #byExpiry: BTree<ExpiryKey, Lease> = new BTree<ExpiryKey, Lease>(undefined, compareExpiry);

  /**
   * Grants lease `id` (chosen by the proposer, never 0) for `ttl` seconds from `now`.
   * A TTL below the minimum is raised to it, like etcd.
   */
  grant(id: LeaseId, ttl: number, now: number): LeaseStatus {
    if (id === NO_LEASE) throw V3Errors.leaseNotFound();
    if (ttl > MAX_LEASE_TTL) throw V3Errors.leaseTTLTooLarge();
    if (this.#leases.has(id)) throw V3Errors.leaseExist();
    const granted = Math.max(MIN_LEASE_TTL, Math.trunc(ttl));
    const lease: Lease = { id, ttl: granted, expiry: now + granted * 1000, remainingTtl: 0, keys: new Set() };
    this.#leases.set(id, lease);
    this.#byExpiry.set({ expiry: lease.expiry, id }, lease);
    this.#sink?.putLease(status(lease));
    return status(lease);
  }

  exists(id: LeaseId): boolean {
    return this.#leases.has(id);
  }

  /**
   * Keepalive: the lease lives `ttl` seconds from `now`; answers the granted TTL. A lease
   * already due is reported as not found (etcd waits for its revocation and says so).
   */
  renew(id: LeaseId, now: number): number {
    const lease = this.#leases.get(id);
    if (lease === undefined || lease.expiry <= now) throw V3Errors.leaseNotFound();
    this.#moveExpiry(lease, now + lease.ttl * 1000);
    return lease.ttl;
  }

  /**
   * etcd's Promote: a new leader gives every lease its full TTL again, plus `extendMs`,
   * so that clients get a chance to renew after an election.
   */
  refreshAll(now: number, opts: { extendMs: number }): void {
    for (const lease of [...this.#leases.values()]) this.#moveExpiry(lease, now + opts.extendMs + lease.ttl * 1000);
  }

  /**
   * etcd's Checkpoint: the lease had `remainingTtl` seconds left when the leader looked (0:
   * its full TTL again). An unknown lease is skipped, as in etcd (revoked meanwhile).
   */
  checkpoint(id: LeaseId, remainingTtl: number): void {
    const lease = this.#leases.get(id);
    if (lease === undefined) return;
    lease.remainingTtl = Number.isSafeInteger(remainingTtl) && remainingTtl > 0 ? remainingTtl : 0;
    this.#sink?.checkpointLease(status(lease));
  }

  /** The last checkpoint's seconds left (0: none in effect); undefined for an unknown lease. */
  remainingTtl(id: LeaseId): number | undefined {
    return this.#leases.get(id)?.remainingTtl;
  }

  /** Seconds left (truncated, never below 0) and the granted TTL; undefined for an unknown lease. */
  timeToLive(id: LeaseId, now: number): { ttl: number; grantedTtl: number } | undefined {
    const lease = this.#leases.get(id);
    if (lease === undefined) return undefined;
    return { ttl: Math.max(0, Math.trunc((lease.expiry - now) / 1000)), grantedTtl: lease.ttl };
  }

  /** Every lease, by id. */
  leases(): LeaseStatus[] {
    return [...this.#leases.values()].sort((a, b) => compareIds(a.id, b.id)).map(status);
  }

  /** The leases due at `now` (expiry <= now), by id. */
  expired(now: number): LeaseId[] {
    const due: LeaseId[] = [];
    for (const [k] of this.#byExpiry.entries()) {
      if (k.expiry > now) break;
      due.push(k.id);
    }
    return due.sort(compareIds);
  }

  attach(id: LeaseId, key: KeyId): void {
    const lease = this.#leases.get(id);
    if (lease === undefined) throw new Error(`lessor: attach to unknown lease ${id}`);
    lease.keys.add(key);
  }

  detach(id: LeaseId, key: KeyId): void {
    this.#leases.get(id)?.keys.delete(key);
  }

  /** The keys attached to lease `id`, in key order (empty for an unknown lease). */
  keysOf(id: LeaseId): KeyId[] {
    const lease = this.#leases.get(id);
    return lease === undefined ? [] : [...lease.keys].sort(compareKeyIds);
  }

  /** Forgets lease `id` (its keys must have been deleted first). */
  remove(id: LeaseId): void {
    const lease = this.#leases.get(id);
    if (lease === undefined) return;
    this.#byExpiry.delete({ expiry: lease.expiry, id });
    this.#leases.delete(id);
    this.#sink?.removeLease(id);
  }

  get size(): number {
    return this.#leases.size;
  }

  /** The earliest expiry of any lease (ms), undefined without leases. */
  nextExpiry(): number | undefined {
    return this.#byExpiry.minKey()?.expiry;
  }

  toImage(): LessorImage {
    return {
      format: "kvctl-lessor/1",
      leases: this.leases().map((l) => ({ id: l.id.toString(), ttl: l.ttl, expiry: l.expiry })),
    };
  }

  /** Restores the leases; attach their keys afterwards from the store. */
  static fromImage(image: LessorImage, sink?: LeaseSink): Lessor {
    if (image === null || typeof image !== "object" || image.format !== "kvctl-lessor/1" || !Array.isArray(image.leases)) {
      throw new Error("Cannot restore lessor image: unknown format");
    }
    const lessor = new Lessor();
    for (const l of image.leases) {
      if (typeof l?.id !== "string" || !/^-?\d+$/.test(l.id) || !Number.isFinite(l.ttl) || !Number.isFinite(l.expiry)) {
        throw new Error("Cannot restore lessor image: bad lease");
      }
      const id = BigInt(l.id);
      if (id === NO_LEASE || lessor.#leases.has(id)) throw new Error(`Cannot restore lessor image: bad lease id ${l.id}`);
      const lease: Lease = { id, ttl: l.ttl, expiry: l.expiry, remainingTtl: 0, keys: new Set() };
      lessor.#leases.set(id, lease);
      lessor.#byExpiry.set({ expiry: lease.expiry, id }, lease);
    }
    if (sink !== undefined) {
      lessor.#sink = sink;
      for (const lease of lessor.#leases.values()) sink.putLease(status(lease));
    }
    return lessor;
  }

  #moveExpiry(lease: Lease, expiry: number): void {
    this.#byExpiry.delete({ expiry: lease.expiry, id: lease.id });
    lease.expiry = expiry;
    this.#byExpiry.set({ expiry, id: lease.id }, lease);
    this.#sink?.putLease(status(lease));
  }
}

function status(lease: Lease): LeaseStatus {
  const s: LeaseStatus = { id: lease.id, ttl: lease.ttl, expiry: lease.expiry };
  if (lease.remainingTtl > 0) s.remainingTtl = lease.remainingTtl;
  return s;
}
