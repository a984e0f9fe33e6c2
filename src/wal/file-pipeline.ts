// Prepares the next segment file in the background, like etcd's file_pipeline: a `<n>.tmp`
// file whose first piece (the WAL's fill-ahead size) is zeros, synced, so a cut only
// writes a few header records into it. The rest of the segment is filled as its records
// need it (wal.ts, #fillAhead), not here: etcd reserves a whole segment with fallocate,
// which Node cannot call, and writing 64 MiB of real zeros at once competed with every
// save's fdatasync on the disk (three members after their first 2 MiB of log: 192 MiB).
// Invariant: at most one file is being prepared; a prepared file is never part of the log
// until the WAL renames it to a `.wal` name (stray `.tmp` files are deleted on open).
import { open, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { TMP_SUFFIX, writeZerosSync } from "./segment.ts";

export interface PreparedFile { fh: FileHandle; path: string }
type Outcome = { ok: PreparedFile } | { err: unknown };

export interface FilePipelineOptions {
  dir: string;
  /** Zeros at the start of the file, written a page at a time and synced once. */
  fillBytes: number;
}

export class FilePipeline {
  readonly #dir: string;
  readonly #fillBytes: number;
  #count = 0;
  #pending: Promise<Outcome> | null = null;

  constructor(opts: FilePipelineOptions) {
    this.#dir = opts.dir;
    this.#fillBytes = opts.fillBytes;
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
      writeZerosSync(fh.fd, 0, this.#fillBytes);
      await fh.datasync();
      return { fh, path };
    } catch (err) {
      await fh.close().catch(() => undefined);
      await unlink(path).catch(() => undefined);
      throw err;
    }
  }
}
