// etcd's HashKV (mvcc/kvstore.go HashByRev): a hash of the key space's records up to a
// revision, so members can check they hold the same history. Which records count is
// etcd's: every record with a revision in (compaction revision, rev], plus what the last
// compaction kept (each key's latest record at the compaction revision, unless that is a
// tombstone). kvctl keeps the tombstone AT the compaction revision (store README); a range
// at the compaction revision does not return it, so it does not count here either.
//
// The value is not etcd's number: etcd's hashes bbolt's bytes (revision keys, marshalled
// KeyValues) with crc32c. Members of one kvctl cluster agree with each other, which is what
// `etcdctl endpoint hashkv` is used for; no client compares it with an etcd member.
//
// Each record is digested alone and the digests are summed, so the order records are read
// in does not matter: the kept ones come a page of keys at a time, the rest a batch of
// revisions at a time (memory stays bounded), and a record hashes the same before and
// after a compaction keeps it. So, as in etcd, a compaction that drops nothing leaves the
// hash unchanged. A record is identified by (revision, key): a revision never changes one
// key twice (etcd refuses such a txn), and the sub revision of a kept record is not known.
import { createHash } from "node:crypto";
import { V3Errors } from "../../api/v3-errors.ts";
import type { HistoryQuery } from "./mvcc-store.ts";
import type { KeyValue, RangeRequest, RangeResponse, RevisionEvents } from "./types.ts";
import { EventType, rangeRequest } from "./types.ts";

/** What the hash reads (V3KeySpace and MvccStore provide it). */
export interface HashKvSource {
  readonly revision: number;
  /** -1 before the first compaction. */
  readonly compactMainRevision: number;
  range(req: RangeRequest): RangeResponse;
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
const PAGE_KEYS = 1000;

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
  const sum = new RecordSum();
  if (compactRev > 0 && rev > 0) hashKept(sum, src, compactRev);
  for (let from = Math.max(1, compactRev + 1); from <= rev; from += HISTORY_BATCH) {
    const to = Math.min(rev, from + HISTORY_BATCH - 1);
    for (const r of src.eventsInRange({ from, to, key: ALL, rangeEnd: ALL, prevKv: false })) {
      for (const e of r.events) sum.add(r.revision, e.type === EventType.DELETE, e.kv);
    }
  }
  return { hash: sum.digest(), revision: current, compactRevision: compactRev };
}

/** The records the last compaction kept: the live keys at its revision, in key order. */
function hashKept(sum: RecordSum, src: HashKvSource, compactRev: number): void {
  let key = ALL;
  for (;;) {
    const r = src.range(rangeRequest({ key, rangeEnd: ALL, limit: PAGE_KEYS, revision: compactRev, serializable: true }));
    for (const kv of r.kvs) sum.add(kv.modRevision, false, kv);
    const last = r.kvs.at(-1);
    if (!r.more || last === undefined) return;
    key = Buffer.concat([last.key, ALL]);
  }
}

const MASK = (1n << 64n) - 1n;

/** Two 64-bit lanes of the sum of the records' sha256 digests, and their count. */
class RecordSum {
  #a = 0n;
  #b = 0n;
  #count = 0;

  add(main: number, tombstone: boolean, kv: KeyValue): void {
    const head = Buffer.allocUnsafe(41);
    head.writeDoubleBE(main, 0);
    head[8] = tombstone ? 1 : 0;
    head.writeDoubleBE(tombstone ? 0 : kv.createRevision, 9);
    head.writeDoubleBE(tombstone ? 0 : kv.version, 17);
    head.writeBigInt64BE(tombstone ? 0n : BigInt.asIntN(64, kv.lease), 25);
    head.writeUInt32BE(kv.key.length, 33);
    head.writeUInt32BE(tombstone ? 0 : kv.value.length, 37);
    const h = createHash("sha256").update(head).update(kv.key);
    if (!tombstone) h.update(kv.value);
    const d = h.digest();
    this.#a = (this.#a + d.readBigUInt64BE(0)) & MASK;
    this.#b = (this.#b + d.readBigUInt64BE(8)) & MASK;
    this.#count++;
  }

  /** HashKVResponse.hash is a uint32. */
  digest(): number {
    const out = Buffer.allocUnsafe(24);
    out.writeBigUInt64BE(this.#a, 0);
    out.writeBigUInt64BE(this.#b, 8);
    out.writeDoubleBE(this.#count, 16);
    return createHash("sha256").update("kvctl-hashkv/1\n").update(out).digest().readUInt32BE(0);
  }
}
