// One key's history (etcd's keyIndex): its revisions grouped in generations. A generation
// starts with the put that creates the key and ends with the tombstone that deletes it;
// the next put starts a new generation with a new create revision and version 1.
//
// The heap holds only what a lookup at a revision needs, packed: four numbers per record
// (main, sub, create revision, version) in one array, and a lease per record only for keys
// that ever had one. A StoredRecord is made on demand from them, and its value is read
// through the key space's ValueSource (the backend, records keyed by revision). One object
// per record and one array per generation had cost ~420 bytes per live key; this ~200.

import type { KeyValue, LeaseId } from "./types.ts";
import { NO_LEASE } from "./types.ts";
import type { KeyId } from "./keys.ts";
import { keyBytes } from "./keys.ts";

/** Where a record's value is read from when the record does not carry it (the backend). */
export interface ValueSource {
  readValue(rec: StoredRecord): Buffer;
}

/**
 * One stored revision of one key, as lookups answer it: made from the key index on each
 * lookup (compare records by their fields, never by identity). It carries its value when
 * it was just written (or decoded with it); otherwise `value` reads it from `source`.
 */
export class StoredRecord {
  readonly id: KeyId;
  /** The revision (main) and the position of the change inside it (sub). */
  readonly main: number;
  readonly sub: number;
  /** 0 for a tombstone. */
  readonly createRevision: number;
  /** 1 for the put that creates the key; 0 for a tombstone. */
  readonly version: number;
  readonly lease: LeaseId;
  readonly tombstone: boolean;
  readonly #value: Buffer | undefined;
  readonly #source: ValueSource | undefined;

  constructor(
    id: KeyId,
    main: number,
    sub: number,
    createRevision: number,
    version: number,
    value: Buffer | undefined,
    lease: LeaseId,
    tombstone: boolean,
    source?: ValueSource,
  ) {
    this.id = id;
    this.main = main;
    this.sub = sub;
    this.createRevision = createRevision;
    this.version = version;
    this.lease = lease;
    this.tombstone = tombstone;
    this.#value = tombstone ? EMPTY : value;
    this.#source = source;
    if (this.#value === undefined && source === undefined) throw new Error("mvcc: a record needs its value or a source for it");
  }

  get value(): Buffer {
    return this.#value ?? this.#source!.readValue(this);
  }

  /**
   * The key's bytes, made from its index form on each call: a long-lived small Buffer would
   * pin the 8 KiB pool slab it was cut from, and with it the values allocated beside it.
   */
  get key(): Buffer {
    return keyBytes(this.id);
  }

  /** True when the record carries its value (it is not read from the source). */
  get holdsValue(): boolean {
    return this.#value !== undefined;
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * The record as the API shows it. A tombstone shows only key and mod revision. `key`: the
 * record's key bytes when the caller has them already.
 */
export function toKeyValue(rec: StoredRecord, opts?: { keysOnly?: boolean }, key: Buffer = rec.key): KeyValue {
  return {
    key,
    createRevision: rec.createRevision,
    modRevision: rec.main,
    version: rec.version,
    value: opts?.keysOnly === true ? EMPTY : rec.value,
    lease: rec.lease,
  };
}

/** Orders records by (main, sub). */
export function recordBefore(a: { main: number; sub: number }, b: { main: number; sub: number }): boolean {
  return a.main < b.main || (a.main === b.main && a.sub < b.sub);
}

/** Numbers per record in KeyIndex's packed array. */
const W = 4;
const MAIN = 0;
const SUB = 1;
const CREATE = 2;
/** 0 marks a tombstone: a put's version is at least 1. */
const VERSION = 3;
const NO_RECORDS: readonly number[] = Object.freeze([]);

export class KeyIndex {
  readonly id: KeyId;
  readonly #source: ValueSource;
  /**
   * [main, sub, createRevision, version] per record. Invariants: records ascend by
   * (main, sub); a tombstone (version 0) closes its generation, and a put after it starts
   * the next; the last record may be a tombstone (the key is deleted now). Only compaction
   * removes records; it may leave a first generation that starts mid-way (version above 1)
   * or is a lone tombstone (see compact). Arrays are replaced, never shortened in place.
   */
  #revs: readonly number[] = NO_RECORDS;
  /** The lease of each record, once any record of the key had one (most keys never do). */
  #leases: LeaseId[] | undefined;

  constructor(id: KeyId, source: ValueSource) {
    this.id = id;
    this.#source = source;
  }

  /** The key's bytes (made on each call, see StoredRecord.key). */
  get key(): Buffer {
    return keyBytes(this.id);
  }

  /** How many records the index holds. */
  get size(): number {
    return this.#revs.length / W;
  }

  /** The newest record (maybe a tombstone), or undefined for an empty index. */
  latest(): StoredRecord | undefined {
    const n = this.size;
    return n === 0 ? undefined : this.#record(n - 1);
  }

  /** The key's current value, or undefined when it is deleted. */
  live(): StoredRecord | undefined {
    const n = this.size;
    return n === 0 || this.#isTombstone(n - 1) ? undefined : this.#record(n - 1);
  }

  /** The lease of the key's current value (NO_LEASE when it has none), undefined when deleted. */
  liveLease(): LeaseId | undefined {
    const n = this.size;
    return n === 0 || this.#isTombstone(n - 1) ? undefined : this.#lease(n - 1);
  }

  /** The newest record with main <= rev (maybe a tombstone). */
  at(rev: number): StoredRecord | undefined {
    const i = this.#lastAtOrBefore(rev);
    return i < 0 ? undefined : this.#record(i);
  }

  /** The key's value as of revision `rev`, or undefined if it did not exist then. */
  visibleAt(rev: number): StoredRecord | undefined {
    const i = this.#lastAtOrBefore(rev);
    return i < 0 || this.#isTombstone(i) ? undefined : this.#record(i);
  }

  /** Whether the key had a value at revision `rev` (visibleAt without making the record). */
  isVisibleAt(rev: number): boolean {
    const i = this.#lastAtOrBefore(rev);
    return i >= 0 && !this.#isTombstone(i);
  }

  /** Appends a put at (main, sub); it continues the live generation or starts a new one. */
  put(opts: { main: number; sub: number; value: Buffer; lease: LeaseId }): StoredRecord {
    this.#checkOrder(opts.main, opts.sub);
    const n = this.size;
    const continues = n > 0 && !this.#isTombstone(n - 1);
    const create = continues ? this.#revs[(n - 1) * W + CREATE]! : opts.main;
    const version = continues ? this.#revs[(n - 1) * W + VERSION]! + 1 : 1;
    // One shared 0n: a decoded lease 0 is a bigint object of its own per record.
    const lease = opts.lease === NO_LEASE ? NO_LEASE : opts.lease;
    this.#append(opts.main, opts.sub, create, version, lease);
    return new StoredRecord(this.id, opts.main, opts.sub, create, version, opts.value, lease, false, this.#source);
  }

  /** Appends a tombstone at (main, sub), closing the live generation. */
  tombstone(main: number, sub: number): StoredRecord {
    this.#checkOrder(main, sub);
    const n = this.size;
    if (n === 0 || this.#isTombstone(n - 1)) {
      throw new Error(`mvcc: tombstone of a key that is not live (${JSON.stringify(this.id)})`);
    }
    this.#append(main, sub, 0, 0, NO_LEASE);
    return new StoredRecord(this.id, main, sub, 0, 0, EMPTY, NO_LEASE, true);
  }

  /**
   * Physical compaction at `atRev`: keeps the newest record with main <= atRev (what a
   * range at atRev sees) and everything after it. A tombstone below atRev goes too, with
   * its generation; a tombstone AT atRev stays so that a watch replaying from atRev sees
   * the delete (a range at atRev does not show tombstones anyway). The (main, sub) of each
   * record dropped is appended to `dropped`. Returns true when the index is now empty and
   * should be dropped.
   */
  compact(atRev: number, dropped?: number[]): boolean {
    const ri = this.#lastAtOrBefore(atRev);
    if (ri < 0) return false; // every record is newer than atRev
    // The kept record closes its generation when it is a tombstone below atRev: it goes too.
    const from = this.#isTombstone(ri) && this.#revs[ri * W + MAIN]! < atRev ? ri + 1 : ri;
    if (from === 0) return false;
    const revs = this.#revs;
    if (dropped !== undefined) for (let i = 0; i < from; i++) dropped.push(revs[i * W + MAIN]!, revs[i * W + SUB]!);
    this.#revs = from * W === revs.length ? NO_RECORDS : revs.slice(from * W);
    if (this.#leases !== undefined) this.#leases = this.#leases.slice(from);
    return this.#revs.length === 0;
  }

  /**
   * Appends a record read back from the backend (a restart rebuilds the index from the
   * records in revision order): a put after a tombstone, or the first record held, starts
   * a generation. Compaction may have left a first generation that starts mid-way (version
   * above 1) or is a lone tombstone; both are accepted as they are.
   */
  restore(rec: { main: number; sub: number; createRevision: number; version: number; lease: LeaseId; tombstone: boolean }): void {
    this.#checkOrder(rec.main, rec.sub);
    const n = this.size;
    if (rec.tombstone && n > 0 && this.#isTombstone(n - 1)) throw new Error(`mvcc: two tombstones in a row for ${JSON.stringify(this.id)}`);
    if (!rec.tombstone && rec.version < 1) throw new Error(`mvcc: a put of version ${rec.version} for ${JSON.stringify(this.id)}`);
    if (rec.tombstone) this.#append(rec.main, rec.sub, 0, 0, NO_LEASE);
    else this.#append(rec.main, rec.sub, rec.createRevision, rec.version, rec.lease === NO_LEASE ? NO_LEASE : rec.lease);
  }

  /** Records with from <= main <= to, ascending. */
  between(from: number, to: number): StoredRecord[] {
    const out: StoredRecord[] = [];
    const n = this.size;
    let i = this.#lastAtOrBefore(from - 1) + 1;
    for (; i < n && this.#revs[i * W + MAIN]! <= to; i++) out.push(this.#record(i));
    return out;
  }

  /** True when the record at (main, sub) is still held (not compacted away). */
  holds(rec: { main: number; sub: number }): boolean {
    for (let i = this.#lastAtOrBefore(rec.main); i >= 0 && this.#revs[i * W + MAIN] === rec.main; i--) {
      if (this.#revs[i * W + SUB] === rec.sub) return true;
    }
    return false;
  }

  /** Every held record, ascending, generation by generation. */
  generations(): StoredRecord[][] {
    const out: StoredRecord[][] = [];
    let g: StoredRecord[] = [];
    for (let i = 0; i < this.size; i++) {
      g.push(this.#record(i));
      if (this.#isTombstone(i)) {
        out.push(g);
        g = [];
      }
    }
    if (g.length > 0) out.push(g);
    return out;
  }

  /** Rebuilds an index from records in (main, sub) order (snapshot restore). */
  static fromRecords(id: KeyId, source: ValueSource, generations: readonly (readonly StoredRecord[])[]): KeyIndex {
    const ki = new KeyIndex(id, source);
    let last: StoredRecord | undefined;
    generations.forEach((g, i) => {
      if (g.length === 0) throw new Error(`mvcc image: empty generation for ${JSON.stringify(id)}`);
      g.forEach((r, j) => {
        if (last !== undefined && !recordBefore(last, r)) {
          throw new Error(`mvcc image: records out of order for ${JSON.stringify(id)}`);
        }
        const closes = j === g.length - 1;
        if (r.tombstone !== (closes && (i < generations.length - 1 || r.tombstone))) {
          throw new Error(`mvcc image: misplaced tombstone for ${JSON.stringify(id)}`);
        }
        last = r;
        ki.restore(r);
      });
    });
    return ki;
  }

  #record(i: number): StoredRecord {
    const r = this.#revs;
    const o = i * W;
    const version = r[o + VERSION]!;
    return new StoredRecord(this.id, r[o + MAIN]!, r[o + SUB]!, r[o + CREATE]!, version, undefined, this.#lease(i), version === 0, this.#source);
  }

  #lease(i: number): LeaseId {
    return this.#leases === undefined ? NO_LEASE : this.#leases[i]!;
  }

  #isTombstone(i: number): boolean {
    return this.#revs[i * W + VERSION] === 0;
  }

  /**
   * Most keys have one record: an array literal of exactly its size, since V8 gives an
   * array that grows from empty room for 17 elements (more than the key's record itself).
   */
  #append(main: number, sub: number, create: number, version: number, lease: LeaseId): void {
    const n = this.size;
    if (n === 0) this.#revs = [main, sub, create, version];
    else (this.#revs as number[]).push(main, sub, create, version);
    if (lease !== NO_LEASE && this.#leases === undefined) this.#leases = Array.from({ length: n }, () => NO_LEASE);
    if (this.#leases !== undefined) {
      if (n === 0) this.#leases = [lease];
      else this.#leases.push(lease);
    }
  }

  /** Index of the last record with main <= rev, -1 when there is none. */
  #lastAtOrBefore(rev: number): number {
    const r = this.#revs;
    let lo = 0;
    let hi = r.length / W - 1;
    if (hi < 0 || r[MAIN]! > rev) return -1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (r[mid * W + MAIN]! <= rev) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  #checkOrder(main: number, sub: number): void {
    const n = this.size;
    if (n === 0) return;
    const lm = this.#revs[(n - 1) * W + MAIN]!;
    const ls = this.#revs[(n - 1) * W + SUB]!;
    if (!(lm < main || (lm === main && ls < sub))) {
      throw new Error(`mvcc: revision ${main}.${sub} not after ${lm}.${ls}`);
    }
  }
}

/**
 * Values kept in memory, by revision: where a key space without a backend (tests of the
 * pure logic, tools) keeps its records' values.
 */
export class MemoryValues implements ValueSource {
  readonly #byMain = new Map<number, Buffer[]>();

  keep(rec: StoredRecord): void {
    if (rec.tombstone) return;
    let vs = this.#byMain.get(rec.main);
    if (vs === undefined) this.#byMain.set(rec.main, (vs = []));
    vs[rec.sub] = rec.value;
  }

  remove(main: number, sub: number): void {
    const vs = this.#byMain.get(main);
    if (vs === undefined) return;
    delete vs[sub];
    if (!vs.some((v) => v !== undefined)) this.#byMain.delete(main);
  }

  readValue(rec: StoredRecord): Buffer {
    const v = this.#byMain.get(rec.main)?.[rec.sub];
    if (v === undefined) throw new Error(`mvcc: no value for record ${rec.main}.${rec.sub}`);
    return v;
  }
}
