// The write-ahead log: segment files of framed, CRC-chained records (README.md).
//
// Invariants of an open Wal:
// - #fh is the last segment; bytes [0, #offset) of it are valid records ending with CRC
//   #crc, and bytes from #offset on are zeros or past EOF;
// - every save() is durable (fdatasync returned) before its promise resolves, and so is
//   every append(): its promise resolves once an fdatasync begun after its write returned
//   (writes made while one runs share the next, which starts as soon as it returns);
// - #segments lists every segment file still on disk, in seq order, the last one open;
// - after a failed write the Wal refuses every call: the file's state is unknown, and
//   carrying on could acknowledge writes that are not on disk (etcd panics here).
import { mkdir, open, rename, rm, rmdir, unlink, writeFile } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fdatasync, fdatasyncSync, writeSync } from "node:fs";
import { scanSegment } from "./decoder.ts";
import { WalCorruptError, WalError, WalErrorCode } from "./errors.ts";
import { FilePipeline } from "./file-pipeline.ts";
import { CRC_RECORD_SIZE, HARD_STATE_RECORD_SIZE, RecordWriter, SNAPSHOT_REF_RECORD_SIZE, entryRecordSize, metadataRecordSize } from "./record.ts";
import type { HardState, RetainData, SnapshotRef, WalEntry } from "./record.ts";
import { Replayer } from "./replay.ts";
import { BROKEN_SUFFIX, TMP_SUFFIX, fsyncDir, listSegments, listSegmentsSync, readSealed, readWrittenPart, segmentName, writeFully, writeZerosSync, zeroFill } from "./segment.ts";
import type { SegmentName } from "./segment.ts";

export interface WalLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export interface SaveOptions {
  /**
   * Wait for the fdatasync on the calling thread, blocking the event loop, instead of in
   * libuv's threadpool. The threadpool costs two thread wake-ups per save (there and back),
   * which on a busy two-core machine is most of a save's CPU and up to 100 us of its
   * latency; only worth it when nothing else is waiting for the loop (the caller decides).
   */
  onLoop?: boolean;
}

export interface WalOpenResult {
  wal: Wal;
  metadata: Uint8Array;
  hardState: HardState;
  entries: WalEntry[];
  repaired: null | { file: string; offset: number; droppedBytes: number };
}

export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;

/** etcd's warnSyncDuration: an fdatasync slower than this is logged ("slow fdatasync"). */
export const SLOW_FDATASYNC_MS = 1000;

/**
 * How far ahead of its records a segment is zero-filled. A segment is not preallocated
 * whole: a save that would reach past the filled part first writes the next piece of zeros
 * (page by page) and its own fdatasync makes both durable, so one save in roughly
 * FILL_AHEAD_BYTES / (bytes per save) carries the piece and every other save overwrites
 * zeros already on disk (no size or allocation for fdatasync to commit). Zeros written
 * grow with the log instead of coming as a whole segment at once: a fresh member wrote
 * 4 MiB at creation and 64 MiB for the next segment after its first 2 MiB of log (three
 * members on one disk, 192 MiB within the first seconds of load), every piece of it
 * flushed beside the saves.
 */
export const FILL_AHEAD_BYTES = 256 * 1024;

/**
 * A segment holding at least this many bytes when a snapshot ref is saved is sealed then,
 * and the log goes on in a new one. Why: a restart reads every record of the segment that
 * holds the snapshot, from its start, checking each CRC and skipping the entries the
 * snapshot covers; cut by size alone (64 MiB), that segment held up to ~400k records of a
 * small-write log that snapshots often. A member restarted on a segment of 50k entries
 * took 597 ms from spawn to an opened WAL against 302 ms on one of 2.7k (3 members,
 * --snapshot-count 1000, v2 writes). With this, a restart reads at most this much before
 * the snapshot, plus what came after it. etcd cuts by size only; a cut costs a few
 * fdatasyncs and happens at most once per snapshot.
 */
export const SNAPSHOT_CUT_BYTES = 1024 * 1024;
const silent: WalLogger = { info() {}, warn() {} };

interface WalState {
  dir: string; segmentBytes: number; snapshotCutBytes: number; fillAheadBytes: number; capacity: number; logger: WalLogger; slowSyncMs: number; metadata: Uint8Array;
  fh: FileHandle; segments: SegmentName[]; offset: number; crc: number;
  lastIndex: number; hardState: HardState; snapshotIndex: number;
  /** Record bytes written by create() before this instance existed. */
  written?: number;
}

export class Wal {
  readonly #dir: string;
  readonly #segmentBytes: number;
  /** Where a snapshot ref cuts: SNAPSHOT_CUT_BYTES (or the options'), never past segmentBytes. */
  readonly #snapshotCutBytes: number;
  readonly #fillAheadBytes: number;
  /** Size of the current segment file, zeros from #offset on; a save reaching past it fills the next piece first. */
  #capacity: number;
  readonly #logger: WalLogger;
  readonly #slowSyncMs: number;
  readonly #metadata: Uint8Array;
  readonly #pipeline: FilePipeline;
  #fh: FileHandle;
  #segments: SegmentName[];
  #offset: number;
  #crc: number;
  /** Index of the last entry written (or the latest snapshot ref, if higher): names the next segment. */
  #lastIndex: number;
  #hardState: HardState;
  /** The snapshot open() started from, or the latest saved ref: releaseTo never passes it. */
  #snapshotIndex: number;
  /** Record bytes this WAL wrote (headers, entries, hard states, snapshot refs), not the zero fill. */
  #written: number;
  #busy = false;
  /** The last releaseTo, applied again after each cut. */
  #released: { index: number; maxFiles: number | undefined } | undefined;
  #closed = false;
  #failed: unknown = null;
  /** append() calls so far (each waiter holds its number). */
  #appended = 0;
  /** The running fdatasync of appends, if any; it settles after the callback ran. */
  #syncing: Promise<void> | undefined;
  #syncWaiters: Array<{ seq: number; resolve: (ms: number | undefined) => void; reject: (err: unknown) => void }> = [];

  private constructor(s: WalState) {
    this.#dir = s.dir;
    this.#segmentBytes = s.segmentBytes;
    this.#snapshotCutBytes = Math.min(s.segmentBytes, s.snapshotCutBytes);
    this.#fillAheadBytes = s.fillAheadBytes;
    this.#capacity = s.capacity;
    this.#logger = s.logger;
    this.#slowSyncMs = s.slowSyncMs;
    this.#metadata = s.metadata;
    this.#fh = s.fh;
    this.#segments = s.segments;
    this.#offset = s.offset;
    this.#crc = s.crc;
    this.#lastIndex = s.lastIndex;
    this.#hardState = s.hardState;
    this.#snapshotIndex = s.snapshotIndex;
    this.#written = s.written ?? 0;
    this.#pipeline = new FilePipeline({ dir: s.dir, fillBytes: s.fillAheadBytes });
    this.#maybePrepareNext();
  }

  /** The next segment file (its first piece of zeros, synced) is made once this one is half way to a cut. */
  #maybePrepareNext(): void {
    if (this.#offset >= this.#snapshotCutBytes / 2) this.#pipeline.start();
  }

  /**
   * Zeros over [#capacity, the end of the piece holding byte `end`), written into the page cache
   * page by page (segment.ts, writeZerosSync), not synced: the caller's next fdatasync
   * syncs them with its records, which are written after them. A crash before that leaves
   * the file shorter or its tail zero, both read as the end of the log.
   */
  #fillAhead(end: number): void {
    if (end <= this.#capacity) return;
    const to = pieceEnd(end, this.#fillAheadBytes);
    writeZerosSync(this.#fh.fd, this.#capacity, to);
    this.#capacity = to;
  }

  /** True if `dir` holds at least one segment file. */
  static exists(dir: string): boolean {
    return listSegmentsSync(dir).length > 0;
  }

  /**
   * Creates a WAL whose first segment holds crc 0, the metadata, an empty hard state and
   * the snapshot ref {0,0}. Built in `<dir>.tmp` and renamed, so a crash leaves either no
   * WAL or a complete one.
   */
  static async create(dir: string, metadata: Uint8Array, opts: { segmentBytes?: number; snapshotCutBytes?: number; fillAheadBytes?: number; logger?: WalLogger; slowSyncMs?: number } = {}): Promise<Wal> {
    if (Wal.exists(dir)) throw new WalError(WalErrorCode.Exists, `Cannot create WAL: ${dir} already holds segments`);
    const segmentBytes = opts.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    const fillAheadBytes = fillAheadOf(opts.fillAheadBytes);
    const logger = opts.logger ?? silent;
    const tmpDir = `${dir}${TMP_SUFFIX}`;
    await rm(tmpDir, { recursive: true, force: true });
    await mkdir(tmpDir, { recursive: true, mode: 0o700 });
    const name = segmentName(0, 0);
    const fh = await open(join(tmpDir, name), "w+", 0o600);
    try {
      const hardState = { term: 0, vote: 0, commit: 0 };
      const w = new RecordWriter({ size: CRC_RECORD_SIZE + metadataRecordSize(metadata) + HARD_STATE_RECORD_SIZE + SNAPSHOT_REF_RECORD_SIZE, crc: 0 });
      w.crcRecord();
      w.metadata(metadata);
      w.hardState(hardState);
      w.snapshotRef({ index: 0, term: 0 });
      const capacity = pieceEnd(w.offset, fillAheadBytes);
      writeZerosSync(fh.fd, 0, capacity);
      await writeFully(fh, w.buf, 0);
      await fh.datasync();
      await fsyncDir(tmpDir); // the segment's entry in the directory about to be renamed
      await removeEmptyDir(dir);
      await rename(tmpDir, dir);
      await fsyncDir(dirname(dir));
      logger.info("created WAL", { dir, segmentBytes });
      return new Wal({
        dir, segmentBytes, snapshotCutBytes: opts.snapshotCutBytes ?? SNAPSHOT_CUT_BYTES, fillAheadBytes, capacity, logger, slowSyncMs: opts.slowSyncMs ?? SLOW_FDATASYNC_MS, metadata: Buffer.from(metadata), fh, segments: [{ seq: 0, index: 0, name }],
        offset: w.offset, crc: w.crc, lastIndex: 0, hardState, snapshotIndex: 0, written: w.offset,
      });
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Reads the log from the segment holding `snapshot.index` to the end, repairs a torn
   * tail, and returns a Wal ready to append after the last good record.
   */
  static async open(dir: string, opts: { snapshot: SnapshotRef; logger?: WalLogger; segmentBytes?: number; snapshotCutBytes?: number; fillAheadBytes?: number; slowSyncMs?: number; retain?: RetainData }): Promise<WalOpenResult> {
    const logger = opts.logger ?? silent;
    const segmentBytes = opts.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    const fillAheadBytes = fillAheadOf(opts.fillAheadBytes);
    const snap = opts.snapshot;
    const { segments, others } = await listSegments(dir);
    if (segments.length === 0) throw new WalError(WalErrorCode.NotFound, `Cannot open WAL: no segments in ${dir}`);
    await removeTmpFiles(dir, others);
    checkSequence(dir, segments);

    let start = -1;
    for (let i = 0; i < segments.length; i++) if ((segments[i] as SegmentName).index <= snap.index) start = i;
    if (start < 0) {
      throw new WalError(WalErrorCode.MissingEntries, `Cannot open WAL: the first segment ${(segments[0] as SegmentName).name} starts after snapshot index ${snap.index}`);
    }

    const replay = new Replayer(snap, opts.retain);
    let prevCrc: number | null = null;
    let tail = { offset: 0, crc: 0, path: "" };
    let repaired: WalOpenResult["repaired"] = null;
    let scratch: Buffer | undefined;
    for (let i = start; i < segments.length; i++) {
      const path = join(dir, (segments[i] as SegmentName).name);
      const last = i === segments.length - 1;
      // Sealed segments end at their last record; the last one is mostly preallocated zeros.
      // A replay keeps nothing of a segment's buffer (entries are copied out), so the next
      // sealed segment is read into the same one.
      let buf: Buffer;
      if (last) buf = await readWrittenPart(path);
      else {
        buf = await readSealed(path, scratch);
        if (buf.length > (scratch?.length ?? 0)) scratch = buf;
      }
      const scan = scanSegment(buf, { file: path, last, prevCrc });
      replay.segment(buf, scan, path);
      prevCrc = scan.crc;
      tail = { offset: scan.end, crc: scan.crc, path };
      if (scan.torn) {
        repaired = await repairTail(path, buf, scan.torn);
        logger.warn("repaired a torn WAL tail", repaired);
      }
    }
    const r = replay.finish();
    if (!r.snapshotMatched) {
      logger.info("no WAL snapshot ref for the snapshot; continuing from the entries", { index: snap.index, term: snap.term });
    }

    const fh = await open(tail.path, "r+");
    let capacity: number;
    try {
      // From the end of the last record on, the file holds zeros (or ends): the next saves
      // overwrite them and fill further pieces as they need them.
      capacity = (await fh.stat()).size;
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
    logger.info("opened WAL", { dir, segments: segments.length - start, entries: r.entries.length, lastIndex: r.lastIndex });
    const wal = new Wal({
      dir, segmentBytes, snapshotCutBytes: opts.snapshotCutBytes ?? SNAPSHOT_CUT_BYTES, fillAheadBytes, capacity, logger, slowSyncMs: opts.slowSyncMs ?? SLOW_FDATASYNC_MS, metadata: r.metadata, fh, segments, offset: tail.offset, crc: tail.crc,
      lastIndex: r.lastIndex, hardState: r.hardState, snapshotIndex: snap.index,
    });
    return { wal, metadata: r.metadata, hardState: r.hardState, entries: r.entries, repaired };
  }

  /**
   * Record bytes written to the log by this instance (and by create() before it): what
   * etcd_disk_wal_write_bytes_total reports. The zeros filled ahead are not records.
   */
  get writtenBytes(): number {
    return this.#written;
  }

  /**
   * Appends the entries, then the hard state, as ONE write followed by ONE fdatasync.
   * Entries must be contiguous and start at or below lastIndex + 1 (lower = raft
   * truncation: the new entries replace the old tail on open).
   */
  async save(hardState: HardState | null, entries: WalEntry[], opts: SaveOptions = {}): Promise<number> {
    if (hardState === null && entries.length === 0) return 0;
    const batch = this.#batch(hardState, entries);
    const syncMs = await this.#write(batch.size, batch.fill, opts.onLoop === true);
    this.#batchWritten(hardState, entries);
    await this.#cutIfFull();
    return syncMs;
  }

  /** The records of a save or an append (entries, then the hard state), checked: their size and how to encode them. */
  #batch(hardState: HardState | null, entries: WalEntry[]): { size: number; fill: (w: RecordWriter) => void } {
    this.#checkUsable();
    this.#checkAppend(entries);
    let size = hardState ? HARD_STATE_RECORD_SIZE : 0;
    for (const e of entries) size += entryRecordSize(e);
    return {
      size,
      fill: (w) => {
        for (const e of entries) w.entry(e);
        if (hardState) w.hardState(hardState);
      },
    };
  }

  /** What a written batch changes: the last index, the hard state a cut's header repeats. */
  #batchWritten(hardState: HardState | null, entries: WalEntry[]): void {
    const last = entries.at(-1);
    if (last) this.#lastIndex = last.index;
    if (hardState) this.#hardState = { term: hardState.term, vote: hardState.vote, commit: hardState.commit };
  }

  /** etcd's "slow fdatasync" warning: followers' acks and votes wait for the disk. */
  #warnIfSlow(took: number): void {
    if (took > this.#slowSyncMs) this.#logger.warn("slow fdatasync", { took: `${(took / 1000).toFixed(3)}s`, "expected-duration": `${this.#slowSyncMs / 1000}s` });
  }

  /** An fdatasync of appends is running: an append now waits for the one after it. */
  get syncing(): boolean {
    return this.#syncing !== undefined;
  }

  /**
   * Called when an fdatasync of appends has returned, before the next one starts and before
   * the appends it covered resolve: what the owner appends in it joins the next fdatasync.
   * The owner that holds back its writes while one runs writes them here, as one batch,
   * and the disk waits for no continuation (CPU-bound) in between.
   */
  onSyncReturn: (() => void) | undefined;

  /**
   * Whether append() may be used now: a segment past its size must be cut first, which
   * only save() does (it waits for its own fdatasync, the caller for the appends').
   */
  get appendable(): boolean {
    return this.#offset < this.#segmentBytes && !this.#closed && this.#failed === null;
  }

  /**
   * save() without waiting: the records are written now (a positioned write into the page
   * cache, so the next append goes after them), and the promise resolves once an
   * fdatasync begun after this write has returned: with how long it took (ms) for the
   * first append it covered, undefined for the others (so that each is counted once). While
   * one runs, later appends wait for the next, which starts the moment it returns: the
   * disk is kept busy with whatever was written meanwhile, not only when the caller gets to
   * it. Promises resolve in append order. A failed write or fdatasync fails the WAL
   * (every later call throws) and rejects every waiting append.
   */
  append(hardState: HardState | null, entries: WalEntry[]): Promise<number | undefined> {
    if (hardState === null && entries.length === 0) return Promise.resolve(undefined);
    const batch = this.#batch(hardState, entries);
    this.#writeNow(batch.size, batch.fill);
    this.#batchWritten(hardState, entries);
    const seq = ++this.#appended;
    const done = new Promise<number | undefined>((resolve, reject) => this.#syncWaiters.push({ seq, resolve, reject }));
    if (this.#syncing === undefined) this.#syncAppends();
    return done;
  }

  /** One fdatasync for every append written so far; the next starts when it returns, if more were written. */
  #syncAppends(): void {
    const target = this.#appended;
    const started = performance.now();
    this.#syncing = new Promise<void>((settled) => {
      fdatasync(this.#fh.fd, (err) => {
        this.#syncing = undefined;
        if (err) {
          this.#failed = err;
          const waiters = this.#syncWaiters;
          this.#syncWaiters = [];
          for (const w of waiters) w.reject(err);
          settled();
          return;
        }
        const took = performance.now() - started;
        this.#warnIfSlow(took);
        // The disk first: what the owner writes now, and what was written meanwhile, starts
        // its fdatasync before the waiters below run their (CPU-bound) continuations. (An
        // append in onSyncReturn starts it itself.)
        this.onSyncReturn?.();
        if (this.#appended > target && this.#syncing === undefined && this.#failed === null) this.#syncAppends();
        let n = 0;
        while (n < this.#syncWaiters.length && this.#syncWaiters[n]!.seq <= target) n++;
        const done = this.#syncWaiters.splice(0, n);
        for (let i = 0; i < done.length; i++) done[i]!.resolve(i === 0 ? took : undefined);
        settled();
      });
    });
  }

  /**
   * Writes a hard state whose change promises nothing (only the commit index moved) without
   * waiting for the disk, as etcd writes such a Ready's hard state unsynced: a process that
   * is killed still leaves it in the page cache, so a restart — and --force-new-cluster,
   * which keeps what the log says is committed — knows how far the cluster had committed.
   * An OS crash may lose it (the commit index is then lower, which Raft tolerates); the next
   * fdatasync of a save covers it. Synchronous: a few dozen bytes into the page cache.
   */
  saveCommitUnsynced(hardState: HardState): void {
    // No cut here: past segmentBytes, the next save() cuts.
    this.#writeNow(HARD_STATE_RECORD_SIZE, (w) => w.hardState(hardState));
    this.#hardState = { term: hardState.term, vote: hardState.vote, commit: hardState.commit };
  }

  /** Encodes `size` bytes of records and writes them at the end of the log, without an fdatasync. */
  #writeNow(size: number, fill: (w: RecordWriter) => void): void {
    this.#enter();
    try {
      const w = new RecordWriter({ size, crc: this.#crc });
      fill(w); // may throw RangeError on a bad value: nothing has been written yet
      try {
        this.#fillAhead(this.#offset + size);
        writeFullySync(this.#fh.fd, w.buf, this.#offset);
      } catch (err) {
        this.#failed = err;
        throw err;
      }
      this.#offset += size;
      this.#written += size;
      this.#crc = w.crc;
      this.#maybePrepareNext();
    } finally {
      this.#busy = false;
    }
  }

  /** Records that a snapshot at `ref` exists (after the snapshot file is saved), synced. */
  async saveSnapshotRef(ref: SnapshotRef): Promise<void> {
    await this.#write(SNAPSHOT_REF_RECORD_SIZE, (w) => w.snapshotRef(ref));
    if (ref.index > this.#lastIndex) this.#lastIndex = ref.index;
    this.#snapshotIndex = ref.index;
    await this.#cutIfFull(this.#snapshotCutBytes);
  }

  /**
   * Removes segments that hold only entries <= index. Keeps the last segment whose name
   * index is <= min(index, latest snapshot ref), so open() from that ref still works.
   * `maxFiles` is etcd's --max-wals: segments no longer needed are removed only while more
   * than that many remain (oldest first), and 0 keeps them all; absent, every segment no
   * longer needed goes. A needed segment is never removed, whatever the count.
   *
   * The release is remembered: each later cut applies it again, so a segment that the count
   * kept goes as soon as newer segments outnumber it, not only at the next release (etcd
   * purges released files on a timer; here the count can only grow at a cut).
   */
  async releaseTo(index: number, opts: { maxFiles?: number } = {}): Promise<void> {
    this.#enter();
    try {
      this.#released = { index, maxFiles: opts.maxFiles };
      await this.#releaseSegments();
    } finally {
      this.#busy = false;
    }
  }

  /** Removes what the last releaseTo allows; the caller holds the WAL (#enter). */
  async #releaseSegments(): Promise<void> {
    const released = this.#released;
    if (released === undefined) return;
    const { index, maxFiles } = released;
    const limit = Math.min(index, this.#snapshotIndex);
    let keepFrom = 0;
    for (let i = 0; i < this.#segments.length; i++) if ((this.#segments[i] as SegmentName).index <= limit) keepFrom = i;
    if (maxFiles !== undefined) keepFrom = maxFiles === 0 ? 0 : Math.min(keepFrom, Math.max(0, this.#segments.length - maxFiles));
    if (keepFrom === 0) return;
    const doomed = this.#segments.slice(0, keepFrom);
    // Oldest first: a crash part-way leaves a gap-free suffix of segments.
    for (const s of doomed) await unlink(join(this.#dir, s.name));
    this.#segments = this.#segments.slice(keepFrom);
    await fsyncDir(this.#dir);
    this.#logger.info("released WAL segments", { upTo: index, removed: doomed.map((s) => s.name) });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // An append's fdatasync still running uses the descriptor about to be closed.
    while (this.#syncing !== undefined) await this.#syncing;
    await this.#pipeline.close();
    await this.#fh.close();
  }

  #enter(): void {
    this.#checkUsable();
    if (this.#busy) throw new Error("Wal invariant: calls must not overlap");
    this.#busy = true;
  }

  #checkUsable(): void {
    if (this.#closed) throw new WalError(WalErrorCode.Closed, "Cannot use WAL: it is closed");
    if (this.#failed !== null) throw new WalError(WalErrorCode.Closed, "Cannot use WAL: a previous write failed", { cause: this.#failed });
  }

  #checkAppend(entries: WalEntry[]): void {
    const first = entries[0];
    if (!first) return;
    if (first.index > this.#lastIndex + 1) {
      throw new WalError(WalErrorCode.BadAppend, `Cannot append to WAL: entry index ${first.index} leaves a gap after ${this.#lastIndex}`);
    }
    for (let i = 1; i < entries.length; i++) {
      if ((entries[i] as WalEntry).index !== first.index + i) {
        throw new WalError(WalErrorCode.BadAppend, `Cannot append to WAL: entries are not contiguous at position ${i}`);
      }
    }
  }

  /**
   * Encodes `size` bytes of records into one buffer, one positioned write, one fdatasync;
   * resolves with how long the fdatasync took (ms). `onLoop`: see SaveOptions.
   */
  async #write(size: number, fill: (w: RecordWriter) => void, onLoop = false): Promise<number> {
    this.#enter();
    let took = 0;
    try {
      const w = new RecordWriter({ size, crc: this.#crc });
      fill(w); // may throw RangeError on a bad value: nothing has been written yet
      try {
        // Hot path of every acknowledged write. A positioned write of a few hundred bytes
        // lands in the page cache in microseconds, so it is done synchronously; the
        // fdatasync waits on the disk off the event loop unless the caller says nothing
        // else is waiting for it. Measured here: sync write + callback fdatasync ~100 us
        // CPU per save, FileHandle write + datasync ~255 us.
        this.#fillAhead(this.#offset + size);
        writeFullySync(this.#fh.fd, w.buf, this.#offset);
        const started = performance.now();
        if (onLoop) fdatasyncSync(this.#fh.fd);
        else await fdatasyncAsync(this.#fh.fd);
        // Every message a follower or candidate sends waits for this: a stalled disk shows
        // up as a slow election, and this line is how a member's log tells the two apart.
        took = performance.now() - started;
        this.#warnIfSlow(took);
      } catch (err) {
        this.#failed = err;
        throw err;
      }
      this.#offset += size;
      this.#written += size;
      this.#crc = w.crc;
      this.#maybePrepareNext();
    } finally {
      this.#busy = false;
    }
    return took;
  }

  /** Cuts when the segment holds `limit` bytes or more (the segment size unless a snapshot ref was just saved). */
  async #cutIfFull(limit = this.#segmentBytes): Promise<void> {
    if (this.#offset < limit) return;
    this.#enter();
    try {
      await this.#cut();
    } catch (err) {
      this.#failed = err;
      throw err;
    } finally {
      this.#busy = false;
    }
  }

  /** Seals the current segment and switches to a new one (README "Writing and fsync discipline"). */
  async #cut(): Promise<void> {
    // A sealed segment ends exactly at its last record: zeros there would read as damage.
    await this.#fh.truncate(this.#offset);
    await this.#fh.sync();
    const { fh, path } = await this.#pipeline.take();
    const seq = (this.#segments.at(-1) as SegmentName).seq + 1;
    const name = segmentName(seq, this.#lastIndex + 1);
    try {
      const w = new RecordWriter({ size: CRC_RECORD_SIZE + metadataRecordSize(this.#metadata) + HARD_STATE_RECORD_SIZE, crc: this.#crc });
      w.crcRecord();
      w.metadata(this.#metadata);
      w.hardState(this.#hardState);
      // The pipeline filled one piece; headers larger than it (a huge metadata) fill more.
      const filled = (await fh.stat()).size;
      if (w.offset > filled) writeZerosSync(fh.fd, filled, pieceEnd(w.offset, this.#fillAheadBytes));
      await writeFully(fh, w.buf, 0);
      await fh.datasync();
      const capacity = (await fh.stat()).size;
      await rename(path, join(this.#dir, name));
      await fsyncDir(this.#dir);
      await this.#fh.close();
      this.#fh = fh;
      this.#segments.push({ seq, index: this.#lastIndex + 1, name });
      this.#offset = w.offset;
      this.#written += w.offset;
      this.#crc = w.crc;
      this.#capacity = capacity;
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
    this.#logger.info("created WAL segment", { file: name });
    this.#maybePrepareNext();
    // The new segment is written: a segment that cannot be removed is no failure of the log.
    await this.#releaseSegments().catch((err: unknown) => this.#logger.warn("failed to remove released WAL segments", { error: String(err) }));
  }
}

/** Segments must have consecutive seq numbers and non-decreasing indexes. */
function checkSequence(dir: string, segments: SegmentName[]): void {
  for (let i = 1; i < segments.length; i++) {
    const prev = segments[i - 1] as SegmentName;
    const cur = segments[i] as SegmentName;
    if (cur.seq !== prev.seq + 1 || cur.index < prev.index) {
      throw new WalCorruptError({ file: join(dir, cur.name), offset: 0, detail: `segment does not follow ${prev.name}` });
    }
  }
}

async function removeTmpFiles(dir: string, names: string[]): Promise<void> {
  const tmps = names.filter((n) => n.endsWith(TMP_SUFFIX));
  if (tmps.length === 0) return;
  for (const n of tmps) await rm(join(dir, n), { recursive: true, force: true });
  await fsyncDir(dir);
}

/** Lets create() rename over a directory that exists but holds no segments (only stray .tmp files). */
async function removeEmptyDir(dir: string): Promise<void> {
  const { others } = await listSegments(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return { others: null };
    throw err;
  });
  if (others === null) return;
  for (const n of others) if (n.endsWith(TMP_SUFFIX)) await rm(join(dir, n), { recursive: true, force: true });
  await rmdir(dir); // fails (ENOTEMPTY) rather than delete anything that is not ours
}

/** Keeps the dropped bytes in `<file>.broken`, then zeroes them so the tail reads as the end. */
async function repairTail(path: string, buf: Buffer, torn: { offset: number; dataEnd: number }): Promise<{ file: string; offset: number; droppedBytes: number }> {
  const end = Math.max(torn.dataEnd, torn.offset);
  const brokenPath = `${path}${BROKEN_SUFFIX}`;
  await writeFile(brokenPath, buf.subarray(torn.offset, end));
  const fh = await open(path, "r+");
  try {
    const zeroTo = Math.min(end, buf.length);
    if (zeroTo > torn.offset) await zeroFill(fh, torn.offset, zeroTo);
  } finally {
    await fh.close();
  }
  await fsyncDir(dirname(path));
  return { file: path, offset: torn.offset, droppedBytes: end - torn.offset };
}

function writeFullySync(fd: number, buf: Uint8Array, position: number): void {
  let done = 0;
  while (done < buf.length) {
    const n = writeSync(fd, buf, done, buf.length - done, position + done);
    if (n <= 0) throw new Error(`Cannot write WAL: short write at ${position + done}`);
    done += n;
  }
}

/** The end of the fill piece that holds byte `at`: zeros up to there leave room after it. */
function pieceEnd(at: number, piece: number): number {
  return (Math.floor(at / piece) + 1) * piece;
}

function fillAheadOf(bytes: number | undefined): number {
  const b = bytes ?? FILL_AHEAD_BYTES;
  if (!Number.isInteger(b) || b < 4096 || b % 4096 !== 0) throw new RangeError(`fillAheadBytes must be a positive multiple of 4096, got ${b}`);
  return b;
}

function fdatasyncAsync(fd: number): Promise<void> {
  return new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
}
