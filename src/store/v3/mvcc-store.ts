// The v3 key space as etcd's mvcc store: one revision counter, a B-tree of key indexes
// (each key's generations of records), and the records grouped by revision for watchers.
// Pure and deterministic: the same calls give the same state, answers and image.
//
// Revisions: the store starts at revision 1 (empty). Every request that changes something
// takes the next main revision; its changes are numbered by sub revision 0, 1, 2, ... in
// the order they are made. A request that changes nothing does not take a revision.

import { V3Errors } from "../../api/v3-errors.ts";
import { encodeImage, hashState, restoreImage } from "./image.ts";
import type { MvccImage } from "./image.ts";
import { KeyIndex, toKeyValue } from "./key-index.ts";
import type { StoredRecord } from "./key-index.ts";
import type { MvccBackend, MvccLoaded } from "./backend.ts";
import type { KeyId, KeySpan } from "./keys.ts";
import { keyId, keySpan, spanContains } from "./keys.ts";
import { indexesIn, newKeyTree, rangeAt, visibleIn } from "./range.ts";
import type { KeyTree } from "./range.ts";
import { checkPathOps, checkRangeRevision, comparePath, isReadOnlyTxn, opsOnPath } from "./txn.ts";
import type { TxnReadView } from "./txn.ts";
import { validateTxn } from "./txn-check.ts";
import type {
  DeleteRangeRequest,
  DeleteRangeResponse,
  KeyValue,
  LeaseId,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  ResponseOp,
  RevisionEvents,
  TxnRequest,
  TxnResponse,
  V3Event,
} from "./types.ts";
import { EventType, NO_LEASE } from "./types.ts";

/** How the store tells the lessor which keys use which lease (etcd's lease.Lessor hooks). */
export interface LeaseHooks {
  exists(id: LeaseId): boolean;
  attach(id: LeaseId, key: KeyId): void;
  detach(id: LeaseId, key: KeyId): void;
}

/**
 * A write's answer and what it changed. `changes` is absent when nothing changed (no
 * revision taken). Its events carry `prevKv` whenever the key had a value before the
 * revision; the watch hub strips it for watchers that did not ask for it.
 */
export interface WriteResult<R> {
  response: R;
  changes?: RevisionEvents;
}

/** Which history a watcher replays: revisions [from, to] of the keys in [key, rangeEnd). */
export interface HistoryQuery {
  from: number;
  to: number;
  key: Buffer;
  rangeEnd: Buffer;
  prevKv: boolean;
}

/** A write in progress: every change of one request, all at main revision `main`. */
interface Batch {
  readonly begin: number;
  readonly main: number;
  /** records[i] is the change with sub revision i; events[i] is its watch event. */
  readonly records: StoredRecord[];
  readonly events: V3Event[];
}

export class MvccStore {
  #tree: KeyTree = newKeyTree();
  /** Invariant: the highest main revision of any record; 1 for an empty store. */
  #rev = 1;
  /** etcd's compactMainRev: -1 until the first compaction. */
  #compactRev = -1;
  /** history[i] = the records of revision historyStart + i, by sub. Covers [historyStart, rev]. */
  #history: StoredRecord[][] = [[]];
  #historyStart = 1;
  #leases: LeaseHooks | undefined;
  /** Where records are kept between restarts; none in tests of the pure logic. */
  #backend: MvccBackend | undefined;

  constructor(opts: { leases?: LeaseHooks; backend?: MvccBackend } = {}) {
    this.#leases = opts.leases;
    this.#backend = opts.backend;
  }

  /**
   * The store as a backend last committed it: the key index and the per-revision history
   * are rebuilt from its records (as etcd rebuilds its treeIndex at start).
   */
  static restore(loaded: MvccLoaded, opts: { leases?: LeaseHooks; backend?: MvccBackend } = {}): MvccStore {
    const s = new MvccStore(opts);
    s.#rev = Math.max(1, loaded.revision, loaded.compactRevision);
    s.#compactRev = loaded.compactRevision;
    s.#historyStart = Math.max(1, loaded.compactRevision);
    s.#history = Array.from({ length: s.#rev - s.#historyStart + 1 }, (): StoredRecord[] => []);
    for (const r of loaded.records) {
      let ki = s.#tree.get(r.id);
      if (ki === undefined) {
        ki = new KeyIndex(r.id);
        s.#tree.set(r.id, ki);
      }
      ki.restore(r);
      if (r.main >= s.#historyStart) s.#history[r.main - s.#historyStart]!.push(r);
    }
    // Exact-size copies (see KeyIndex.#newGeneration): a pushed-to array keeps room for 17.
    for (let i = 0; i < s.#history.length; i++) if (s.#history[i]!.length > 0) s.#history[i] = s.#history[i]!.slice();
    return s;
  }

  /** The current revision (the header revision of reads). */
  get revision(): number {
    return this.#rev;
  }

  /** Keys the index holds (live, or deleted with records kept until a compaction). */
  get keyCount(): number {
    return this.#tree.size;
  }

  /** etcd's compactMainRev: -1 until the first compaction. */
  get compactMainRevision(): number {
    return this.#compactRev;
  }

  /** The last compaction's revision, 0 before any. */
  get compactRevision(): number {
    return Math.max(0, this.#compactRev);
  }

  range(req: RangeRequest): RangeResponse {
    return this.#rangeAtHead(req, this.#rev);
  }

  put(req: PutRequest): WriteResult<PutResponse> {
    if (req.lease !== NO_LEASE && this.#leases !== undefined && !this.#leases.exists(req.lease)) {
      throw V3Errors.leaseNotFound();
    }
    if ((req.ignoreValue || req.ignoreLease) && this.#tree.get(keyId(req.key))?.live() === undefined) {
      throw V3Errors.keyNotFound();
    }
    const batch = this.#begin();
    const response = this.#putIn(batch, req);
    return this.#commit(batch, response);
  }

  deleteRange(req: DeleteRangeRequest): WriteResult<DeleteRangeResponse> {
    const batch = this.#begin();
    const response = this.#deleteIn(batch, req);
    return this.#commit(batch, response);
  }

  /**
   * etcd's Txn: compares (nested ones too) see the state before the txn; the ops of the
   * chosen branches run in order, ranges seeing earlier writes; all writes share one main
   * revision. Nothing is written when a check fails. Call validateTxn at the edge first.
   */
  txn(req: TxnRequest): WriteResult<TxnResponse> {
    const view = this.#readView();
    const path = comparePath(view, req);
    checkPathOps(view, opsOnPath(req, path), { writes: !isReadOnlyTxn(req) });
    const batch = this.#begin();
    const cursor = { next: 0 };
    const response = this.#txnIn(batch, req, path, cursor);
    const result = this.#commit(batch, response);
    response.revision = result.changes !== undefined ? batch.main : batch.begin;
    return result;
  }

  /** etcd's checkTxnRequest + checkIntervals (see txn-check.ts). */
  validateTxn(req: TxnRequest, maxOps?: number): void {
    validateTxn(req, maxOps);
  }

  /**
   * Physical compaction: drops every record a range at `revision` or later cannot see.
   * Answers the current revision (etcd's compaction header).
   */
  compact(revision: number): { revision: number } {
    if (revision <= this.#compactRev) throw V3Errors.compacted();
    if (revision > this.#rev) throw V3Errors.futureRev();
    const empty: KeyId[] = [];
    const dropped: StoredRecord[] | undefined = this.#backend === undefined ? undefined : [];
    for (const [id, ki] of this.#tree.entries()) {
      if (ki.compact(revision, dropped)) empty.push(id);
    }
    if (dropped !== undefined) for (const r of dropped) this.#backend!.removeRecord(r);
    this.#backend?.setCompactRevision(revision);
    for (const id of empty) this.#tree.delete(id);
    if (revision > this.#historyStart) {
      this.#history = this.#history.slice(revision - this.#historyStart);
      this.#historyStart = revision;
      // Revision `revision` keeps only what its key indexes still hold.
      this.#history[0] = this.#history[0]!.filter((r) => this.#tree.get(r.id)?.holds(r) === true);
    }
    this.#compactRev = revision;
    return { revision: this.#rev };
  }

  /**
   * The changes of revisions [from, to] (to is capped at the current revision) on the
   * keys of [key, rangeEnd), one entry per revision that has any, in revision order.
   * Throws compacted when `from` is below the compaction revision.
   */
  eventsInRange(q: HistoryQuery): RevisionEvents[] {
    if (q.from < this.#compactRev) throw V3Errors.compacted();
    const from = Math.max(q.from, this.#historyStart);
    const to = Math.min(q.to, this.#rev);
    if (from > to) return [];
    const span = keySpan(q.key, q.rangeEnd);
    let records: StoredRecord[];
    if (span.kind === "single") {
      records = this.#tree.get(span.key)?.between(from, to) ?? [];
    } else {
      records = [];
      for (let rev = from; rev <= to; rev++) {
        for (const r of this.#history[rev - this.#historyStart]!) if (spanContains(span, r.id)) records.push(r);
      }
    }
    const out: RevisionEvents[] = [];
    for (const r of records) {
      const ev = this.#eventOf(r, q.prevKv);
      const last = out.at(-1);
      if (last !== undefined && last.revision === r.main) last.events.push(ev);
      else out.push({ revision: r.main, events: [ev] });
    }
    return out;
  }

  /** Every live key-value now, in key order (for rebuilding lease attachments). */
  *liveKeyValues(): Generator<KeyValue> {
    for (const [, ki] of this.#tree.entries()) {
      const r = ki.live();
      if (r !== undefined) yield toKeyValue(r);
    }
  }

  /** The lease of every live key that has one (no value is read). */
  *liveLeases(): Generator<[KeyId, LeaseId]> {
    for (const [id, ki] of this.#tree.entries()) {
      const r = ki.live();
      if (r !== undefined && r.lease !== NO_LEASE) yield [id, r.lease];
    }
  }

  /** A JSON-safe image of the whole store (records, revision, compaction point). */
  toImage(): MvccImage {
    return encodeImage({ revision: this.#rev, compactRevision: this.#compactRev, indexes: this.#tree.values() });
  }

  /** The store of an image; with a backend, every record is written to it (an image from before the backend). */
  static fromImage(image: MvccImage, opts: { leases?: LeaseHooks; backend?: MvccBackend } = {}): MvccStore {
    const s = new MvccStore(opts);
    const restored = restoreImage(image);
    s.#rev = restored.revision;
    s.#compactRev = restored.compactRevision;
    for (const ki of restored.indexes) s.#tree.set(ki.id, ki);
    s.#historyStart = Math.max(1, restored.compactRevision);
    s.#history = Array.from({ length: s.#rev - s.#historyStart + 1 }, (): StoredRecord[] => []);
    for (const ki of restored.indexes) {
      for (const g of ki.generations()) {
        for (const r of g) if (r.main >= s.#historyStart) s.#history[r.main - s.#historyStart]!.push(r);
      }
    }
    for (const bucket of s.#history) bucket.sort((a, b) => a.sub - b.sub);
    if (opts.backend !== undefined) {
      for (const bucket of s.#history) for (const r of bucket) opts.backend.putRecord(r);
      // Records below the history's start (kept by compaction) are written too.
      for (const ki of restored.indexes) for (const g of ki.generations()) for (const r of g) if (r.main < s.#historyStart) opts.backend.putRecord(r);
      if (s.#compactRev >= 0) opts.backend.setCompactRevision(s.#compactRev);
    }
    return s;
  }

  /** A digest of the revision, the compaction point and every live key-value. */
  hash(): string {
    return hashState({ revision: this.#rev, compactRevision: this.#compactRev, live: this.liveKeyValues() });
  }

  // ---- internals ----

  #readView(): TxnReadView {
    return {
      revision: this.#rev,
      firstRevision: this.#compactRev,
      visible: (span: KeySpan) => visibleIn(this.#tree, span, { rev: this.#rev, limit: 0, countOnly: false }).records,
      leaseExists: (id: LeaseId) => this.#leases === undefined || this.#leases.exists(id),
    };
  }

  /** A range whose "current revision" is `head` (inside a txn: including its writes so far). */
  #rangeAtHead(req: RangeRequest, head: number): RangeResponse {
    checkRangeRevision({ revision: head, firstRevision: this.#compactRev }, req.revision);
    const rev = req.revision > 0 ? req.revision : head;
    return rangeAt(this.#tree, req, { span: keySpan(req.key, req.rangeEnd), rev, headerRevision: head });
  }

  #begin(): Batch {
    return { begin: this.#rev, main: this.#rev + 1, records: [], events: [] };
  }

  #commit<R>(batch: Batch, response: R): WriteResult<R> {
    if (batch.records.length === 0) return { response };
    this.#rev = batch.main;
    // Exact size (see KeyIndex.#newGeneration): most revisions change one key.
    this.#history.push(batch.records.length === 1 ? [batch.records[0]!] : batch.records.slice());
    if (this.#backend !== undefined) for (const r of batch.records) this.#backend.putRecord(r);
    return { response, changes: { revision: batch.main, events: batch.events } };
  }

  /** Records a change made in `batch` (its sub revision is its position). */
  #record(batch: Batch, rec: StoredRecord, ki: KeyIndex): void {
    batch.records.push(rec);
    batch.events.push(this.#liveEvent(rec, ki.visibleAt(batch.begin)));
  }

  #putIn(batch: Batch, req: PutRequest): PutResponse {
    const id = keyId(req.key);
    let ki = this.#tree.get(id);
    if (ki === undefined) {
      ki = new KeyIndex(id);
      this.#tree.set(id, ki);
    }
    const prev = ki.live();
    if ((req.ignoreValue || req.ignoreLease) && prev === undefined) {
      throw new Error("mvcc: ignore_value/ignore_lease put of a missing key passed the checks");
    }
    const value = req.ignoreValue ? prev!.value : Buffer.from(req.value);
    const lease = req.ignoreLease ? prev!.lease : req.lease;
    const rec = ki.put({ main: batch.main, sub: batch.records.length, value, lease });
    if (prev !== undefined && prev.lease !== NO_LEASE) this.#leases?.detach(prev.lease, id);
    if (lease !== NO_LEASE) this.#leases?.attach(lease, id);
    this.#record(batch, rec, ki);
    const response: PutResponse = { revision: batch.main };
    if (req.prevKv && prev !== undefined) response.prevKv = toKeyValue(prev);
    return response;
  }

  #deleteIn(batch: Batch, req: DeleteRangeRequest): DeleteRangeResponse {
    const span = keySpan(req.key, req.rangeEnd);
    const doomed = [...indexesIn(this.#tree, span)].filter((ki) => ki.live() !== undefined);
    const prevKvs: KeyValue[] = [];
    for (const ki of doomed) {
      const prev = ki.live()!;
      if (req.prevKv) prevKvs.push(toKeyValue(prev));
      const rec = ki.tombstone(batch.main, batch.records.length);
      if (prev.lease !== NO_LEASE) this.#leases?.detach(prev.lease, ki.id);
      this.#record(batch, rec, ki);
    }
    // etcd: a delete that removed nothing answers the old revision unless the txn wrote before.
    const revision = doomed.length > 0 || batch.records.length > 0 ? batch.main : batch.begin;
    return { revision, deleted: doomed.length, prevKvs };
  }

  #txnIn(batch: Batch, req: TxnRequest, path: readonly boolean[], cursor: { next: number }): TxnResponse {
    const succeeded = path[cursor.next++]!;
    const responses: ResponseOp[] = [];
    for (const op of succeeded ? req.success : req.failure) {
      if ("range" in op) {
        const head = batch.records.length > 0 ? batch.main : batch.begin;
        responses.push({ range: this.#rangeAtHead(op.range, head) });
      } else if ("put" in op) {
        responses.push({ put: this.#putIn(batch, op.put) });
      } else if ("deleteRange" in op) {
        responses.push({ deleteRange: this.#deleteIn(batch, op.deleteRange) });
      } else {
        // etcd never fills a nested txn's header: its revision stays 0.
        responses.push({ txn: this.#txnIn(batch, op.txn, path, cursor) });
      }
    }
    return { revision: 0, succeeded, responses };
  }

  #liveEvent(rec: StoredRecord, prev: StoredRecord | undefined): V3Event {
    const ev: V3Event = { type: rec.tombstone ? EventType.DELETE : EventType.PUT, kv: toKeyValue(rec) };
    if (prev !== undefined) ev.prevKv = toKeyValue(prev);
    return ev;
  }

  /** A stored record as a watch event; prevKv is the key's value at the revision before, if not compacted. */
  #eventOf(rec: StoredRecord, withPrev: boolean): V3Event {
    const ev: V3Event = { type: rec.tombstone ? EventType.DELETE : EventType.PUT, kv: toKeyValue(rec) };
    if (withPrev && rec.main - 1 >= this.#compactRev) {
      const prev = this.#tree.get(rec.id)?.visibleAt(rec.main - 1);
      if (prev !== undefined) ev.prevKv = toKeyValue(prev);
    }
    return ev;
  }
}
