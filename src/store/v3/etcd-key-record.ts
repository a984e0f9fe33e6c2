// One record of etcd 3.4's `key` bucket (mvcc/revision.go, mvcc/kvstore_txn.go), written
// into a caller's buffer: the HashKV sum (hash-kv.ts) and the bbolt snapshot file
// (server/backup/etcd-bolt-writer.ts) must hold the same bytes as etcd's, so both write
// them here.
//
//   key    main revision (8 bytes BE) '_' sub revision (8 bytes BE), then 't' for a deletion
//   value  mvccpb.KeyValue as gogoproto marshals it: fields in number order, zero values
//          left out (key 1, create_revision 2, mod_revision 3, version 4, value 5, lease 6);
//          a deletion's holds its key only (etcd marshals KeyValue{Key: key})
//
// Sizes first, then writes at an offset, so a caller can place a record in a chunk it
// already holds (HashKV feeds 60,000 of them to the crc32c without one allocation each)
// or allocate it exactly once. Revisions and versions are safe integers: they are written
// with number arithmetic, BigInt only for a lease ID.
import type { KeyValue } from "./types.ts";
import { NO_LEASE } from "./types.ts";

/** What a record's value is made of besides its revision (mod_revision is the main revision). */
export type KeyRecordFields = Pick<KeyValue, "key" | "createRevision" | "version" | "value" | "lease">;

/** A revision key's length: 17 bytes, one more for a deletion's 't'. */
export const revisionKeyBytes = (tombstone: boolean): number => (tombstone ? 18 : 17);

/** Writes the revision key at `at`; answers where it ends. */
export function writeRevisionKey(b: Buffer, at: number, main: number, sub: number, tombstone: boolean): number {
  writeU64(b, at, main);
  b[at + 8] = 0x5f; // '_'
  writeU64(b, at + 9, sub);
  if (!tombstone) return at + 17;
  b[at + 17] = 0x74; // 't'
  return at + 18;
}

/** The marshalled KeyValue's length. */
export function keyValueBytes(main: number, tombstone: boolean, kv: KeyRecordFields): number {
  let n = bytesField(kv.key.length);
  if (tombstone) return n;
  n += intField(kv.createRevision) + intField(main) + intField(kv.version) + bytesField(kv.value.length);
  if (kv.lease !== NO_LEASE) n += 1 + bigVarintBytes(kv.lease);
  return n;
}

/** Writes the marshalled KeyValue at `at` (keyValueBytes of room); answers where it ends. */
export function writeKeyValue(b: Buffer, at: number, main: number, tombstone: boolean, kv: KeyRecordFields): number {
  at = putBytes(b, at, 0x0a, kv.key);
  if (tombstone) return at;
  at = putInt(b, at, 0x10, kv.createRevision);
  at = putInt(b, at, 0x18, main); // mod_revision
  at = putInt(b, at, 0x20, kv.version);
  at = putBytes(b, at, 0x2a, kv.value);
  if (kv.lease === NO_LEASE) return at;
  b[at++] = 0x30;
  return putBigVarint(b, at, kv.lease);
}

/** A revision (a safe integer, below 2^53) as a big-endian u64, by 32-bit halves. */
function writeU64(b: Buffer, at: number, n: number): void {
  const hi = Math.floor(n / 0x1_0000_0000);
  b.writeUInt32BE(hi, at);
  b.writeUInt32BE(n - hi * 0x1_0000_0000, at + 4);
}

const varintBytes = (n: number): number => {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    size++;
  }
  return size;
};

/** proto3: a zero int64 is left out. */
const intField = (n: number): number => (n === 0 ? 0 : 1 + varintBytes(n));
/** proto3: an empty bytes field is left out. */
const bytesField = (len: number): number => (len === 0 ? 0 : 1 + varintBytes(len) + len);

function putVarint(b: Buffer, at: number, n: number): number {
  // Bit operations are 32-bit: above that, by division.
  while (n > 0x7fff_ffff) {
    b[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  while (n >= 0x80) {
    b[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  b[at++] = n;
  return at;
}

function putInt(b: Buffer, at: number, tag: number, n: number): number {
  if (n === 0) return at;
  b[at++] = tag;
  return putVarint(b, at, n);
}

function putBytes(b: Buffer, at: number, tag: number, v: Uint8Array): number {
  if (v.length === 0) return at;
  b[at++] = tag;
  at = putVarint(b, at, v.length);
  b.set(v, at);
  return at + v.length;
}

/** An int64 lease ID: a negative one is ten bytes (two's complement). */
function bigVarintBytes(v: bigint): number {
  let x = BigInt.asUintN(64, v);
  let size = 1;
  while (x >= 0x80n) {
    x >>= 7n;
    size++;
  }
  return size;
}

function putBigVarint(b: Buffer, at: number, v: bigint): number {
  let x = BigInt.asUintN(64, v);
  while (x >= 0x80n) {
    b[at++] = Number(x & 0x7fn) | 0x80;
    x >>= 7n;
  }
  b[at++] = Number(x);
  return at;
}
