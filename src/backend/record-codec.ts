// How a v3 record is laid out in the backend (etcd: key = revision, value = mvccpb.KeyValue).
//
//   key   = main:u64 BE, sub:u64 BE           (16 bytes: byte order is revision order)
//   value = flags:u8 (bit0 tombstone) keyLen:u32 createRevision:f64 version:f64 lease:i64 key value
//
// Revisions are JS numbers (safe integers); lease IDs are int64 and never pass through one.

import type { StoredRecord } from "../store/v3/key-index.ts";
import { NO_LEASE } from "../store/v3/types.ts";

export const REVISION_KEY_BYTES = 16;
const HEADER = 1 + 4 + 8 + 8 + 8;
const EMPTY = Buffer.alloc(0);

export function revisionKey(main: number, sub: number): Buffer {
  const b = Buffer.allocUnsafe(REVISION_KEY_BYTES);
  writeRevision(b, 0, main);
  writeRevision(b, 8, sub);
  return b;
}

/** A revision (a safe integer, below 2^53) as a big-endian u64, by 32-bit halves. */
function writeRevision(b: Buffer, at: number, n: number): void {
  const hi = Math.floor(n / 0x1_0000_0000);
  const lo = n - hi * 0x1_0000_0000;
  b[at] = hi >>> 24;
  b[at + 1] = hi >>> 16;
  b[at + 2] = hi >>> 8;
  b[at + 3] = hi;
  b[at + 4] = lo >>> 24;
  b[at + 5] = lo >>> 16;
  b[at + 6] = lo >>> 8;
  b[at + 7] = lo;
}

export function parseRevisionKey(b: Uint8Array): { main: number; sub: number } {
  if (b.length !== REVISION_KEY_BYTES) throw new Error(`v3 backend: a revision key of ${b.length} bytes`);
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return { main: buf.readUIntBE(2, 6), sub: buf.readUIntBE(10, 6) };
}

export function encodeRecord(rec: StoredRecord): Buffer {
  const value = rec.tombstone ? EMPTY : rec.value;
  // The key is written from its index form (one latin1 char per byte): rec.key would make
  // a Buffer of it first, on every write.
  const keyLen = rec.id.length;
  const out = Buffer.allocUnsafe(HEADER + keyLen + value.length);
  out[0] = rec.tombstone ? 1 : 0;
  out.writeUInt32BE(keyLen, 1);
  out.writeDoubleBE(rec.createRevision, 5);
  out.writeDoubleBE(rec.version, 13);
  if (rec.lease === NO_LEASE) out.fill(0, 21, 29);
  else out.writeBigInt64BE(rec.lease, 21);
  out.write(rec.id, HEADER, keyLen, "latin1");
  value.copy(out, HEADER + keyLen);
  return out;
}

/**
 * What a restart needs of a record: everything but its value. The decoder leaves main and
 * sub at 0: they come from the record's key (see revisionOf).
 */
export interface RecordHead {
  id: string;
  main: number;
  sub: number;
  createRevision: number;
  version: number;
  lease: bigint;
  tombstone: boolean;
}

/**
 * A Buffer over the ArrayBuffer LMDB reads into, made once per ArrayBuffer: a restart
 * decodes every record's head, and a view per record had cost as much as the read.
 */
let viewOf: ArrayBufferLike | undefined;
let view: Buffer<ArrayBufferLike> = Buffer.alloc(0);

/**
 * The head of an encoded record, read in place: `b` may be LMDB's shared read buffer,
 * valid only during this call, so nothing of it is kept (the key becomes a string).
 */
export function decodeRecordHead(b: Uint8Array, size: number): RecordHead {
  if (b.buffer !== viewOf) {
    viewOf = b.buffer;
    view = Buffer.from(b.buffer);
  }
  const o = b.byteOffset;
  if (size < HEADER) throw new Error(`v3 backend: a record of ${size} bytes`);
  const keyLen = view.readUInt32BE(o + 1);
  if (HEADER + keyLen > size) throw new Error("v3 backend: a record's key runs past its end");
  return {
    id: view.toString("latin1", o + HEADER, o + HEADER + keyLen),
    main: 0,
    sub: 0,
    createRevision: view.readDoubleBE(o + 5),
    version: view.readDoubleBE(o + 13),
    // Most keys have no lease: no BigInt is made for them.
    lease: view.readUInt32BE(o + 21) === 0 && view.readUInt32BE(o + 25) === 0 ? NO_LEASE : view.readBigInt64BE(o + 21),
    tombstone: ((view[o] as number) & 1) === 1,
  };
}

/** Sets `h`'s main and sub from its revision key `k` (16 bytes, as revisionKey writes them). */
export function revisionOf(h: RecordHead, k: Uint8Array): RecordHead {
  if (k.length !== REVISION_KEY_BYTES) throw new Error(`v3 backend: a revision key of ${k.length} bytes`);
  h.main = (k[2]! * 65536 + k[3]! * 256 + k[4]!) * 16777216 + (k[5]! * 65536 + k[6]! * 256 + k[7]!);
  h.sub = (k[10]! * 65536 + k[11]! * 256 + k[12]!) * 16777216 + (k[13]! * 65536 + k[14]! * 256 + k[15]!);
  return h;
}

/**
 * The head of an encoded record (everything but the value): what the head table holds, so
 * that a restart reads ~50 bytes per record instead of every page of values.
 */
export function recordHeadBytes(encoded: Buffer): Buffer {
  return encoded.subarray(0, HEADER + encoded.readUInt32BE(1));
}

/** The value bytes of an encoded record (a view into `b`). */
export function recordValue(b: Uint8Array): Uint8Array {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return buf.subarray(HEADER + buf.readUInt32BE(1));
}
