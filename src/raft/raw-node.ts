// RawNode: the API the server drives (etcd's rawnode.go + bootstrap.go + newReady).
// Single-threaded by construction: the server loop calls tick/step/propose/... and
// drains work with hasReady/ready/advance. See README.md for the loop contract.

import { ProposalDroppedError, RaftError } from "./errors.ts";
import { Raft, type Config } from "./raft.ts";
import { getStatus, type Status } from "./status.ts";
import {
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type Ready,
  type SoftState,
  ConfChangeType,
  EntryType,
  MessageType as MT,
  None,
  isEmptyHardState,
  isHardStateEqual,
  isLocalMsg,
  isResponseMsg,
  message,
} from "./types.ts";
import { encodeConfChange } from "./util.ts";

/** A bootstrap member, with the context its AddNode conf change entry carries. */
export interface Peer {
  id: number;
  context?: Uint8Array;
}

function softStateEqual(a: SoftState, b: SoftState): boolean {
  return a.lead === b.lead && a.raftState === b.raftState;
}

/**
 * The index a Ready's application brings `applied` to (0: no information): the last
 * committed entry, else the snapshot.
 */
function appliedCursor(rd: Ready): number {
  const n = rd.committedEntries.length;
  if (n > 0) return rd.committedEntries[n - 1]!.index;
  return rd.snapshot?.metadata.index ?? 0;
}

/** etcd's MustSync: term, vote or log changes must be fsynced before sending. */
export function mustSync(st: HardState, prev: HardState, entsNum: number): boolean {
  return entsNum !== 0 || st.vote !== prev.vote || st.term !== prev.term;
}

export class RawNode {
  readonly #raft: Raft;
  /** SoftState reported by the last Ready (a change is reported once). */
  #prevSoftSt: SoftState;
  /** HardState reported by the last advanced Ready. */
  #prevHardSt: HardState;

  /** Starts from what `config.storage` holds (restart), or empty (then bootstrap()). */
  constructor(config: Config) {
    this.#raft = new Raft(config);
    this.#prevSoftSt = this.#raft.softState();
    this.#prevHardSt = this.#raft.hardState();
  }

  /**
   * Makes a brand-new cluster: one AddNode conf-change entry per peer, at term 1,
   * already committed (every member bootstraps the same entries) but not applied, so
   * the server sees and applies them through the first Ready. Throws if storage is not
   * empty. Campaigning is refused until that first Ready has been advanced (pending
   * conf changes), exactly as in etcd.
   */
  bootstrap(peers: ReadonlyArray<number | Peer>): void {
    if (peers.length === 0) throw new RaftError("ERR_BOOTSTRAP", "Cannot bootstrap: at least one peer is required");
    const r = this.#raft;
    if (r.raftLog.storage.lastIndex() !== 0) {
      throw new RaftError("ERR_BOOTSTRAP", "Cannot bootstrap: storage is not empty");
    }
    // Nothing is persisted yet: the first Ready must carry the HardState.
    this.#prevHardSt = { term: 0, vote: 0, commit: 0 };
    r.becomeFollower(1, None);
    const list: Peer[] = peers.map((p) => (typeof p === "number" ? { id: p } : p));
    const ents: Entry[] = list.map((p, i) => ({
      term: 1,
      index: i + 1,
      type: EntryType.ConfChange,
      data: encodeConfChange({ type: ConfChangeType.AddNode, nodeId: p.id, context: p.context ?? new Uint8Array(0) }),
    }));
    r.raftLog.append(ents);
    r.raftLog.committed = ents.length;
    // Applied here too so campaign() works right after the first Ready; the server
    // applying them again from committedEntries is a no-op (AddNode is idempotent).
    for (const p of list) r.applyConfChange({ type: ConfChangeType.AddNode, nodeId: p.id, context: new Uint8Array(0) });
  }

  /** Advances the logical clock by one tick (election / heartbeat timeouts). */
  tick(): void {
    this.#raft.tick();
  }

  /** Starts an election now (pre-vote first if enabled). */
  campaign(): void {
    this.#raft.stepMessage(message({ type: MT.MsgHup }));
  }

  /**
   * Proposes data for the log. A follower forwards it to the leader. Throws
   * ProposalDroppedError when no leader is known, a transfer is in progress, etc.
   * A proposal that was not dropped may still be lost: callers need timeouts.
   */
  propose(data: Uint8Array): void {
    const r = this.#raft;
    r.stepMessage(
      message({ type: MT.MsgProp, from: r.id, entries: [{ term: 0, index: 0, type: EntryType.Normal, data }] }),
    );
  }

  /**
   * Proposes a membership change. Only one may be pending: a second one proposed
   * before the first is applied on the leader becomes an empty normal entry.
   */
  proposeConfChange(cc: ConfChange): void {
    const r = this.#raft;
    r.stepMessage(
      message({
        type: MT.MsgProp,
        from: r.id,
        entries: [{ term: 0, index: 0, type: EntryType.ConfChange, data: encodeConfChange(cc) }],
      }),
    );
  }

  /** Applies a committed conf change (call it when applying its entry). */
  applyConfChange(cc: ConfChange): ConfState {
    return this.#raft.applyConfChange(cc);
  }

  /**
   * Feeds a message from a peer. Local message types and responses from unknown
   * peers are ignored, as is a forwarded proposal the leader drops (the proposer
   * times out, as with a lost message).
   */
  step(m: Message): void {
    if (isLocalMsg(m.type)) return;
    const r = this.#raft;
    if (isResponseMsg(m.type) && !r.prs.progress.has(m.from)) return;
    try {
      r.stepMessage(m);
    } catch (err) {
      if (!(err instanceof ProposalDroppedError)) throw err;
    }
  }

  /**
   * Asks for a linearizable read point. The answer comes as a ReadState with the same
   * ctx in a later Ready; ctx must be unique and non-empty. No answer comes when no
   * leader is known or leadership is lost meanwhile: callers need timeouts.
   */
  readIndex(ctx: Uint8Array): void {
    this.#raft.stepMessage(
      message({ type: MT.MsgReadIndex, entries: [{ term: 0, index: 0, type: EntryType.Normal, data: ctx }] }),
    );
  }

  /** Asks the leader (directly, or through this follower) to hand leadership to `to`. */
  transferLeader(to: number): void {
    this.#raft.stepMessage(message({ type: MT.MsgTransferLeader, from: to }));
  }

  /** Whether ready() would return anything. */
  hasReady(): boolean {
    const r = this.#raft;
    if (!softStateEqual(r.softState(), this.#prevSoftSt)) return true;
    const hs = r.hardState();
    if (!isEmptyHardState(hs) && !isHardStateEqual(hs, this.#prevHardSt)) return true;
    if (r.raftLog.unstable.snapshot !== undefined && r.raftLog.unstable.snapshot.metadata.index !== 0) return true;
    if (r.msgs.length > 0 || r.raftLog.unstable.entries.length > 0 || r.raftLog.hasNextEnts()) return true;
    return r.readStates.length !== 0;
  }

  /**
   * The pending work. The caller must handle it completely and then call advance(rd)
   * before the next ready(). Messages and read states are handed over once.
   */
  ready(): Ready {
    const r = this.#raft;
    const rd: Ready = {
      readStates: r.readStates,
      entries: r.raftLog.unstableEntries(),
      committedEntries: r.raftLog.nextEnts(),
      messages: r.msgs,
      mustSync: false,
    };
    const ss = r.softState();
    if (!softStateEqual(ss, this.#prevSoftSt)) {
      rd.softState = ss;
      this.#prevSoftSt = ss;
    }
    const hs = r.hardState();
    if (!isHardStateEqual(hs, this.#prevHardSt)) rd.hardState = hs;
    const snap = r.raftLog.unstable.snapshot;
    if (snap !== undefined) rd.snapshot = snap;
    rd.mustSync = mustSync(hs, this.#prevHardSt, rd.entries.length);
    // Handed over: the next Ready starts empty for these.
    r.readStates = [];
    r.msgs = [];
    return rd;
  }

  /**
   * The server persisted and applied `rd`: moves applied to its last committed entry
   * (or snapshot) and drops the persisted entries/snapshot from the unstable part.
   */
  advance(rd: Ready): void {
    const r = this.#raft;
    if (rd.hardState !== undefined && !isEmptyHardState(rd.hardState)) this.#prevHardSt = rd.hardState;
    const applied = appliedCursor(rd);
    if (applied > 0) r.raftLog.appliedTo(applied);
    const n = rd.entries.length;
    if (n > 0) {
      const e = rd.entries[n - 1]!;
      r.raftLog.stableTo(e.index, e.term);
    }
    if (rd.snapshot !== undefined && rd.snapshot.metadata.index !== 0) r.raftLog.stableSnapTo(rd.snapshot.metadata.index);
  }

  status(): Status {
    return getStatus(this.#raft);
  }

  /** The transport could not deliver to `id`: stop pipelining to it, probe instead. */
  reportUnreachable(id: number): void {
    this.#raft.stepMessage(message({ type: MT.MsgUnreachable, from: id }));
  }

  /** Outcome of sending an MsgSnap to `id` (the server must report every one). */
  reportSnapshot(id: number, failed: boolean): void {
    this.#raft.stepMessage(message({ type: MT.MsgSnapStatus, from: id, reject: failed }));
  }

  /** Ticks the election clock only (no heartbeats, no elections); etcd's TickQuiesced. */
  tickQuiesced(): void {
    this.#raft.electionElapsed++;
  }

  /** The underlying state machine, for tests inside src/raft only. */
  get raftForTesting(): Raft {
    return this.#raft;
  }
}
