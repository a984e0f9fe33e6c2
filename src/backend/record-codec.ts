// How a v3 record is laid out in the backend (etcd: key = revision, value = mvccpb.KeyValue).
//
//   key   = main:u64 BE, sub:u64 BE           (16 bytes: byte order is revision order)
//   value = flags:u8 (bit0 tombstone) keyLen:u32 createRevision:f64 version:f64 lease:i64 key value
//
// Revisions are JS numbers (safe integers); lease IDs are int64 and never pass through one.

import { StoredRecord, type ValueSource } from "../store/v3/key-index.ts";

export const REVISION_KEY_BYTES = 16;
const HEADER = 1 + 4 + 8 + 8 + 8;
const EMPTY = Buffer.alloc(0);

export function revisionKey(main: number, sub: number): Buffer {
  const b = Buffer.allocUnsafe(REVISION_KEY_BYTES);
  b.writeUIntBE(0, 0, 2);
  b.writeUIntBE(main, 2, 6);
  b.writeUIntBE(0, 8, 2);
  b.writeUIntBE(sub, 10, 6);
  return b;
}

export function parseRevisionKey(b: Uint8Array): { main: number; sub: number } {
  if (b.length !== REVISION_KEY_BYTES) throw new Error(`v3 backend: a revision key of ${b.length} bytes`);
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return { main: buf.readUIntBE(2, 6), sub: buf.readUIntBE(10, 6) };
}

export function encodeRecord(rec: StoredRecord): Buffer {
  const value = rec.tombstone ? EMPTY : rec.value;
  const out = Buffer.allocUnsafe(HEADER + rec.key.length + value.length);
  out.writeUInt8(rec.tombstone ? 1 : 0, 0);
  out.writeUInt32BE(rec.key.length, 1);
  out.writeDoubleBE(rec.createRevision, 5);
  out.writeDoubleBE(rec.version, 13);
  out.writeBigInt64BE(rec.lease, 21);
  rec.key.copy(out, HEADER);
  value.copy(out, HEADER + rec.key.length);
  return out;
}

/** The record at (main, sub) without its value: `source` reads that when asked. */
export function decodeRecordMeta(main: number, sub: number, b: Uint8Array, source: ValueSource): StoredRecord {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (buf.length < HEADER) throw new Error(`v3 backend: record ${main}.${sub} is ${buf.length} bytes`);
  const tombstone = (buf.readUInt8(0) & 1) === 1;
  const keyLen = buf.readUInt32BE(1);
  if (HEADER + keyLen > buf.length) throw new Error(`v3 backend: record ${main}.${sub} has a key past its end`);
  const id = buf.toString("latin1", HEADER, HEADER + keyLen);
  const createRevision = buf.readDoubleBE(5);
  const version = buf.readDoubleBE(13);
  const lease = buf.readBigInt64BE(21);
  return new StoredRecord(id, main, sub, createRevision, version, tombstone ? EMPTY : undefined, lease, tombstone, source);
}

/** The value bytes of an encoded record (a view into `b`). */
export function recordValue(b: Uint8Array): Uint8Array {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return buf.subarray(HEADER + buf.readUInt32BE(1));
}
