// One key's history (etcd's keyIndex): its revisions grouped in generations. A generation
// starts with the put that creates the key and ends with the tombstone that deletes it;
// the next put starts a new generation with a new create revision and version 1.
//
// The records' metadata (revisions, version, lease) lives here, as in etcd's treeIndex plus
// the fields a compare needs; their values live in the backend (records keyed by revision)
// once committed there, and are read back on demand (StoredRecord.value). The per-revision
// history of the store holds the same record objects, so nothing is copied.

import type { KeyValue, LeaseId } from "./types.ts";
import { NO_LEASE } from "./types.ts";
import type { KeyId } from "./keys.ts";
import { keyBytes } from "./keys.ts";

/** Where a record's value is read from once it is no longer held in memory (the backend). */
export interface ValueSource {
  readValue(rec: StoredRecord): Buffer;
}

/**
 * One stored revision of one key. Immutable once written, except that its value may move
 * out of memory: once the backend has committed the record it calls release(), and from
 * then on `value` reads the bytes back from it. The heap then holds the index (keys and
 * revisions), not the data.
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
  #value: Buffer | undefined;
  #source: ValueSource | undefined;

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
    this.#value = value;
    this.#source = source;
    if (value === undefined && source === undefined) throw new Error("mvcc: a record needs its value or a source for it");
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

  /** True while the value is held in memory. */
  get holdsValue(): boolean {
    return this.#value !== undefined;
  }

  /** Drops the value from memory: it is read from `source` from now on. */
  release(source: ValueSource): void {
    if (this.tombstone) return;
    this.#source = source;
    this.#value = undefined;
  }
}

const EMPTY = Buffer.alloc(0);

/** The record as the API shows it. A tombstone shows only key and mod revision. */
export function toKeyValue(rec: StoredRecord, opts?: { keysOnly?: boolean }): KeyValue {
  return {
    key: rec.key,
    createRevision: rec.createRevision,
    modRevision: rec.main,
    version: rec.version,
    value: opts?.keysOnly === true ? EMPTY : rec.value,
    lease: rec.lease,
  };
}

/** Orders records by (main, sub). */
export function recordBefore(a: StoredRecord, b: StoredRecord): boolean {
  return a.main < b.main || (a.main === b.main && a.sub < b.sub);
}

export class KeyIndex {
  readonly id: KeyId;
  /**
   * Invariants: every generation is non-empty; records ascend by (main, sub) across all
   * generations; every generation but the last ends with its only tombstone; the last
   * generation may end with a tombstone (the key is deleted now). Only compaction removes
   * records; it may leave a first generation that is a lone tombstone (see compact).
   */
  #generations: StoredRecord[][] = [];

  constructor(id: KeyId) {
    this.id = id;
  }

  /** The key's bytes (made on each call, see StoredRecord.key). */
  get key(): Buffer {
    return keyBytes(this.id);
  }

  /** The newest record (maybe a tombstone), or undefined for an empty index. */
  latest(): StoredRecord | undefined {
    const g = this.#generations.at(-1);
    return g?.at(-1);
  }

  /** The key's current value, or undefined when it is deleted. */
  live(): StoredRecord | undefined {
    const r = this.latest();
    return r === undefined || r.tombstone ? undefined : r;
  }

  /** The newest record with main <= rev (maybe a tombstone). */
  at(rev: number): StoredRecord | undefined {
    for (let gi = this.#generations.length - 1; gi >= 0; gi--) {
      const g = this.#generations[gi]!;
      if (g[0]!.main > rev) continue;
      return g[lastAtOrBefore(g, rev)];
    }
    return undefined;
  }

  /** The key's value as of revision `rev`, or undefined if it did not exist then. */
  visibleAt(rev: number): StoredRecord | undefined {
    const r = this.at(rev);
    return r === undefined || r.tombstone ? undefined : r;
  }

  /** Appends a put at (main, sub); it continues the live generation or starts a new one. */
  put(opts: { main: number; sub: number; value: Buffer; lease: LeaseId }): StoredRecord {
    this.#checkOrder(opts.main, opts.sub);
    const prev = this.live();
    const rec = new StoredRecord(
      this.id,
      opts.main,
      opts.sub,
      prev === undefined ? opts.main : prev.createRevision,
      prev === undefined ? 1 : prev.version + 1,
      opts.value,
      // One shared 0n: a decoded lease 0 is a bigint object of its own per record.
      opts.lease === NO_LEASE ? NO_LEASE : opts.lease,
      false,
    );
    if (prev === undefined) this.#newGeneration(rec);
    else this.#generations.at(-1)!.push(rec);
    return rec;
  }

  /** Appends a tombstone at (main, sub), closing the live generation. */
  tombstone(main: number, sub: number): StoredRecord {
    this.#checkOrder(main, sub);
    if (this.live() === undefined) {
      throw new Error(`mvcc: tombstone of a key that is not live (${JSON.stringify(this.id)})`);
    }
    const rec = new StoredRecord(this.id, main, sub, 0, 0, EMPTY, NO_LEASE, true);
    this.#generations.at(-1)!.push(rec);
    return rec;
  }

  /**
   * Physical compaction at `atRev`: keeps the newest record with main <= atRev (what a
   * range at atRev sees) and everything after it. A tombstone below atRev goes too, with
   * its generation; a tombstone AT atRev stays so that a watch replaying from atRev sees
   * the delete (a range at atRev does not show tombstones anyway). Returns true when the
   * index is now empty and should be dropped. It replaces the arrays it shortens and never
   * changes them in place: an image being written keeps the old ones (image-writer.ts).
   */
  compact(atRev: number, dropped?: StoredRecord[]): boolean {
    const gens = this.#generations;
    let gi = gens.length - 1;
    while (gi >= 0 && gens[gi]![0]!.main > atRev) gi--;
    if (gi < 0) return false; // every record is newer than atRev
    const g = gens[gi]!;
    const ri = lastAtOrBefore(g, atRev);
    const kept = g[ri]!;
    const dropsG = kept.tombstone && kept.main < atRev;
    if (dropped !== undefined) {
      for (let i = 0; i < gi; i++) dropped.push(...gens[i]!);
      dropped.push(...(dropsG ? g : g.slice(0, ri)));
    }
    if (dropsG) {
      // The tombstone closes g (ri is its last record): drop g entirely.
      this.#generations = gens.slice(gi + 1);
    } else {
      this.#generations = [g.slice(ri), ...gens.slice(gi + 1)];
    }
    return this.#generations.length === 0;
  }

  /**
   * Appends a record read back from the backend (a restart rebuilds the index from the
   * records in revision order): a put after a tombstone, or the first record held, starts
   * a generation. Compaction may have left a first generation that starts mid-way (version
   * above 1) or is a lone tombstone; both are accepted as they are.
   */
  restore(rec: StoredRecord): void {
    this.#checkOrder(rec.main, rec.sub);
    const last = this.latest();
    if (last === undefined || (last.tombstone && !rec.tombstone)) this.#newGeneration(rec);
    else if (last.tombstone) throw new Error(`mvcc: two tombstones in a row for ${JSON.stringify(this.id)}`);
    else this.#generations.at(-1)!.push(rec);
  }

  /** Records with from <= main <= to, ascending. */
  between(from: number, to: number): StoredRecord[] {
    const out: StoredRecord[] = [];
    for (const g of this.#generations) {
      if (g.at(-1)!.main < from) continue;
      if (g[0]!.main > to) break;
      for (const r of g) if (r.main >= from && r.main <= to) out.push(r);
    }
    return out;
  }

  /** True when this exact record is still held (not compacted away). */
  holds(rec: StoredRecord): boolean {
    // Several generations can share a main revision (a txn deleting then re-creating).
    for (const g of this.#generations) {
      if (g[0]!.main > rec.main) break;
      if (g.at(-1)!.main >= rec.main && g.includes(rec)) return true;
    }
    return false;
  }

  /** Every held record, ascending, generation by generation. */
  generations(): readonly (readonly StoredRecord[])[] {
    return this.#generations;
  }

  /** Rebuilds an index from records in (main, sub) order (snapshot restore). */
  static fromRecords(id: KeyId, generations: StoredRecord[][]): KeyIndex {
    const ki = new KeyIndex(id);
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
      });
    });
    ki.#generations = generations;
    return ki;
  }

  /**
   * Most keys have one generation of one record: array literals of that exact size, since
   * V8 gives an array that grows from empty room for 17 elements (a third of the memory a
   * key costs, at a million keys).
   */
  #newGeneration(rec: StoredRecord): void {
    if (this.#generations.length === 0) this.#generations = [[rec]];
    else this.#generations.push([rec]);
  }

  #checkOrder(main: number, sub: number): void {
    const last = this.latest();
    if (last !== undefined && !(last.main < main || (last.main === main && last.sub < sub))) {
      throw new Error(`mvcc: revision ${main}.${sub} not after ${last.main}.${last.sub}`);
    }
  }
}

/** Index of the last record of `g` with main <= rev; g[0].main <= rev is required. */
function lastAtOrBefore(g: readonly StoredRecord[], rev: number): number {
  let lo = 0;
  let hi = g.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (g[mid]!.main <= rev) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
