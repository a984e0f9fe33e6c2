// The v3 key space as the server's apply function sees it: the MVCC store and the lease
// table behind one object, driven only by log entries. Every method that depends on time
// takes `now` (ms since the epoch) from the entry being applied, so every member computes
// the same state. Writes answer the events they produced; the server hands them to the
// WatchHub (notify) after applying.

import { createHash } from "node:crypto";
import { V3Errors } from "../../api/v3-errors.ts";
import { keyBytes } from "./keys.ts";
import type { KeyIndex } from "./key-index.ts";
import { Lessor } from "./lessor.ts";
import type { LessorImage } from "./lessor.ts";
import type { MvccBackend, MvccLoaded } from "./backend.ts";
import { AlarmTable, AlarmType, type AlarmMember, type AlarmTypeValue } from "./alarms.ts";
import type { MvccImage } from "./image.ts";
import { MvccStore } from "./mvcc-store.ts";
import type { HistoryQuery, WriteResult } from "./mvcc-store.ts";
import type {
  DeleteRangeRequest,
  DeleteRangeResponse,
  LeaseGrantResponse,
  LeaseId,
  LeaseStatus,
  LeaseTimeToLiveResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  RequestOp,
  RevisionEvents,
  TxnRequest,
  TxnResponse,
} from "./types.ts";

export interface KeySpaceImage {
  format: "kvctl-v3/1";
  mvcc: MvccImage;
  leases: LessorImage;
}

/** What an alarm request does (etcd's AlarmRequest_AlarmAction). */
export const AlarmAction = { GET: 0, ACTIVATE: 1, DEACTIVATE: 2 } as const;
export type AlarmActionValue = (typeof AlarmAction)[keyof typeof AlarmAction];

/** etcd's costTxn: a txn grows the store when a put is among its top-level ops (either branch). */
function txnPuts(req: TxnRequest): boolean {
  return [...req.success, ...req.failure].some((op) => "put" in op);
}

export class V3KeySpace {
  #lessor: Lessor;
  #store: MvccStore;
  #alarms: AlarmTable;

  /** An empty key space; with a backend, every change is written to it as it is applied. */
  constructor(opts: { backend?: MvccBackend } = {}) {
    this.#lessor = new Lessor(opts.backend === undefined ? {} : { sink: opts.backend });
    this.#store = new MvccStore({ leases: this.#lessor, ...(opts.backend === undefined ? {} : { backend: opts.backend }) });
    this.#alarms = new AlarmTable(opts.backend === undefined ? {} : { sink: opts.backend });
  }

  /** The key space a backend last committed (records, leases, revision, compaction point). */
  static restore(loaded: MvccLoaded, backend: MvccBackend): V3KeySpace {
    const ks = new V3KeySpace();
    ks.#lessor = Lessor.restore(loaded.leases, { sink: backend });
    ks.#store = MvccStore.restore(loaded, { leases: ks.#lessor, backend });
    ks.#alarms = new AlarmTable({ sink: backend, alarms: loaded.alarms });
    ks.#attachLiveKeys();
    return ks;
  }

  /** Attachments follow from the live keys (like etcd's restore). */
  #attachLiveKeys(): void {
    for (const [id, lease] of this.#store.restoredLiveLeases()) {
      if (!this.#lessor.exists(lease)) throw new Error(`Cannot restore the v3 key space: a key uses unknown lease ${lease}`);
      this.#lessor.attach(lease, id);
    }
  }

  get revision(): number {
    return this.#store.revision;
  }

  get compactRevision(): number {
    return this.#store.compactRevision;
  }

  /** -1 before the first compaction (etcd's compactMainRev). */
  get compactMainRevision(): number {
    return this.#store.compactMainRevision;
  }

  /** Keys in the index (live, or deleted and not yet compacted away). */
  get keyCount(): number {
    return this.#store.keyCount;
  }

  range(req: RangeRequest): RangeResponse {
    return this.#store.range(req);
  }

  put(req: PutRequest): WriteResult<PutResponse> {
    this.#checkSpace();
    return this.#store.put(req);
  }

  deleteRange(req: DeleteRangeRequest): WriteResult<DeleteRangeResponse> {
    return this.#store.deleteRange(req);
  }

  txn(req: TxnRequest): WriteResult<TxnResponse> {
    if (txnPuts(req)) this.#checkSpace();
    return this.#store.txn(req);
  }

  /**
   * etcd's applierV3Capped: while a NOSPACE alarm is raised, puts, txns with puts and lease
   * grants are refused; reads, deletes and compaction go on so space can be freed.
   */
  #checkSpace(): void {
    if (this.#alarms.has(AlarmType.NOSPACE)) throw V3Errors.noSpace();
  }

  /** etcd's Alarm apply: GET lists (all for NONE), ACTIVATE raises, DEACTIVATE clears; answers the alarms touched. */
  alarm(req: { action: AlarmActionValue; memberId: string; alarm: AlarmTypeValue }): AlarmMember[] {
    switch (req.action) {
      case AlarmAction.GET:
        return this.#alarms.get(req.alarm);
      case AlarmAction.ACTIVATE:
        if (req.alarm === AlarmType.NONE) return [];
        return [this.#alarms.activate(req.memberId, req.alarm)];
      case AlarmAction.DEACTIVATE: {
        const m = this.#alarms.deactivate(req.memberId, req.alarm);
        return m === undefined ? [] : [m];
      }
    }
  }

  /** The raised alarms of one type (all for NONE). */
  alarms(alarm: AlarmTypeValue = AlarmType.NONE): AlarmMember[] {
    return this.#alarms.get(alarm);
  }

  validateTxn(req: TxnRequest, maxOps?: number): void {
    this.#store.validateTxn(req, maxOps);
  }

  compact(revision: number): { revision: number } {
    return this.#store.compact(revision);
  }

  eventsInRange(q: HistoryQuery): RevisionEvents[] {
    return this.#store.eventsInRange(q);
  }

  /** See MvccStore.keyIndexes (hashKV). */
  keyIndexes(): Iterable<KeyIndex> {
    return this.#store.keyIndexes();
  }

  /** Grants lease `id` (the proposer picks a non-zero id, like etcd's server does). */
  leaseGrant(req: { id: LeaseId; ttl: number }, now: number): LeaseGrantResponse {
    this.#checkSpace();
    const l = this.#lessor.grant(req.id, req.ttl, now);
    return { revision: this.#store.revision, id: l.id, ttl: l.ttl };
  }

  /**
   * Revokes lease `id`: deletes all its keys in ONE revision (one DELETE event each, in
   * key order) and forgets the lease. A lease without keys takes no revision.
   */
  leaseRevoke(id: LeaseId): WriteResult<{ revision: number }> {
    if (!this.#lessor.exists(id)) throw V3Errors.leaseNotFound();
    const ops: RequestOp[] = this.#lessor
      .keysOf(id)
      .map((k) => ({ deleteRange: { key: keyBytes(k), rangeEnd: Buffer.alloc(0), prevKv: false } }));
    const { changes } = this.#store.txn({ compare: [], success: ops, failure: [] });
    this.#lessor.remove(id);
    const response = { revision: this.#store.revision };
    return changes === undefined ? { response } : { response, changes };
  }

  /** Keepalive through the log: older logs only (the leader now renews in memory); answers the granted TTL. */
  leaseRenew(id: LeaseId, now: number): number {
    return this.#lessor.renew(id, now);
  }

  /** etcd's lessor Promote through the log: older logs only; every lease gets its full TTL again plus `extendMs`. */
  leasePromote(now: number, opts: { extendMs: number }): void {
    this.#lessor.refreshAll(now, opts);
  }

  /**
   * etcd's LeaseCheckpoint apply: each lease's remaining TTL as the leader saw it (0 clears
   * it); leases that no longer exist are skipped. Answers the current revision.
   */
  leaseCheckpoint(checkpoints: readonly { id: LeaseId; remainingTtl: number }[]): { revision: number } {
    for (const c of checkpoints) this.#lessor.checkpoint(c.id, c.remainingTtl);
    return { revision: this.#store.revision };
  }

  /** The last checkpoint's seconds left (0: none in effect); undefined for an unknown lease. */
  leaseRemainingTtl(id: LeaseId): number | undefined {
    return this.#lessor.remainingTtl(id);
  }

  /**
   * Revokes every lease due at `now` (expiry <= now), by id; each revocation that deleted
   * keys is one revision with its events. Older logs' SYNC entries only: the leader now
   * proposes a revocation of each expired lease itself.
   */
  expireLeases(now: number): { revoked: LeaseId[]; changes: RevisionEvents[] } {
    const revoked = this.#lessor.expired(now);
    const changes: RevisionEvents[] = [];
    for (const id of revoked) {
      const r = this.leaseRevoke(id);
      if (r.changes !== undefined) changes.push(r.changes);
    }
    return { revoked, changes };
  }

  /** undefined for an unknown lease (the gateway answers TTL -1). */
  timeToLive(id: LeaseId, now: number, opts: { keys: boolean } = { keys: false }): LeaseTimeToLiveResponse | undefined {
    const t = this.#lessor.timeToLive(id, now);
    if (t === undefined) return undefined;
    const keys = opts.keys ? this.#lessor.keysOf(id).map(keyBytes) : [];
    return { revision: this.#store.revision, id, ttl: t.ttl, grantedTtl: t.grantedTtl, keys };
  }

  leases(): LeaseStatus[] {
    return this.#lessor.leases();
  }

  /** How many leases exist (cheap, unlike leases()). */
  get leaseCount(): number {
    return this.#lessor.size;
  }

  /** The earliest lease expiry (ms since the epoch), undefined without leases: when a SYNC is worth proposing. */
  nextLeaseExpiry(): number | undefined {
    return this.#lessor.nextExpiry();
  }

  toImage(): KeySpaceImage {
    return { format: "kvctl-v3/1", mvcc: this.#store.toImage(), leases: this.#lessor.toImage() };
  }

  /** The key space of an image; with a backend, the whole image is written to it. */
  static fromImage(image: KeySpaceImage, backend?: MvccBackend): V3KeySpace {
    if (image === null || typeof image !== "object" || image.format !== "kvctl-v3/1") {
      throw new Error("Cannot restore v3 image: unknown format");
    }
    const ks = new V3KeySpace();
    ks.#lessor = Lessor.fromImage(image.leases, backend);
    if (backend !== undefined) ks.#alarms = new AlarmTable({ sink: backend });
    ks.#store = MvccStore.fromImage(image.mvcc, { leases: ks.#lessor, ...(backend === undefined ? {} : { backend }) });
    ks.#attachLiveKeys();
    return ks;
  }

  /**
   * A digest of the key space (see MvccStore.hash) and every lease with its expiry. Lease
   * checkpoints are left out: without --experimental-enable-lease-checkpoint-persist they
   * do not survive a restart, so members that applied the same entries may differ there.
   */
  hash(): string {
    const h = createHash("sha256");
    h.update(`kvctl-v3/1 ${this.#store.hash()}\n`);
    for (const a of this.#alarms.get(AlarmType.NONE)) h.update(`alarm ${a.alarm} ${a.memberId}\n`);
    for (const l of this.#lessor.leases()) h.update(`${l.id} ${l.ttl} ${l.expiry}\n`);
    return h.digest("hex");
  }
}
