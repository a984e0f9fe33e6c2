// Segment names, directory listing and the few file-system helpers the WAL needs.
import { open, readdir } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { readdirSync } from "node:fs";
import { trailingZeroStart } from "./decoder.ts";

export const WAL_SUFFIX = ".wal";
export const TMP_SUFFIX = ".tmp";
export const BROKEN_SUFFIX = ".broken";

export interface SegmentName { seq: number; index: number; name: string }

const SEGMENT_RE = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/;

/** `<seq:16 hex>-<index:16 hex>.wal`, like etcd. */
export function segmentName(seq: number, index: number): string {
  return `${hex16(seq)}-${hex16(index)}${WAL_SUFFIX}`;
}

export function hex16(n: number): string {
  return n.toString(16).padStart(16, "0");
}

export function parseSegmentName(name: string): SegmentName | null {
  const m = SEGMENT_RE.exec(name);
  if (!m || m[1] === undefined || m[2] === undefined) return null;
  const seq = Number.parseInt(m[1], 16);
  const index = Number.parseInt(m[2], 16);
  if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(index)) return null;
  return { seq, index, name };
}

/** Segments in `dir`, sorted by seq. Other files are left to the caller. */
export async function listSegments(dir: string): Promise<{ segments: SegmentName[]; others: string[] }> {
  const names = await readdir(dir);
  return splitNames(names);
}

export function listSegmentsSync(dir: string): SegmentName[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  return splitNames(names).segments;
}

function splitNames(names: string[]): { segments: SegmentName[]; others: string[] } {
  const segments: SegmentName[] = [];
  const others: string[] = [];
  for (const n of names) {
    const s = parseSegmentName(n);
    if (s) segments.push(s);
    else others.push(n);
  }
  segments.sort((a, b) => a.seq - b.seq);
  return { segments, others };
}

/** fsync a directory so creates, renames and unlinks in it survive a crash. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

const ZERO_CHUNK = Buffer.alloc(1024 * 1024);

/**
 * Writes zeros over [from, to) and syncs. Real zeros, not ftruncate: later writes then
 * overwrite allocated blocks and fdatasync has no size or allocation to commit.
 */
export async function zeroFill(fh: FileHandle, from: number, to: number): Promise<void> {
  for (let pos = from; pos < to; pos += ZERO_CHUNK.length) {
    const n = Math.min(ZERO_CHUNK.length, to - pos);
    await writeFully(fh, ZERO_CHUNK.subarray(0, n), pos);
  }
  await fh.datasync();
}

/** A positioned write that loops over short writes. */
export async function writeFully(fh: FileHandle, buf: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    if (bytesWritten <= 0) throw new Error(`Cannot write WAL: short write at ${position + done}`);
    done += bytesWritten;
  }
}

const SECTOR = 512;
const READ_CHUNK = 1024 * 1024;

/**
 * The last segment's bytes up to its trailing zeros (rounded up to a sector, at least one
 * sector, at most the file): all that the tail rules of README.md look at, since they only
 * ask where the trailing zero run starts. The zeros are checked a chunk at a time, from
 * the end, through one reused buffer. Why: reading a preallocated 64 MiB segment whole took
 * 45-65 ms on restart, mostly page faults of the fresh buffer (10-20 ms through a reused
 * one), and the buffer lived on until a full GC: 64 MiB of a restarted member's RSS.
 */
export async function readWrittenPart(path: string): Promise<Buffer> {
  const fh = await open(path, "r");
  try {
    const { size } = await fh.stat();
    const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, Math.max(size, 1)));
    let dataEnd = 0;
    for (let end = size; end > 0 && dataEnd === 0; ) {
      const start = Math.max(0, end - chunk.length);
      await readFully(fh, chunk, end - start, start);
      const z = trailingZeroStart(chunk.subarray(0, end - start), 0);
      if (z > 0) dataEnd = start + z;
      end = start;
    }
    const len = Math.min(size, Math.max(SECTOR, Math.ceil(dataEnd / SECTOR) * SECTOR));
    const buf = Buffer.allocUnsafe(len);
    await readFully(fh, buf, len, 0);
    return buf;
  } finally {
    await fh.close();
  }
}

/**
 * A sealed segment's bytes, read in one call, into `scratch` when it is large enough: the
 * previous segment's buffer, whose entries were copied out. readFile reads in 512 KiB
 * steps, each a trip through the thread pool: 128 of them per 64 MiB segment, and a
 * restart on a busy machine spent half its WAL time waiting between them.
 */
export async function readSealed(path: string, scratch?: Buffer): Promise<Buffer> {
  const fh = await open(path, "r");
  try {
    const { size } = await fh.stat();
    const buf = scratch !== undefined && scratch.length >= size ? scratch.subarray(0, size) : Buffer.allocUnsafe(size);
    await readFully(fh, buf, size, 0);
    return buf;
  } finally {
    await fh.close();
  }
}

/** Reads exactly `len` bytes at `position` into buf[0, len). */
async function readFully(fh: FileHandle, buf: Buffer, len: number, position: number): Promise<void> {
  let done = 0;
  while (done < len) {
    const { bytesRead } = await fh.read(buf, done, len - done, position + done);
    if (bytesRead <= 0) throw new Error(`Cannot read WAL: file ended at ${position + done}, expected ${position + len}`);
    done += bytesRead;
  }
}
