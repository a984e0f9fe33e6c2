// mvccpb.KeyValue as protobuf, written once for everything that sends or stores one:
// gRPC's Range, Put and Watch answers (server/grpc/fast-codec.ts, a hot path), and the
// records of etcd's `key` bucket that HashKV sums and the bbolt snapshot holds
// (etcd-key-record.ts). The bytes are gogoproto's and @bufbuild/protobuf's alike: fields in
// number order, zero values left out (key 1, create_revision 2, mod_revision 3, version 4,
// value 5, lease 6); a deletion's record holds its key only (etcd marshals
// KeyValue{Key: key}).
//
// Sized first, then written at an offset into the caller's buffer, so a caller places a
// message in a buffer it already holds (a RangeResponse of 1,000 KVs, HashKV's chunk)
// without an allocation per KeyValue. Revisions, versions and lengths are numbers written
// with number arithmetic; a lease ID (int64, negative ones ten bytes) is split into two
// 32-bit halves, so that no BigInt is made per 7 bits.
import type { KeyValue } from "./types.ts";
import { NO_LEASE } from "./types.ts";

/** What a KeyValue is made of besides its mod_revision (a record's main revision). */
export type KeyValueFields = Pick<KeyValue, "key" | "createRevision" | "version" | "value" | "lease">;

/** The marshalled KeyValue's length; a tombstone's holds its key only. */
export function keyValueBytes(modRevision: number, tombstone: boolean, kv: KeyValueFields): number {
  const keyLen = kv.key.length;
  let n = keyLen === 0 ? 0 : 1 + varintBytes(keyLen) + keyLen;
  if (tombstone) return n;
  const valueLen = kv.value.length;
  n += int64FieldBytes(kv.createRevision) + int64FieldBytes(modRevision) + int64FieldBytes(kv.version);
  if (valueLen !== 0) n += 1 + varintBytes(valueLen) + valueLen;
  if (kv.lease !== NO_LEASE) n += 1 + bigVarintBytes(kv.lease);
  return n;
}

/** Writes the marshalled KeyValue at `at` (keyValueBytes of room); answers where it ends. */
export function writeKeyValue(b: Uint8Array, at: number, modRevision: number, tombstone: boolean, kv: KeyValueFields): number {
  at = putBytesField(b, at, 0x0a, kv.key);
  if (tombstone) return at;
  at = putInt64Field(b, at, 0x10, kv.createRevision);
  at = putInt64Field(b, at, 0x18, modRevision);
  at = putInt64Field(b, at, 0x20, kv.version);
  at = putBytesField(b, at, 0x2a, kv.value);
  if (kv.lease === NO_LEASE) return at;
  b[at++] = 0x30;
  return putBigVarint(b, at, kv.lease);
}

// --- varints --------------------------------------------------------------------------------

/** Bytes of the varint of `n`, a non-negative safe integer. */
export function varintBytes(n: number): number {
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x20_0000) return 3;
  if (n < 0x1000_0000) return 4;
  let size = 5;
  for (n = Math.floor(n / 0x8_0000_0000); n > 0; n = Math.floor(n / 0x80)) size++;
  return size;
}

/** Writes the varint of `n`, a non-negative safe integer, at `at`; answers where it ends. */
export function putVarint(b: Uint8Array, at: number, n: number): number {
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

/** Bytes of an int64/uint64 varint (a negative int64 is ten, two's complement). */
export function bigVarintBytes(v: bigint): number {
  if (v >= 0n && v <= 0x1f_ffff_ffff_ffffn) return varintBytes(Number(v));
  const hi = Number(BigInt.asUintN(64, v) >> 32n);
  return Math.ceil((64 - Math.clz32(hi)) / 7);
}

/** Writes an int64/uint64 varint (two's complement) at `at`; answers where it ends. */
export function putBigVarint(b: Uint8Array, at: number, v: bigint): number {
  if (v >= 0n && v <= 0x1f_ffff_ffff_ffffn) return putVarint(b, at, Number(v));
  const u = BigInt.asUintN(64, v);
  let lo = Number(u & 0xffff_ffffn);
  let hi = Number(u >> 32n);
  // Four 7-bit groups of the low half, then one of its last 4 bits and the high half's first 3.
  for (let i = 0; i < 4; i++) {
    b[at++] = (lo & 0x7f) | 0x80;
    lo >>>= 7;
  }
  b[at++] = lo | ((hi & 0x07) << 4) | 0x80;
  hi >>>= 3;
  // The high half is not 0 here (the value is past 2^53).
  while (hi >= 0x80) {
    b[at++] = (hi & 0x7f) | 0x80;
    hi >>>= 7;
  }
  b[at++] = hi;
  return at;
}

// --- fields ---------------------------------------------------------------------------------

/**
 * An int64 field given as a number (proto3: left out when 0). Revisions and versions are
 * positive safe integers; anything else (never in the store) is written as toBinary writes
 * the int64 of its integer part.
 */
export function int64FieldBytes(n: number): number {
  if (n === 0) return 0;
  return 1 + (n > 0 && Number.isSafeInteger(n) ? varintBytes(n) : bigVarintBytes(BigInt(Math.trunc(n))));
}

/** Writes an int64 field (int64FieldBytes of room) at `at`; answers where it ends. */
export function putInt64Field(b: Uint8Array, at: number, tag: number, n: number): number {
  if (n === 0) return at;
  b[at++] = tag;
  return n > 0 && Number.isSafeInteger(n) ? putVarint(b, at, n) : putBigVarint(b, at, BigInt(Math.trunc(n)));
}

/** Writes a bytes field (proto3: left out when empty) at `at`; answers where it ends. */
export function putBytesField(b: Uint8Array, at: number, tag: number, v: Uint8Array): number {
  const len = v.length;
  if (len === 0) return at;
  b[at++] = tag;
  at = putVarint(b, at, len);
  // TypedArray#set even for a key's few bytes: a byte loop up to 32 bytes cost 9-12 % more
  // CPU per RangeResponse of 16-byte values (bench/kv-encode.ts).
  b.set(v, at);
  return at + len;
}
