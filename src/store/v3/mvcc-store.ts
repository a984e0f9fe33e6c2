// The v3 key space as etcd's mvcc store: one revision counter, a B-tree of key indexes
// (each key's generations of revisions), and which keys each revision changed, for watchers.
// Pure and deterministic: the same calls give the same state, answers and image.
//
// Revisions: the store starts at revision 1 (empty). Every request that changes something
// takes the next main revision; its changes are numbered by sub revision 0, 1, 2, ... in
// the order they are made. A request that changes nothing does not take a revision.

import { V3Errors } from "../../api/v3-errors.ts";
import { encodeImage, hashState, restoreImage } from "./image.ts";
import type { MvccImage } from "./image.ts";
import { KeyIndex, MemoryValues, toKeyValue } from "./key-index.ts";
import type { StoredRecord, ValueSource } from "./key-index.ts";
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
  /** records[i] is the change with sub revision i (carrying its value), kis[i] its key, events[i] its watch event. */
  readonly records: StoredRecord[];
  readonly kis: KeyIndex[];
  readonly events: V3Event[];
}

export class MvccStore {
  #tree: KeyTree = newKeyTree();
  /** Keys that had a record with a lease when the store was restored (see restoredLiveLeases). */
  #restoredLeased: Set<KeyIndex> | undefined;
  /** Invariant: the highest main revision of any record; 1 for an empty store. */
  #rev = 1;
  /** etcd's compactMainRev: -1 until the first compaction. */
  #compactRev = -1;
  /**
   * The keys each revision changed, flat: revision historyStart + i changed the keys
   * histKeys[histOffsets[i] ..< histOffsets[i + 1]] (the last one up to the end), one entry
   * per change, in sub order. Covers [historyStart, rev]; the records themselves are looked
   * up in the key indexes, so what compaction dropped is simply not found.
   */
  #histKeys: KeyIndex[] = [];
  #histOffsets: number[] = [0];
  #historyStart = 1;
  #leases: LeaseHooks | undefined;
  /** Where records are kept between restarts; none in tests of the pure logic. */
  #backend: MvccBackend | undefined;
  /** The values, without a backend. */
  #memory: MemoryValues | undefined;
  /** The write in progress: its records carry their values until the backend has them. */
  #batch: Batch | undefined;
  /** What the key indexes read values through. */
  readonly #values: ValueSource = { readValue: (rec) => this.#readValue(rec) };

  constructor(opts: { leases?: LeaseHooks; backend?: MvccBackend } = {}) {
    this.#leases = opts.leases;
    this.#backend = opts.backend;
    if (opts.backend === undefined) this.#memory = new MemoryValues();
  }

  /**
   * The store as a backend last committed it: the key index and the per-revision history
   * are rebuilt from its records (as etcd rebuilds its treeIndex at start).
   */
  static restore(loaded: MvccLoaded, opts: { leases?: LeaseHooks; backend?: MvccBackend } = {}): MvccStore {
    const s = new MvccStore(opts);
    s.#rev = Math.max(1, loaded.revision, loaded.compactRevision);
    s.#compactRev = loaded.compactRevision;
    const hs = Math.max(1, loaded.compactRevision);
    s.#historyStart = hs;
    const keys: KeyIndex[] = [];
    const offsets: number[] = [];
    const leased = new Set<KeyIndex>();
    s.#restoredLeased = leased;
    for (const r of loaded.records) {
      let ki = s.#tree.get(r.id);
      if (ki === undefined) {
        ki = new KeyIndex(r.id, s.#values);
        s.#tree.set(r.id, ki);
      }
      ki.restore(r);
      if (r.lease !== NO_LEASE) leased.add(ki);
      if (r.main >= hs) {
        while (offsets.length <= r.main - hs) offsets.push(keys.length);
        keys.push(ki);
      }
    }
    while (offsets.length < s.#rev - hs + 1) offsets.push(keys.length);
    s.#histKeys = keys;
    s.#histOffsets = offsets;
    // A compaction whose records were not all deleted before the restart: the index drops
    // them again (records at or above the compaction revision never go, so the history is
    // whole) and the backend finishes deleting them (etcd's restore resumes scheduledCompact).
    if (loaded.compactionPending && loaded.compactRevision >= 0) {
      const dropped = s.#compactIndex(loaded.compactRevision);
      opts.backend?.compacted(loaded.compactRevision, dropped);
    }
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
    const dropped = this.#compactIndex(revision);
    if (this.#backend !== undefined) this.#backend.compacted(revision, dropped);
    else for (let i = 0; i < dropped.length; i += 2) this.#memory!.remove(dropped[i]!, dropped[i + 1]!);
    if (revision > this.#historyStart) {
      // Revision `revision` keeps its entries: replay finds only what its key indexes still hold.
      const cut = this.#histOffsets[revision - this.#historyStart]!;
      this.#histKeys = this.#histKeys.slice(cut);
      this.#histOffsets = this.#histOffsets.slice(revision - this.#historyStart).map((o) => o - cut);
      this.#historyStart = revision;
    }
    this.#compactRev = revision;
    return { revision: this.#rev };
  }

  /** Compacts every key's index at `revision` (keys left empty go); answers the (main, sub) pairs of the records dropped. */
  #compactIndex(revision: number): number[] {
    const empty: KeyId[] = [];
    const dropped: number[] = [];
    for (const [id, ki] of this.#tree.entries()) {
      if (ki.compact(revision, dropped)) empty.push(id);
    }
    for (const id of empty) this.#tree.delete(id);
    return dropped;
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
      for (let rev = from; rev <= to; rev++) this.#changesAt(rev, span, records);
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

  /** Every key the index holds, in key order: read them, never change them (hashKV looks records up at two revisions). */
  keyIndexes(): Iterable<KeyIndex> {
    return this.#tree.values();
  }

  /** Every live key-value now, in key order (for rebuilding lease attachments). */
  *liveKeyValues(): Generator<KeyValue> {
    for (const [, ki] of this.#tree.entries()) {
      const r = ki.live();
      if (r !== undefined) yield toKeyValue(r);
    }
  }

  /** The lease of every live key that has one (no value is read). */
  /**
   * The live keys with a lease, as a restore found them (read once, right after it): only
   * the keys that had a record with a lease, not the whole index, are looked at.
   */
  *restoredLiveLeases(): Generator<[KeyId, LeaseId]> {
    const leased = this.#restoredLeased;
    this.#restoredLeased = undefined;
    for (const ki of leased ?? []) {
      const lease = ki.liveLease();
      if (lease !== undefined && lease !== NO_LEASE) yield [ki.id, lease];
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
    const hs = Math.max(1, restored.compactRevision);
    s.#historyStart = hs;
    const history: { rec: StoredRecord; ki: KeyIndex }[] = [];
    const older: StoredRecord[] = [];
    const leased = new Set<KeyIndex>();
    s.#restoredLeased = leased;
    for (const { id, generations } of restored.keys) {
      const ki = KeyIndex.fromRecords(id, s.#values, generations);
      s.#tree.set(id, ki);
      for (const g of generations) {
        for (const rec of g) {
          (rec.main >= hs ? history.push({ rec, ki }) : older.push(rec));
          if (rec.lease !== NO_LEASE) leased.add(ki);
        }
      }
    }
    history.sort((a, b) => a.rec.main - b.rec.main || a.rec.sub - b.rec.sub);
    const offsets: number[] = [];
    for (const { rec, ki } of history) {
      while (offsets.length <= rec.main - hs) offsets.push(s.#histKeys.length);
      s.#histKeys.push(ki);
    }
    while (offsets.length < s.#rev - hs + 1) offsets.push(s.#histKeys.length);
    s.#histOffsets = offsets;
    // The image's records carry their values: the backend (or memory) keeps them from here.
    // Records below the history's start (kept by compaction) are written too.
    for (const rec of [...history.map((h) => h.rec), ...older]) s.#keep(rec);
    if (opts.backend !== undefined && s.#compactRev >= 0) opts.backend.compacted(s.#compactRev, []);
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
    const batch: Batch = { begin: this.#rev, main: this.#rev + 1, records: [], kis: [], events: [] };
    this.#batch = batch;
    return batch;
  }

  #commit<R>(batch: Batch, response: R): WriteResult<R> {
    this.#batch = undefined;
    if (batch.records.length === 0) return { response };
    this.#rev = batch.main;
    this.#histOffsets.push(this.#histKeys.length);
    for (const ki of batch.kis) this.#histKeys.push(ki);
    for (const r of batch.records) this.#keep(r);
    return { response, changes: { revision: batch.main, events: batch.events } };
  }

  /** A record written (it carries its value): from now on its value is read from the backend. */
  #keep(rec: StoredRecord): void {
    if (this.#backend !== undefined) this.#backend.putRecord(rec);
    else this.#memory!.keep(rec);
  }

  /** A record's value: the write in progress holds its own, the backend (or memory) the rest. */
  #readValue(rec: StoredRecord): Buffer {
    const b = this.#batch;
    if (b !== undefined && rec.main === b.main) {
      const own = b.records[rec.sub];
      if (own !== undefined) return own.value;
    }
    return this.#backend !== undefined ? this.#backend.readValue(rec) : this.#memory!.readValue(rec);
  }

  /** Appends to `out` the records of revision `rev` on keys in `span` that are still held, by sub. */
  #changesAt(rev: number, span: KeySpan, out: StoredRecord[]): void {
    const i = rev - this.#historyStart;
    const start = this.#histOffsets[i]!;
    const end = rev === this.#rev ? this.#histKeys.length : this.#histOffsets[i + 1]!;
    if (end - start === 1) {
      const ki = this.#histKeys[start]!;
      if (spanContains(span, ki.id)) out.push(...ki.between(rev, rev));
      return;
    }
    // A key changed twice in one revision (a txn deleting and re-creating it) is listed twice.
    const seen = new Set<KeyIndex>();
    const recs: StoredRecord[] = [];
    for (let j = start; j < end; j++) {
      const ki = this.#histKeys[j]!;
      if (seen.has(ki) || !spanContains(span, ki.id)) continue;
      seen.add(ki);
      recs.push(...ki.between(rev, rev));
    }
    recs.sort((a, b) => a.sub - b.sub);
    out.push(...recs);
  }

  /**
   * Records a change made in `batch` (its sub revision is its position). `before`: the key's
   * record visible at the batch's start, when the caller has it (the batch's first change).
   */
  #record(batch: Batch, rec: StoredRecord, ki: KeyIndex, before?: StoredRecord | null): void {
    batch.records.push(rec);
    batch.kis.push(ki);
    batch.events.push(this.#liveEvent(rec, before === undefined ? ki.visibleAt(batch.begin) : (before ?? undefined)));
  }

  #putIn(batch: Batch, req: PutRequest): PutResponse {
    const id = keyId(req.key);
    let ki = this.#tree.get(id);
    if (ki === undefined) {
      ki = new KeyIndex(id, this.#values);
      this.#tree.set(id, ki);
    }
    const prev = ki.live();
    if ((req.ignoreValue || req.ignoreLease) && prev === undefined) {
      throw new Error("mvcc: ignore_value/ignore_lease put of a missing key passed the checks");
    }
    const value = req.ignoreValue ? prev!.value : Buffer.from(req.value);
    const lease = req.ignoreLease ? prev!.lease : req.lease;
    // The batch's first change: the key's live record is also the one visible at its start.
    const first = batch.records.length === 0;
    const rec = ki.put({ main: batch.main, sub: batch.records.length, value, lease });
    if (prev !== undefined && prev.lease !== NO_LEASE) this.#leases?.detach(prev.lease, id);
    if (lease !== NO_LEASE) this.#leases?.attach(lease, id);
    this.#record(batch, rec, ki, first ? (prev ?? null) : undefined);
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
    // One Buffer of the key for both (a record makes a new one each time it is asked).
    const key = rec.key;
    const ev: V3Event = { type: rec.tombstone ? EventType.DELETE : EventType.PUT, kv: toKeyValue(rec, undefined, key) };
    if (prev !== undefined) ev.prevKv = toKeyValue(prev, undefined, key);
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
