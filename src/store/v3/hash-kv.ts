// etcd's HashKV (mvcc/kvstore.go HashByRev), to the same number: crc32c (Castagnoli) of
// the name of bbolt's `key` bucket, then of each record of that bucket in its byte order
// with a revision up to `rev`: the record's key (8 bytes big-endian main revision, '_', 8
// bytes sub revision, and 't' for a tombstone) and its value (the marshalled
// mvccpb.KeyValue; a tombstone's holds only the key), as etcd-key-record.ts writes them.
// `etcdctl endpoint hashkv` thus answers alike for an etcd and a kvctl member with the
// same history, and kvctl members agree with each other, which is what corruption checks
// compare.
//
// Which records bbolt holds at or below the compaction revision C: what the compaction
// kept, each key's record visible at C (etcd drops a tombstone at C; kvctl keeps it, and
// it is not visible, so it does not count). HashByRev counts those only when they are in
// kvindex.Keep(rev), i.e. still the key's visible record at rev, unless no key is live at
// rev (Keep is then empty and all of them count). Above C, every record counts.
//
// Memory: the kept records' keys and revisions are gathered and sorted by revision (etcd
// builds its Keep map of them too); the rest is read a batch of revisions at a time.
import { createRequire } from "node:module";
import { V3Errors } from "../../api/v3-errors.ts";
import type { StoredRecord } from "./key-index.ts";
import type { HistoryQuery } from "./mvcc-store.ts";
import { type KeyRecordFields, keyValueBytes, revisionKeyBytes, writeKeyValue, writeRevisionKey } from "./etcd-key-record.ts";
import type { RevisionEvents } from "./types.ts";
import { EventType } from "./types.ts";

type Crc32Module = typeof import("@node-rs/crc32");
// require(), not import: see btree.ts (start-up time of CommonJS packages).
const { crc32c } = createRequire(import.meta.url)("@node-rs/crc32") as Crc32Module;

/** A key's records at a revision, as hashKV looks them up (KeyIndex). */
export interface HashKvKey {
  visibleAt(rev: number): StoredRecord | undefined;
}

/** What the hash reads (V3KeySpace and MvccStore provide it). */
export interface HashKvSource {
  readonly revision: number;
  /** -1 before the first compaction. */
  readonly compactMainRevision: number;
  /** Every key the index holds, in any order. */
  keyIndexes(): Iterable<HashKvKey>;
  eventsInRange(q: HistoryQuery): RevisionEvents[];
}

/** HashKVResponse's numbers: header revision (current), hash, compact_revision (-1: never). */
export interface HashKvResult {
  hash: number;
  revision: number;
  compactRevision: number;
}

const ALL = Buffer.from([0]);
const HISTORY_BATCH = 1000;
const KEY_BUCKET = Buffer.from("key");

/**
 * etcd's checks first: a revision at or below the compaction revision is compacted (note:
 * at, unlike a range), one above the current revision is a future one; 0 = current.
 */
export function hashKV(src: HashKvSource, revision: number): HashKvResult {
  const current = src.revision;
  const compactRev = src.compactMainRevision;
  if (revision > 0 && revision <= compactRev) throw V3Errors.compacted();
  if (revision > current) throw V3Errors.futureRev();
  // A negative revision counts no record, as etcd's (its upper bound is below them all).
  const rev = revision === 0 ? current : revision;
  const h = new Crc32cWriter();
  h.write(KEY_BUCKET);
  if (compactRev > 0 && rev > 0) {
    for (const r of keptRecords(src, compactRev, rev)) {
      // A StoredRecord makes its key and reads its value on each get: once each here.
      h.record(r.main, r.sub, false, { key: r.key, createRevision: r.createRevision, version: r.version, value: r.value, lease: r.lease });
    }
  }
  for (let from = Math.max(1, compactRev + 1); from <= rev; from += HISTORY_BATCH) {
    const to = Math.min(rev, from + HISTORY_BATCH - 1);
    for (const r of src.eventsInRange({ from, to, key: ALL, rangeEnd: ALL, prevKv: false })) {
      // A revision's changes come in sub revision order, all held (compaction drops none above C).
      r.events.forEach((e, sub) => h.record(r.revision, sub, e.type === EventType.DELETE, e.kv));
    }
  }
  return { hash: h.sum(), revision: current, compactRevision: compactRev };
}

/**
 * The records the compaction at `compactRev` kept that HashByRev(rev) counts, by revision.
 * Per kept key only its index and revision are held (not a record), then each record is
 * looked up again in revision order.
 */
function* keptRecords(src: HashKvSource, compactRev: number, rev: number): Generator<StoredRecord> {
  const keys: HashKvKey[] = [];
  const mains: number[] = [];
  const subs: number[] = [];
  /** 1: still the key's visible record at rev. */
  const still: number[] = [];
  let liveAtRev = false;
  for (const ki of src.keyIndexes()) {
    const at = ki.visibleAt(compactRev);
    const now = ki.visibleAt(rev);
    if (now !== undefined) liveAtRev = true;
    if (at === undefined) continue;
    keys.push(ki);
    mains.push(at.main);
    subs.push(at.sub);
    still.push(now !== undefined && now.main === at.main && now.sub === at.sub ? 1 : 0);
  }
  const order: number[] = [];
  for (let i = 0; i < keys.length; i++) if (!liveAtRev || still[i] === 1) order.push(i);
  order.sort((a, b) => mains[a]! - mains[b]! || subs[a]! - subs[b]!);
  for (const i of order) yield keys[i]!.visibleAt(compactRev)!;
}

const CHUNK = 64 * 1024;

/** crc32c over bbolt's bytes, fed a chunk at a time (one native call per chunk, not per record). */
class Crc32cWriter {
  #crc = 0;
  #buf = Buffer.allocUnsafe(CHUNK);
  #n = 0;

  /** A record of the `key` bucket: its revision key, then its marshalled KeyValue (etcd-key-record.ts). */
  record(main: number, sub: number, tombstone: boolean, kv: KeyRecordFields): void {
    const size = revisionKeyBytes(tombstone) + keyValueBytes(main, tombstone, kv);
    if (size > CHUNK - this.#n) {
      this.#flush();
      if (size > CHUNK) {
        // A value too big for the chunk: a buffer of its own, once.
        const b = Buffer.allocUnsafe(size);
        writeKeyValue(b, writeRevisionKey(b, 0, main, sub, tombstone), main, tombstone, kv);
        this.#crc = crc32c(b, this.#crc);
        return;
      }
    }
    this.#n = writeKeyValue(this.#buf, writeRevisionKey(this.#buf, this.#n, main, sub, tombstone), main, tombstone, kv);
  }

  write(b: Buffer): void {
    if (b.length > CHUNK - this.#n) {
      this.#flush();
      if (b.length > CHUNK) {
        this.#crc = crc32c(b, this.#crc);
        return;
      }
    }
    b.copy(this.#buf, this.#n);
    this.#n += b.length;
  }

  sum(): number {
    this.#flush();
    return this.#crc >>> 0;
  }

  #flush(): void {
    if (this.#n === 0) return;
    this.#crc = crc32c(this.#buf.subarray(0, this.#n), this.#crc);
    this.#n = 0;
  }
}
