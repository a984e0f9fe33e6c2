// Segment names, directory listing and the few file-system helpers the WAL needs.
import { open, readdir } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { readdirSync, writeSync } from "node:fs";
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

const PAGE = 4096;
const ZERO_PAGE = Buffer.alloc(PAGE);

/**
 * Writes zeros over [from, to), one page per write. Not in larger writes: the page cache
 * keeps a large write's pages as one large folio (Linux 6.x, ext4), and a later save of a
 * few hundred bytes dirties that whole folio, so each fdatasync wrote up to 1 MiB to the
 * disk instead of one page (measured: 1,048,576 bytes per 264-byte save after a fill in
 * 1 MiB writes, 4,358 after a fill in page writes). Synchronous: a page into the page
 * cache takes microseconds, and 1,024 of them (4 MiB) took 119 ms through the threadpool
 * (the start of a new member waited for it) against a few ms here; callers fill in slices.
 */
export function writeZerosSync(fd: number, from: number, to: number): void {
  let pos = from;
  while (pos < to) {
    const end = Math.min(to, (Math.floor(pos / PAGE) + 1) * PAGE);
    let done = 0;
    while (done < end - pos) {
      const n = writeSync(fd, ZERO_PAGE, done, end - pos - done, pos + done);
      if (n <= 0) throw new Error(`Cannot write WAL: short write at ${pos + done}`);
      done += n;
    }
    pos = end;
  }
}

/**
 * Writes zeros over [from, to) and syncs. Real zeros, not ftruncate: later writes then
 * overwrite allocated blocks and fdatasync has no size or allocation to commit.
 */
export async function zeroFill(fh: FileHandle, from: number, to: number): Promise<void> {
  writeZerosSync(fh.fd, from, to);
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
