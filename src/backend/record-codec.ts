// How a v3 record is laid out in the backend (etcd: key = revision, value = mvccpb.KeyValue).
//
//   key   = main:u64 BE, sub:u64 BE           (16 bytes: byte order is revision order)
//   value = flags:u8 (bit0 tombstone) keyLen:u32 createRevision:f64 version:f64 lease:i64 key value
//
// Revisions are JS numbers (safe integers); lease IDs are int64 and never pass through one.

import { StoredRecord, type ValueSource } from "../store/v3/key-index.ts";
import { NO_LEASE } from "../store/v3/types.ts";

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

/** What a restart needs of a record: everything but its value. */
export interface RecordHead {
  id: string;
  createRevision: number;
  version: number;
  lease: bigint;
  tombstone: boolean;
}

/**
 * The head of an encoded record, read in place: `b` may be LMDB's shared read buffer,
 * valid only during this call, so nothing of it is kept (the key becomes a string).
 */
export function decodeRecordHead(b: Uint8Array, size: number): RecordHead {
  const buf = Buffer.from(b.buffer, b.byteOffset, size);
  if (size < HEADER) throw new Error(`v3 backend: a record of ${size} bytes`);
  const keyLen = buf.readUInt32BE(1);
  if (HEADER + keyLen > size) throw new Error("v3 backend: a record's key runs past its end");
  return {
    id: buf.toString("latin1", HEADER, HEADER + keyLen),
    createRevision: buf.readDoubleBE(5),
    version: buf.readDoubleBE(13),
    lease: buf.readBigInt64BE(21),
    tombstone: (buf.readUInt8(0) & 1) === 1,
  };
}

/** The record at (main, sub) from its head; `source` reads the value when asked. */
export function recordFromHead(main: number, sub: number, h: RecordHead, source: ValueSource): StoredRecord {
  return new StoredRecord(h.id, main, sub, h.createRevision, h.version, h.tombstone ? EMPTY : undefined, h.lease === NO_LEASE ? NO_LEASE : h.lease, h.tombstone, source);
}

/** The value bytes of an encoded record (a view into `b`). */
export function recordValue(b: Uint8Array): Uint8Array {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return buf.subarray(HEADER + buf.readUInt32BE(1));
}
