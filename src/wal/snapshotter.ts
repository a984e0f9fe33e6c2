// Snapshot files `<term:16 hex>-<index:16 hex>.snap` (format in README.md "Snapshot files").
// Invariant: a file with a `.snap` name is complete and synced (it appears only by rename
// of a synced `.tmp`); one that fails its checks anyway is renamed `.broken`, never deleted.
import { crc32c } from "./crc32c.ts";
import { open, readFile, readdir, rename, unlink } from "node:fs/promises";
import { join } from "node:path";
import { setImmediate } from "node:timers/promises";
import { readU64 } from "./record.ts";
import { BROKEN_SUFFIX, TMP_SUFFIX, fsyncDir, hex16, writeFully } from "./segment.ts";
import type { WalLogger } from "./wal.ts";

export interface SnapshotFile {
  index: number;
  term: number;
  data: Uint8Array;
  /** Opaque: the server puts raft conf state etc. here. */
  meta: Uint8Array;
}

const MAGIC = Buffer.from("KVSNAP01", "latin1");
const HEADER_BYTES = 32;
const CRC_BYTES = 4;
const TWO_32 = 2 ** 32;
const SNAP_SUFFIX = ".snap";
const SNAP_RE = /^([0-9a-f]{16})-([0-9a-f]{16})\.snap$/;
const silent: WalLogger = { info() {}, warn() {} };

export function snapshotName(term: number, index: number): string {
  return `${hex16(term)}-${hex16(index)}${SNAP_SUFFIX}`;
}

function parseSnapshotName(name: string): { term: number; index: number } | null {
  const m = SNAP_RE.exec(name);
  if (!m || m[1] === undefined || m[2] === undefined) return null;
  return { term: Number.parseInt(m[1], 16), index: Number.parseInt(m[2], 16) };
}

/** The header and the meta: everything before the data. */
function snapshotHead(snap: SnapshotFile): Buffer {
  for (const [k, v] of [["term", snap.term], ["index", snap.index]] as const) {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`Cannot save snapshot: ${k} ${v} is not a non-negative safe integer`);
  }
  if (snap.meta.length >= TWO_32 || snap.data.length >= TWO_32) throw new RangeError("Cannot save snapshot: larger than 4 GiB");
  const head = Buffer.allocUnsafe(HEADER_BYTES + snap.meta.length);
  MAGIC.copy(head, 0);
  head.writeUInt32LE(snap.term % TWO_32, 8);
  head.writeUInt32LE(Math.floor(snap.term / TWO_32), 12);
  head.writeUInt32LE(snap.index % TWO_32, 16);
  head.writeUInt32LE(Math.floor(snap.index / TWO_32), 20);
  head.writeUInt32LE(snap.meta.length, 24);
  head.writeUInt32LE(snap.data.length, 28);
  head.set(snap.meta, HEADER_BYTES);
  return head;
}

function crcBytes(crc: number): Buffer {
  const b = Buffer.allocUnsafe(CRC_BYTES);
  b.writeUInt32LE(crc, 0);
  return b;
}

/** The file's bytes in one buffer (small snapshots, tests); save() writes the same without copying. */
export function encodeSnapshot(snap: SnapshotFile): Buffer {
  const head = snapshotHead(snap);
  return Buffer.concat([head, snap.data, crcBytes(crc32c(snap.data, crc32c(head)))]);
}

/** CRC bytes per event-loop turn: 4 MiB take about 1 ms. */
const CRC_SLICE = 4 * 1024 * 1024;

/** Throws "Cannot load snapshot: ..." when the bytes are not a complete, intact snapshot. */
export function decodeSnapshot(buf: Buffer): SnapshotFile {
  const fail = (why: string): Error => new Error(`Cannot load snapshot: ${why}`);
  if (buf.length < HEADER_BYTES + CRC_BYTES) throw fail(`file is ${buf.length} bytes, too short`);
  if (!buf.subarray(0, 8).equals(MAGIC)) throw fail("bad magic");
  const metaLen = buf.readUInt32LE(24);
  const dataLen = buf.readUInt32LE(28);
  const body = HEADER_BYTES + metaLen + dataLen;
  if (buf.length !== body + CRC_BYTES) throw fail(`file is ${buf.length} bytes, header says ${body + CRC_BYTES}`);
  const stored = buf.readUInt32LE(body);
  const actual = crc32c(buf.subarray(0, body));
  if (stored !== actual) throw fail(`crc mismatch (stored ${stored}, computed ${actual})`);
  return {
    term: readU64(buf, 8),
    index: readU64(buf, 16),
    meta: buf.subarray(HEADER_BYTES, HEADER_BYTES + metaLen),
    data: buf.subarray(HEADER_BYTES + metaLen, body),
  };
}

export class Snapshotter {
  readonly #dir: string;
  readonly #logger: WalLogger;

  constructor(dir: string, opts: { logger?: WalLogger } = {}) {
    this.#dir = dir;
    this.#logger = opts.logger ?? silent;
  }

  /** Told how long each save took: its header and CRC, and the whole (etcd's snap save metrics). */
  observer: { saved(t: { marshallingMs: number; totalMs: number }): void } | undefined;

  /** Writes `<name>.tmp`, fsyncs it, renames it to `<name>`, fsyncs the directory. */
  async save(snap: SnapshotFile): Promise<void> {
    const start = performance.now();
    // No copy of the data and no single long CRC call: a snapshot of 300k keys is over
    // 100 MB, and copying that took 60-300 ms with the member answering nothing.
    const head = snapshotHead(snap);
    let crc = crc32c(head);
    for (let at = 0; at < snap.data.length; at += CRC_SLICE) {
      crc = crc32c(snap.data.subarray(at, at + CRC_SLICE), crc);
      if (at + CRC_SLICE < snap.data.length) await setImmediate();
    }
    const marshallingMs = performance.now() - start;
    const name = snapshotName(snap.term, snap.index);
    const tmp = join(this.#dir, `${name}${TMP_SUFFIX}`);
    const fh = await open(tmp, "w", 0o600);
    try {
      await writeFully(fh, head, 0);
      await writeFully(fh, snap.data, head.length);
      await writeFully(fh, crcBytes(crc), head.length + snap.data.length);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, join(this.#dir, name));
    await fsyncDir(this.#dir);
    this.observer?.saved({ marshallingMs, totalMs: performance.now() - start });
  }

  /**
   * The newest intact snapshot, or null. Call at startup, before any save(): it also
   * deletes `.tmp` leftovers of a save that crashed.
   */
  async loadNewest(): Promise<SnapshotFile | null> {
    const { snaps, tmps } = await this.#list();
    for (const t of tmps) await unlink(join(this.#dir, t)).catch(() => undefined);
    for (const s of snaps) {
      const path = join(this.#dir, s.name);
      try {
        const snap = decodeSnapshot(await readFile(path));
        if (snap.term !== s.term || snap.index !== s.index) {
          throw new Error(`Cannot load snapshot: header says term ${snap.term} index ${snap.index}`);
        }
        return snap;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== undefined) throw err; // I/O errors are not damage
        this.#logger.warn("snapshot is damaged; renamed it and trying an older one", { file: path, error: (err as Error).message });
        await rename(path, `${path}${BROKEN_SUFFIX}`);
        await fsyncDir(this.#dir);
      }
    }
    return null;
  }

  /** Deletes all but the newest `keep` snapshot files. */
  async purge(keep: number): Promise<void> {
    const { snaps } = await this.#list();
    const doomed = snaps.slice(Math.max(0, keep));
    if (doomed.length === 0) return;
    for (const s of doomed) await unlink(join(this.#dir, s.name));
    await fsyncDir(this.#dir);
    this.#logger.info("purged snapshots", { removed: doomed.map((s) => s.name) });
  }

  /** Snapshot files newest first (by index, then term), and leftover temp files. */
  async #list(): Promise<{ snaps: { name: string; term: number; index: number }[]; tmps: string[] }> {
    const names = await readdir(this.#dir);
    const snaps: { name: string; term: number; index: number }[] = [];
    const tmps: string[] = [];
    for (const name of names) {
      const p = parseSnapshotName(name);
      if (p) snaps.push({ name, ...p });
      else if (name.endsWith(`${SNAP_SUFFIX}${TMP_SUFFIX}`)) tmps.push(name);
    }
    snaps.sort((a, b) => b.index - a.index || b.term - a.term);
    return { snaps, tmps };
  }
}
