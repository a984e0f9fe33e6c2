// The Raft state machine (etcd's raft.go), part 1: state, role transitions, message
// sending and the role-independent part of step(). Role behaviour lives in the
// function-valued `step` field (stepLeader / stepCandidate / stepFollower, in
// raft-step.ts), swapped by the become* transitions — not in a class per role.
//
// Pure and deterministic: no clock (time is tick()), no I/O (output accumulates in
// `msgs` and the log's unstable part, drained by RawNode.ready()), no hidden
// randomness (Config.random). This class is internal to src/raft: its fields are
// public for the step functions and tests, RawNode is the API.

import { applySimpleChange, restoreTracker } from "./confchange/confchange.ts";
import { type Config, defaultMaxInflightMsgs, defaultMaxSizePerMsg, validateConfig } from "./config.ts";
import { CompactedError, SnapshotTemporarilyUnavailableError, invariant } from "./errors.ts";
import { RaftLog } from "./log.ts";
import { VoteResult } from "./quorum/majority.ts";
import { stepCandidate, stepFollower, stepLeader, type StepFn } from "./raft-step.ts";
import { CampaignType, campaignTransferCtx, handleTermAndVote } from "./raft-term.ts";
import { ReadOnly } from "./read-only.ts";
import { ProgressState } from "./tracker/progress.ts";
import { ProgressTracker } from "./tracker/tracker.ts";
import {
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type RaftLogger,
  type ReadState,
  type SoftState,
  MessageType as MT,
  None,
  StateType,
  discardLogger,
  isEmptyHardState,
  isEmptySnap,
  message,
  messageTypeName,
} from "./types.ts";

export type { Config } from "./config.ts";

export class Raft {
  /** Set once at construction (test networks re-point it, as etcd's do). */
  id: number;
  /** Current term. Invariant: never decreases. */
  term = 0;
  /** Whom we voted for in `term` (None if nobody). Invariant: at most one vote per term. */
  vote = None;
  /** ReadIndex answers waiting for the next Ready. */
  readStates: ReadState[] = [];
  readonly raftLog: RaftLog;
  readonly maxMsgSize: number;
  prs: ProgressTracker;
  state: StateType = StateType.Follower;
  /** Whether this node is a learner in the current configuration. */
  isLearner = false;
  /** Outbound messages waiting for the next Ready. */
  msgs: Message[] = [];
  /** Leader of `term` as far as we know (None if unknown). */
  lead = None;
  /** Target of a leadership transfer in progress (thesis §3.10), else None. */
  leadTransferee = None;
  /**
   * Only one conf change may be pending (in the log, not yet applied) at a time.
   * Invariant (leader): pendingConfIndex >= index of the latest conf change in the log;
   * a new one is accepted only when applied >= pendingConfIndex.
   */
  pendingConfIndex = 0;
  readOnly = new ReadOnly();
  /**
   * Ticks since the last election timeout (leader, candidate) or since the last
   * message from the current leader (follower).
   */
  electionElapsed = 0;
  /** Ticks since the last heartbeat (leader only). */
  heartbeatElapsed = 0;
  checkQuorum: boolean;
  preVote: boolean;
  quickCandidateRetry: boolean;
  /**
   * With quickCandidateRetry: the votes answered to this member's candidacy at `term`,
   * still counted while it pre-votes again at that term (see stepCandidate); forgotten at
   * the next role change.
   */
  candidacyVotes: { term: number; votes: Map<number, boolean> } | undefined;
  readonly heartbeatTimeout: number;
  readonly electionTimeout: number;
  /** Random in [electionTimeout, 2*electionTimeout); redrawn on every role change. */
  randomizedElectionTimeout = 0;
  readonly disableProposalForwarding: boolean;
  tick: () => void = () => this.tickElection();
  step: StepFn = stepFollower;
  readonly logger: RaftLogger;
  readonly random: () => number;
  /** MsgReadIndex received before this leader committed an entry of its term. */
  pendingReadIndexMessages: Message[] = [];

  constructor(c: Config) {
    validateConfig(c);
    this.id = c.id;
    this.logger = c.logger ?? discardLogger;
    this.random = c.random;
    this.maxMsgSize = c.maxSizePerMsg ?? defaultMaxSizePerMsg;
    this.raftLog = new RaftLog(c.storage, this.logger, c.maxCommittedSizePerReady ?? this.maxMsgSize);
    this.electionTimeout = c.electionTick;
    this.heartbeatTimeout = c.heartbeatTick;
    this.checkQuorum = c.checkQuorum ?? false;
    this.preVote = c.preVote ?? false;
    this.quickCandidateRetry = c.quickCandidateRetry ?? false;
    this.disableProposalForwarding = c.disableProposalForwarding ?? false;
    const { hardState, confState } = c.storage.initialState();
    let cs: ConfState = confState;
    if ((c.peers?.length ?? 0) > 0 || (c.learners?.length ?? 0) > 0) {
      invariant(
        cs.voters.length === 0 && cs.learners.length === 0,
        () => "cannot specify both Config.peers/learners and a ConfState in storage",
      );
      cs = { voters: c.peers ?? [], learners: c.learners ?? [] };
    }
    const maxInflight = c.maxInflightMsgs ?? defaultMaxInflightMsgs;
    this.prs = restoreTracker(cs, { maxInflight, lastIndex: this.raftLog.lastIndex() });
    this.afterConfigChange();
    if (!isEmptyHardState(hardState)) this.loadState(hardState);
    if (c.applied !== undefined && c.applied > 0) this.raftLog.appliedTo(c.applied);
    this.becomeFollower(this.term, None);
    this.logger.info(
      `newRaft ${this.id} [peers: [${this.prs.voterNodes().join(",")}], term: ${this.term}, commit: ${this.raftLog.committed}, applied: ${this.raftLog.applied}, lastindex: ${this.raftLog.lastIndex()}, lastterm: ${this.raftLog.lastTerm()}]`,
    );
  }

  hasLeader(): boolean {
    return this.lead !== None;
  }

  softState(): SoftState {
    return { lead: this.lead, raftState: this.state };
  }

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.raftLog.committed };
  }

  /**
   * Queues m for the next Ready. Vote messages carry an explicit term (a pre-vote is
   * for a future term; a vote response echoes the request's term); every other
   * message gets our term, except MsgProp and MsgReadIndex which are forwarded
   * requests, treated like local messages (term 0).
   */
  send(m: Message): void {
    m.from = this.id;
    const t = m.type;
    if (t === MT.MsgVote || t === MT.MsgVoteResp || t === MT.MsgPreVote || t === MT.MsgPreVoteResp) {
      invariant(m.term !== 0, () => `term should be set when sending ${messageTypeName(t)}`);
    } else {
      invariant(m.term === 0, () => `term should not be set when sending ${messageTypeName(t)} (was ${m.term})`);
      if (t !== MT.MsgProp && t !== MT.MsgReadIndex) m.term = this.term;
    }
    this.msgs.push(m);
  }

  sendAppend(to: number): void {
    this.maybeSendAppend(to, { sendIfEmpty: true });
  }

  /**
   * Sends `to` the entries from its next index (MsgApp), or a snapshot (MsgSnap) if
   * those entries are compacted. Returns whether a message was sent. With
   * sendIfEmpty false, an MsgApp without entries (a bare commit update) is not sent.
   */
  maybeSendAppend(to: number, opts: { sendIfEmpty: boolean }): boolean {
    const pr = this.prs.progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const term = this.raftLog.term(pr.next - 1);
    let ents: Entry[] | undefined;
    try {
      ents = this.raftLog.entries(pr.next, this.maxMsgSize);
    } catch (err) {
      if (!(err instanceof CompactedError)) throw err;
      ents = undefined;
    }
    if (ents !== undefined && ents.length === 0 && !opts.sendIfEmpty) return false;

    if (term === undefined || ents === undefined) {
      // The follower needs entries we no longer have: send the snapshot instead.
      if (!pr.recentActive) {
        this.logger.debug(`ignore sending snapshot to ${to} since it is not recently active`);
        return false;
      }
      let snapshot;
      try {
        snapshot = this.raftLog.snapshot();
      } catch (err) {
        if (err instanceof SnapshotTemporarilyUnavailableError) {
          this.logger.debug(`${this.id} failed to send snapshot to ${to} because snapshot is temporarily unavailable`);
          return false;
        }
        throw err;
      }
      invariant(!isEmptySnap(snapshot), () => "need non-empty snapshot");
      pr.becomeSnapshot(snapshot.metadata.index);
      this.logger.debug(
        `${this.id} [firstindex: ${this.raftLog.firstIndex()}, commit: ${this.raftLog.committed}] sent snapshot[index: ${snapshot.metadata.index}, term: ${snapshot.metadata.term}] to ${to} [${pr.toString()}]`,
      );
      this.send(message({ type: MT.MsgSnap, to, snapshot }));
      return true;
    }

    const m = message({
      type: MT.MsgApp,
      to,
      index: pr.next - 1,
      logTerm: term,
      entries: ents,
      commit: this.raftLog.committed,
    });
    const n = ents.length;
    if (n !== 0) {
      if (pr.state === ProgressState.Replicate) {
        // Pipelining: assume delivery, move next past what we send, count it in flight.
        const last = ents[n - 1]!.index;
        pr.optimisticUpdate(last);
        pr.inflights.add(last);
      } else if (pr.state === ProgressState.Probe) {
        // One probe at a time until the follower answers.
        pr.probeSent = true;
      } else {
        invariant(false, () => `${this.id} is sending append in unhandled state ${pr.state}`);
      }
    }
    this.send(m);
    return true;
  }

  /**
   * Heartbeats carry commit = min(match, committed): a follower must never learn a
   * commit index beyond what it is known to hold in agreement with us.
   */
  sendHeartbeat(to: number, ctx: Uint8Array): void {
    const commit = Math.min(this.prs.progress.get(to)?.match ?? 0, this.raftLog.committed);
    this.send(message({ type: MT.MsgHeartbeat, to, commit, context: ctx }));
  }

  bcastAppend(): void {
    this.prs.visit((id) => {
      if (id !== this.id) this.sendAppend(id);
    });
  }

  /** Heartbeats piggyback the newest pending ReadIndex ctx (re-confirms it if lost). */
  bcastHeartbeat(): void {
    this.bcastHeartbeatWithCtx(this.readOnly.lastPendingRequestCtx() ?? new Uint8Array(0));
  }

  bcastHeartbeatWithCtx(ctx: Uint8Array): void {
    this.prs.visit((id) => {
      if (id !== this.id) this.sendHeartbeat(id, ctx);
    });
  }

  /** Tries to move commit to what a quorum holds (§5.4.2 term check inside). */
  maybeCommit(): boolean {
    return this.raftLog.maybeCommit(this.prs.committed(), this.term);
  }

  /** Common part of every role change: new term (and vote) if it changed, fresh timers and progress. */
  reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = None;
    }
    this.candidacyVotes = undefined;
    this.lead = None;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.resetRandomizedElectionTimeout();
    this.abortLeaderTransfer();
    this.prs.resetVotes();
    const last = this.raftLog.lastIndex();
    this.prs.visit((id, pr) => {
      pr.match = id === this.id ? last : 0;
      pr.next = last + 1;
      pr.resetState(ProgressState.Probe);
      pr.recentActive = false;
    });
    this.pendingConfIndex = 0;
    this.readOnly = new ReadOnly();
  }

  /** Leader: appends entries at our term after the last index and counts our own ack. */
  appendEntry(es: Entry[]): void {
    const li = this.raftLog.lastIndex();
    const stamped = es.map((e, i) => ({ term: this.term, index: li + 1 + i, type: e.type, data: e.data }));
    const last = this.raftLog.append(stamped);
    this.prs.progress.get(this.id)?.maybeUpdate(last);
    // The caller broadcasts regardless; a singleton commits right here.
    this.maybeCommit();
  }

  /** Followers and candidates: campaign once the randomized timeout passed. */
  tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.pastElectionTimeout()) {
      this.electionElapsed = 0;
      this.stepMessage(message({ type: MT.MsgHup, from: this.id }));
    }
  }

  /** Leader: heartbeat every heartbeatTimeout, check quorum every electionTimeout. */
  tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.electionTimeout) {
      this.electionElapsed = 0;
      if (this.checkQuorum) this.stepMessage(message({ type: MT.MsgCheckQuorum, from: this.id }));
      // A transfer not finished within an election timeout is abandoned.
      if (this.state === StateType.Leader && this.leadTransferee !== None) this.abortLeaderTransfer();
    }
    if (this.state !== StateType.Leader) return;
    if (this.heartbeatElapsed >= this.heartbeatTimeout) {
      this.heartbeatElapsed = 0;
      this.stepMessage(message({ type: MT.MsgBeat, from: this.id }));
    }
  }

  becomeFollower(term: number, lead: number): void {
    this.step = stepFollower;
    this.reset(term);
    this.tick = () => this.tickElection();
    this.lead = lead;
    this.state = StateType.Follower;
    this.logger.info(`${this.id} became follower at term ${this.term}`);
  }

  becomeCandidate(): void {
    invariant(this.state !== StateType.Leader, () => "invalid transition [leader -> candidate]");
    this.step = stepCandidate;
    this.reset(this.term + 1);
    this.tick = () => this.tickElection();
    this.vote = this.id;
    this.state = StateType.Candidate;
    if (this.quickCandidateRetry) {
      // A split vote is retried first by the candidates (see Config.quickCandidateRetry).
      this.randomizedElectionTimeout = this.randomTicks(Math.ceil(this.electionTimeout / 2), this.electionTimeout);
    }
    this.logger.info(`${this.id} became candidate at term ${this.term}`);
  }

  /** Pre-candidate: same step function, but neither term nor vote change (§9.6). */
  becomePreCandidate(): void {
    invariant(this.state !== StateType.Leader, () => "invalid transition [leader -> pre-candidate]");
    this.step = stepCandidate;
    if (this.quickCandidateRetry && this.state === StateType.Candidate) this.candidacyVotes = { term: this.term, votes: this.prs.votes };
    this.prs.resetVotes();
    this.tick = () => this.tickElection();
    this.lead = None;
    this.state = StateType.PreCandidate;
    this.logger.info(`${this.id} became pre-candidate at term ${this.term}`);
  }

  becomeLeader(): void {
    invariant(this.state !== StateType.Follower, () => "invalid transition [follower -> leader]");
    this.step = stepLeader;
    this.reset(this.term);
    this.tick = () => this.tickHeartbeat();
    this.lead = this.id;
    this.state = StateType.Leader;
    // Trivially up to date with ourselves (reset() set match to our last index).
    this.prs.progress.get(this.id)?.becomeReplicate();
    // Conservatively treat the whole uncommitted tail as possibly holding a conf
    // change: no new one until everything we have is applied.
    this.pendingConfIndex = this.raftLog.lastIndex();
    // The empty entry of the new term (§5.4.2, §8): committing it commits every
    // earlier entry and lets ReadIndex know our commit index is current.
    this.appendEntry([{ term: 0, index: 0, type: 0, data: new Uint8Array(0) }]);
    this.logger.info(`${this.id} became leader at term ${this.term}`);
  }

  /** Starts a (pre-)election; callers have checked promotable(). */
  campaign(t: CampaignType): void {
    if (!this.promotable()) this.logger.warn(`${this.id} is unpromotable; campaign() should not have been called`);
    let term: number;
    let voteMsg: typeof MT.MsgVote | typeof MT.MsgPreVote;
    if (t === CampaignType.PreElection) {
      this.becomePreCandidate();
      voteMsg = MT.MsgPreVote;
      // Pre-votes ask about the term we would campaign in, without moving to it.
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      voteMsg = MT.MsgVote;
      term = this.term;
    }
    const respType = voteMsg === MT.MsgVote ? MT.MsgVoteResp : MT.MsgPreVoteResp;
    if (this.poll(this.id, respType, true).result === VoteResult.Won) {
      // Our own vote is a quorum: single-voter cluster.
      if (t === CampaignType.PreElection) this.campaign(CampaignType.Election);
      else this.becomeLeader();
      return;
    }
    for (const id of this.prs.voterNodes()) {
      if (id === this.id) continue;
      this.logger.info(
        `${this.id} [logterm: ${this.raftLog.lastTerm()}, index: ${this.raftLog.lastIndex()}] sent ${messageTypeName(voteMsg)} request to ${id} at term ${this.term}`,
      );
      const context = t === CampaignType.Transfer ? campaignTransferCtx : new Uint8Array(0);
      this.send(
        message({
          type: voteMsg,
          to: id,
          term,
          index: this.raftLog.lastIndex(),
          logTerm: this.raftLog.lastTerm(),
          context,
        }),
      );
    }
  }

  poll(id: number, t: MT, granted: boolean): ReturnType<ProgressTracker["tallyVotes"]> {
    this.logger.info(
      `${this.id} received ${messageTypeName(t)}${granted ? "" : " rejection"} from ${id} at term ${this.term}`,
    );
    this.prs.recordVote(id, granted);
    return this.prs.tallyVotes();
  }

  /**
   * The single input of the state machine. Throws ProposalDroppedError when a
   * proposal cannot be accepted; anything else thrown is an invariant violation.
   */
  stepMessage(m: Message): void {
    if (!handleTermAndVote(this, m)) return;
    this.step(this, m);
  }

  /** Can this node become leader? Only a voter of the current configuration can. */
  promotable(): boolean {
    const pr = this.prs.progress.get(this.id);
    return pr !== undefined && !pr.isLearner;
  }

  /** Applies a committed single-step conf change; returns the resulting membership. */
  applyConfChange(cc: ConfChange): ConfState {
    applySimpleChange(this.prs, cc, this.raftLog.lastIndex());
    return this.afterConfigChange();
  }

  /**
   * Reacts to a new membership (etcd's switchToConfig): learner flag, and on the leader
   * a possible commit (the quorum may have shrunk) and probes for new members.
   */
  afterConfigChange(): ConfState {
    this.logger.info(`${this.id} switched to configuration voters=(${this.prs.voterNodes().join(" ")})`);
    const cs = this.prs.confState();
    const pr = this.prs.progress.get(this.id);
    this.isLearner = pr !== undefined && pr.isLearner;
    // A removed (or demoted) leader keeps leading until it steps down by check-quorum
    // or a newer term; it drops new proposals meanwhile (as etcd 3.4).
    if ((pr === undefined || this.isLearner) && this.state === StateType.Leader) return cs;
    if (this.state !== StateType.Leader || cs.voters.length === 0) return cs;
    if (this.maybeCommit()) {
      this.bcastAppend();
    } else {
      this.prs.visit((id) => {
        if (id !== this.id) this.maybeSendAppend(id, { sendIfEmpty: false });
      });
    }
    if (this.leadTransferee !== None && !this.prs.progress.has(this.leadTransferee)) this.abortLeaderTransfer();
    return cs;
  }

  loadState(hs: HardState): void {
    invariant(
      hs.commit >= this.raftLog.committed && hs.commit <= this.raftLog.lastIndex(),
      () => `${this.id} state.commit ${hs.commit} is out of range [${this.raftLog.committed}, ${this.raftLog.lastIndex()}]`,
    );
    this.raftLog.committed = hs.commit;
    this.term = hs.term;
    this.vote = hs.vote;
  }

  pastElectionTimeout(): boolean {
    return this.electionElapsed >= this.randomizedElectionTimeout;
  }

  resetRandomizedElectionTimeout(): void {
    this.randomizedElectionTimeout = this.randomTicks(this.electionTimeout, 2 * this.electionTimeout);
  }

  /** A random tick count in [from, to). */
  randomTicks(from: number, to: number): number {
    // Clamp: a buggy random() returning 1 must not produce `to`.
    const r = Math.min(Math.max(this.random(), 0), 0.9999999999);
    return from + Math.floor(r * (to - from));
  }

  sendTimeoutNow(to: number): void {
    this.send(message({ type: MT.MsgTimeoutNow, to }));
  }

  abortLeaderTransfer(): void {
    this.leadTransferee = None;
  }

  /** Whether the entry at our commit index is of our term (a leader may serve reads). */
  committedEntryInCurrentTerm(): boolean {
    return this.raftLog.zeroTermOnErrCompacted(this.raftLog.committed) === this.term;
  }
}
