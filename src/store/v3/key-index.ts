// One key's history (etcd's keyIndex): its revisions grouped in generations. A generation
// starts with the put that creates the key and ends with the tombstone that deletes it;
// the next put starts a new generation with a new create revision and version 1.
//
// Unlike etcd, the records themselves (value, lease, version) live here rather than in a
// separate backend keyed by revision: the per-revision history of the store holds the same
// record objects, so nothing is copied.

import type { KeyValue, LeaseId } from "./types.ts";
import { NO_LEASE } from "./types.ts";
import type { KeyId } from "./keys.ts";

/** One stored revision of one key. Immutable once written. */
export interface StoredRecord {
  readonly id: KeyId;
  readonly key: Buffer;
  /** The revision (main) and the position of the change inside it (sub). */
  readonly main: number;
  readonly sub: number;
  /** 0 for a tombstone. */
  readonly createRevision: number;
  /** 1 for the put that creates the key; 0 for a tombstone. */
  readonly version: number;
  readonly value: Buffer;
  readonly lease: LeaseId;
  readonly tombstone: boolean;
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
  readonly key: Buffer;
  /**
   * Invariants: every generation is non-empty; records ascend by (main, sub) across all
   * generations; every generation but the last ends with its only tombstone; the last
   * generation may end with a tombstone (the key is deleted now). Only compaction removes
   * records; it may leave a first generation that is a lone tombstone (see compact).
   */
  #generations: StoredRecord[][] = [];

  constructor(id: KeyId, key: Buffer) {
    this.id = id;
    this.key = key;
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
    const rec: StoredRecord = {
      id: this.id,
      key: this.key,
      main: opts.main,
      sub: opts.sub,
      createRevision: prev === undefined ? opts.main : prev.createRevision,
      version: prev === undefined ? 1 : prev.version + 1,
      value: opts.value,
      lease: opts.lease,
      tombstone: false,
    };
    if (prev === undefined) this.#generations.push([rec]);
    else this.#generations.at(-1)!.push(rec);
    return rec;
  }

  /** Appends a tombstone at (main, sub), closing the live generation. */
  tombstone(main: number, sub: number): StoredRecord {
    this.#checkOrder(main, sub);
    if (this.live() === undefined) {
      throw new Error(`mvcc: tombstone of a key that is not live (${JSON.stringify(this.id)})`);
    }
    const rec: StoredRecord = {
      id: this.id,
      key: this.key,
      main,
      sub,
      createRevision: 0,
      version: 0,
      value: EMPTY,
      lease: NO_LEASE,
      tombstone: true,
    };
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
  compact(atRev: number): boolean {
    const gens = this.#generations;
    let gi = gens.length - 1;
    while (gi >= 0 && gens[gi]![0]!.main > atRev) gi--;
    if (gi < 0) return false; // every record is newer than atRev
    const g = gens[gi]!;
    const ri = lastAtOrBefore(g, atRev);
    const kept = g[ri]!;
    if (kept.tombstone && kept.main < atRev) {
      // The tombstone closes g (ri is its last record): drop g entirely.
      this.#generations = gens.slice(gi + 1);
    } else {
      this.#generations = [g.slice(ri), ...gens.slice(gi + 1)];
    }
    return this.#generations.length === 0;
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
  static fromRecords(id: KeyId, key: Buffer, generations: StoredRecord[][]): KeyIndex {
    const ki = new KeyIndex(id, key);
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

  #checkOrder(main: number, sub: number): void {
    const last = this.latest();
    if (last !== undefined && !(last.main < main || (last.main === main && last.sub < sub))) {
      throw new Error(`mvcc: revision ${main}.${sub} not after ${last.main}.${last.sub}`);
    }
  }
}

/**
 * The part of `generations` with main <= rev: what the index held when `rev` was the
 * store's revision, given that records are only appended after it (compaction replaces
 * the array instead of changing it).
 */
export function generationsAsOf(generations: readonly (readonly StoredRecord[])[], rev: number): (readonly StoredRecord[])[] {
  const out: (readonly StoredRecord[])[] = [];
  for (const g of generations) {
    if (g[0]!.main > rev) break;
    out.push(g.at(-1)!.main <= rev ? g : g.slice(0, lastAtOrBefore(g, rev) + 1));
  }
  return out;
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
