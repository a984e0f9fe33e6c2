// The Ready loop: how a member turns what Raft asks for (a Ready: entries and a hard state
// to persist, messages to send, committed entries to apply) into disk writes, peer
// messages and applied state, one Ready at a time. Every write passes here:
//
//   propose -> Raft -> Ready -> WAL save (ONE fdatasync per Ready) -> apply -> waiter -> response
//
// What SAFETY requires, in the order one Ready is handled (ready-loop.test.ts checks each
// against a fake member whose saves finish when the test says):
//
//  S1  A snapshot from the leader is installed (on disk, in Raft's storage, in the state
//      machine) before the Ready's entries are saved or any of its entries applied: they
//      follow the snapshot.
//  S2  A message that promises this member's persisted state (a vote, an append
//      acknowledgement) leaves only after the save of the Ready that carries it
//      (ready-sends.ts, mayPrecedeSave): a member that crashed after sending it must
//      still hold what it promised.
//  S3  Committed entries are applied only once the save of their Ready has completed: a
//      single voter's entries are committed in the Ready that first carries them, and a
//      write is acknowledged only after its entry is durable and applied.
//  S4  Raft's storage gets the entries and hard state only once they are on disk, and
//      advance() (they are stable, and applied) comes after everything else of the Ready.
//      Except in a PIPELINED Ready (below), whose storage and advance() come right after
//      its write: a leader's own entries promise nothing before they are committed, and
//      they are applied and answered only once durable (S3).
//  S5  One Ready at a time, and WAL calls never overlap: a Ready asked for while one is
//      being handled waits for it (its proposals go out together in the next save, the
//      group commit), and a made snapshot is recorded in the WAL only between Readys.
//      A pipelined Ready is done with once its records are written; what it still owes
//      (waiting for its fdatasync, the messages that wait for it, apply, answers) runs in
//      Ready order, and any Ready that is not pipelined, and a snapshot's record, first
//      waits for all of that.
//  S6  A waiter resolves only in apply (S3), so no client hears of a write before it is
//      durable and applied; read states are released only after the entries of their
//      Ready are applied.
//
// PIPELINED Readys (mayPipeline; tuning, inside S1-S6 as amended above): a leader's Ready
// with nothing but normal entries and commit-index changes, on a member without peers,
// while clients are concurrent (its save would wait off the loop; a traced write is
// followed through it too). Its records are written at once (Wal.append) and the WAL
// keeps one fdatasync running for whatever was written before it started. What is
// proposed while it runs waits for it to return and is written then, as one Ready, in
// the WAL's callback before the next fdatasync starts (Wal.onSyncReturn) and before the
// returned Ready is applied: a request waits for the rest of the running fdatasync and
// one more, never two more, and an fdatasync carries one write. (Written in the loop's
// turns instead, later arrivals waited for the returned Ready's apply and then for two
// fdatasyncs: 6,843-8,845 against 8,449-12,985 req/s, v2 PUT at 16 connections, three
// pairs.) The classic order left the disk idle while the member
// applied and answered one batch and read the next: CPU-bound at 16 connections, its
// fdatasync looked 0.33 ms long from the loop even with fdatasync made a no-op. With peers
// it is not used: a leader of three that pipelined sent each turn's proposals in appends
// of their own, and its followers' extra wake-ups and saves cost more of the two cores
// than the overlap gained (v2 PUT at 16 connections 6,047 against 7,331 req/s, v3 put
// 5,073 against 7,097, two runs each, alternated).
//
// What is TUNING for few cores, pure and tested beside the loop, and free to change as
// long as the orderings above hold:
//  - which messages leave before the save, and when their bytes are written (planSends in
//    ready-sends.ts: a leader's appends before its own fdatasync, commit updates after the
//    clients' answers);
//  - where a save waits for its fdatasync: on the event loop or in libuv's threadpool
//    (DiskWaitPolicy in disk-wait.ts), on a leader with one turn of the loop first so that
//    requests already read join the save (a follower's save has nothing to wait for); an
//    on-loop wait marks the disk slow only by the time the thread was not waiting for a CPU;
//  - after a lone writer's answer on a member without peers, the event loop polls for its
//    next request for LONE_POLL_MS instead of sleeping in epoll (below).
import { EntryType, type Entry, type HardState, type Message, type Ready, type Snapshot } from "../raft/index.ts";
import type { SendOptions } from "../transport/index.ts";
import type { DiskWaitPolicy } from "./disk-wait.ts";
import { planSends, type SendStep } from "./ready-sends.ts";
import { TracePhase, type WriteTracer } from "./write-trace.ts";

/** A decoded command as far as the loop needs it: its proposer. */
export interface ProposedBy {
  readonly m: number;
}

/** What the loop uses of the member: Raft, the WAL, the peers, and the state machine. */
export interface ReadyLoopHost<C extends ProposedBy> {
  readonly memberId: number;
  readonly node: {
    hasReady(): boolean;
    ready(): Ready;
    advance(rd: Ready): void;
  };
  readonly wal: {
    /** Appends entries and hard state with one fdatasync; resolves with its duration (ms). */
    save(hardState: HardState | null, entries: Entry[], opts: { onLoop?: boolean }): Promise<number>;
    /** Writes them now; resolves once an fdatasync begun after the write returned (its duration in ms, for the first append it covered). */
    append(hardState: HardState | null, entries: Entry[]): Promise<number | undefined>;
    /** append() may be used (false: a segment is due to be cut, which only save() does). */
    readonly appendable: boolean;
    /** An fdatasync of appends is running. */
    readonly syncing: boolean;
    /** Called when an fdatasync of appends returned, before the next starts: appends made in it join the next. */
    onSyncReturn: (() => void) | undefined;
    /** A hard state whose only change is the commit index: written, not synced (as etcd). */
    saveCommitUnsynced(hardState: HardState): void;
  };
  /** Raft's stable storage (in memory). */
  readonly storage: {
    setHardState(hs: HardState): void;
    append(entries: Entry[]): void;
  };
  readonly snapshots: {
    /** Messages without snapshots a peer could not use (snapshot-flow.ts). */
    withoutStale(msgs: Message[]): Message[];
    install(snap: Snapshot): Promise<void>;
    /** A made snapshot waits to be recorded in the WAL. */
    readonly pending: boolean;
    record(): Promise<void>;
    maybeStart(): void;
  };
  readonly reads: {
    onReadState(index: number, ctx: Uint8Array): void;
    release(): void;
  };
  readonly diskWait: DiskWaitPolicy;
  /** How long the loop's thread has waited for a CPU, ever (ms; run-queue-wait.ts), or undefined where unknown. */
  runQueueWaitMs(): number | undefined;
  readonly tracer: WriteTracer;
  readonly metrics: { walSynced(ms: number): void };
  isLeader(): boolean;
  /** The cluster has no other member: no peer waits for this member's appends. */
  alone(): boolean;
  stopped(): boolean;
  /** Client requests begun and proposals made, ever (counters for the disk-wait policy). */
  clientRequests(): number;
  proposals(): number;
  send(messages: Message[], options: SendOptions): void;
  /** The Ready names a leader (soft state), before anything else of it is handled. */
  leaderSeen(lead: number): void;
  /** The Ready's new hard state, before it is saved (term and commit index as Raft has them). */
  hardStateSeen(hs: HardState): void;
  /** The command of a committed entry, decoded once: its proposer orders the sends, then it is applied. */
  decode(e: Entry): C | undefined;
  /** While this is set, committed entries wait for it (a defragmentation, a backup's start). */
  applyGate(): Promise<void> | undefined;
  apply(e: Entry, cmd: C | undefined): void;
  /** The Ready's committed entries are applied (the v3 writes commit with the index they reach). */
  appliedBatch(): void;
  /** The loop cannot go on safely (a failed WAL write): the member must stop. */
  fatal(err: unknown): void;
}

/**
 * How long (ms) a lone writer's member keeps its event loop polling for the next request
 * after an answer. A thread that sleeps in epoll leaves its vCPU idle, and waking an idle
 * vCPU (the client's request, the disk's interrupt) is slow on a VM; the client's next
 * request comes within tens of microseconds of the answer, so the loop turns without
 * blocking until then, or until this is up.
 */
export const LONE_POLL_MS = 0.2;

/**
 * Whether a Ready may be pipelined (see the header): a leader's, without a snapshot or a
 * change of leader, whose entries and committed entries are all normal ones (a membership
 * change is applied before Raft is advanced past it, as Raft requires). The caller adds
 * what it knows beside the Ready: the term and vote did not change, the save would wait
 * off the loop, the WAL can append, the member has no peers.
 */
export function mayPipeline(rd: Ready, isLeader: boolean): boolean {
  if (!isLeader || rd.softState !== undefined) return false;
  if (rd.snapshot !== undefined && rd.snapshot.metadata.index > 0) return false;
  for (const e of rd.entries) if (e.type !== EntryType.Normal) return false;
  for (const e of rd.committedEntries) if (e.type !== EntryType.Normal) return false;
  return true;
}

export class ReadyLoop<C extends ProposedBy> {
  readonly #host: ReadyLoopHost<C>;
  #draining = false;
  #drainAgain = false;
  /** This Ready's save waited on the loop for a lone writer. */
  #loneSave = false;
  /** Pipelined Readys that still owe their apply, and the chain that runs them in order. */
  #pipelined = 0;
  #tail: Promise<void> = Promise.resolve();
  /** The hard state's term and vote as of the last Ready that had one. */
  #term = -1;
  #vote = -1;
  #polling = false;
  #pollUntil = 0;
  #pollRequests = 0;
  /** One turn of the event loop that does not block, while no request began and the time is not up. */
  readonly #poll = (): void => {
    if (this.#host.clientRequests() === this.#pollRequests && !this.#draining && performance.now() < this.#pollUntil) setImmediate(this.#poll);
    else this.#polling = false;
  };

  readonly #lonePollMs: number;

  constructor(host: ReadyLoopHost<C>, opts: { lonePollMs?: number } = {}) {
    this.#host = host;
    this.#lonePollMs = opts.lonePollMs ?? LONE_POLL_MS;
  }

  /** The event loop is kept polling for a lone writer's next request. */
  get polling(): boolean {
    return this.#polling;
  }

  /** A Ready is being handled or still owes its apply (stop() waits for its fdatasync before closing the WAL). */
  get busy(): boolean {
    return this.#draining || this.#pipelined > 0;
  }

  /**
   * Raft may have something new: handle it now, or right after the Ready in hand (S5).
   * While a pipelined Ready's fdatasync runs, the new Ready waits for it to return
   * (#syncReturned): whatever arrives meanwhile is then one Ready, one write, and the next
   * fdatasync starts right after it. Written earlier, it would wait for that same
   * fdatasync anyway; written later (after the returned Ready's apply), it would wait for
   * one more. While a pipelined Ready waits for its apply and no fdatasync runs, the new
   * Ready waits for the loop's next check phase, so every request read in this poll
   * shares its write.
   */
  kick(): void {
    if (this.#draining) {
      this.#drainAgain = true;
      return;
    }
    if (this.#pipelined > 0) {
      if (this.#holdForSync()) return;
      if (!this.#kickLater) {
        this.#kickLater = true;
        setImmediate(this.#deferredKick);
      }
      return;
    }
    this.#drainNow();
  }

  /** drain() from a callback (right after the Ready in hand, if one is being handled); a failure stops the member. */
  #drainNow(): void {
    void this.drain().catch((err: unknown) => this.#host.fatal(err));
  }

  #kickLater = false;
  readonly #deferredKick = (): void => {
    this.#kickLater = false;
    this.#drainNow();
  };

  /** The WAL's fdatasync returned (Wal.onSyncReturn): what waited for it is written now. */
  readonly #syncReturned = (): void => {
    if (this.#host.node.hasReady()) this.#drainNow();
  };

  /** A new Ready waits for the running fdatasync to return (see kick). */
  #holdForSync(): boolean {
    return this.#pipelined > 0 && this.#host.wal.syncing;
  }

  /** Handles Readys until Raft has none; resolves when done (or at once if already running). */
  async drain(): Promise<void> {
    if (this.#draining) {
      this.#drainAgain = true;
      return;
    }
    const host = this.#host;
    this.#draining = true;
    try {
      do {
        this.#drainAgain = false;
        while (!host.stopped() && host.node.hasReady() && !this.#holdForSync()) await this.#handle(host.node.ready());
        // S5: the WAL is free between Readys.
        if (host.snapshots.pending && !host.stopped()) {
          await this.#settle();
          await host.snapshots.record();
        }
      } while (this.#drainAgain && !host.stopped());
    } finally {
      this.#draining = false;
    }
  }

  async #handle(rd: Ready): Promise<void> {
    const host = this.#host;
    const tracer = host.tracer;
    const tracing = tracer.active;
    this.#loneSave = false;
    const willSave = rd.entries.length > 0 || rd.mustSync;
    const onLoop = willSave ? host.diskWait.onLoop(performance.now(), host.clientRequests(), host.proposals(), rd.entries.length) : false;
    const sameTerm = rd.hardState === undefined || (rd.hardState.term === this.#term && rd.hardState.vote === this.#vote);
    if (rd.hardState) {
      this.#term = rd.hardState.term;
      this.#vote = rd.hardState.vote;
    }
    const pipelined =
      !onLoop && sameTerm && host.wal.appendable && mayPipeline(rd, host.isLeader()) && host.alone();
    // S5: a Ready that is not pipelined starts once the pipelined ones before it are applied.
    if (!pipelined && this.#pipelined > 0) await this.#settle();
    if (tracing) tracer.phase(TracePhase.ready);
    if (rd.softState) host.leaderSeen(rd.softState.lead);
    if (rd.messages.length > 0) rd.messages = host.snapshots.withoutStale(rd.messages);
    if (rd.hardState) host.hardStateSeen(rd.hardState);
    if (tracing) {
      if (rd.entries.length > 0) tracer.entries(rd.entries[rd.entries.length - 1]!.index);
      if (rd.committedEntries.length > 0) tracer.phase(TracePhase.commitReady);
    }
    if (pipelined) {
      this.#handlePipelined(rd, willSave, tracing);
      return;
    }
    // S1
    if (rd.snapshot && rd.snapshot.metadata.index > 0) await host.snapshots.install(rd.snapshot);
    const commands = rd.committedEntries.map((e) => host.decode(e));
    // S2 is planSends' contract (every plan keeps mayPrecedeSave); the rest of the plan is tuning.
    const sends = planSends({ isLeader: host.isLeader(), memberId: host.memberId, messages: rd.messages, willSave, proposers: commands.map((c) => c?.m) });
    if (sends.beforeSave !== undefined) {
      host.send(sends.beforeSave.messages, sends.beforeSave.options);
      if (tracing) tracer.phase(TracePhase.sentBeforeSave);
    }
    if (willSave) await this.#save(rd, onLoop);
    else if (rd.hardState) {
      // Only the commit index moved: written without an fdatasync, as etcd does, so the WAL
      // knows what this member applied (--force-new-cluster keeps exactly that).
      host.wal.saveCommitUnsynced(rd.hardState);
    }
    // S4: on disk now.
    if (rd.hardState) host.storage.setHardState(rd.hardState);
    if (rd.entries.length > 0) host.storage.append(rd.entries);
    const gated = this.#afterSave(rd, commands, sends.afterSave, tracing);
    if (gated !== undefined) await gated;
    // S4: last.
    host.node.advance(rd);
    host.snapshots.maybeStart();
    // A Ready without messages on a leader: a member without peers.
    if (this.#loneSave && rd.messages.length === 0 && rd.committedEntries.length > 0) this.#pollForNext();
  }

  /** A pipelined Ready: written now, the rest of it queued behind its fdatasync (S5). */
  #handlePipelined(rd: Ready, willSave: boolean, tracing: boolean): void {
    const host = this.#host;
    const commands = rd.committedEntries.map((e) => host.decode(e));
    const sends = planSends({ isLeader: true, memberId: host.memberId, messages: rd.messages, willSave, proposers: commands.map((c) => c?.m) });
    if (sends.beforeSave !== undefined) host.send(sends.beforeSave.messages, sends.beforeSave.options);
    let durable: Promise<number | undefined> | undefined;
    if (tracing && rd.entries.length > 0) host.tracer.phase(TracePhase.walWrite);
    if (willSave) {
      // Set on each use: host.wal is read at each use (a restore replaces it).
      host.wal.onSyncReturn = this.#syncReturned;
      durable = host.wal.append(rd.hardState ?? null, rd.entries);
    } else if (rd.hardState) host.wal.saveCommitUnsynced(rd.hardState);
    const last = rd.entries.at(-1)?.index;
    // S4's exception: raft may hand out the next Ready (the next batch's write) at once.
    if (rd.hardState) host.storage.setHardState(rd.hardState);
    if (rd.entries.length > 0) host.storage.append(rd.entries);
    host.node.advance(rd);
    this.#pipelined++;
    const afterSave = sends.afterSave;
    this.#tail = this.#tail.then(async () => {
      if (durable !== undefined) {
        const ms = await durable;
        if (tracing && last !== undefined) host.tracer.phaseThrough(TracePhase.fsynced, last);
        if (ms !== undefined) host.metrics.walSynced(ms);
      }
      // In Ready order.
      const gated = this.#afterSave(rd, commands, afterSave, false);
      if (gated !== undefined) await gated;
      host.snapshots.maybeStart();
      this.#pipelined--;
    });
    // A failed fdatasync fails the WAL: the member stops, and no later Ready of the chain runs.
    this.#tail.catch((err: unknown) => host.fatal(err));
  }

  /**
   * A saved Ready's messages that waited for the save (S2), then its apply (S3, S6).
   * Synchronous unless an apply gate is up: the classic Ready advances Raft in the same
   * turn as its apply, before the waiters it resolved run (their next proposals go to
   * the next Ready).
   */
  #afterSave(rd: Ready, commands: Array<C | undefined>, afterSave: SendStep | undefined, tracing: boolean): Promise<void> | undefined {
    const host = this.#host;
    if (afterSave !== undefined) {
      host.send(afterSave.messages, afterSave.options);
      if (tracing) host.tracer.sentAfterSave();
    }
    for (const rs of rd.readStates) host.reads.onReadState(rs.index, rs.requestCtx);
    const gate = rd.committedEntries.length > 0 ? host.applyGate() : undefined;
    if (gate !== undefined) return gate.then(() => this.#apply(rd, commands));
    this.#apply(rd, commands);
    return undefined;
  }

  #apply(rd: Ready, commands: Array<C | undefined>): void {
    const host = this.#host;
    // Waiters resolve in here.
    for (let i = 0; i < rd.committedEntries.length; i++) host.apply(rd.committedEntries[i]!, commands[i]);
    host.appliedBatch();
    // S6
    host.reads.release();
  }

  /** Waits until every pipelined Ready was applied (a failed one throws here too). */
  async #settle(): Promise<void> {
    while (this.#pipelined > 0) await this.#tail;
  }

  #pollForNext(): void {
    this.#pollUntil = performance.now() + this.#lonePollMs;
    this.#pollRequests = this.#host.clientRequests();
    if (this.#polling) return;
    this.#polling = true;
    setImmediate(this.#poll);
  }

  /** The Ready's entries and hard state, with one fdatasync, where the disk-wait policy says. */
  async #save(rd: Ready, onLoopFirstLook: boolean): Promise<void> {
    const host = this.#host;
    const policy = host.diskWait;
    let onLoop = onLoopFirstLook;
    this.#loneSave = onLoop && policy.lone && host.isLeader();
    if (onLoop && host.isLeader() && !policy.lone) {
      // Requests already read by this turn of the loop propose first and share this save.
      // Only a leader's save can take them: a follower's entries all come from the leader's
      // appends, already stepped into this Ready, so a follower syncs in the turn that read
      // the append, and its acknowledgement leaves in it (traced under load: 130-1,400 us
      // between a follower's Ready and its WAL write went to that turn). A lone writer's
      // saves skip the turn (disk-wait.ts).
      await new Promise<void>((resolve) => setImmediate(resolve));
      onLoop = policy.stillQuiet(performance.now(), host.clientRequests());
    }
    const tracing = host.tracer.active;
    if (tracing) host.tracer.phase(TracePhase.walWrite);
    // Read before every on-loop save, read again only after one slow enough to matter.
    const cpuWaitBefore = onLoop ? host.runQueueWaitMs() : undefined;
    const syncMs = await host.wal.save(rd.hardState ?? null, rd.entries, { onLoop });
    if (tracing) {
      // Only this Ready's proposals: those made while its fdatasync ran wait for the next.
      const last = rd.entries.at(-1);
      if (last !== undefined) host.tracer.phaseThrough(TracePhase.fsynced, last.index);
      else host.tracer.phase(TracePhase.fsynced);
    }
    host.metrics.walSynced(syncMs);
    if (onLoop && policy.mayBeSlow(syncMs)) {
      const cpuWaitAfter = cpuWaitBefore === undefined ? undefined : host.runQueueWaitMs();
      policy.took(performance.now(), syncMs, cpuWaitAfter === undefined || cpuWaitBefore === undefined ? 0 : cpuWaitAfter - cpuWaitBefore);
    }
  }
}
