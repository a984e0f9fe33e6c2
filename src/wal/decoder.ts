// One segment's bytes -> its records, with the torn-tail / corruption decision of
// README.md "Reading, torn tails and corruption". Pure: the caller reads the file.
import { crc32c } from "./crc32c.ts";
import { WalCorruptError } from "./errors.ts";
import { HEADER_BYTES, MAX_RECORD_BODY, RecordType, TRAILER_BYTE, readRecord, recordSize, parseCrc } from "./record.ts";

export const SECTOR_BYTES = 512;

export interface ScannedRecord { type: RecordType; offset: number; payloadStart: number; payloadEnd: number }

export interface ScanResult {
  records: ScannedRecord[];
  /** Offset just after the last good record: where the next write goes. */
  end: number;
  /** Running CRC after the last good record. */
  crc: number;
  /** A torn tail in the last segment: [offset, dataEnd) must be dropped. */
  torn: null | { offset: number; dataEnd: number };
}

export interface ScanOptions {
  /** File name, for error messages. */
  file: string;
  /** Only the last segment may end in a torn tail or in zeros. */
  last: boolean;
  /** The chain's value at the end of the previous segment, when that segment was read. */
  prevCrc: number | null;
}

/**
 * Decodes every record of a segment. Invariants on success: records[0] is the crc record
 * at offset 0; each record's CRC chains from the previous one; `end` is 8-aligned.
 * Throws WalCorruptError for anything that is not a torn tail of the last segment.
 */
export function scanSegment(buf: Buffer, opts: ScanOptions): ScanResult {
  const records: ScannedRecord[] = [];
  let off = 0;
  let crc = 0;
  for (;;) {
    if (off === buf.length) {
      if (records.length === 0) throw corrupt(opts, 0, "segment is empty");
      return { records, end: off, crc, torn: null };
    }
    const r = readRecord(buf, off, crc);
    if (r.kind === "ok") {
      if (off === 0) {
        if (r.type !== RecordType.Crc) throw corrupt(opts, 0, "segment does not start with a crc record");
        const carried = parseCrc(buf, r.payloadStart);
        if (opts.prevCrc !== null && carried !== opts.prevCrc) {
          throw corrupt(opts, 0, `crc chain broken between segments (previous ends with ${opts.prevCrc}, this one carries ${carried})`);
        }
      } else if (r.type === RecordType.Crc) {
        throw corrupt(opts, off, "crc record inside a segment");
      }
      records.push({ type: r.type, offset: off, payloadStart: r.payloadStart, payloadEnd: r.payloadEnd });
      crc = r.crc;
      off += r.size;
      continue;
    }
    if (!opts.last) {
      const detail = r.kind === "bad" ? r.detail : r.kind === "zero" ? "unexpected zero header (sealed segments end at their last record)" : "segment ends inside a record";
      throw corrupt(opts, off, detail);
    }
    const verdict = classifyTail(buf, off, r);
    if (verdict.kind === "end") {
      if (records.length === 0) throw corrupt(opts, 0, "segment has no records");
      return { records, end: off, crc, torn: null };
    }
    if (verdict.kind === "torn") {
      if (records.length === 0) throw corrupt(opts, 0, "segment header records are torn");
      return { records, end: off, crc, torn: { offset: off, dataEnd: verdict.dataEnd } };
    }
    throw corrupt(opts, off, verdict.detail);
  }
}

function corrupt(opts: ScanOptions, offset: number, detail: string): WalCorruptError {
  return new WalCorruptError({ file: opts.file, offset, detail });
}

type Verdict = { kind: "end" } | { kind: "torn"; dataEnd: number } | { kind: "corrupt"; detail: string };
type Failure = Exclude<ReturnType<typeof readRecord>, { kind: "ok" }>;

/** Decides what a failed read at `x` in the LAST segment means. */
export function classifyTail(buf: Buffer, x: number, r: Failure): Verdict {
  const z = trailingZeroStart(buf, x);
  if (r.kind === "zero") {
    if (z <= x) return { kind: "end" };
    // Zeros, then data: only a sector that never reached the disk explains it.
    const boundary = Math.min((Math.floor(x / SECTOR_BYTES) + 1) * SECTOR_BYTES, buf.length);
    if (isZero(buf, x, boundary)) return { kind: "torn", dataEnd: z };
    return { kind: "corrupt", detail: "zero header followed by data" };
  }
  if (r.kind === "bad" && r.claimedEnd === Infinity) return { kind: "corrupt", detail: r.detail };
  const claimedEnd = r.claimedEnd;
  // Rule 3 (etcd's torn-entry test): a whole sector chunk of the record is zero. Only up
  // to z: zeros past the written data are rule 2's business (else any long bogus length
  // would reach the preallocated zeros and pass as torn).
  if (hasZeroSectorChunk(buf, x, Math.min(claimedEnd, z))) return { kind: "torn", dataEnd: z };
  // Rule 2: the record's last (never-zero) byte is missing, and no intact data follows.
  if (claimedEnd > z) {
    const intact = findIntactPair(buf, x + 8, z);
    if (intact === null) return { kind: "torn", dataEnd: z };
    const why = r.kind === "bad" ? r.detail : "record runs past the written data";
    return { kind: "corrupt", detail: `${why}, and intact records follow at offset ${intact}` };
  }
  return { kind: "corrupt", detail: r.kind === "bad" ? r.detail : "record runs past the end of the file" };
}

/** Smallest z >= from with buf[z..] all zero. Chunked memcmp: segments are 64 MiB of mostly zeros. */
export function trailingZeroStart(buf: Buffer, from: number): number {
  const CHUNK = 64 * 1024;
  let end = buf.length;
  while (end > from) {
    const start = Math.max(from, end - CHUNK);
    if (!isZero(buf, start, end)) {
      for (let i = end - 1; i >= start; i--) if (buf[i] !== 0) return i + 1;
    }
    end = start;
  }
  return from;
}

const ZEROS = Buffer.alloc(64 * 1024);

export function isZero(buf: Buffer, start: number, end: number): boolean {
  for (let s = start; s < end; s += ZEROS.length) {
    const e = Math.min(end, s + ZEROS.length);
    if (buf.compare(ZEROS, 0, e - s, s, e) !== 0) return false;
  }
  return true;
}

/** Splits [start, end) on sector boundaries; true if any piece is all zero. */
function hasZeroSectorChunk(buf: Buffer, start: number, end: number): boolean {
  let s = start;
  while (s < end) {
    const e = Math.min(end, (Math.floor(s / SECTOR_BYTES) + 1) * SECTOR_BYTES);
    if (isZero(buf, s, e)) return true;
    s = e;
  }
  return false;
}

/**
 * Looks for two records in [from, to) where the second's CRC chains from the first's
 * stored CRC: proof that complete, real data lies after a bad record, so the bad record
 * is not a torn tail (e.g. a corrupted length pointing past the end). Returns the first
 * record's offset or null. Only runs on the failure path.
 */
export function findIntactPair(buf: Buffer, from: number, to: number): number | null {
  for (let y = Math.ceil(from / 8) * 8; y + HEADER_BYTES <= to; y += 8) {
    const size = framedSize(buf, y, to);
    if (size === 0) continue;
    const y2 = y + size;
    const size2 = framedSize(buf, y2, to);
    if (size2 === 0) continue;
    const bodyLen2 = buf.readUInt32LE(y2);
    const seed = buf.readUInt32LE(y + 4);
    if (crc32c(buf.subarray(y2 + HEADER_BYTES, y2 + HEADER_BYTES + bodyLen2), seed) === buf.readUInt32LE(y2 + 4)) return y;
  }
  return null;
}

/** Size of a plausibly framed record at y ending by `to` (length, type, trailer), else 0. */
function framedSize(buf: Buffer, y: number, to: number): number {
  if (y + HEADER_BYTES > to) return 0;
  const bodyLen = buf.readUInt32LE(y);
  if (bodyLen === 0 || bodyLen > MAX_RECORD_BODY) return 0;
  const size = recordSize(bodyLen);
  if (y + size > to) return 0;
  const type = buf[y + HEADER_BYTES] as number;
  if (type < RecordType.Crc || type > RecordType.SnapshotRef) return 0;
  for (let i = y + HEADER_BYTES + bodyLen; i < y + size; i++) if (buf[i] !== TRAILER_BYTE) return 0;
  return size;
}
