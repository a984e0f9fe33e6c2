// The KV server: owns the Raft node, the WAL, the snapshots, the peer transport and the
// state machine, and wires the parts that run DESIGN.md §1's loop:
//
//   propose() (proposals.ts) -> raft -> Ready loop (ready-loop.ts): WAL append + ONE
//   fdatasync for the whole batch, messages, apply committed entries in order (here,
//   apply.ts) -> wake the proposers -> advance()
//
// Invariants:
// - A write is acknowledged (its waiter resolved) only after its entry was fsynced and
//   applied; the orderings that make it so, and the tuning kept apart from them, are
//   listed in ready-loop.ts.
// - Apply is deterministic (apply.ts); everything that varies (time, ids) is in the entry.
// - A single member runs exactly this path: it is a cluster of one, with no shortcut.
//
// The jobs around the loop have modules of their own, each given a narrow view of the
// member: the Ready loop (ready-loop.ts; what leaves before a save: ready-sends.ts; where a
// save waits for the disk: disk-wait.ts), proposing and waiting (proposals.ts), membership
// administration and conf-change apply (member-admin.ts), snapshots made, recorded and
// installed (snapshot-flow.ts), leadership hand-over (leadership.ts), the first election
// (first-election.ts), lease keepalives and expiry (lease-keeper.ts), and the state
// machine's storage (state-storage.ts).
import { RawNode, EntryType, decodeConfChange, type ConfState, type Entry, type Message, type MemoryStorage, type Status } from "../raft/index.ts";
import { PeerTransport, type PeerTlsClient } from "../transport/index.ts";
import type { Wal, Snapshotter } from "../wal/index.ts";
import type { V2Store, V2Event } from "../store/v2/store.ts";
import { PasswordVerifier, setBcryptWarn, type V2AuthState, type V3AuthState } from "../auth/index.ts";
import { AlarmAction, AlarmType, WatchHub, alarmName, rangeRequest, type V3KeySpace, type WatchHistory } from "../store/v3/index.ts";
import { applyCommand, type ApplyResult } from "./apply.ts";
import { decodeCommand, peekKeySpaceCommand, type Command, type CommandBody, type KeySpaceCommandHead } from "./request.ts";
import type { Membership } from "./membership.ts";
import { RequestTimeoutError, ServerUnavailableError } from "./errors.ts";
import { V3Errors } from "../api/v3-errors.ts";
import { noSpaceAlarm } from "./quota.ts";
import { timeoutKind } from "./timeout-cause.ts";
import { READ_INDEX_RETRY_MS, ReadIndexBatcher, type ReadOptions } from "./read-index.ts";
import { openMember, v3DbOptions, PEER_MEMBERS_PATH } from "./bootstrap.ts";
import { StateStorage } from "./state-storage.ts";
import { raftLogger, type Logger } from "./logger.ts";
import type { ServerConfig } from "./config.ts";
import { ServerStats } from "./stats.ts";
import { ServerMetrics } from "./metrics/server-metrics.ts";
import { DiskWaitPolicy } from "./disk-wait.ts";
import { ReadyLoop } from "./ready-loop.ts";
import { loopRunQueueWaitMs } from "./run-queue-wait.ts";
import { firstElectionMode, firstElectionStep } from "./first-election.ts";
import { createCompactor } from "./compactor.ts";
import { LeaseKeeper } from "./lease-keeper.ts";
import { Proposals } from "./proposals.ts";
import type { Deadline } from "./deadline.ts";
import { MemberAdmin } from "./member-admin.ts";
import { SnapshotFlow } from "./snapshot-flow.ts";
import { Leadership } from "./leadership.ts";
import { WriteTracer } from "./write-trace.ts";
import { ETCD_SERVER_VERSION } from "./version.ts";
import { ClusterVersionMonitor } from "./cluster-version.ts";

/** How often the leader stamps its clock into the log while TTL keys exist (etcd: 500 ms). */
const SYNC_INTERVAL_MS = 500;

/** A command as a slow-apply warning names it: its kind, and the key or path it touches. */
export function describeCommand(cmd: Command): string {
  switch (cmd.t) {
    case "v2":
      return `v2 ${cmd.r.method} ${cmd.r.path}`;
    case "v3": {
      const op = cmd.op;
      const key = "r" in op && op.r !== null && typeof op.r === "object" && "key" in op.r && Buffer.isBuffer(op.r.key) ? ` ${JSON.stringify(op.r.key.toString("utf8").slice(0, 64))}` : "";
      return `v3 ${op.k}${key}`;
    }
    default:
      return cmd.t;
  }
}

/** The command a normal entry carries; undefined for conf changes and empty entries (a new leader's). */
function commandOf(e: Entry): Command | undefined {
  return e.type === EntryType.Normal && e.data.length > 0 ? decodeCommand(e.data) : undefined;
}

export interface KvServerOptions {
  config: ServerConfig;
  logger: Logger;
  /** Called when this member applied its own removal from the cluster. */
  onRemoved?: () => void;
  /** Peer TLS: https peer URLs, certificates re-read per connection. */
  peerTls?: PeerTlsClient;
  /** WAL segment size (not a flag; tests use small segments to see --max-wals at work). */
  walSegmentBytes?: number;
  /** Trace every Nth client write (KV_TRACE_WRITES; 0 or absent: off). */
  traceWritesEvery?: number;
}

export class KvServer {
  readonly config: ServerConfig;
  readonly stats = new ServerStats();
  /** Prometheus counters fed from the run loop (metrics/). */
  readonly metrics = new ServerMetrics();
  #log: Logger;
  #onRemoved: () => void;
  /** Unsets this member's bcrypt warning hook when it stops (see setBcryptWarn). */
  readonly #releaseBcryptWarn: () => void;
  readonly #peerTls: PeerTlsClient | undefined;
  readonly #walSegmentBytes: number | undefined;
  #node!: RawNode;
  #storage!: MemoryStorage;
  #wal!: Wal;
  #snapshotter!: Snapshotter;
  #transport!: PeerTransport;
  /** The state machine's parts, their snapshots, backups and maintenance (state-storage.ts). */
  #state!: StateStorage;
  /** v3 watchers on this member, fed by apply (survives snapshot installs). */
  readonly watchHub: WatchHub;
  readonly #v3History: WatchHistory;
  /** Lease keepalives and expiry: the leader's in-memory deadlines (lease-keeper.ts). */
  readonly leases: LeaseKeeper;
  /** KV_TRACE_WRITES=N: every Nth client write followed end to end (write-trace.ts). */
  readonly tracer: WriteTracer;
  /** v2 Basic credentials already verified (edge state, not replicated: one per process; http/auth-access.ts). */
  readonly passwordVerifier = new PasswordVerifier({ capacity: 1024 });
  #memberId = 0;
  /** Proposing and waiting for apply (proposals.ts). */
  #proposals!: Proposals;
  /** When this member last became leader (performance.now()): etcd's leadElectedTime, for timeout-cause.ts. */
  #leadElectedAt: number | undefined;
  /** etcd's member add / promote / remove / update, and conf-change apply (member-admin.ts). */
  #members!: MemberAdmin;
  /** Snapshots made, recorded and installed (snapshot-flow.ts). */
  #snapshots!: SnapshotFlow;
  /** Leadership hand-over on stop and MoveLeader (leadership.ts). */
  #leadership!: Leadership;
  /** The cluster version the leader records (cluster-version.ts). */
  #versions!: ClusterVersionMonitor;
  #reads!: ReadIndexBatcher;
  /** Where WAL saves wait for their fdatasync, from these two counters (disk-wait.ts). */
  readonly #diskWait = new DiskWaitPolicy();
  #clientRequests = 0;

  /** Invariant: appliedIndex <= commitIndex; the last snapshot's index <= appliedIndex. */
  #appliedIndex = 0;
  #confState: ConfState = { voters: [], learners: [] };
  #lead = 0;
  #term = 0;
  #commitIndex = 0;
  #stopped = false;

  /** The Ready loop: what Raft asks for, persisted, sent and applied in a safe order (ready-loop.ts). */
  #loop!: ReadyLoop<Command | KeySpaceCommandHead>;
  #tickTimer: NodeJS.Timeout | undefined;
  /** Ticks of the election clock since start, the first election's advances included (first-election.ts). */
  #ticksRun = 0;
  #syncTimer: NodeJS.Timeout | undefined;
  #progressTimer: NodeJS.Timeout | undefined;
  #compactTimer: NodeJS.Timeout | undefined;

  constructor(opts: KvServerOptions) {
    // The hub reads history through the field, so a snapshot install (a new key space) is seen.
    const server = this;
    this.#v3History = {
      get revision() {
        return server.v3.revision;
      },
      get compactRevision() {
        return server.v3.compactRevision;
      },
      eventsInRange: (q) => server.v3.eventsInRange(q),
    };
    this.watchHub = new WatchHub(this.#v3History);
    this.config = opts.config;
    this.#log = opts.logger;
    // bcrypt's threads are the process's: its failover warning goes to the member's log.
    this.#releaseBcryptWarn = setBcryptWarn((msg, fields) => this.#log.warn(msg, fields));
    this.#onRemoved = opts.onRemoved ?? (() => undefined);
    this.#peerTls = opts.peerTls;
    this.#walSegmentBytes = opts.walSegmentBytes;
    this.leases = new LeaseKeeper(this, this.#log);
    this.tracer = new WriteTracer(opts.traceWritesEvery ?? 0, this.#log);
  }

  get memberId(): number {
    return this.#memberId;
  }
  /** The v2 store (kept across snapshot installs). */
  get store(): V2Store {
    return this.#state.store;
  }
  /** v2 access control (kept across snapshot installs). */
  get auth(): V2AuthState {
    return this.#state.auth;
  }
  /** The v3 key space: replaced when a snapshot is installed, so read it here each time. */
  get v3(): V3KeySpace {
    return this.#state.v3;
  }
  /** v3 users, roles and tokens (replaced when a snapshot is installed). */
  get v3auth(): V3AuthState {
    return this.#state.v3auth;
  }
  get membership(): Membership {
    return this.#state.membership;
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
  get transport(): PeerTransport {
    return this.#transport;
  }

  /** Request timeout as etcd computes it: 5 s plus two election timeouts. */
  get requestTimeoutMs(): number {
    return 5000 + 2 * this.config.electionTimeout;
  }

  /** Opens or creates the data dir, replays snapshot + WAL, connects to peers, starts ticking. */
  async start(): Promise<void> {
    const m = await openMember(this.config, this.#log, this.#peerTls, this.#walSegmentBytes === undefined ? {} : { walSegmentBytes: this.#walSegmentBytes });
    this.#wal = m.wal;
    this.#snapshotter = m.snapshotter;
    this.#storage = m.storage;
    // The compaction deletions report to this member's metrics, in a database received later too.
    m.v3db.compactionObserver = this.metrics.compactionObserver;
    m.snapshotter.observer = this.metrics.snapshotObserver;
    // A put with ignore_value counts the value it kept (etcd_debugging_mvcc_total_put_size_in_bytes).
    this.metrics.valueLength = (key) => this.v3.range(rangeRequest({ key, limit: 1 })).kvs[0]?.value.length ?? 0;
    this.#state = new StateStorage(m, { db: { ...v3DbOptions(this.config), compactionObserver: this.metrics.compactionObserver }, dataDir: this.config.dataDir, quotaBackendBytes: this.config.quotaBackendBytes, logger: this.#log });
    this.#memberId = m.memberId;
    this.#appliedIndex = m.appliedIndex;
    this.#confState = m.confState;
    this.#node = new RawNode({
      id: this.#memberId,
      storage: this.#storage,
      applied: this.#appliedIndex,
      electionTick: Math.max(2, Math.round(this.config.electionTimeout / this.config.heartbeatInterval)),
      heartbeatTick: 1,
      maxSizePerMsg: 1024 * 1024,
      maxInflightMsgs: 256,
      checkQuorum: true,
      preVote: this.config.preVote,
      // After a split vote the candidates retry first (election-timing.test.ts: elections
      // over 3 election timeouts 0.25 % -> 0.03 % of leader deaths under a loaded network).
      quickCandidateRetry: true,
      random: Math.random,
      logger: raftLogger(this.#log),
    });
    if (m.bootstrapPeers) this.#node.bootstrap(m.bootstrapPeers);
    this.#loop = this.#readyLoop();
    this.#reads = new ReadIndexBatcher(
      {
        requestReadIndex: (ctx) => {
          this.#node.readIndex(ctx);
          this.#kick();
        },
        appliedIndex: () => this.#appliedIndex,
        slowReadIndex: () => this.metrics.slowReadIndexes.inc(),
        readIndexFailed: () => this.metrics.readIndexesFailed.inc(),
      },
      this.requestTimeoutMs,
      READ_INDEX_RETRY_MS,
      this.#memberId,
    );
    this.#transport = new PeerTransport({
      memberId: this.#memberId,
      clusterId: this.membership.clusterId,
      logger: this.#log,
      localUrls: this.config.initialAdvertisePeerUrls,
      onMessages: (msgs, readAt) => this.#receive(msgs, readAt),
      onSnapshot: (msg, dbPath) => {
        if (dbPath !== undefined) this.#state.receivedDb(msg.snapshot?.metadata.index ?? 0, dbPath);
        this.#receive([msg]);
      },
      snapshotAttachment: () => this.#state.snapshotDbCopy(),
      snapshotDbPath: () => this.#state.receivePath(),
      onUnreachable: (id) => {
        this.#node.reportUnreachable(id);
        this.#kick();
      },
      onSnapshotStatus: (id, failed) => {
        this.#node.reportSnapshot(id, failed);
        this.#kick();
      },
      onRemoved: () => this.#removedFromCluster(),
      ...(this.#peerTls === undefined ? {} : { tls: this.#peerTls }),
      // Retry a failed peer well within an election timeout: a member that comes back after
      // a crash or a partition must hear heartbeats before it starts disrupting elections.
      limits: { backoffMaxMs: Math.max(100, Math.min(2000, Math.floor(this.config.electionTimeout / 4))) },
    });
    for (const peer of this.membership.list()) if (peer.id !== this.#memberId) this.#transport.addPeer(peer.id, peer.peerUrls);
    // A removed member's messages are answered 410 Gone, which stops it, also when its
    // removal came with the snapshot this member started from.
    for (const id of this.membership.removedIds()) if (id !== this.#memberId) this.#transport.removePeer(id);

    this.#wireParts(m.appliedIndex);
    this.stats.start(this.config.name, this.#memberId);
    await this.#loop.drain();
    // A cluster of one needs no election timeout: campaign at once (etcd fast-forwards its ticks).
    const ids = this.membership.ids();
    if (ids.length === 1 && ids[0] === this.#memberId) {
      this.#node.campaign();
      await this.#loop.drain();
    }
    this.#tickTimer = setInterval(() => {
      this.#ticksRun++;
      this.#node.tick();
      this.#kick();
    }, this.config.heartbeatInterval);
    this.#syncTimer = setInterval(() => this.#maybeSync(), SYNC_INTERVAL_MS);
    this.#versions.start();
    this.leases.start();
    // v3 watchers created with progress_notify hear the current revision every interval plus
    // up to a tenth of it (etcd's jitter: members started together do not tick in step).
    const every = this.config.watchProgressNotifyIntervalMs;
    if (every > 0) this.#progressTimer = setInterval(() => this.watchHub.progress(this.v3.revision), every + Math.floor(Math.random() * (every / 10)));
    this.#startCompactor();
    if (ids.length > 1) {
      const mode = firstElectionMode(this.config);
      if (mode === "off") this.#log.info("skipping initial election tick advance", { electionTicks: Math.round(this.config.electionTimeout / this.config.heartbeatInterval) });
      else void this.#firstElection(mode === "advance-and-campaign");
    }
  }

  /** The parts with one job each, given what they need of this member (narrow hosts). */
  #wireParts(snapshotIndex: number): void {
    const server = this;
    const log = this.#log;
    this.#proposals = new Proposals(
      {
        memberId: this.#memberId,
        requestTimeoutMs: this.requestTimeoutMs,
        metrics: this.metrics,
        stopped: () => this.#stopped,
        propose: (data) => this.#node.propose(data),
        proposeConfChange: (cc) => this.#node.proposeConfChange(cc),
        kick: () => this.#kick(),
        tracer: this.tracer,
        timedOut: (startedAt) => this.#timeoutError(startedAt),
      },
      Date.now(),
    );
    this.#members = new MemberAdmin({
      memberId: this.#memberId,
      strictReconfigCheck: this.config.strictReconfigCheck,
      log,
      membership: () => this.membership,
      store: () => this.store,
      transport: () => this.#transport,
      proposals: () => this.#proposals,
      applyToRaft: (cc) => this.#node.applyConfChange(cc),
      removed: () => this.#removedFromCluster(),
      isLeader: () => this.isLeader,
      leaderId: () => this.#lead,
      raftStatus: () => this.#node.status(),
      requestTimeoutMs: this.requestTimeoutMs,
      metrics: this.metrics,
    });
    this.#snapshots = new SnapshotFlow(
      {
        log,
        snapshotCount: this.config.snapshotCount,
        catchupEntries: this.config.snapshotCatchupEntries,
        maxWals: this.config.maxWals,
        maxSnapshots: this.config.maxSnapshots,
        state: () => this.#state,
        wal: () => this.#wal,
        snapshotter: () => this.#snapshotter,
        storage: () => this.#storage,
        appliedIndex: () => this.#appliedIndex,
        confState: () => this.#confState,
        reportSnapshotFailed: (to) => this.#node.reportSnapshot(to, true),
        installed: (index, confState) => {
          // Watchers catch up from the new key space (or end, if what they need was compacted).
          this.watchHub.restore(this.#v3History);
          for (const m of this.membership.list()) if (m.id !== this.#memberId) this.#transport.updatePeer(m.id, m.peerUrls);
          for (const id of this.membership.removedIds()) if (id !== this.#memberId) this.#transport.removePeer(id);
          this.#confState = confState;
          this.#appliedIndex = index;
        },
        kick: () => this.#kick(),
        fatal: (err) => this.#fatal(err),
      },
      snapshotIndex,
    );
    this.#versions = new ClusterVersionMonitor({
      memberId: this.#memberId,
      log,
      isLeader: () => this.isLeader,
      membership: () => this.membership,
      // Every kvctl member speaks etcd 3.4.23's API: one that answers on its peer port has that version.
      versionOf: async (m) => {
        for (const u of m.peerUrls) {
          try {
            if ((await this.#transport.probe(new URL(PEER_MEMBERS_PATH, u).href, 1000)).status === 200) return ETCD_SERVER_VERSION;
          } catch {
            // not answering there: the next URL
          }
        }
        return undefined;
      },
      record: (v) => this.propose({ t: "ver", time: Date.now(), v }),
    });
    this.#leadership = new Leadership({
      memberId: this.#memberId,
      electionTimeoutMs: this.config.electionTimeout,
      log,
      leaderId: () => server.#lead,
      status: () => this.#node.status(),
      confState: () => this.#confState,
      transferLeader: (to) => {
        this.#node.transferLeader(to);
        this.#kick();
      },
    });
  }

  /**
   * --auto-compaction-mode/--auto-compaction-retention (compactor.ts): the leader proposes
   * the compactions, as etcd's compactor runs only while its member leads.
   */
  #startCompactor(): void {
    const c = createCompactor(this.config.autoCompaction, Date.now());
    if (c === undefined) return;
    this.#compactTimer = setInterval(() => {
      if (!this.isLeader) return;
      const revision = c.step(Date.now(), this.v3.revision);
      if (revision === undefined) return;
      const op = { k: "compact" as const, r: { revision, physical: false } };
      void this.propose({ t: "v3", time: Date.now(), op }).then(
        (res) => {
          // etcd counts "already compacted" as done too.
          const ok = res.ok || res.error.message.includes("compacted");
          c.done(Date.now(), ok);
          if (res.ok) this.#log.info("auto-compacted the v3 key space", { revision, mode: this.config.autoCompaction.mode });
        },
        () => c.done(Date.now(), false),
      );
    }, c.stepMs);
    this.#compactTimer.unref();
  }

  /**
   * The first election while the peers come up (first-election.ts): etcd's fast-forward of
   * the election clock to two ticks short of a timeout (counting the ticks it ran) once a
   * peer answers, so a cluster started together elects a leader in a fraction of a second
   * instead of after a whole election timeout; and a campaign by
   * the member with the lowest id once a quorum is up, the others fast-forwarding only half
   * way while it answers (pre-vote makes the campaign harmless when it cannot win, so
   * `earlyCampaign` is false without it).
   */
  async #firstElection(earlyCampaign: boolean): Promise<void> {
    // Learners neither vote nor campaign: only voters are probed and counted towards a quorum.
    const voterList = this.membership.list().filter((m) => m.isLearner !== true);
    const voters = voterList.map((m) => m.id);
    const peers = voterList.filter((m) => m.id !== this.#memberId);
    const electionTicks = Math.round(this.config.electionTimeout / this.config.heartbeatInterval);
    const deadline = Date.now() + 5000;
    while (!this.#stopped && this.#lead === 0 && Date.now() < deadline) {
      const answers = await Promise.all(
        peers.map(async (m) => {
          try {
            const res = await this.#transport.probe(new URL(PEER_MEMBERS_PATH, m.peerUrls[0]).href, 250);
            return res.status === 200;
          } catch {
            return false;
          }
        }),
      );
      if (this.#stopped || this.#lead !== 0) return;
      const up = peers.filter((_, i) => answers[i] === true).map((m) => m.id);
      const state = { memberId: this.#memberId, voters, up, electionTicks, earlyCampaign };
      let step = firstElectionStep({ ...state, elapsed: this.#ticksRun });
      if (step.do === "campaign") {
        this.#log.info("lowest member id with a quorum up: campaigning", { peersUp: up.length });
        this.#node.campaign();
        this.#kick();
        return;
      }
      if (step.do === "advance") {
        for (let i = 0; i < step.ticks; i++) this.#node.tick();
        this.#ticksRun += step.ticks;
        this.#kick();
        step = firstElectionStep({ ...state, elapsed: this.#ticksRun });
      }
      if (step.do === "done") return;
      await new Promise((r) => setTimeout(r, step.do === "hold" ? Math.max(50, this.config.electionTimeout / 4) : 50));
    }
  }

  /** Publishes this member's name and client URLs through the log (etcd's publish). */
  async publish(): Promise<void> {
    const a = { id: this.#memberId, name: this.config.name, clientUrls: this.config.advertiseClientUrls };
    await this.propose({ t: "attr", time: Date.now(), a });
  }

  /**
   * The HTTP layer calls this for every client request it begins serving: whether clients
   * are waiting for the event loop decides where the next WAL save waits (disk-wait.ts).
   */
  noteClientRequest(): void {
    this.#clientRequests++;
  }

  /** Proposes a command and resolves with its apply result; `deadline`: the caller's (gRPC). */
  propose(body: CommandBody, deadline?: Deadline): Promise<ApplyResult> {
    return this.#proposals.propose(body, deadline);
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
  linearizableRead(opts?: ReadOptions): Promise<void> {
    if (this.#stopped) return Promise.reject(new ServerUnavailableError("etcdserver: server stopped"));
    return this.#reads.read(opts);
  }

  /**
   * A digest of the replicated state machine (v2 store, auth, membership) and the index it
   * was taken at: members that applied the same log prefix must report the same hash.
   */
  stateHash(): { appliedIndex: number; storeIndex: number; hash: string } {
    return { appliedIndex: this.#appliedIndex, storeIndex: this.store.index, hash: this.#state.hash() };
  }

  /** etcd's member administration: add, promote, remove, update (member-admin.ts). */
  get members(): MemberAdmin {
    return this.#members;
  }

  /** Record bytes written to the WAL since this process opened it (etcd_disk_wal_write_bytes_total). */
  get walWrittenBytes(): number {
    return this.#wal?.writtenBytes ?? 0;
  }

  /** The v3 database file's size and the part of it in use (etcd's dbSize, dbSizeInUse). */
  v3DbSizes(): { size: number; inUse: number } {
    return this.#state.v3DbSizes();
  }

  /** Raft's view of this member (etcd's raft.status in /debug/vars). */
  raftStatus(): Status {
    return this.#node.status();
  }

  /** Resolves once this member's database deleted the records of every compaction up to `revision` (etcd's physical compaction). */
  compactionFinished(revision: number): Promise<void> {
    return this.#state.compactionFinished(revision);
  }

  /** etcd's Defragment of this member's v3 database (applies wait meanwhile). */
  async defragment(): Promise<void> {
    // As etcd's backend: in flight throughout, the duration observed when it succeeded.
    const start = performance.now();
    this.metrics.defragInflight.set(1);
    try {
      await this.#state.defragment(() => this.#kick());
      this.metrics.defragDuration.observe((performance.now() - start) / 1000);
    } finally {
      this.metrics.defragInflight.set(0);
    }
  }

  /** A backup of the whole replicated state at the applied index (kvctl v3 snapshot save); release() removes its file. */
  makeBackup(): Promise<{ path: string; size: number; release(): void }> {
    const at = (): { index: number; term: number } => {
      const index = this.#appliedIndex;
      return { index, term: index === 0 ? 0 : this.#storage.term(index) };
    };
    return this.#state.backup(at, () => this.#kick());
  }

  /** etcd's backend quota: would a v3 write of `cost` bytes keep the database under --quota-backend-bytes? */
  quotaAvailable(cost: number): boolean {
    return this.#state.quotaAvailable(cost);
  }

  #receive(msgs: Message[], readAt?: number): void {
    if (this.#stopped) return;
    const traced = readAt === undefined ? undefined : this.tracer.peerMessages(msgs, readAt);
    for (const m of msgs) {
      try {
        this.#node.step(m);
      } catch (err) {
        this.#log.warn("dropped a peer message raft refused", { from: m.from.toString(16), type: m.type, error: String(err) });
      }
    }
    if (traced !== undefined) this.tracer.stepped(traced);
    this.#kick();
  }

  #maybeSync(): void {
    if (this.isLeader && this.store.hasTtlKeys()) {
      this.propose({ t: "sync", time: Date.now(), keysOnly: true }).catch((err: unknown) => {
        this.#log.debug("sync proposal failed", { error: String(err) });
      });
    }
  }

  /** Raft may have something new for the Ready loop. */
  #kick(): void {
    this.#loop.kick();
  }

  /** The Ready loop, given what it needs of this member (its parts are read at each use). */
  #readyLoop(): ReadyLoop<Command | KeySpaceCommandHead> {
    const server = this;
    return new ReadyLoop<Command | KeySpaceCommandHead>({
      memberId: this.#memberId,
      node: this.#node,
      get wal() {
        return server.#wal;
      },
      get storage() {
        return server.#storage;
      },
      get snapshots() {
        return server.#snapshots;
      },
      get reads() {
        return server.#reads;
      },
      diskWait: this.#diskWait,
      runQueueWaitMs: loopRunQueueWaitMs,
      tracer: this.tracer,
      metrics: this.metrics,
      isLeader: () => this.isLeader,
      alone: () => this.membership.size === 1,
      stopped: () => this.#stopped,
      clientRequests: () => this.#clientRequests,
      proposals: () => this.#proposals.count,
      send: (messages, options) => this.#transport.send(messages, options),
      leaderSeen: (lead) => this.#onLeader(lead),
      hardStateSeen: (hs) => {
        this.#term = hs.term;
        this.#commitIndex = hs.commit;
      },
      decode: (e) => this.#commandOf(e),
      applyGate: () => this.#state.applyGate,
      apply: (e, cmd) => this.#applyEntry(e, cmd),
      appliedBatch: () => {
        // The v3 writes of these entries commit together with the index they reach.
        const commitStart = performance.now();
        // No rejection handler here: a failed commit stays an unhandled rejection (fatal), as before.
        void this.#state.applied(this.#appliedIndex)?.then(() => this.metrics.backendCommitted(performance.now() - commitStart));
      },
      fatal: (err) => this.#fatal(err),
    });
  }

  /** Why a proposal begun at `startedAt` (Date.now()) timed out: etcd's rule (timeout-cause.ts), on the transport's clock. */
  #timeoutError(startedAt: number): RequestTimeoutError {
    return new RequestTimeoutError(
      timeoutKind({
        start: performance.now() - (Date.now() - startedAt),
        leaderElectedAt: this.#leadElectedAt,
        electionTimeoutMs: this.config.electionTimeout,
        selfId: this.#memberId,
        leaderId: this.#lead,
        memberIds: this.membership.ids(),
        activeSince: (id) => this.#transport.activeSince(id),
      }),
    );
  }

  #onLeader(lead: number): void {
    if (lead === this.#lead) return;
    const previous = this.#lead;
    this.#lead = lead;
    if (lead === this.#memberId) this.#leadElectedAt = performance.now();
    this.stats.leaderChanged(lead);
    if (previous !== 0) this.#log.info("leader changed", { from: previous.toString(16), to: lead.toString(16), term: this.#term });
    // etcd's Demote; the promotion waits for the first entry of this member's term (#applyEntry).
    if (lead !== this.#memberId) this.leases.demote();
    // A v2 key whose TTL ran out while there was no leader (a restart, an election) goes at
    // once, not at the next 500 ms tick: etcd's new leader answers 404 for it right away.
    if (lead !== 0 && lead === this.#memberId && this.store.hasTtlKeys()) this.#maybeSync();
    if (lead !== 0) {
      this.#proposals.leaderKnown();
      this.#reads.leaderChanged();
    }
  }

  /**
   * The command of a committed entry; for a v3 key-space command whose effects the database
   * already holds (at or below its consistent index), only its proposer and id.
   */
  #commandOf(e: Entry): Command | KeySpaceCommandHead | undefined {
    if (e.index <= this.#state.v3Floor && e.type === EntryType.Normal) {
      const head = peekKeySpaceCommand(e.data);
      if (head !== undefined) return head;
    }
    return commandOf(e);
  }

  /** Applies a committed entry; `cmd` is its command, decoded by #commandOf. */
  #applyEntry(e: Entry, cmd: Command | KeySpaceCommandHead | undefined): void {
    if (e.index <= this.#appliedIndex) return;
    const started = performance.now();
    if (e.type === EntryType.ConfChange) this.#confState = this.#members.apply(decodeConfChange(e.data));
    else if (e.type === EntryType.Normal && e.data.length === 0) {
      // A new leader's first entry: every entry of earlier terms (every grant) is applied, so
      // the lessor can take over the leases (etcd promotes its lessor here too).
      if (this.isLeader && e.term === this.#term) {
        this.leases.promote();
        // etcd decides the cluster version at the first commit of its term (monitorVersions).
        void this.#versions.check();
      }
    } else if (cmd?.t === "v3-head") {
      // Applied already, in the database that came with a snapshot.
      if (cmd.m === this.#memberId) this.#proposals.outcomeUnknown(cmd.id);
    } else if (cmd !== undefined) {
      const result = applyCommand(this.#state, cmd, e.index, { v3: e.index > this.#state.v3Floor });
      if (result.ok && result.changes !== undefined) for (const c of result.changes) this.watchHub.notify(c);
      if (cmd.t === "v3") this.leases.applied(cmd.op, result);
      if (cmd.t === "v3" && cmd.op.k === "alarm" && result.ok) this.#logAlarm(cmd.op.r);
      const noSpace = result.ok && result.noSpace === true;
      if (noSpace) this.#raiseNoSpace();
      if (cmd.m === this.#memberId) {
        if (this.tracer.active) this.tracer.applied(cmd.id);
        // Applied, and answered as etcd answers a write its quotaApplierV3 judged too big.
        this.#proposals.applied(cmd.id, noSpace ? { ok: false, error: V3Errors.noSpace() } : result);
      }
      const took = performance.now() - started;
      const slowMs = this.config.warningApplyDurationMs;
      this.metrics.applied(cmd, result, took, slowMs);
      // etcd's warnOfExpensiveRequest: an apply slower than --experimental-warning-apply-duration.
      if (took > slowMs) this.#log.warn("apply request took too long", { took: `${took.toFixed(3)}ms`, "expected-duration": `${slowMs}ms`, request: describeCommand(cmd), index: e.index });
    }
    this.#appliedIndex = e.index;
  }

  #noSpaceRaising = false;

  /**
   * etcd's applyEntryNormal after a write its quotaApplierV3 found too big: this member
   * proposes the NOSPACE alarm, unless one is raised already (or this member's is on its way).
   */
  #raiseNoSpace(): void {
    if (this.#noSpaceRaising || this.v3.alarms(AlarmType.NOSPACE).length > 0) return;
    this.#noSpaceRaising = true;
    this.propose({ t: "v3", time: Date.now(), op: noSpaceAlarm(this.memberId) }).then(
      () => (this.#noSpaceRaising = false),
      (err: unknown) => {
        this.#noSpaceRaising = false;
        this.#log.warn("failed to raise the NOSPACE alarm", { error: err instanceof Error ? err.message : String(err) });
      },
    );
  }

  /** etcd's "alarm raised" / "alarm disarmed" lines: every member logs the change it applied. */
  #logAlarm(r: { action: number; memberId: string; alarm: number }): void {
    if (r.action !== AlarmAction.ACTIVATE && r.action !== AlarmAction.DEACTIVATE) return;
    const alarm = alarmName(r.alarm);
    let from = r.memberId;
    try {
      from = BigInt(r.memberId).toString(16);
    } catch {
      // a member id that is not a number is logged as it came
    }
    this.#log.warn(r.action === AlarmAction.ACTIVATE ? "alarm raised" : "alarm disarmed", { alarm, from });
  }

  #removedNotified = false;

  /** This member is no longer part of the cluster (it applied its removal, or a peer said so). */
  #removedFromCluster(): void {
    if (this.#removedNotified) return;
    this.#removedNotified = true;
    this.#log.warn("the member has been permanently removed from the cluster; stopping");
    queueMicrotask(() => this.#onRemoved());
  }

  #fatal(err: unknown): void {
    // A failed WAL write or a broken invariant: carrying on could acknowledge lost writes.
    this.#log.error("fatal error in the raft loop; stopping", { error: err instanceof Error ? err.stack : String(err) });
    process.exit(1);
  }

  /** Hands leadership to `target` (etcd's MoveLeader); resolves when it leads, fails at the caller's deadline (none: two election timeouts). */
  transferLeadershipTo(target: number, deadline?: Deadline): Promise<void> {
    return this.#leadership.moveTo(target, deadline);
  }

  /** Stops ticking, fails pending requests, closes the peer links and the WAL. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    await this.#leadership.handOver().catch(() => undefined);
    this.#stopped = true;
    this.#snapshots.cancel();
    clearInterval(this.#tickTimer);
    clearInterval(this.#syncTimer);
    this.#versions.stop();
    clearInterval(this.#progressTimer);
    clearInterval(this.#compactTimer);
    this.leases.stop();
    const stopped = new ServerUnavailableError("etcdserver: server stopped");
    this.#proposals.failAll(stopped);
    this.#reads.failAll(stopped);
    // Let an in-flight Ready finish its fsync before closing the file.
    while (this.#loop.busy) await new Promise((r) => setTimeout(r, 5));
    await this.#transport.stop();
    // The abandoned snapshot job reads the database: closing it under the job would fail it.
    await this.#snapshots.settled();
    await this.#wal.close();
    await this.#state.close();
    this.#releaseBcryptWarn();
  }
}
