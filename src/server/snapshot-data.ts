// The bytes of a snapshot: the whole replicated state but the v3 key space (its own
// database file, src/backend/, sent to followers beside the snapshot). Made a slice at a
// time, so that a member with a large store is not frozen while they are made, and made
// and read without ever holding the state in one string: V8's strings end at 0x1fffffe8
// characters, and a member whose snapshot is longer could never start again.
//
// Format 2 (written since), lines of JSON:
//   KVCTL-STATE/2                         the magic line
//   {"membership":...,"auth":...,"v3auth":...}   the small parts, one line
//   the v2 store's image, version 2 (src/store/v2/snapshot.ts): a line per node, then
//   a line per history event; the data ends with its last line
// Format 1 (read only: older data dirs and backup files) is one JSON text,
//   {"store":"<the v2 image, version 1, as a JSON string>","membership":...,...}
// and may hold the v3 key space (images from before its database). The first byte tells
// them apart: "{" is format 1.

import { setImmediate } from "node:timers/promises";
import { performance } from "node:perf_hooks";
import { decodeImage, decodeImageLines, ImageLines, LINES_VERSION, type StoreImage, type StoreImageWriter, type V2Store } from "../store/v2/index.ts";
import type { SnapshotImage } from "./bootstrap.ts";

export const SNAPSHOT_MAGIC = Buffer.from("KVCTL-STATE/2\n");

/** The small parts of a snapshot (its header line in format 2). */
export type SnapshotHeader = Omit<SnapshotImage, "store" | "v3">;

/** A snapshot decoded: the v2 store's tree ready to be loaded (V2Store.recover), and the rest. */
export interface SnapshotState extends SnapshotHeader {
  store: StoreImage;
  /** The v3 key space: only in format-1 images from before its database. */
  v3?: SnapshotImage["v3"];
}

export interface WriteSnapshotOptions {
  /** The v2 store's image in progress, version 2 (V2Store.beginImage at the snapshot's index). */
  store: StoreImageWriter;
  /** The other parts of the image, taken at the same index (copies: written first). */
  rest: SnapshotHeader;
  /** True when the snapshot is no longer wanted (stop, a snapshot installed from the leader). */
  cancelled(): boolean;
  /** Work between two turns of the event loop (default SLICE_MS). */
  sliceMs?: number;
  /** How a turn is given to the event loop (tests count them). */
  yieldTurn?: () => Promise<unknown>;
}

/**
 * Work between two turns of the event loop while a snapshot is made. Every turn pays one
 * slice, and a write under load needs a few turns (its fdatasync's return, the answers,
 * the next requests' reads): with 5 ms slices the writes made during a snapshot of 100k
 * keys (8 MB, ~250 ms) waited 16-40 ms, and a 10-second run at 16 connections that
 * crossed one had p99 21-22 ms; with 1 ms, 10-11 ms, the snapshot as fast (two runs each).
 */
export const SLICE_MS = 1;

/** The snapshot bytes, or undefined when cancelled on the way. */
export async function writeSnapshotData(o: WriteSnapshotOptions): Promise<Buffer | undefined> {
  if (o.store.version !== LINES_VERSION) throw new Error("writeSnapshotData: the store's image must be version 2 (beginImage(LINES_VERSION))");
  const sliceMs = o.sliceMs ?? SLICE_MS;
  const yieldTurn = o.yieldTurn ?? (() => setImmediate());
  const bufs: Buffer[] = [SNAPSHOT_MAGIC, headerLine(o.rest)];
  for (;;) {
    const until = performance.now() + sliceMs;
    let done = false;
    do done = o.store.step(256);
    while (!done && performance.now() < until);
    bufs.push(Buffer.from(o.store.take()));
    if (done) break;
    await yieldTurn();
    if (o.cancelled()) return undefined;
  }
  // Joined a slice at a time too: Buffer.concat of 125 MB (300k keys) took 100-450 ms in
  // one call, most of it faulting in the new buffer's pages.
  const out = Buffer.allocUnsafe(bufs.reduce((n, b) => n + b.length, 0));
  let at = 0;
  let until = performance.now() + sliceMs;
  for (const b of bufs) {
    at += b.copy(out, at);
    if (performance.now() < until) continue;
    await yieldTurn();
    if (o.cancelled()) return undefined;
    until = performance.now() + sliceMs;
  }
  return out;
}

/**
 * The same bytes in one go, as pieces (a backup, while applies wait): the store must not
 * change until the last piece is taken.
 */
export function* snapshotPieces(store: V2Store, rest: SnapshotHeader): Generator<Buffer> {
  yield SNAPSHOT_MAGIC;
  yield headerLine(rest);
  for (const piece of store.imagePieces(LINES_VERSION)) yield Buffer.from(piece);
}

function headerLine(rest: SnapshotHeader): Buffer {
  return Buffer.from(JSON.stringify(rest) + "\n");
}

/**
 * Decodes snapshot bytes of either format; format 2 a line at a time, straight from the
 * bytes. Throws "Cannot parse snapshot: ..." or, for the v2 store's part, "Cannot parse
 * v2 store image: ...".
 */
export function decodeSnapshotData(data: Uint8Array): SnapshotState {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (!isFormat2(buf)) return decodeFormat1(buf);
  const head = new ImageLines(buf, { start: SNAPSHOT_MAGIC.length, error: snapshotError });
  const header = parseHeader(head.next());
  // The store's lines from here: a cut is reported as the v2 store image's.
  const lines = new ImageLines(buf, { start: head.offset });
  const store = decodeImageLines(lines);
  if (lines.next() !== undefined) throw snapshotError(`data after the v2 store's image (byte ${lines.offset})`);
  return { ...header, store };
}

/**
 * The same snapshot with another membership and without a v3 key space (a restored
 * backup starts a new cluster): only the header line is rewritten.
 */
export function withMembership(data: Buffer, membership: SnapshotHeader["membership"]): Buffer {
  if (!isFormat2(data)) {
    const old = JSON.parse(data.toString("utf8")) as SnapshotImage;
    const image: SnapshotImage = { ...old, membership };
    delete image.v3;
    return Buffer.from(JSON.stringify(image));
  }
  const lines = new ImageLines(data, { start: SNAPSHOT_MAGIC.length, error: snapshotError });
  const header = parseHeader(lines.next());
  return Buffer.concat([SNAPSHOT_MAGIC, headerLine({ ...header, membership }), data.subarray(lines.offset)]);
}

function isFormat2(buf: Buffer): boolean {
  return buf.subarray(0, SNAPSHOT_MAGIC.length).equals(SNAPSHOT_MAGIC);
}

function parseHeader(line: string | undefined): SnapshotHeader {
  if (line === undefined) throw snapshotError("truncated: no header line");
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (err) {
    throw snapshotError(`invalid JSON in the header line (${(err as Error).message})`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || !("membership" in raw)) throw snapshotError("bad header line");
  const { v3: _v3, store: _store, ...header } = raw as SnapshotImage;
  return header;
}

function decodeFormat1(buf: Buffer): SnapshotState {
  // Format 1 is one JSON text: it was limited to V8's longest string when written, too.
  if (buf[0] !== 0x7b /* "{" */) throw snapshotError("neither format 1 (JSON) nor format 2 (KVCTL-STATE/2)");
  let raw: SnapshotImage;
  try {
    raw = JSON.parse(buf.toString("utf8")) as SnapshotImage;
  } catch (err) {
    throw snapshotError(`invalid JSON (${(err as Error).message})`);
  }
  if (typeof raw.store !== "string") throw snapshotError("format 1 without a v2 store image");
  const { store, ...rest } = raw;
  return { ...rest, store: decodeImage(store) };
}

function snapshotError(detail: string): Error {
  return new Error(`Cannot parse snapshot: ${detail}`);
}
