// The v3 key space's backend: an LMDB file (etcd's bbolt file, member/snap/db), with the
// records keyed by revision, the leases, and the meta values (consistent index, revision,
// compaction point) in sub-databases of one environment.
//
// Invariants:
// - The meta's consistentIndex is written in the same LMDB transaction as the effects of
//   the entries up to it (etcd's consistent index): after a crash the file holds the v3
//   state of exactly the entries <= consistentIndex, and the WAL entries after it are
//   applied again.
// - Writes are asynchronous: they are queued here and handed to lmdb-js in one turn of the
//   event loop per commit interval, which commits them in one transaction on LMDB's
//   thread. A record's value stays in memory here (and is read from here) until its
//   transaction committed; then reads go to the file. The WAL is the durability point:
//   nothing here is awaited before a client is answered.
// - A compaction commits its point (meta.compactRevision, etcd's scheduledCompactRev) with
//   its entry; its records are deleted afterwards in transactions of their own, at most
//   --experimental-compaction-batch-limit each (compactions.ts), and the last one writes
//   the finished revision (etcd's finishedCompactRev). A file whose finished revision is
//   below its compaction point is loaded with `compactionPending`: the store compacts its
//   index again and the deletions start over. A file without a finished revision never
//   had a compaction in batches (they were one transaction): its compaction is finished.
// - The queue holds whole entries' writes between two turns of the event loop (apply and
//   commit() run in one turn), so a compaction batch may hand them over with its own.
import { mkdirSync, statSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
// lmdb's ES build here; serve.cjs bundles its CommonJS build in its place (scripts/bundle.mjs).
import { open as openLmdb, type RootDatabase, type Database } from "lmdb";
import type { LeaseRecord, MvccBackend, MvccLoaded } from "../store/v3/backend.ts";
import type { StoredRecord } from "../store/v3/key-index.ts";
import type { LeaseId } from "../store/v3/types.ts";
import type { AlarmMember } from "../store/v3/alarms.ts";
import { encodeRecord, parseRevisionKey, recordHeadBytes, recordValue, revisionKey, revisionOf, decodeRecordHead, type RecordHead } from "./record-codec.ts";
import { Compactions, type CompactionObserver } from "./compactions.ts";

interface Meta {
  consistentIndex: number;
  revision: number;
  compactRevision: number;
}

const META_KEY = "meta";
/** A counter rewritten by flushed() (see there); nothing reads it. */
const SYNC_KEY = "sync";
/** The last compaction whose records are all deleted (etcd's finishedCompactRev). */
const FINISHED_COMPACT_KEY = "finishedCompact";
/**
 * The consistent index as of which the head table matches the record table, rewritten by
 * every commit. A file whose meta says otherwise was last written by a kvctl without the
 * head table (or by none yet): its heads are rebuilt from the records when it is opened.
 */
const HEADS_AT_KEY = "headsAt";
/**
 * The address space mapped for the file up front (etcd maps 10 GiB for bbolt): lmdb-js
 * otherwise starts at 128 KiB and maps the file again at twice the size whenever it fills,
 * keeping the old mappings, whose resident pages the process's RSS counts once per mapping.
 * Only address space: the file grows as it is written, and past this lmdb-js maps again.
 */
const MAP_BYTES = 16 * 1024 ** 3;
/**
 * Pages of new files (LMDB keeps a file's own page size when it opens it). A record of a
 * 1 KiB value takes ~1.1 KB with its head: three fit a 4 KiB page (80 % used), seven an
 * 8 KiB one (93 %). At 1.5M such keys that is ~280 MB less file, the difference between
 * fitting etcd's default 2 GiB quota and raising NOSPACE before the end.
 */
const PAGE_BYTES = 8192;
/** A record's or lease's share of LMDB's page and node headers, for quotaSize. */
const RECORD_OVERHEAD_BYTES = 32;
/** MDB_APPEND: lmdb's put takes PutOptions there, though its typings list only a version number. */
const APPEND = { append: true } as unknown as number;

export interface MvccDbOptions {
  /** The file (etcd: <data-dir>/member/snap/db); its lock file sits beside it. */
  path: string;
  /**
   * How long writes gather before LMDB commits them (etcd's --backend-batch-interval,
   * 100 ms there): one commit and one fsync of the file per interval instead of per turn
   * of the event loop, which on a busy member halved the fsyncs the disk had to serve.
   * 0 commits at the end of every turn that wrote.
   */
  commitDelayMs?: number;
  /**
   * Writes queued that commit at once, before the interval ends (etcd's
   * --backend-batch-limit, 10,000 there too): a burst does not hold an unbounded batch,
   * with its values, in memory. 0 or less: no limit.
   */
  commitLimit?: number;
  /**
   * Lease checkpoints are written to the lease table too
   * (--experimental-enable-lease-checkpoint-persist, etcd's checkpointPersist): a restart
   * then keeps each lease's remaining TTL. Without it they live in memory only, as in etcd 3.4.
   */
  persistLeaseCheckpoints?: boolean;
  /** Records a compaction deletes per transaction (--experimental-compaction-batch-limit; 0 or less: 1000). */
  compactionBatchLimit?: number;
  /** Where the compaction deletions report their timings (the member's metrics). */
  compactionObserver?: CompactionObserver | undefined;
}

/** A lease's row in the lease table (older files have no remainingTtl). */
interface LeaseRow {
  ttl: number;
  expiry: number;
  remainingTtl?: number;
}

/**
 * kvctl's default --backend-batch-interval (etcd's is 100 ms). Each commit reads the last
 * leaf of each table through the map, and the kernel maps the pages around it (64 KiB of
 * fault-around), pages the commits before had just written: at 100 ms, 100k keys of 1 KiB
 * left 48 MiB of the file resident in the member; at 500 ms, 16 MiB, for ~2.5 MB more of
 * values held until their commit at 5,000 puts a second. The WAL is the durability point,
 * so a longer interval only lengthens what a restart after a crash replays (0.5 s of
 * writes).
 */
export const DEFAULT_COMMIT_DELAY_MS = 500;
/** etcd's default --backend-batch-limit. */
export const DEFAULT_COMMIT_LIMIT = 10_000;

function leaseKey(id: LeaseId): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigInt64BE(id);
  return b;
}

/** A read transaction's view of the database (see MvccDb.reader). */
export interface DbReader {
  meta: { consistentIndex: number; revision: number; compactRevision: number };
  /** [revision key, encoded record], in revision order. */
  records(): Iterable<[Buffer, Buffer]>;
  leases(): LeaseRecord[];
  alarms(): AlarmMember[];
  done(): void;
}

function leaseRecord(key: Buffer, row: LeaseRow): LeaseRecord {
  const l: LeaseRecord = { id: Buffer.from(key).readBigInt64BE(0), ttl: row.ttl, expiry: row.expiry };
  if (typeof row.remainingTtl === "number" && row.remainingTtl > 0) l.remainingTtl = row.remainingTtl;
  return l;
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

export class MvccDb implements MvccBackend {
  #path: string;
  readonly #commitDelayMs: number;
  readonly #commitLimit: number;
  readonly #persistLeaseCheckpoints: boolean;
  #env!: RootDatabase<Buffer, Buffer>;
  #records!: Database<Buffer, Buffer>;
  /**
   * Each record's head (the record without its value) under the same revision key: a
   * restart rebuilds the key index from this table alone, ~50 bytes a record, instead of
   * reading every page of values (1.9 GB at 1.5M keys of 1 KiB, which the process then
   * also kept mapped). Written and deleted with the records, in the same transactions.
   */
  #headRows!: Database<Buffer, Buffer>;
  /** The head table read through the head decoder. */
  #heads!: Database<RecordHead, Buffer>;
  #leases!: Database<LeaseRow, Buffer>;
  #meta!: Database<Meta, string>;
  /** The meta table again, for the counter flushed() writes and the finished compaction. */
  #syncMark!: Database<number, string>;
  /** The revision whose compaction's records are all deleted (-1: none). */
  #finishedCompact = -1;
  /** Whether the file has (or the queue holds) FINISHED_COMPACT_KEY. */
  #finishedRecorded = false;
  readonly #compactions: Compactions;
  #syncs = 0;
  /** Commits whose meta page may not be on disk yet (made since the last flushed()). */
  #unsynced = 0;
  #alarms!: Database<AlarmMember, string>;
  #state: Meta = { consistentIndex: 0, revision: 1, compactRevision: -1 };
  /**
   * Records written since the last commit(), by main revision and sub: their values are
   * read from here, since LMDB shows a write only once its transaction committed.
   */
  #pending = new Map<number, StoredRecord[]>();
  /** The pending records of commits LMDB has not finished yet, oldest first. */
  #committing: Map<number, StoredRecord[]>[] = [];
  #dirty = false;
  /** The last commit's promise (resolves when LMDB committed it). */
  #lastCommit: Promise<unknown> = Promise.resolve();
  /**
   * Writes not handed to lmdb-js yet, in order, and the commits waiting for them. lmdb-js
   * starts a transaction at the end of every event-loop turn that wrote, whatever its
   * commitDelay says: a fill of 1 KiB puts made ~110 transactions a second. Each reads the
   * tree's last leaf through the map and the kernel maps the pages around it
   * (fault-around), which the commits before had just written: the whole file became
   * resident (113 MiB at 100k keys, where etcd's bbolt file had 18 MiB). Handed over once
   * per interval, as etcd's batch, the writes make ~10 transactions a second.
   */
  #queue: (() => Promise<unknown>)[] = [];
  /** The meta of the last commit() not handed to lmdb-js yet (written last, by #flush). */
  #metaToWrite: Meta | undefined;
  #waiting: { batch: Map<number, StoredRecord[]>; resolve: () => void; reject: (e: unknown) => void }[] = [];
  #flushTimer: ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate> | undefined;
  /** The file's size as of the last commit (the quota check reads it on every write). */
  #size = 0;
  /**
   * Bytes written but not in the file yet: records and leases not handed to lmdb-js
   * (#unflushed) and those of transactions still committing (#committingBytes). A commit
   * comes up to --backend-batch-interval (500 ms by default) after its writes: judged by
   * the file alone, a 1.5 MB quota let 13 sequential puts of 200 kB in (2.8 MB), where
   * etcd 3.4.23, whose bbolt file grows ahead of its writes, took 5 to 7.
   */
  #unflushed = 0;
  #committingBytes = 0;

  private constructor(opts: MvccDbOptions) {
    this.#path = opts.path;
    this.#commitDelayMs = opts.commitDelayMs ?? 0;
    this.#commitLimit = opts.commitLimit ?? 0;
    this.#persistLeaseCheckpoints = opts.persistLeaseCheckpoints ?? false;
    this.#compactions = new Compactions({
      ...(opts.compactionBatchLimit === undefined ? {} : { limit: opts.compactionBatchLimit }),
      write: (batch, finished) => this.#deleteCompacted(batch, finished),
      observer: opts.compactionObserver,
    });
  }

  /** The file (it changes when moveTo gives the file another name). */
  get path(): string {
    return this.#path;
  }

  static open(opts: MvccDbOptions): MvccDb {
    const db = new MvccDb(opts);
    db.#openEnv();
    return db;
  }

  #openEnv(path = this.path): void {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // No commitDelay here: writes are queued in this class and handed to lmdb-js in one
    // event-loop turn per commit interval (see #flush), which lmdb-js commits as one transaction.
    this.#env = openLmdb<Buffer, Buffer>({ path, noSubdir: true, maxDbs: 8, compression: false, encoding: "binary", keyEncoding: "binary", cache: false, noMetaSync: true, mapSize: MAP_BYTES, pageSize: PAGE_BYTES });
    this.#records = this.#env.openDB<Buffer, Buffer>({ name: "key", encoding: "binary", keyEncoding: "binary", cache: false });
    this.#headRows = this.#env.openDB<Buffer, Buffer>({ name: "head", encoding: "binary", keyEncoding: "binary", cache: false });
    // lmdb hands a custom decoder its shared read buffer instead of a copy of each value.
    this.#heads = this.#env.openDB<RecordHead, Buffer>({ name: "head", keyEncoding: "binary", cache: false, encoder: { encode: (v: Buffer) => v, decode: decodeRecordHead } } as never);
    this.#leases = this.#env.openDB<LeaseRow, Buffer>({ name: "lease", encoding: "msgpack", keyEncoding: "binary", cache: false });
    this.#alarms = this.#env.openDB<AlarmMember, string>({ name: "alarm", encoding: "msgpack", keyEncoding: "ordered-binary", cache: false });
    this.#meta = this.#env.openDB<Meta, string>({ name: "meta", encoding: "msgpack", keyEncoding: "ordered-binary", cache: false });
    this.#syncMark = this.#env.openDB<number, string>({ name: "meta", encoding: "msgpack", keyEncoding: "ordered-binary", cache: false });
    const meta = this.#meta.get(META_KEY);
    if (meta !== undefined) this.#state = { ...meta };
    const finished = this.#syncMark.get(FINISHED_COMPACT_KEY);
    this.#finishedRecorded = finished !== undefined;
    this.#finishedCompact = finished ?? this.#state.compactRevision;
    this.#compactions.recorded(this.#state.compactRevision);
    if (this.#syncMark.get(HEADS_AT_KEY) !== this.#state.consistentIndex) this.#rebuildHeads();
    this.#size = fileSize(path);
  }

  /** Writes the head table anew from the records, in one transaction (see HEADS_AT_KEY). */
  #rebuildHeads(): void {
    this.#env.transactionSync(() => {
      this.#headRows.clearSync();
      for (const { key, value } of this.#records.getRange({})) this.#headRows.putSync(key, recordHeadBytes(value), APPEND);
      this.#syncMark.putSync(HEADS_AT_KEY, this.#state.consistentIndex);
    });
  }

  /** The raft index whose v3 effects (and all before it) the file holds. */
  get consistentIndex(): number {
    return this.#state.consistentIndex;
  }

  /** The state of the last commit: rebuild the key index from it. */
  load(): MvccLoaded {
    const heads = this.#heads;
    const leases = this.#leases;
    const alarms = [...this.#alarms.getRange({})].map(({ value }) => value);
    return {
      revision: this.#state.revision,
      compactRevision: this.#state.compactRevision,
      compactionPending: this.#finishedCompact < this.#state.compactRevision,
      records: {
        *[Symbol.iterator]() {
          for (const { key, value } of heads.getRange({})) yield revisionOf(value, key);
        },
      },
      leases: {
        *[Symbol.iterator]() {
          for (const { key, value } of leases.getRange({})) yield leaseRecord(key, value);
        },
      },
      alarms,
    };
  }

  putRecord(rec: StoredRecord): void {
    // Revisions only grow: LMDB's append mode fills pages instead of splitting them in half
    // (etcd's UnsafeSeqPut fills bbolt pages to 90 % for the same reason).
    const key = revisionKey(rec.main, rec.sub);
    const encoded = encodeRecord(rec);
    // The record, its key twice (the head table too) and LMDB's node headers.
    this.#unflushed += encoded.length + 2 * key.length + RECORD_OVERHEAD_BYTES;
    this.#queue.push(() => {
      void this.#headRows.put(key, recordHeadBytes(encoded), APPEND);
      return this.#records.put(key, encoded, APPEND);
    });
    if (rec.main > this.#state.revision) this.#state.revision = rec.main;
    if (!rec.tombstone) {
      let recs = this.#pending.get(rec.main);
      if (recs === undefined) this.#pending.set(rec.main, (recs = []));
      recs[rec.sub] = rec;
    }
    this.#dirty = true;
  }

  compacted(revision: number, dropped: readonly number[]): void {
    if (revision > this.#state.compactRevision) {
      this.#state.compactRevision = revision;
      this.#dirty = true;
    }
    // Written with the first compaction point whose records go in batches: without it, a
    // crash before they all went would read as a finished compaction.
    if (!this.#finishedRecorded) {
      this.#putFinished(this.#finishedCompact);
      this.#dirty = true;
    }
    if (dropped.length === 0 && this.#compactions.pending === 0) {
      if (revision > this.#finishedCompact) {
        this.#putFinished(revision);
        this.#dirty = true;
      }
      return;
    }
    this.#compactions.add(revision, dropped);
  }

  /** Resolves once the records of every compaction up to `revision` are deleted and committed (etcd's physical compaction). */
  compactionFinished(revision: number): Promise<void> {
    return this.#compactions.finished(revision);
  }

  /** Compaction transactions so far, the records they deleted, and the compactions still deleting. */
  get compactionStats(): { batches: number; deleted: number; pending: number; limit: number } {
    return { ...this.#compactions.stats, pending: this.#compactions.pending, limit: this.#compactions.limit };
  }

  /** One batch of a compaction's deletions, handed to lmdb-js now as its own transaction (with any whole entries queued). */
  #deleteCompacted(batch: readonly number[], finished: number | undefined): Promise<unknown> {
    for (let i = 0; i < batch.length; i += 2) {
      const key = revisionKey(batch[i]!, batch[i + 1]!);
      this.#queue.push(() => {
        void this.#headRows.remove(key);
        return this.#records.remove(key);
      });
    }
    if (finished !== undefined) this.#putFinished(finished);
    this.#flush();
    return this.#lastCommit;
  }

  #putFinished(revision: number): void {
    this.#finishedCompact = revision;
    this.#finishedRecorded = true;
    this.#queue.push(() => this.#syncMark.put(FINISHED_COMPACT_KEY, revision));
  }

  putLease(l: LeaseRecord): void {
    const key = leaseKey(l.id);
    const value: LeaseRow = { ttl: l.ttl, expiry: l.expiry };
    if (l.remainingTtl !== undefined && l.remainingTtl > 0) value.remainingTtl = l.remainingTtl;
    this.#unflushed += key.length + RECORD_OVERHEAD_BYTES;
    this.#queue.push(() => this.#leases.put(key, value));
    this.#dirty = true;
  }

  checkpointLease(l: LeaseRecord): void {
    if (this.#persistLeaseCheckpoints) this.putLease(l);
  }

  removeLease(id: LeaseId): void {
    const key = leaseKey(id);
    this.#queue.push(() => this.#leases.remove(key));
    this.#dirty = true;
  }

  putAlarm(a: AlarmMember): void {
    const value = { memberId: a.memberId, alarm: a.alarm };
    this.#queue.push(() => this.#alarms.put(`${a.alarm}/${a.memberId}`, value));
    this.#dirty = true;
  }

  removeAlarm(a: AlarmMember): void {
    this.#queue.push(() => this.#alarms.remove(`${a.alarm}/${a.memberId}`));
    this.#dirty = true;
  }

  readValue(rec: StoredRecord): Buffer {
    const held = this.#held(rec.main, rec.sub);
    if (held !== undefined) return held.value;
    const b = this.#records.getBinary(revisionKey(rec.main, rec.sub));
    if (b === undefined) throw new Error(`v3 backend: record ${rec.main}.${rec.sub} is missing`);
    return recordValue(b) as Buffer;
  }

  /**
   * Ends the batch of writes made since the last call, as the effects of the entries up to
   * `appliedIndex`: the consistent index is written with them, in the same transaction.
   * Nothing is written when nothing changed (undefined); otherwise resolves once LMDB
   * committed it, within the commit interval.
   */
  commit(appliedIndex: number): Promise<void> | undefined {
    if (!this.#dirty) return undefined;
    this.#dirty = false;
    this.#state.consistentIndex = appliedIndex;
    // Written once per transaction, at its end (#flush): only the last commit's meta
    // survives a transaction anyway, and a commit interval holds a commit per Ready.
    this.#metaToWrite = { ...this.#state };
    const meta = this.#metaToWrite;
    this.#compactions.recorded(meta.compactRevision);
    const batch = this.#pending;
    this.#pending = new Map();
    this.#committing.push(batch);
    const committed = new Promise<void>((resolve, reject) => this.#waiting.push({ batch, resolve, reject }));
    if (this.#commitLimit > 0 && this.#queue.length >= this.#commitLimit) this.#flush();
    else if (this.#flushTimer === undefined) {
      const flush = (): void => this.#flush();
      this.#flushTimer = this.#commitDelayMs > 0 ? setTimeout(flush, this.#commitDelayMs) : setImmediate(flush);
    }
    return committed;
  }

  /** Hands every queued write to lmdb-js in this one turn: one transaction. */
  #flush(): void {
    if (this.#flushTimer !== undefined) {
      clearTimeout(this.#flushTimer as ReturnType<typeof setTimeout>);
      clearImmediate(this.#flushTimer as ReturnType<typeof setImmediate>);
      this.#flushTimer = undefined;
    }
    const meta = this.#metaToWrite;
    if (this.#queue.length === 0 && meta === undefined) return;
    const ops = this.#queue;
    const waiting = this.#waiting;
    this.#queue = [];
    this.#waiting = [];
    this.#metaToWrite = undefined;
    let done: Promise<unknown> = Promise.resolve();
    for (const op of ops) done = op();
    if (meta !== undefined) {
      void this.#syncMark.put(HEADS_AT_KEY, meta.consistentIndex);
      done = this.#meta.put(META_KEY, meta);
    }
    if (waiting.length > 0) this.#unsynced++;
    const bytes = this.#unflushed;
    this.#unflushed = 0;
    this.#committingBytes += bytes;
    this.#lastCommit = done.then(
      () => {
        for (const w of waiting) this.#committing.splice(this.#committing.indexOf(w.batch), 1);
        this.#committingBytes -= bytes;
        this.#size = fileSize(this.path);
        for (const w of waiting) w.resolve();
      },
      (err: unknown) => {
        for (const w of waiting) w.reject(err);
        throw err;
      },
    );
  }

  /** A record written but not committed yet (its value is not in the file). */
  #held(main: number, sub: number): StoredRecord | undefined {
    const own = this.#pending.get(main)?.[sub];
    if (own !== undefined) return own;
    for (let i = this.#committing.length - 1; i >= 0; i--) {
      const r = this.#committing[i]!.get(main)?.[sub];
      if (r !== undefined) return r;
    }
    return undefined;
  }

  /** Resolves once every commit so far is on disk (etcd's ForceCommit before a snapshot). */
  async flushed(): Promise<void> {
    this.#flush();
    await this.#lastCommit;
    await this.#env.flushed;
    // noMetaSync (LMDB's MDB_NOMETASYNC): a commit's data is synced but its meta page
    // reaches the disk with the next commit's sync, so after a system crash the file is
    // whole but may miss its last commit, which the WAL replays (the consistent index went
    // back with it). That halved the fsyncs competing with the WAL's (v3 put, 16
    // connections: ~3,400 -> ~3,900 req/s). Where the WAL entries are about to be released
    // (a snapshot), one more commit makes every commit so far durable.
    if (this.#unsynced === 0) return;
    this.#unsynced = 0;
    await this.#syncMark.put(SYNC_KEY, ++this.#syncs);
    await this.#env.flushed;
  }

  /** Bytes of the file, and of the pages in use in it (the status API's dbSize and dbSizeInUse). */
  sizes(): { size: number; inUse: number } {
    const size = fileSize(this.path);
    this.#size = size;
    const pages = (s: unknown): number => {
      const st = s as { treeBranchPageCount?: number; treeLeafPageCount?: number; overflowPages?: number };
      return (st.treeBranchPageCount ?? 0) + (st.treeLeafPageCount ?? 0) + (st.overflowPages ?? 0);
    };
    const root = this.#env.getStats() as { pageSize?: number };
    const pageSize = root.pageSize ?? 4096;
    // Two meta pages and the root's own tree, plus each table.
    const tables = [this.#records, this.#headRows, this.#leases, this.#meta, this.#alarms].map((t) => pages(t.getStats()));
    const used = 2 + pages(root) + tables.reduce((a, b) => a + b, 0);
    return { size, inUse: Math.min(size, used * pageSize) };
  }

  /** Where the compaction deletions report their timings, for a database opened before the member's metrics were given. */
  set compactionObserver(o: CompactionObserver | undefined) {
    this.#compactions.observer = o;
  }

  /** The file's size as of the last commit, without a system call (etcd's backend Size). */
  get size(): number {
    return this.#size;
  }

  /**
   * What the backend quota judges: the file as of the last commit plus the bytes written
   * since, not committed yet (an estimate: LMDB may put them in free pages instead).
   */
  get quotaSize(): number {
    return this.#size + this.#unflushed + this.#committingBytes;
  }

  /**
   * A consistent copy of the file as of now (one read transaction), for a follower's
   * snapshot or a backup; `compact` leaves the free pages out (defragment).
   */
  async copyTo(path: string, opts: { compact: boolean }): Promise<void> {
    await this.flushed();
    await this.#env.backup(path, opts.compact);
  }

  /**
   * A consistent view of the last commit (one read transaction) for a backup: call done()
   * when finished, or the free pages it holds are never reused. Await flushed() first to
   * include every write made so far.
   */
  reader(): DbReader {
    const transaction = this.#env.useReadTransaction();
    const records = this.#records;
    const leases = this.#leases;
    const alarms = this.#alarms;
    const meta = this.#meta.get(META_KEY, { transaction }) ?? { consistentIndex: 0, revision: 1, compactRevision: -1 };
    return {
      meta: { ...meta },
      *records() {
        for (const { key, value } of records.getRange({ transaction })) yield [key, value];
      },
      leases: () => [...leases.getRange({ transaction })].map(({ key, value }) => leaseRecord(key, value)),
      alarms: () => [...alarms.getRange({ transaction })].map(({ value }) => value),
      done: () => transaction.done(),
    };
  }

  /** A record as a backup holds it (snapshot restore into a new database). */
  importRecord(key: Buffer, value: Buffer): void {
    parseRevisionKey(key);
    void this.#headRows.put(key, recordHeadBytes(value), APPEND);
    void this.#records.put(key, value, APPEND);
  }

  /** Resolves once the writes queued so far are committed (an import goes in batches). */
  async committedAll(): Promise<void> {
    await this.#env.committed;
  }

  /** The rest of a backup, after its records: leases, alarms, and meta with consistent index `index`. */
  importRest(s: { leases: Iterable<LeaseRecord>; alarms: Iterable<AlarmMember>; revision: number; compactRevision: number; index: number }): void {
    for (const l of s.leases) this.putLease(l);
    for (const a of s.alarms) this.putAlarm(a);
    this.#state = { consistentIndex: s.index, revision: s.revision, compactRevision: s.compactRevision };
    // A backup made during a compaction's batches may hold records it dropped: the first
    // start compacts again (MvccLoaded.compactionPending).
    this.#putFinished(-1);
    this.#dirty = true;
    this.commit(s.index);
  }

  /**
   * Rewrites the file without its free pages (etcd's defrag). The caller makes sure nothing
   * is written meanwhile. The copy is opened before the old file is closed, so reads never
   * meet a closed database; then it takes the file's name.
   */
  async defragment(): Promise<void> {
    // A compaction batch written to the old file after the copy would be lost with it.
    await this.#compactions.pause();
    try {
      const tmp = `${this.path}.defrag`;
      await rm(tmp, { force: true });
      await this.copyTo(tmp, { compact: true });
      const target = this.#path;
      const old = this.#env;
      this.#openEnv(tmp);
      this.#path = tmp;
      await old.close();
      await this.moveTo(target);
    } finally {
      this.#compactions.resume();
    }
  }

  /**
   * Gives the open file the name `to`, replacing what is there (a database received from
   * the leader, or a defragmented copy, taking the member's file's place once the old one
   * is closed). The lock file of the old name goes: the next open makes the one of `to`.
   */
  async moveTo(to: string): Promise<void> {
    const from = this.#path;
    if (from !== to) {
      await rename(from, to);
      this.#path = to;
      await rm(`${from}-lock`, { force: true }).catch(() => undefined);
    }
    this.#size = fileSize(to);
  }

  /** Closes the file (pending writes are committed first; unfinished compaction deletions start over at the next open). */
  async close(): Promise<void> {
    await this.#compactions.stop();
    await this.flushed().catch(() => undefined);
    await this.#env.close();
  }
}
