// Record framing and payload codec (see README.md "Record framing"). Pure: no I/O.
//
//   [u32 length L][u32 crc][u8 type][payload: L-1 bytes][trailer: 1..8 x 0xA5]
//
// Invariants:
// - every record starts and ends at a multiple of 8 (relative to the segment start);
// - L >= 1, so a zero header always means "nothing written here";
// - the trailer is never empty and never zero, so an intact record ends in a non-zero byte;
// - crc = crc32c(type + payload, seed = crc of the previous record): one running chain.
import { crc32c } from "./crc32c.ts";

export const RecordType = {
  Crc: 1,
  Metadata: 2,
  Entry: 3,
  HardState: 4,
  SnapshotRef: 5,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

export const HEADER_BYTES = 8;
export const TRAILER_BYTE = 0xa5;
/** Largest type + payload accepted, on write and on read (a sanity bound on the length field). */
export const MAX_RECORD_BODY = 128 * 1024 * 1024;
/** Entry payload: u64 term, u64 index, u8 type, then data. */
export const ENTRY_FIXED_BYTES = 17;
const HARD_STATE_BYTES = 24;
const SNAPSHOT_REF_BYTES = 16;
const CRC_BYTES = 4;
const TWO_32 = 2 ** 32;

export interface HardState { term: number; vote: number; commit: number }
/** type 0 normal, 1 conf change: opaque to the WAL. */
export interface WalEntry { term: number; index: number; type: number; data: Uint8Array }
export interface SnapshotRef { index: number; term: number }

/** Bytes a record with `bodyLen` = L (type + payload) occupies, header and trailer included. */
export function recordSize(bodyLen: number): number {
  // +1 guarantees at least one trailer byte; then round up to 8.
  return Math.ceil((HEADER_BYTES + bodyLen + 1) / 8) * 8;
}

export function entryRecordSize(e: WalEntry): number {
  return recordSize(1 + ENTRY_FIXED_BYTES + e.data.length);
}
export const HARD_STATE_RECORD_SIZE = recordSize(1 + HARD_STATE_BYTES);
export const SNAPSHOT_REF_RECORD_SIZE = recordSize(1 + SNAPSHOT_REF_BYTES);
export const CRC_RECORD_SIZE = recordSize(1 + CRC_BYTES);
export function metadataRecordSize(metadata: Uint8Array): number {
  return recordSize(1 + metadata.length);
}

function writeU64(buf: Buffer, value: number, off: number): void {
  buf.writeUInt32LE(value % TWO_32, off);
  buf.writeUInt32LE(Math.floor(value / TWO_32), off + 4);
}

export function readU64(buf: Uint8Array, off: number): number {
  const b = buf as Buffer;
  return b.readUInt32LE(off) + b.readUInt32LE(off + 4) * TWO_32;
}

function checkU64(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`Cannot encode WAL record: ${name} ${value} is not a non-negative safe integer`);
  }
}

/**
 * Writes records one after another into a buffer sized in advance by the caller (sum of
 * the *RecordSize values), carrying the running CRC. One writer per batch: the whole
 * batch is then one write() and one fdatasync().
 */
export class RecordWriter {
  readonly buf: Buffer;
  #off: number;
  #crc: number;

  constructor(opts: { size: number; crc: number }) {
    // allocUnsafe: every byte is overwritten (header, body, trailer fill).
    this.buf = Buffer.allocUnsafe(opts.size);
    this.#off = 0;
    this.#crc = opts.crc;
  }

  get offset(): number { return this.#off; }
  get crc(): number { return this.#crc; }

  /** Header length + type now; payload by the caller at the returned offset; then #finish. */
  #begin(type: RecordType, payloadLen: number): number {
    const bodyLen = 1 + payloadLen;
    if (bodyLen > MAX_RECORD_BODY) {
      throw new RangeError(`Cannot encode WAL record: ${bodyLen} bytes exceed the limit of ${MAX_RECORD_BODY}`);
    }
    this.buf.writeUInt32LE(bodyLen, this.#off);
    this.buf[this.#off + HEADER_BYTES] = type;
    return this.#off + HEADER_BYTES + 1;
  }

  #finish(payloadLen: number): void {
    const start = this.#off;
    const bodyEnd = start + HEADER_BYTES + 1 + payloadLen;
    const end = start + recordSize(1 + payloadLen);
    this.buf.fill(TRAILER_BYTE, bodyEnd, end);
    const crc = crc32c(this.buf.subarray(start + HEADER_BYTES, bodyEnd), this.#crc);
    this.buf.writeUInt32LE(crc, start + 4);
    this.#crc = crc;
    this.#off = end;
  }

  /** The first record of every segment: the chain's value so far, and the seed of this record. */
  crcRecord(): void {
    const p = this.#begin(RecordType.Crc, CRC_BYTES);
    this.buf.writeUInt32LE(this.#crc, p);
    this.#finish(CRC_BYTES);
  }

  metadata(metadata: Uint8Array): void {
    const p = this.#begin(RecordType.Metadata, metadata.length);
    this.buf.set(metadata, p);
    this.#finish(metadata.length);
  }

  entry(e: WalEntry): void {
    checkU64("term", e.term);
    checkU64("index", e.index);
    if (!Number.isInteger(e.type) || e.type < 0 || e.type > 255) {
      throw new RangeError(`Cannot encode WAL record: entry type ${e.type} is not a byte`);
    }
    const len = ENTRY_FIXED_BYTES + e.data.length;
    const p = this.#begin(RecordType.Entry, len);
    writeU64(this.buf, e.term, p);
    writeU64(this.buf, e.index, p + 8);
    this.buf[p + 16] = e.type;
    this.buf.set(e.data, p + ENTRY_FIXED_BYTES);
    this.#finish(len);
  }

  hardState(hs: HardState): void {
    checkU64("term", hs.term);
    checkU64("vote", hs.vote);
    checkU64("commit", hs.commit);
    const p = this.#begin(RecordType.HardState, HARD_STATE_BYTES);
    writeU64(this.buf, hs.term, p);
    writeU64(this.buf, hs.vote, p + 8);
    writeU64(this.buf, hs.commit, p + 16);
    this.#finish(HARD_STATE_BYTES);
  }

  snapshotRef(ref: SnapshotRef): void {
    checkU64("index", ref.index);
    checkU64("term", ref.term);
    const p = this.#begin(RecordType.SnapshotRef, SNAPSHOT_REF_BYTES);
    writeU64(this.buf, ref.index, p);
    writeU64(this.buf, ref.term, p + 8);
    this.#finish(SNAPSHOT_REF_BYTES);
  }
}

/** Outcome of reading one record at an offset; "short" = header or body runs past `end`. */
export type RecordRead =
  | { kind: "ok"; type: RecordType; crc: number; payloadStart: number; payloadEnd: number; size: number }
  | { kind: "zero" }
  | { kind: "short"; claimedEnd: number }
  | { kind: "bad"; detail: string; claimedEnd: number };

const VALID_TYPES = new Set<number>(Object.values(RecordType));

/** Reads the record at `off` (a multiple of 8), checking its CRC against `seed`. */
export function readRecord(buf: Buffer, off: number, seed: number): RecordRead {
  const end = buf.length;
  if (off + HEADER_BYTES > end) {
    return { kind: "short", claimedEnd: off + HEADER_BYTES };
  }
  const bodyLen = buf.readUInt32LE(off);
  if (bodyLen === 0) {
    // L is never 0, so this is unwritten space (a crc of 0 alone is possible: check both).
    if (buf.readUInt32LE(off + 4) === 0) return { kind: "zero" };
    return { kind: "bad", detail: "zero record length", claimedEnd: off + HEADER_BYTES };
  }
  if (bodyLen > MAX_RECORD_BODY) {
    return { kind: "bad", detail: `record length ${bodyLen} exceeds the limit`, claimedEnd: Infinity };
  }
  const size = recordSize(bodyLen);
  const recEnd = off + size;
  if (recEnd > end) return { kind: "short", claimedEnd: recEnd };
  const bodyStart = off + HEADER_BYTES;
  const bodyEnd = bodyStart + bodyLen;
  for (let i = bodyEnd; i < recEnd; i++) {
    if (buf[i] !== TRAILER_BYTE) return { kind: "bad", detail: "bad record trailer", claimedEnd: recEnd };
  }
  const stored = buf.readUInt32LE(off + 4);
  const type = buf[bodyStart] as number;
  // A crc record is seeded with the value it carries, so a reader can start the chain there.
  const seedHere = type === RecordType.Crc && bodyLen === 1 + CRC_BYTES ? buf.readUInt32LE(bodyStart + 1) : seed;
  const actual = crc32c(buf.subarray(bodyStart, bodyEnd), seedHere);
  if (actual !== stored) {
    return { kind: "bad", detail: `crc mismatch (stored ${hex32(stored)}, computed ${hex32(actual)})`, claimedEnd: recEnd };
  }
  if (!VALID_TYPES.has(type)) return { kind: "bad", detail: `unknown record type ${type}`, claimedEnd: recEnd };
  const payloadLen = bodyLen - 1;
  const wanted = expectedPayload(type as RecordType);
  if (wanted !== null && (wanted.exact ? payloadLen !== wanted.bytes : payloadLen < wanted.bytes)) {
    return { kind: "bad", detail: `bad payload length ${payloadLen} for record type ${type}`, claimedEnd: recEnd };
  }
  return { kind: "ok", type: type as RecordType, crc: stored, payloadStart: bodyStart + 1, payloadEnd: bodyEnd, size };
}

function expectedPayload(type: RecordType): { bytes: number; exact: boolean } | null {
  switch (type) {
    case RecordType.Crc: return { bytes: CRC_BYTES, exact: true };
    case RecordType.HardState: return { bytes: HARD_STATE_BYTES, exact: true };
    case RecordType.SnapshotRef: return { bytes: SNAPSHOT_REF_BYTES, exact: true };
    case RecordType.Entry: return { bytes: ENTRY_FIXED_BYTES, exact: false };
    case RecordType.Metadata: return null;
  }
}

function hex32(n: number): string {
  return n.toString(16).padStart(8, "0");
}

// Payload parsers: called only on records readRecord() accepted, so lengths are known good.

/** An entry's index alone (no copy of its data): replay skips those the snapshot covers. */
export function parseEntryIndex(buf: Buffer, start: number): number {
  return readU64(buf, start + 8);
}

export function parseEntryTerm(buf: Buffer, start: number): number {
  return readU64(buf, start);
}

/**
 * Copies an entry's data out of the segment buffer (up to 64 MiB, which must not stay alive
 * through one entry). The caller may say where the copy goes: the server puts it where the
 * raft log keeps its entries, so a replay does not copy each entry twice.
 */
export type RetainData = (data: Uint8Array) => Uint8Array;

export function parseEntry(buf: Buffer, start: number, end: number, retain: RetainData = copyOut): WalEntry {
  return {
    term: parseEntryTerm(buf, start),
    index: parseEntryIndex(buf, start),
    type: buf[start + 16] as number,
    data: retain(buf.subarray(start + ENTRY_FIXED_BYTES, end)),
  };
}

/**
 * The default copy, in Buffer's shared pool: small entries then share 8 KiB slabs instead
 * of holding one ArrayBuffer each, which the garbage collector tracks one by one (a
 * restart replaying 100k entries spent a fifth of its time collecting them).
 */
function copyOut(data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(data.length);
  out.set(data);
  return out;
}

export function parseHardState(buf: Buffer, start: number): HardState {
  return { term: readU64(buf, start), vote: readU64(buf, start + 8), commit: readU64(buf, start + 16) };
}

export function parseSnapshotRef(buf: Buffer, start: number): SnapshotRef {
  return { index: readU64(buf, start), term: readU64(buf, start + 8) };
}

export function parseCrc(buf: Buffer, start: number): number {
  return buf.readUInt32LE(start);
}
