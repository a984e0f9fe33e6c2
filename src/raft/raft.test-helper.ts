// Test helpers for src/raft (not a test file itself): Raft constructors, entry and
// message builders, a seeded PRNG, and etcd's synchronous in-memory `network` with
// drop / cut / isolate / ignore, used by the ported raft_test.go / raft_paper_test.go
// cases. The randomized cluster simulation lives in sim-network.test-helper.ts.

import type { Config } from "./raft.ts";
import { Raft } from "./raft.ts";
import { MemoryStorage } from "./storage.ts";
import { ProgressTracker } from "./tracker/tracker.ts";
import { Progress } from "./tracker/progress.ts";
import { type Entry, type Message, type MessageType, EntryType, MessageType as MT, message } from "./types.ts";
import { describeMessage } from "./util.ts";

/** mulberry32 (the same as src/prng.test-helper.ts: raft imports nothing outside its folder). Floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const enc = new TextEncoder();
export function bytes(s: string): Uint8Array {
  return enc.encode(s);
}

/** An entry; data defaults to empty (etcd tests' pb.Entry{Term, Index}). */
export function ent(term: number, index: number, data?: string): Entry {
  return { term, index, type: EntryType.Normal, data: data === undefined ? new Uint8Array(0) : bytes(data) };
}

/** Entries with terms ts[i] at indexes 1..n (etcd tests' entsWithConfig shape). */
export function entsWithTerms(...terms: number[]): Entry[] {
  return terms.map((t, i) => ent(t, i + 1));
}

export function newStorageWithEnts(ents: Entry[]): MemoryStorage {
  const s = new MemoryStorage();
  s.append(ents);
  return s;
}

export function newTestConfig(
  id: number,
  election: number,
  heartbeat: number,
  storage: MemoryStorage,
  extra: Partial<Config> = {},
): Config {
  return {
    id,
    electionTick: election,
    heartbeatTick: heartbeat,
    storage,
    maxSizePerMsg: Number.POSITIVE_INFINITY,
    maxInflightMsgs: 256,
    random: seededRandom(id * 7919),
    ...extra,
  };
}

/** etcd's newTestRaft: peers given explicitly (empty storage) or taken from storage. */
export function newTestRaft(
  id: number,
  peers: number[],
  election: number,
  heartbeat: number,
  storage: MemoryStorage = new MemoryStorage(),
  extra: Partial<Config> = {},
): Raft {
  const cfg = newTestConfig(id, election, heartbeat, storage, extra);
  if (peers.length > 0) cfg.peers = peers;
  return new Raft(cfg);
}

export function newTestLearnerRaft(
  id: number,
  peers: number[],
  learners: number[],
  election: number,
  heartbeat: number,
  storage: MemoryStorage = new MemoryStorage(),
): Raft {
  return new Raft({ ...newTestConfig(id, election, heartbeat, storage), peers, learners });
}

/** Drains the messages a Raft queued (etcd tests' readMessages). */
export function readMessages(r: Raft): Message[] {
  const msgs = r.msgs;
  r.msgs = [];
  return msgs;
}

/** Persists unstable entries and marks them stable (what a Ready handler does). */
export function persist(r: Raft, storage: MemoryStorage): void {
  const ents = r.raftLog.unstableEntries();
  storage.append(ents);
  const last = ents[ents.length - 1];
  if (last !== undefined) r.raftLog.stableTo(last.index, last.term);
}

export function msgs(...ms: Array<Partial<Message> & { type: MessageType }>): Message[] {
  return ms.map(message);
}

/** Message lists as readable lines, for assertion messages. */
export function describe(ms: Message[]): string {
  return ms.map(describeMessage).join("\n");
}

/** A proposal of one normal entry. */
export function propMsg(from: number, to: number, data = "somedata"): Message {
  return message({ type: MT.MsgProp, from, to, entries: [ent(0, 0, data)] });
}

// --- etcd's synchronous network --------------------------------------------------

/** A peer that swallows everything (etcd's blackHole / nopStepper). */
export const blackHole = "blackHole" as const;
export type NetPeer = Raft | typeof blackHole;

export class Network {
  readonly peers = new Map<number, NetPeer>();
  readonly storage = new Map<number, MemoryStorage>();
  /** Drop probability per "from->to" link (1 = cut). */
  readonly dropm = new Map<string, number>();
  readonly ignorem = new Set<MessageType>();
  /** Observer of every delivered message (etcd's msgHook, as a log). */
  readonly random: () => number;

  /**
   * etcd's newNetworkWithConfig: `undefined` makes a fresh voter; an existing Raft is
   * re-pointed at the full peer set (progress reset); blackHole drops all input.
   */
  constructor(peers: Array<NetPeer | undefined>, opts: { seed?: number; config?: (c: Config) => void } = {}) {
    this.random = seededRandom(opts.seed ?? 1);
    const ids = peers.map((_, i) => i + 1);
    peers.forEach((p, i) => {
      const id = i + 1;
      if (p === undefined) {
        const st = new MemoryStorage();
        this.storage.set(id, st);
        const cfg = newTestConfig(id, 10, 1, st);
        cfg.peers = ids;
        opts.config?.(cfg);
        this.peers.set(id, new Raft(cfg));
      } else if (p === blackHole) {
        this.peers.set(id, blackHole);
      } else {
        // Rebuild membership to exactly ids (keeping learners as learners).
        const learners = p.prs.learners;
        const trk = new ProgressTracker(p.prs.maxInflight);
        for (const pid of ids) {
          const isLearner = learners.has(pid);
          if (isLearner) trk.learners.add(pid);
          else trk.voters.add(pid);
          trk.progress.set(pid, new Progress({ match: 0, next: 1, maxInflight: trk.maxInflight, isLearner }));
        }
        p.id = id;
        p.prs = trk;
        p.isLearner = learners.has(p.id);
        p.reset(p.term);
        this.peers.set(id, p);
      }
    });
  }

  raft(id: number): Raft {
    const p = this.peers.get(id);
    if (p === undefined || p === blackHole) throw new Error(`peer ${id} is not a raft`);
    return p;
  }

  /** Delivers msgs and everything they cause until the network is quiet. */
  send(...ms: Message[]): void {
    const queue = [...ms];
    let steps = 0;
    while (queue.length > 0) {
      if (++steps > 100_000) throw new Error("network did not quiesce");
      const m = queue.shift()!;
      const p = this.peers.get(m.to);
      if (p === undefined || p === blackHole) continue;
      try {
        p.stepMessage(m);
      } catch (err) {
        if (!(err instanceof Error && "code" in err && err.code === "ERR_PROPOSAL_DROPPED")) throw err;
      }
      queue.push(...this.filter(readMessages(p)));
    }
  }

  drop(from: number, to: number, perc: number): void {
    this.dropm.set(`${from}->${to}`, perc);
  }

  cut(a: number, b: number): void {
    this.drop(a, b, 2);
    this.drop(b, a, 2);
  }

  isolate(id: number): void {
    for (const other of this.peers.keys()) {
      if (other !== id) this.cut(id, other);
    }
  }

  ignore(t: MessageType): void {
    this.ignorem.add(t);
  }

  recover(): void {
    this.dropm.clear();
    this.ignorem.clear();
  }

  filter(ms: Message[]): Message[] {
    return ms.filter((m) => {
      if (this.ignorem.has(m.type)) return false;
      // Local messages never cross the network (etcd panics on MsgHup here).
      if (m.type === MT.MsgHup) throw new Error("unexpected MsgHup on the network");
      const perc = this.dropm.get(`${m.from}->${m.to}`) ?? 0;
      return !(this.random() < perc);
    });
  }
}

export function hup(id: number): Message {
  return message({ type: MT.MsgHup, from: id, to: id });
}

// --- helpers of etcd's raft_paper_test.go ------------------------------------------

export function idsBySize(size: number): number[] {
  return Array.from({ length: size }, (_, i) => i + 1);
}

/** Messages in a canonical order (etcd sorts by their printed form). */
export function sortMessages(ms: Message[]): Message[] {
  return [...ms].sort((a, b) => a.to - b.to || a.type - b.type || a.index - b.index);
}

/** The follower's successful answer to an MsgApp. */
export function acceptAndReply(m: Message): Message {
  if (m.type !== MT.MsgApp) throw new Error("type should be MsgApp");
  return message({ type: MT.MsgAppResp, from: m.to, to: m.from, term: m.term, index: m.index + m.entries.length });
}

/** Gets the new leader's empty entry acknowledged, committed, persisted and applied. */
export function commitNoopEntry(r: Raft, s: MemoryStorage): void {
  if (r.state !== "StateLeader") throw new Error("it should only be used when it is the leader");
  r.bcastAppend();
  for (const m of readMessages(r)) {
    if (m.type !== MT.MsgApp || m.entries.length !== 1 || m.entries[0]!.data.length !== 0) {
      throw new Error("not a message to append noop entry");
    }
    r.stepMessage(acceptAndReply(m));
  }
  readMessages(r);
  s.append(r.raftLog.unstableEntries());
  r.raftLog.appliedTo(r.raftLog.committed);
  r.raftLog.stableTo(r.raftLog.lastIndex(), r.raftLog.lastTerm());
}

export function mustAppendEntry(r: Raft, ...ents: Entry[]): void {
  r.appendEntry(ents);
}

/** A log's committed index and entries as text (etcd's ltoa), for log comparisons. */
export function ltoa(r: Raft): string {
  const ents = r.raftLog.allEntries().map((e) => `${e.index}:${e.term}:${e.type}:${[...e.data].join(",")}`);
  return `committed: ${r.raftLog.committed}\napplied: ${r.raftLog.applied}\n${ents.join("\n")}`;
}
