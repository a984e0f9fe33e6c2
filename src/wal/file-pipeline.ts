// Prepares the next segment file in the background, like etcd's file_pipeline: a `<n>.tmp`
// file filled with zeros and synced, so a cut only writes a few header records into it.
// Invariant: at most one file is being prepared; a prepared file is never part of the log
// until the WAL renames it to a `.wal` name (stray `.tmp` files are deleted on open).
import { open, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { TMP_SUFFIX, zeroFill } from "./segment.ts";

export interface PreparedFile { fh: FileHandle; path: string }
type Outcome = { ok: PreparedFile } | { err: unknown };

export class FilePipeline {
  readonly #dir: string;
  readonly #segmentBytes: number;
  #count = 0;
  #pending: Promise<Outcome> | null = null;

  constructor(opts: { dir: string; segmentBytes: number }) {
    this.#dir = opts.dir;
    this.#segmentBytes = opts.segmentBytes;
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
      await zeroFill(fh, 0, this.#segmentBytes);
      return { fh, path };
    } catch (err) {
      await fh.close().catch(() => undefined);
      await unlink(path).catch(() => undefined);
      throw err;
    }
  }
}
