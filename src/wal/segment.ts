// Segment names, directory listing and the few file-system helpers the WAL needs.
import { open, readdir } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { readdirSync } from "node:fs";

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
