// A randomized, seeded simulation of a Raft cluster of RawNodes over a lossy network
// (drop / delay / duplicate / reorder / partition / isolate), with crashes, restarts
// and compaction. It drives each node exactly like the server loop (persist → send →
// apply → advance) and checks Raft's safety properties (paper figure 3) after every
// step, throwing SimViolation with the seed on the first failure.

import { ProposalDroppedError } from "./errors.ts";
import { seededRandom } from "./raft.test-helper.ts";
import { RawNode } from "./raw-node.ts";
import { MemoryStorage } from "./storage.ts";
import { type Entry, type Message, type Snapshot, EntryType, MessageType as MT, StateType } from "./types.ts";
import { bytesKey, decodeConfChange, describeMessage } from "./util.ts";

export class SimViolation extends Error {}

interface SimNode {
  id: number;
  rn: RawNode;
  storage: MemoryStorage;
  /** The state machine: keys of applied entries, index i at position i (0 unused). */
  sm: string[];
  up: boolean;
}

interface InFlight {
  m: Message;
  deliverAt: number;
}

export interface SimOptions {
  seed: number;
  size: number;
  steps: number;
  preVote: boolean;
  checkQuorum: boolean;
  /** Probability that a sent message is lost. */
  drop: number;
  /** Probability that a sent message is delivered twice. */
  duplicate: number;
  /** Max extra delay in steps (delivery order is random among due messages). */
  maxDelay: number;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function entryKey(e: Entry): string {
  return `${e.term}/${e.type}/${bytesKey(e.data)}`;
}

export class SimCluster {
  readonly opts: SimOptions;
  readonly rand: () => number;
  readonly nodes: SimNode[] = [];
  inflight: InFlight[] = [];
  now = 0;
  /** Partition: node id -> group; messages only flow within a group. */
  group = new Map<number, number>();
  dropRate: number;
  proposals = 0;
  // --- safety bookkeeping
  /** Election safety: term -> the leader seen for it. */
  readonly leaders = new Map<number, number>();
  /** Log matching: "index/term" -> [entry key, term of the previous entry]. */
  readonly logEntries = new Map<string, [string, number]>();
  /** State machine safety: index -> applied entry key and the term it was first seen applied at. */
  readonly applied = new Map<number, { key: string; term: number; entryTerm: number }>();
  /** Read index linearizability: ctx -> highest index known committed when requested. */
  readonly reads = new Map<string, number>();
  readsServed = 0;
  maxApplied = 0;

  constructor(opts: SimOptions) {
    this.opts = opts;
    this.rand = seededRandom(opts.seed);
    this.dropRate = opts.drop;
    const ids = Array.from({ length: opts.size }, (_, i) => i + 1);
    for (const id of ids) {
      const storage = new MemoryStorage();
      const rn = this.newRawNode(id, storage);
      rn.bootstrap(ids);
      this.nodes.push({ id, rn, storage, sm: [""], up: true });
      this.group.set(id, 0);
    }
  }

  newRawNode(id: number, storage: MemoryStorage, applied = 0): RawNode {
    return new RawNode({
      applied,
      id,
      storage,
      electionTick: 10,
      heartbeatTick: 1,
      // 0 = one entry per MsgApp: old-term entries then get acked on their own,
      // which is what makes the §5.4.2 commit rule observable (figure 8).
      maxSizePerMsg: this.opts.seed % 3 === 0 ? 0 : 256,
      maxInflightMsgs: 4,
      preVote: this.opts.preVote,
      checkQuorum: this.opts.checkQuorum,
      random: seededRandom(this.opts.seed * 31 + id),
    });
  }

  fail(msg: string): never {
    throw new SimViolation(`seed=${this.opts.seed} step=${this.now}: ${msg}`);
  }

  node(id: number): SimNode {
    return this.nodes[id - 1]!;
  }

  int(n: number): number {
    return Math.floor(this.rand() * n);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }

  upNodes(): SimNode[] {
    return this.nodes.filter((n) => n.up);
  }

  connected(a: number, b: number): boolean {
    return this.group.get(a) === this.group.get(b);
  }

  // --- the server loop, per node ----------------------------------------------------

  handleReady(n: SimNode): void {
    while (n.up && n.rn.hasReady()) {
      const rd = n.rn.ready();
      // 1. persist
      if (rd.snapshot !== undefined) {
        n.storage.applySnapshot(rd.snapshot);
        this.restoreSm(n, rd.snapshot);
      }
      if (rd.hardState !== undefined) n.storage.setHardState(rd.hardState);
      n.storage.append(rd.entries);
      this.checkLogMatching(n, rd.entries);
      // 2. send
      for (const m of rd.messages) this.sendMsg(m);
      // 3. apply
      for (const e of rd.committedEntries) this.apply(n, e);
      for (const rs of rd.readStates) this.checkRead(n, rs.index, rs.requestCtx);
      // 4. advance
      n.rn.advance(rd);
    }
  }

  restoreSm(n: SimNode, s: Snapshot): void {
    const sm = JSON.parse(dec.decode(s.data)) as string[];
    if (sm.length !== s.metadata.index + 1) this.fail(`snapshot data of ${sm.length - 1} entries at index ${s.metadata.index}`);
    for (let i = 1; i < sm.length; i++) {
      const seen = this.applied.get(i);
      if (seen !== undefined && seen.key !== sm[i]) this.fail(`snapshot on ${n.id} disagrees at index ${i}`);
    }
    n.sm = sm;
  }

  apply(n: SimNode, e: Entry): void {
    if (e.index !== n.sm.length) this.fail(`node ${n.id} applies index ${e.index} after ${n.sm.length - 1}`);
    const key = entryKey(e);
    const seen = this.applied.get(e.index);
    if (seen === undefined) {
      const term = n.rn.status().hardState.term;
      this.applied.set(e.index, { key, term, entryTerm: e.term });
      this.maxApplied = Math.max(this.maxApplied, e.index);
      // Leader completeness for leaders elected before we learned of this commit.
      for (const l of this.nodes) this.checkLeaderHas(l, e.index);
    } else if (seen.key !== key) {
      this.fail(`state machine safety: node ${n.id} applies ${key} at ${e.index}, another node applied ${seen.key}`);
    }
    n.sm.push(key);
    // Membership lives in the log (and snapshots): a restarted node relearns it here.
    if (e.type === EntryType.ConfChange) n.rn.applyConfChange(decodeConfChange(e.data));
  }

  checkRead(n: SimNode, index: number, ctx: Uint8Array): void {
    const k = bytesKey(ctx);
    const floor = this.reads.get(k);
    if (floor === undefined) this.fail(`node ${n.id} got a read state for unknown ctx ${k}`);
    // Linearizable read: the read index covers every write known committed at request time.
    if (index < floor) this.fail(`read ${k} on ${n.id} at index ${index} < ${floor} committed before the request`);
    // Not deleted: a duplicated MsgReadIndex(Resp) legitimately answers twice.
    this.readsServed++;
  }

  /** Log matching (§5.3): same (index, term) => same entry and same previous term. */
  checkLogMatching(n: SimNode, ents: Entry[]): void {
    const first = n.storage.firstIndex();
    for (const e of ents) {
      if (e.index < first) continue;
      const prevTerm = n.storage.term(e.index - 1);
      const k = `${e.index}/${e.term}`;
      const want: [string, number] = [entryKey(e), prevTerm];
      const seen = this.logEntries.get(k);
      if (seen === undefined) this.logEntries.set(k, want);
      else if (seen[0] !== want[0] || seen[1] !== want[1]) {
        this.fail(`log matching: node ${n.id} has ${want.join(" prev=")} at ${k}, elsewhere ${seen.join(" prev=")}`);
      }
    }
  }

  /** Leader completeness: a leader of a later term holds every known-committed entry. */
  checkLeaderHas(l: SimNode, index: number): void {
    if (!l.up) return;
    const st = l.rn.status();
    if (st.softState.raftState !== StateType.Leader) return;
    const c = this.applied.get(index)!;
    if (st.hardState.term <= c.term) return;
    const log = l.rn.raftForTesting.raftLog;
    if (index < log.firstIndex()) return; // compacted: it was committed there
    if (log.term(index) !== c.entryTerm) {
      this.fail(`leader completeness: leader ${l.id} of term ${st.hardState.term} lacks committed index ${index}`);
    }
  }

  checkElectionSafety(): void {
    for (const n of this.upNodes()) {
      const st = n.rn.status();
      if (st.softState.raftState !== StateType.Leader) continue;
      const term = st.hardState.term;
      const prev = this.leaders.get(term);
      if (prev === undefined) {
        this.leaders.set(term, n.id);
        for (const idx of this.applied.keys()) this.checkLeaderHas(n, idx);
      } else if (prev !== n.id) {
        this.fail(`election safety: ${prev} and ${n.id} both lead term ${term}`);
      }
    }
  }

  // --- the network --------------------------------------------------------------------

  sendMsg(m: Message): void {
    const lost = !this.connected(m.from, m.to) || this.rand() < this.dropRate;
    if (lost) {
      // The transport reports what it could not deliver.
      if (m.type === MT.MsgSnap) this.report(m.from, (rn) => rn.reportSnapshot(m.to, true));
      else if (this.rand() < 0.2) this.report(m.from, (rn) => rn.reportUnreachable(m.to));
      return;
    }
    const copies = this.rand() < this.opts.duplicate ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      this.inflight.push({ m, deliverAt: this.now + this.int(this.opts.maxDelay + 1) });
    }
  }

  /** Reports are deferred to after the current Ready (RawNode is not re-entrant). */
  pendingReports: Array<[number, (rn: RawNode) => void]> = [];
  report(id: number, f: (rn: RawNode) => void): void {
    this.pendingReports.push([id, f]);
  }

  flushReports(): void {
    while (this.pendingReports.length > 0) {
      const [id, f] = this.pendingReports.shift()!;
      const n = this.node(id);
      if (!n.up) continue;
      f(n.rn);
      this.handleReady(n);
    }
  }

  /** Delivers one due message, chosen at random (reordering). */
  deliverOne(): boolean {
    const due: number[] = [];
    for (let i = 0; i < this.inflight.length; i++) if (this.inflight[i]!.deliverAt <= this.now) due.push(i);
    if (due.length === 0) return false;
    const at = this.pick(due);
    const { m } = this.inflight[at]!;
    this.inflight.splice(at, 1);
    const to = this.node(m.to);
    if (!to.up || !this.connected(m.from, m.to)) {
      if (m.type === MT.MsgSnap) this.report(m.from, (rn) => rn.reportSnapshot(m.to, true));
      return true;
    }
    try {
      to.rn.step(m);
    } catch (err) {
      throw new SimViolation(`seed=${this.opts.seed} step=${this.now}: ${describeMessage(m)} threw ${String(err)}`, {
        cause: err,
      });
    }
    if (m.type === MT.MsgSnap) this.report(m.from, (rn) => rn.reportSnapshot(m.to, false));
    this.handleReady(to);
    return true;
  }

  // --- actions ------------------------------------------------------------------------

  tick(n: SimNode): void {
    n.rn.tick();
    this.handleReady(n);
  }

  propose(n: SimNode): void {
    try {
      n.rn.propose(enc.encode(`p${this.opts.seed}-${++this.proposals}`));
    } catch (err) {
      if (!(err instanceof ProposalDroppedError)) throw err;
    }
    this.handleReady(n);
  }

  readIndex(n: SimNode): void {
    const ctx = `r${this.proposals}-${this.now}-${n.id}`;
    // Every entry any node applied is committed; the read must see at least that.
    this.reads.set(ctx, this.maxApplied);
    n.rn.readIndex(enc.encode(ctx));
    this.handleReady(n);
  }

  compact(n: SimNode): void {
    const applied = n.sm.length - 1;
    const snapIndex = n.storage.snapshot().metadata.index;
    if (applied - snapIndex < 5) return;
    const cs = n.rn.status().config;
    n.storage.createSnapshot(applied, cs, enc.encode(JSON.stringify(n.sm)));
    n.storage.compact(applied - this.int(3));
  }

  crash(n: SimNode): void {
    n.up = false;
  }

  restart(n: SimNode): void {
    // Durable state is exactly what was persisted; the state machine restarts from the
    // snapshot and re-applies the committed entries raft hands out again.
    const snap = n.storage.snapshot();
    // As etcd's server: the state machine comes back at the snapshot, so raft must hand
    // out the entries after it (not from the first kept log entry).
    n.rn = this.newRawNode(n.id, n.storage, snap.metadata.index);
    // Crashed before its first Ready was persisted: like a server finding no WAL, it
    // bootstraps again (otherwise it would come back with no membership at all).
    if (n.storage.lastIndex() === 0 && snap.metadata.index === 0) n.rn.bootstrap(this.nodes.map((x) => x.id));
    n.sm = snap.metadata.index === 0 ? [""] : (JSON.parse(dec.decode(snap.data)) as string[]);
    n.up = true;
    this.handleReady(n);
  }

  partition(): void {
    const r = this.rand();
    if (r < 0.4) {
      for (const id of this.group.keys()) this.group.set(id, 0);
    } else if (r < 0.7) {
      // Isolate one node.
      const victim = this.int(this.opts.size) + 1;
      for (const id of this.group.keys()) this.group.set(id, id === victim ? 1 : 0);
    } else {
      for (const id of this.group.keys()) this.group.set(id, this.int(2));
    }
  }

  /** One random step of the schedule, then the invariants. */
  step(): void {
    this.now++;
    const r = this.rand();
    const up = this.upNodes();
    if (r < 0.35) {
      if (up.length > 0) this.tick(this.pick(up));
    } else if (r < 0.42) {
      if (up.length > 0) this.propose(this.pick(up));
    } else if (r < 0.45) {
      if (up.length > 0) this.readIndex(this.pick(up));
    } else if (r < 0.47) {
      this.partition();
    } else if (r < 0.48) {
      const n = this.pick(this.nodes);
      if (n.up) this.crash(n);
      else this.restart(n);
    } else if (r < 0.495) {
      if (up.length > 0) this.compact(this.pick(up));
    } else {
      this.deliverOne();
    }
    this.flushReports();
    this.checkElectionSafety();
  }

  /**
   * Heals everything and checks liveness: within a bounded time a proposal made on
   * the leader is applied on every node.
   */
  healAndConverge(maxRounds: number): void {
    for (const id of this.group.keys()) this.group.set(id, 0);
    this.dropRate = 0;
    for (const n of this.nodes) if (!n.up) this.restart(n);
    this.flushReports();
    let target = -1;
    let proposedAt = 0;
    for (let round = 0; round < maxRounds; round++) {
      this.now++;
      for (const n of this.nodes) this.tick(n);
      while (this.deliverOne()) {
        this.flushReports();
      }
      this.flushReports();
      this.checkElectionSafety();
      if (target >= 0 && this.nodes.every((n) => n.sm.length - 1 >= target)) return;
      const leader = this.nodes.find((n) => n.rn.status().softState.raftState === StateType.Leader);
      if (leader === undefined) continue;
      // (Re)propose until one proposal makes it: a leader change may drop it.
      if (target < 0 || round - proposedAt > 40) {
        this.propose(leader);
        target = leader.rn.raftForTesting.raftLog.lastIndex();
        proposedAt = round;
      }
    }
    const states = this.nodes.map((n) => `${n.id}:${JSON.stringify(n.rn.status().softState)} applied=${n.sm.length - 1}`);
    this.fail(`no convergence after healing (target ${target}): ${states.join(" ")}`);
  }
}
