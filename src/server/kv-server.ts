// The KV server: owns the Raft node, the WAL, the snapshots and the state machine, and
// runs the loop DESIGN.md §1 draws:
//
//   propose() -> raft -> Ready: WAL append + ONE fdatasync for the whole batch -> send
//   messages -> apply committed entries in order -> wake the proposers -> advance()
//
// Invariants:
// - A write is acknowledged (its waiter resolved) only after its entry was fsynced and
//   applied: the WAL save of a Ready completes before that Ready's entries are applied.
// - Only one Ready is in flight. While its fsync runs, new proposals accumulate in Raft's
//   unstable log and go out together in the next Ready (group commit).
// - Apply is deterministic (apply.ts); everything that varies (time, ids) is in the entry.
// - A single member runs exactly this path: it is a cluster of one, with no shortcut.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { RawNode, MemoryStorage, ProposalDroppedError, EntryType, decodeConfChange, type Entry, type Ready, type Snapshot } from "../raft/index.ts";
import { Wal, Snapshotter } from "../wal/index.ts";
import { V2Store, type V2Event } from "../store/v2/store.ts";
import { applyCommand, type ApplyResult } from "./apply.ts";
import { decodeCommand, encodeCommand, type Command, type CommandBody } from "./request.ts";
import { Membership, type Member } from "./membership.ts";
import { WaitRegistry, requestIdGenerator } from "./wait.ts";
import { ServerUnavailableError } from "./http/respond.ts";
import type { Logger } from "./logger.ts";
import type { ServerConfig } from "./config.ts";
import { ServerStats } from "./stats.ts";

/** How often the leader stamps its clock into the log while TTL keys exist (etcd: 500 ms). */
const SYNC_INTERVAL_MS = 500;
/** Entries kept in memory after a snapshot so slow followers catch up without one (etcd: 5000). */
const SNAPSHOT_CATCHUP_ENTRIES = 5000;

/** Reads whose ReadIndex came back, waiting for apply to reach it. */
interface PendingReadIndex {
  index: number;
  batch: Array<{ resolve: () => void }>;
}

/** What the WAL metadata records: who this member is, in which cluster. */
interface WalMetadata {
  memberId: number;
  clusterId: number;
  members: Member[];
}

/** What a snapshot holds: the whole replicated state machine. */
interface SnapshotImage {
  store: string;
  membership: ReturnType<Membership["toJSON"]>;
}

export interface KvServerOptions {
  config: ServerConfig;
  logger: Logger;
}

export class KvServer {
  readonly config: ServerConfig;
  readonly stats: ServerStats;
  #log: Logger;
  #node!: RawNode;
  #storage = new MemoryStorage();
  #wal!: Wal;
  #snapshotter!: Snapshotter;
  store = new V2Store();
  membership!: Membership;
  #memberId = 0;
  #waits = new WaitRegistry<ApplyResult>();
  #nextId!: () => number;

  #appliedIndex = 0;
  #snapshotIndex = 0;
  #confState = { voters: [] as number[], learners: [] as number[] };
  #lead = 0;
  #term = 0;
  #commitIndex = 0;
  #stopped = false;

  #draining = false;
  #drainAgain = false;
  #tickTimer: NodeJS.Timeout | undefined;
  #syncTimer: NodeJS.Timeout | undefined;
  /** Proposals waiting for a leader (single member: only during start-up). */
  #leaderWaiters: Array<() => void> = [];

  // ReadIndex batching: every read that arrives while a request is in flight joins the next one.
  #readPending: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  #readInFlight: { ctx: string; batch: Array<{ resolve: () => void; reject: (e: unknown) => void }>; timer: NodeJS.Timeout } | undefined;
  #readCounter = 0;
  #readsAwaitingApply: PendingReadIndex[] = [];

  constructor(opts: KvServerOptions) {
    this.config = opts.config;
    this.#log = opts.logger;
    this.stats = new ServerStats();
  }

  get memberId(): number {
    return this.#memberId;
  }
  get clusterId(): number {
    return this.membership.clusterId;
  }
  get leaderId(): number {
    return this.#lead;
  }
  get term(): number {
    return this.#term;
  }
  get appliedIndex(): number {
    return this.#appliedIndex;
  }
  get commitIndex(): number {
    return this.#commitIndex;
  }
  get isLeader(): boolean {
    return this.#lead !== 0 && this.#lead === this.#memberId;
  }

  /** Request timeout as etcd computes it: 5 s plus two election timeouts. */
  get requestTimeoutMs(): number {
    return 5000 + 2 * this.config.electionTimeout;
  }

  /** Opens or creates the data dir, replays snapshot + WAL, and starts ticking. */
  async start(): Promise<void> {
    const memberDir = join(this.config.dataDir, "member");
    const walDir = join(memberDir, "wal");
    const snapDir = join(memberDir, "snap");
    await mkdir(snapDir, { recursive: true, mode: 0o700 });
    this.#snapshotter = new Snapshotter(snapDir, { logger: this.#log });
    const electionTick = Math.max(2, Math.round(this.config.electionTimeout / this.config.heartbeatInterval));
    const raftConfig = {
      storage: this.#storage,
      electionTick,
      heartbeatTick: 1,
      maxSizePerMsg: 1024 * 1024,
      maxInflightMsgs: 256,
      checkQuorum: true,
      preVote: true,
      random: Math.random,
    };

    if (Wal.exists(walDir)) {
      const snap = await this.#snapshotter.loadNewest();
      let ref = { index: 0, term: 0 };
      if (snap) {
        const image = JSON.parse(Buffer.from(snap.data).toString("utf8")) as SnapshotImage;
        this.store = V2Store.recover(image.store);
        this.membership = Membership.fromJSON(image.membership);
        const confState = JSON.parse(Buffer.from(snap.meta).toString("utf8")) as { voters: number[]; learners: number[] };
        this.#confState = confState;
        this.#storage.applySnapshot({ data: snap.data, metadata: { index: snap.index, term: snap.term, confState } });
        ref = { index: snap.index, term: snap.term };
        this.#appliedIndex = snap.index;
        this.#snapshotIndex = snap.index;
      }
      const opened = await Wal.open(walDir, { snapshot: ref, logger: this.#log });
      if (opened.repaired) {
        this.#log.warn("repaired a torn WAL tail", { file: opened.repaired.file, offset: opened.repaired.offset, droppedBytes: opened.repaired.droppedBytes });
      }
      this.#wal = opened.wal;
      const meta = JSON.parse(Buffer.from(opened.metadata).toString("utf8")) as WalMetadata;
      this.#memberId = meta.memberId;
      this.membership ??= new Membership(meta.clusterId, meta.members);
      this.#storage.setHardState(opened.hardState);
      // The WAL stores the entry type as a plain number; Raft's type is the 0|1 union.
      this.#storage.append(opened.entries.map((e) => ({ ...e, type: e.type === 1 ? EntryType.ConfChange : EntryType.Normal })));
      this.#node = new RawNode({ ...raftConfig, id: this.#memberId, applied: this.#appliedIndex });
      this.#log.info("restarted member", {
        memberId: this.#memberId.toString(16),
        clusterId: this.membership.clusterId.toString(16),
        snapshotIndex: ref.index,
        walEntries: opened.entries.length,
        commit: opened.hardState.commit,
      });
    } else {
      if (this.config.initialClusterState === "existing") {
        // Joining an existing cluster needs peers (issue: several members).
        throw new Error("--initial-cluster-state=existing needs a running cluster to join; not supported on an empty data dir of a single member");
      }
      this.membership = Membership.bootstrap(this.config.initialCluster, this.config.initialClusterToken);
      const me = this.membership.list().find((m) => m.name === this.config.name);
      if (!me) throw new Error(`couldn't find local name "${this.config.name}" in the initial cluster configuration`);
      this.#memberId = me.id;
      const meta: WalMetadata = { memberId: me.id, clusterId: this.membership.clusterId, members: this.membership.list() };
      this.#wal = await Wal.create(walDir, Buffer.from(JSON.stringify(meta)), { logger: this.#log });
      this.#node = new RawNode({ ...raftConfig, id: this.#memberId });
      this.#node.bootstrap(this.membership.ids());
      this.#log.info("started new member", { memberId: me.id.toString(16), clusterId: this.membership.clusterId.toString(16) });
    }

    this.#nextId = requestIdGenerator(Date.now());
    this.stats.start(this.config.name, this.#memberId);
    await this.#drain();
    // A cluster of one needs no election timeout: campaign at once (etcd fast-forwards its ticks).
    if (this.membership.ids().length === 1 && this.membership.ids()[0] === this.#memberId) {
      this.#node.campaign();
      await this.#drain();
    }
    this.#tickTimer = setInterval(() => {
      this.#node.tick();
      this.#kick();
    }, this.config.heartbeatInterval);
    this.#syncTimer = setInterval(() => this.#maybeSync(), SYNC_INTERVAL_MS);
  }

  /** Publishes this member's name and client URLs through the log (etcd's publish). */
  async publish(): Promise<void> {
    const a = { id: this.#memberId, name: this.config.name, clientUrls: this.config.advertiseClientUrls };
    await this.propose({ t: "attr", time: Date.now(), a });
  }

  /** Proposes a command and resolves with its apply result. */
  async propose(body: CommandBody): Promise<ApplyResult> {
    if (this.#stopped) throw new ServerUnavailableError("etcdserver: server stopped");
    const id = this.#nextId();
    const cmd = { ...body, m: this.#memberId, id } as Command;
    const data = encodeCommand(cmd);
    const result = this.#waits.register(id);
    const deadline = Date.now() + this.requestTimeoutMs;
    for (;;) {
      try {
        this.#node.propose(data);
        break;
      } catch (err) {
        if (!(err instanceof ProposalDroppedError)) throw err;
        if (Date.now() >= deadline) {
          this.#waits.fail(id, new ServerUnavailableError("etcdserver: request timed out"));
          break;
        }
        await this.#waitForLeader(deadline - Date.now());
      }
    }
    this.#kick();
    const timer = setTimeout(() => this.#waits.fail(id, new ServerUnavailableError("etcdserver: request timed out")), this.requestTimeoutMs);
    try {
      return await result;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Proposes a v2 request; resolves with its event or throws its V2Error. */
  async doV2(body: Extract<CommandBody, { t: "v2" }>): Promise<V2Event> {
    const res = await this.propose(body);
    if (!res.ok) throw res.error;
    if (!res.event) throw new Error("v2 command applied without an event");
    return res.event;
  }

  /**
   * Linearizable read barrier (Raft's ReadIndex): resolves once this member has applied
   * everything committed before the call. Concurrent callers share one ReadIndex round.
   */
  linearizableRead(): Promise<void> {
    if (this.#stopped) return Promise.reject(new ServerUnavailableError("etcdserver: server stopped"));
    return new Promise<void>((resolve, reject) => {
      this.#readPending.push({ resolve, reject });
      this.#startReadRound();
    });
  }

  #startReadRound(): void {
    if (this.#readInFlight || this.#readPending.length === 0) return;
    const batch = this.#readPending;
    this.#readPending = [];
    const ctx = `r${++this.#readCounter}`;
    const timer = setTimeout(() => {
      // No answer (no leader, or the request was dropped): fail this round, let the next start.
      if (this.#readInFlight?.ctx === ctx) {
        this.#readInFlight = undefined;
        for (const r of batch) r.reject(new ServerUnavailableError("etcdserver: request timed out"));
        this.#startReadRound();
      }
    }, this.requestTimeoutMs);
    this.#readInFlight = { ctx, batch, timer };
    this.#node.readIndex(Buffer.from(ctx));
    this.#kick();
  }

  #waitForLeader(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(done, Math.max(1, ms));
      function done(): void {
        clearTimeout(t);
        resolve();
      }
      this.#leaderWaiters.push(done);
    });
  }

  #maybeSync(): void {
    if (this.isLeader && this.store.hasTtlKeys()) {
      this.propose({ t: "sync", time: Date.now() }).catch((err: unknown) => {
        this.#log.debug("sync proposal failed", { error: String(err) });
      });
    }
  }

  /** Schedules a drain of Raft's Ready queue (coalesced). */
  #kick(): void {
    if (this.#draining) {
      this.#drainAgain = true;
      return;
    }
    void this.#drain().catch((err: unknown) => this.#fatal(err));
  }

  async #drain(): Promise<void> {
    if (this.#draining) {
      this.#drainAgain = true;
      return;
    }
    this.#draining = true;
    try {
      do {
        this.#drainAgain = false;
        while (!this.#stopped && this.#node.hasReady()) {
          await this.#processReady(this.#node.ready());
        }
      } while (this.#drainAgain && !this.#stopped);
    } finally {
      this.#draining = false;
    }
  }

  async #processReady(rd: Ready): Promise<void> {
    if (rd.softState) this.#onSoftState(rd.softState.lead);
    if (rd.hardState) {
      this.#term = rd.hardState.term;
      this.#commitIndex = rd.hardState.commit;
    }
    if (rd.snapshot && rd.snapshot.metadata.index > 0) await this.#installSnapshot(rd.snapshot);
    // Durability first: entries and vote/term are on disk before anything depends on them.
    if (rd.entries.length > 0 || rd.mustSync) {
      await this.#wal.save(rd.hardState ?? null, rd.entries);
    }
    if (rd.hardState) this.#storage.setHardState(rd.hardState);
    if (rd.entries.length > 0) this.#storage.append(rd.entries);
    if (rd.messages.length > 0) this.stats.sent(rd.messages.length);
    // Single member: no peers to send to yet; transport arrives with several members.
    for (const rs of rd.readStates) this.#onReadState(rs.index, Buffer.from(rs.requestCtx).toString());
    for (const e of rd.committedEntries) this.#applyEntry(e);
    this.#releaseReads();
    this.#node.advance(rd);
    if (this.#appliedIndex - this.#snapshotIndex >= this.config.snapshotCount) await this.#snapshot();
  }

  #onSoftState(lead: number): void {
    if (lead !== this.#lead) {
      this.#lead = lead;
      this.stats.leaderChanged(lead);
      if (lead !== 0) {
        const ws = this.#leaderWaiters;
        this.#leaderWaiters = [];
        for (const w of ws) w();
      }
    }
  }

  #onReadState(index: number, ctx: string): void {
    const f = this.#readInFlight;
    if (!f || f.ctx !== ctx) return;
    clearTimeout(f.timer);
    this.#readInFlight = undefined;
    this.#readsAwaitingApply.push({ index, batch: f.batch });
    this.#startReadRound();
  }

  #releaseReads(): void {
    if (this.#readsAwaitingApply.length === 0) return;
    const keep: PendingReadIndex[] = [];
    for (const r of this.#readsAwaitingApply) {
      if (r.index <= this.#appliedIndex) for (const x of r.batch) x.resolve();
      else keep.push(r);
    }
    this.#readsAwaitingApply = keep;
  }

  #applyEntry(e: Entry): void {
    if (e.index <= this.#appliedIndex) return;
    if (e.type === EntryType.ConfChange) {
      const cc = decodeConfChange(e.data);
      this.#confState = this.#node.applyConfChange(cc);
      // etcd records membership in the v2 store, so a conf change consumes a v2 index.
      this.store.consumeIndex();
    } else if (e.data.length > 0) {
      const cmd = decodeCommand(e.data);
      const result = applyCommand({ store: this.store, membership: this.membership }, cmd);
      if (cmd.m === this.#memberId) this.#waits.trigger(cmd.id, result);
    }
    this.#appliedIndex = e.index;
  }

  async #installSnapshot(snap: Snapshot): Promise<void> {
    // A snapshot from the leader replaces the whole state machine (followers only).
    await this.#snapshotter.save({ index: snap.metadata.index, term: snap.metadata.term, data: snap.data, meta: Buffer.from(JSON.stringify(snap.metadata.confState)) });
    await this.#wal.saveSnapshotRef({ index: snap.metadata.index, term: snap.metadata.term });
    this.#storage.applySnapshot(snap);
    const image = JSON.parse(Buffer.from(snap.data).toString("utf8")) as SnapshotImage;
    // In place: open watches stay registered across a snapshot install.
    this.store.recovery(image.store);
    this.membership = Membership.fromJSON(image.membership);
    this.#confState = snap.metadata.confState;
    this.#appliedIndex = snap.metadata.index;
    this.#snapshotIndex = snap.metadata.index;
  }

  async #snapshot(): Promise<void> {
    const index = this.#appliedIndex;
    const image: SnapshotImage = { store: this.store.save(), membership: this.membership.toJSON() };
    const data = Buffer.from(JSON.stringify(image));
    const snap = this.#storage.createSnapshot(index, this.#confState, data);
    await this.#snapshotter.save({ index, term: snap.metadata.term, data, meta: Buffer.from(JSON.stringify(this.#confState)) });
    await this.#wal.saveSnapshotRef({ index, term: snap.metadata.term });
    this.#snapshotIndex = index;
    const compactTo = index - SNAPSHOT_CATCHUP_ENTRIES;
    if (compactTo > this.#storage.firstIndex()) this.#storage.compact(compactTo);
    await this.#wal.releaseTo(index);
    await this.#snapshotter.purge(5);
    this.#log.info("saved snapshot", { index, term: snap.metadata.term, bytes: data.length });
  }

  #fatal(err: unknown): void {
    // A failed WAL write or a broken invariant: carrying on could acknowledge lost writes.
    this.#log.error("fatal error in the raft loop; stopping", { error: err instanceof Error ? err.stack : String(err) });
    process.exit(1);
  }

  /** Stops ticking, fails pending requests, closes the WAL. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#tickTimer);
    clearInterval(this.#syncTimer);
    this.#waits.failAll(new ServerUnavailableError("etcdserver: server stopped"));
    for (const r of this.#readPending) r.reject(new ServerUnavailableError("etcdserver: server stopped"));
    this.#readPending = [];
    // Let an in-flight Ready finish its fsync before closing the file.
    while (this.#draining) await new Promise((r) => setTimeout(r, 5));
    await this.#wal.close();
  }
}
