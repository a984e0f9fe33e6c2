// Linearizable reads through Raft's ReadIndex, batched: every read that arrives while a
// ReadIndex round is in flight joins the next round, so a burst of quorum reads costs one
// leadership confirmation (a heartbeat round with several members) instead of one each.
//
// Invariants:
// - a read resolves only once the member has applied at least the commit index the leader
//   reported for a round that STARTED after the read arrived;
// - when a new leader becomes known while a round is unanswered, the round's reads that
//   etcd makes through its linearizableReadLoop (v3 Range, read-only Txn) fail with
//   "leader changed", as requestCurrentIndex fails them there; the others (v2 quorum GET,
//   health: reads etcd 3.4 makes through the log) go again in a new round. Reads waiting
//   for the next round, or with their index known and waiting for apply, are not touched.
import { LeaderChangedError, ServerUnavailableError } from "./errors.ts";

interface PendingRead {
  resolve: () => void;
  reject: (e: unknown) => void;
  failOnLeaderChange: boolean;
}

export interface ReadOptions {
  /** Fail with LeaderChangedError if a new leader is known before the round is answered. */
  failOnLeaderChange?: boolean;
}

export interface ReadIndexHost {
  /** Asks Raft for a read index; the answer comes back through onReadState. */
  requestReadIndex(ctx: Uint8Array): void;
  appliedIndex(): number;
  /** A read state not for the round in flight was ignored, or a round timed out (etcd_server_slow_read_indexes_total). */
  slowReadIndex?(): void;
  /** A round in flight was cut by a new leader (etcd_server_read_indexes_failed_total). */
  readIndexFailed?(): void;
}

/**
 * How long one ReadIndex request may go unanswered before it is sent again (etcd's
 * readIndexRetryTime). A request lost with a dead or partitioned leader must not hold the
 * batch (and every read queued behind it) until the whole request times out.
 */
export const READ_INDEX_RETRY_MS = 500;

export class ReadIndexBatcher {
  #host: ReadIndexHost;
  #timeoutMs: number;
  #retryMs: number;
  #pending: PendingRead[] = [];
  #inFlight: { ctx: string; batch: PendingRead[]; timer: NodeJS.Timeout; deadline: number } | undefined;
  #counter = 0;
  #ctxPrefix: string;
  #awaitingApply: Array<{ index: number; batch: PendingRead[] }> = [];

  /**
   * `memberId` makes the rounds' ctxs unique in the cluster, as etcd's request ids are
   * (member id and start time in each): the leader keys its pending reads by ctx and drops
   * a duplicate unanswered, so two members' equal counters would hold one member's reads
   * until the re-send. The start time keeps a restarted member's rounds apart from its
   * previous run's. Without it (tests) a ctx is the bare counter.
   */
  constructor(host: ReadIndexHost, timeoutMs: number, retryMs = READ_INDEX_RETRY_MS, memberId?: number) {
    this.#host = host;
    this.#ctxPrefix = memberId === undefined ? "" : `${memberId.toString(16)}.${Date.now().toString(36)}.`;
    this.#timeoutMs = timeoutMs;
    this.#retryMs = Math.min(retryMs, timeoutMs);
  }

  read(opts: ReadOptions = {}): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ resolve, reject, failOnLeaderChange: opts.failOnLeaderChange === true });
      this.#startRound();
    });
  }

  /** A ReadState from Raft: `index` must be applied before the round's reads may run. */
  onReadState(index: number, ctx: Uint8Array): void {
    const f = this.#inFlight;
    if (!f || f.ctx !== Buffer.from(ctx).toString()) {
      // etcd's "ignored out-of-date read index response": an answer to a send already given up.
      this.#host.slowReadIndex?.();
      return;
    }
    clearTimeout(f.timer);
    this.#inFlight = undefined;
    this.#awaitingApply.push({ index, batch: f.batch });
    this.#startRound();
  }

  /** Called after apply: releases the rounds whose index is applied. */
  release(): void {
    if (this.#awaitingApply.length === 0) return;
    const applied = this.#host.appliedIndex();
    const keep: Array<{ index: number; batch: PendingRead[] }> = [];
    for (const r of this.#awaitingApply) {
      if (r.index <= applied) for (const x of r.batch) x.resolve();
      else keep.push(r);
    }
    this.#awaitingApply = keep;
  }

  /**
   * A new leader is known: a request in flight may never be answered (the old leader
   * dropped it). Its reads that asked for it fail; the rest go again at once rather than
   * wait for the retry interval.
   */
  leaderChanged(): void {
    const f = this.#inFlight;
    if (!f) return;
    clearTimeout(f.timer);
    this.#inFlight = undefined;
    this.#host.readIndexFailed?.();
    const again = f.batch.filter((r) => !r.failOnLeaderChange);
    for (const r of f.batch) if (r.failOnLeaderChange) r.reject(new LeaderChangedError());
    this.#pending = again.concat(this.#pending);
    this.#startRound();
  }

  failAll(err: unknown): void {
    const all = [...this.#pending, ...(this.#inFlight?.batch ?? []), ...this.#awaitingApply.flatMap((r) => r.batch)];
    if (this.#inFlight) clearTimeout(this.#inFlight.timer);
    this.#pending = [];
    this.#inFlight = undefined;
    this.#awaitingApply = [];
    for (const r of all) r.reject(err);
  }

  #startRound(): void {
    if (this.#inFlight || this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#send(batch, Date.now() + this.#timeoutMs);
  }

  /**
   * Sends one ReadIndex request for `batch`, re-sent every retry interval until the
   * deadline. Reads that arrive meanwhile wait for the next round, as in etcd, rather than
   * join a re-sent request: they would take on its deadline, and a new leader would fail
   * them though they came after the round began.
   */
  #send(batch: PendingRead[], deadline: number): void {
    const ctx = `${this.#ctxPrefix}r${++this.#counter}`;
    const timer = setTimeout(() => {
      if (this.#inFlight?.ctx !== ctx) return;
      this.#inFlight = undefined;
      if (Date.now() >= deadline) {
        this.#host.slowReadIndex?.();
        for (const r of batch) r.reject(new ServerUnavailableError("etcdserver: request timed out"));
        this.#startRound();
      } else {
        this.#send(batch, deadline);
      }
    }, Math.max(1, Math.min(this.#retryMs, deadline - Date.now())));
    this.#inFlight = { ctx, batch, timer, deadline };
    this.#host.requestReadIndex(Buffer.from(ctx));
  }
}
