// Prepares the next segment file in the background, like etcd's file_pipeline: a `<n>.tmp`
// file filled with zeros and synced, so a cut only writes a few header records into it.
// Invariant: at most one file is being prepared; a prepared file is never part of the log
// until the WAL renames it to a `.wal` name (stray `.tmp` files are deleted on open).
//
// The fill is synced piece by piece. etcd reserves the space with fallocate, which Node
// cannot call, so we write real zeros; written first and synced once, 64 MB of dirty
// pages went to the disk in one flush, and every WAL fdatasync queued behind it (measured
// here: fdatasyncs p99 14-17 ms and up to 199 ms during the fill, with three members
// filling at once the slowest writes of a benchmark run, 100-110 ms). Synced every 256 KiB,
// a save waits for one small piece at most (p99 0.7 ms, max 2-16 ms; the fill takes about
// 200 ms instead of 60). Pauses between pieces only stretched the window. Each piece is
// written a page at a time (segment.ts, writeZeros: larger writes leave large folios in
// the page cache, and every later save would write a whole one to the disk), a piece
// (64 page writes into the page cache, well under a millisecond) per turn of the loop.
import { open, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { TMP_SUFFIX, writeZerosSync } from "./segment.ts";

export interface PreparedFile { fh: FileHandle; path: string }
type Outcome = { ok: PreparedFile } | { err: unknown };

export interface FilePipelineOptions {
  dir: string;
  segmentBytes: number;
  /** Bytes written and synced per piece (default 256 KiB). */
  pieceBytes?: number;
}

const DEFAULT_PIECE_BYTES = 256 * 1024;

export class FilePipeline {
  readonly #dir: string;
  readonly #segmentBytes: number;
  readonly #pieceBytes: number;
  #count = 0;
  #pending: Promise<Outcome> | null = null;

  constructor(opts: FilePipelineOptions) {
    this.#dir = opts.dir;
    this.#segmentBytes = opts.segmentBytes;
    this.#pieceBytes = Math.max(1, Math.min(opts.pieceBytes ?? DEFAULT_PIECE_BYTES, opts.segmentBytes));
  }

  /** Starts preparing the next file unless one is already on its way. */
  start(): void {
    if (this.#pending) return;
    // The outcome is captured, never left as a rejected promise nobody awaits.
    this.#pending = this.#prepare().then((ok) => ({ ok }), (err: unknown) => ({ err }));
  }

  /** The prepared file (waiting for it if needed); the caller owns it afterwards. */
  async take(): Promise<PreparedFile> {
    this.start();
    const outcome = await (this.#pending as Promise<Outcome>);
    this.#pending = null;
    if ("err" in outcome) throw outcome.err;
    return outcome.ok;
  }

  /** Waits for any preparation in flight and deletes its file. */
  async close(): Promise<void> {
    const pending = this.#pending;
    this.#pending = null;
    if (!pending) return;
    const outcome = await pending;
    if ("ok" in outcome) {
      await outcome.ok.fh.close();
      await unlink(outcome.ok.path).catch(() => undefined);
    }
  }

  async #prepare(): Promise<PreparedFile> {
    const path = join(this.#dir, `${this.#count++}${TMP_SUFFIX}`);
    const fh = await open(path, "w+", 0o600);
    try {
      for (let pos = 0; pos < this.#segmentBytes; pos += this.#pieceBytes) {
        writeZerosSync(fh.fd, pos, Math.min(pos + this.#pieceBytes, this.#segmentBytes));
        await fh.datasync();
      }
      return { fh, path };
    } catch (err) {
      await fh.close().catch(() => undefined);
      await unlink(path).catch(() => undefined);
      throw err;
    }
  }
}
