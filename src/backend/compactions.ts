// The deletions of v3 compactions, in batches (etcd's scheduleCompaction and
// --experimental-compaction-batch-limit): applying a compaction drops its records from
// the key index at once, but deleting them from the file is done here afterwards, at most
// `limit` records per transaction with a pause between two, so that reads, writes and
// their commits go on meanwhile instead of waiting behind one transaction that deletes
// every record (etcd pauses 10 ms between batches too).
//
// Invariants:
// - Jobs run one at a time, oldest first, and a job starts only once the compaction point
//   it belongs to has been handed to the database (`recorded`): a crash can then never
//   leave records deleted by a compaction whose entry the database does not hold.
// - `write` receives each batch with, on a job's last batch, the revision now finished,
//   and resolves once that transaction committed. Until a job's last batch committed the
//   database's finished revision stays below its compaction point, and a restart compacts
//   again (MvccLoaded.compactionPending): deleting a record twice is harmless.
// - Nothing is written once pause() or stop() returned, until resume(); stop() is final.

/** etcd's default --experimental-compaction-batch-limit. */
export const DEFAULT_COMPACTION_BATCH_LIMIT = 1000;
/** etcd's pause between two compaction batches. */
export const COMPACTION_PAUSE_MS = 10;

interface Job {
  readonly revision: number;
  /** performance.now() when its first batch began (undefined until then). */
  startedAt?: number;
  /** (main, sub) pairs, flat. */
  readonly dropped: readonly number[];
  /** Index in `dropped` of the next pair to delete. */
  next: number;
}

/**
 * Timings of the deletions, as etcd's scheduleCompaction observes them (its
 * etcd_debugging_mvcc_db_compaction_* families), in whole milliseconds as Go's
 * Duration / time.Millisecond gives them.
 */
export interface CompactionObserver {
  /** A batch other than its job's last: from its start to its commit (etcd's pause duration). */
  batch(ms: number): void;
  /** A job whose last batch committed: from its first batch's start, and the records it deleted. */
  job(ms: number, records: number): void;
}

export interface CompactionsOptions {
  /** Records deleted per transaction (0 or less: etcd's 1000). */
  limit?: number;
  pauseMs?: number;
  /** Writes the deletions of one batch ((main, sub) pairs) and, on a job's last, the revision finished; resolves once committed. */
  write(batch: readonly number[], finished: number | undefined): Promise<unknown>;
  observer?: CompactionObserver | undefined;
}

export class Compactions {
  readonly #limit: number;
  readonly #pauseMs: number;
  readonly #write: CompactionsOptions["write"];
  #jobs: Job[] = [];
  /** The highest compaction point handed to the database so far. */
  #recorded = -1;
  #running: Promise<void> | undefined;
  /** The batch being written, if any (what pause() waits for). */
  #batch: Promise<unknown> | undefined;
  #paused: { until: Promise<void>; open: () => void } | undefined;
  #stopped = false;
  #waiters: { revision: number; resolve: () => void }[] = [];
  #batches = 0;
  #deleted = 0;
  /** Set when the database is opened for a member whose metrics it reports to. */
  observer: CompactionObserver | undefined;

  constructor(opts: CompactionsOptions) {
    this.#limit = opts.limit !== undefined && opts.limit > 0 ? Math.trunc(opts.limit) : DEFAULT_COMPACTION_BATCH_LIMIT;
    this.#pauseMs = opts.pauseMs ?? COMPACTION_PAUSE_MS;
    this.#write = opts.write;
    this.observer = opts.observer;
  }

  /** Records deleted per transaction. */
  get limit(): number {
    return this.#limit;
  }

  /** Transactions written so far, and the records they deleted. */
  get stats(): { batches: number; deleted: number } {
    return { batches: this.#batches, deleted: this.#deleted };
  }

  /** Compactions whose records are not all deleted yet. */
  get pending(): number {
    return this.#jobs.length;
  }

  /** The records compaction at `revision` dropped, to delete once that point is recorded. */
  add(revision: number, dropped: readonly number[]): void {
    if (this.#stopped) return;
    this.#jobs.push({ revision, dropped, next: 0 });
    this.#run();
  }

  /** The database now holds (or is about to commit) compaction point `revision`. */
  recorded(revision: number): void {
    if (revision <= this.#recorded) return;
    this.#recorded = revision;
    this.#run();
  }

  /**
   * Resolves once every compaction up to `revision` added so far has had its records deleted
   * and committed (at once when none is pending); also when stopped.
   */
  finished(revision: number): Promise<void> {
    if (this.#stopped || !this.#jobs.some((j) => j.revision <= revision)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ revision, resolve }));
  }

  /** No batch is written after this resolves, until resume(): the one in flight has committed. */
  async pause(): Promise<void> {
    if (this.#paused === undefined) {
      let open!: () => void;
      const until = new Promise<void>((r) => (open = r));
      this.#paused = { until, open };
    }
    await this.#batch;
  }

  resume(): void {
    const p = this.#paused;
    this.#paused = undefined;
    p?.open();
  }

  /** Ends the deletions for good (the database closes): what is left is done again at the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.resume();
    await this.#running;
    for (const w of this.#waiters.splice(0)) w.resolve();
  }

  #run(): void {
    if (this.#running !== undefined || this.#stopped) return;
    const job = this.#jobs[0];
    if (job === undefined || job.revision > this.#recorded) return;
    this.#running = this.#loop().finally(() => {
      this.#running = undefined;
      this.#run();
    });
  }

  async #loop(): Promise<void> {
    // Never within the caller's turn: a compaction's apply and its commit come first.
    await new Promise((r) => setImmediate(r));
    for (;;) {
      while (this.#paused !== undefined && !this.#stopped) await this.#paused.until;
      const job = this.#jobs[0];
      if (this.#stopped || job === undefined || job.revision > this.#recorded) return;
      const end = Math.min(job.dropped.length, job.next + 2 * this.#limit);
      const batch = job.dropped.slice(job.next, end);
      job.next = end;
      const last = end === job.dropped.length;
      const start = performance.now();
      job.startedAt ??= start;
      this.#batch = this.#write(batch, last ? job.revision : undefined);
      await this.#batch;
      this.#batch = undefined;
      this.#batches++;
      this.#deleted += batch.length / 2;
      const now = performance.now();
      if (last) this.observer?.job(Math.trunc(now - job.startedAt), job.dropped.length / 2);
      else this.observer?.batch(Math.trunc(now - start));
      if (last) {
        this.#jobs.shift();
        this.#wake();
      }
      if (this.#jobs.length === 0) return;
      await new Promise((r) => setTimeout(r, this.#pauseMs));
    }
  }

  /** Resolves the finished() waiters no pending job concerns any more. */
  #wake(): void {
    const waiting = this.#waiters;
    this.#waiters = [];
    for (const w of waiting) {
      if (this.#jobs.some((j) => j.revision <= w.revision)) this.#waiters.push(w);
      else w.resolve();
    }
  }
}
