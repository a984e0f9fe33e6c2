// The Raft state machine, part 3: the role-specific step functions (etcd's stepLeader,
// stepCandidate, stepFollower). Exactly one of them sits in Raft.step at any time; the
// become* transitions swap it. Messages reach them after raft-term.ts handled the
// term, so m.term is 0 (local) or equal to r.term here.

import { ProposalDroppedError } from "./errors.ts";
import { VoteResult, voteResult } from "./quorum/majority.ts";
import type { Raft } from "./raft.ts";
import { handleAppendEntries, handleHeartbeat, handleSnapshot } from "./raft-handlers.ts";
import { CampaignType } from "./raft-term.ts";
import { releasePendingReadIndexMessages, sendReadIndexResponse, responseToReadIndexReq, onHeartbeatAckForReads } from "./read-index.ts";
import { ProgressState } from "./tracker/progress.ts";
import { type Entry, type Message, EntryType, MessageType as MT, None, StateType, messageTypeName } from "./types.ts";

/** A role's behaviour. Throws ProposalDroppedError for a proposal it cannot accept. */
export type StepFn = (r: Raft, m: Message) => void;

export function stepLeader(r: Raft, m: Message): void {
  // Messages that need no progress for m.from.
  switch (m.type) {
    case MT.MsgBeat:
      r.bcastHeartbeat();
      return;
    case MT.MsgCheckQuorum: {
      // We count as active ourselves (if still a member at all).
      const self = r.prs.progress.get(r.id);
      if (self !== undefined) self.recentActive = true;
      if (!r.prs.quorumActive()) {
        r.logger.warn(`${r.id} stepped down to follower since quorum is not active`);
        r.becomeFollower(r.term, None);
      }
      // Everyone but us must prove liveness again before the next check.
      r.prs.visit((id, pr) => {
        if (id !== r.id) pr.recentActive = false;
      });
      return;
    }
    case MT.MsgProp:
      leaderPropose(r, m);
      return;
    case MT.MsgReadIndex:
      if (r.prs.isSingleton()) {
        // Only one voter (us): our commit index is trivially confirmed.
        const resp = responseToReadIndexReq(r, m, r.raftLog.committed);
        if (resp !== undefined) r.send(resp);
        return;
      }
      // Until an entry of our term is committed, our commit index may lag behind the
      // real one (§6.4): park the request until then.
      if (!r.committedEntryInCurrentTerm()) {
        r.pendingReadIndexMessages.push(m);
        return;
      }
      sendReadIndexResponse(r, m);
      return;
  }

  // All other messages need the sender's progress.
  const pr = r.prs.progress.get(m.from);
  if (pr === undefined) {
    r.logger.debug(`${r.id} no progress available for ${m.from}`);
    return;
  }
  switch (m.type) {
    case MT.MsgAppResp:
      pr.recentActive = true;
      if (m.reject) {
        r.logger.debug(
          `${r.id} received MsgAppResp(MsgApp was rejected, lastindex: ${m.rejectHint}) from ${m.from} for index ${m.index}`,
        );
        if (pr.maybeDecrTo(m.index, m.rejectHint)) {
          r.logger.debug(`${r.id} decreased progress of ${m.from} to [${pr.toString()}]`);
          if (pr.state === ProgressState.Replicate) pr.becomeProbe();
          r.sendAppend(m.from);
        }
        return;
      }
      {
        const oldPaused = pr.isPaused();
        if (!pr.maybeUpdate(m.index)) return;
        if (pr.state === ProgressState.Probe) {
          pr.becomeReplicate();
        } else if (pr.state === ProgressState.Snapshot && pr.match >= pr.pendingSnapshot) {
          // The follower caught up past the snapshot: back to replicating (through
          // probe, which accounts for the snapshot index).
          r.logger.debug(`${r.id} recovered from needing snapshot, resumed sending replication messages to ${m.from} [${pr.toString()}]`);
          pr.becomeProbe();
          pr.becomeReplicate();
        } else if (pr.state === ProgressState.Replicate) {
          pr.inflights.freeLE(m.index);
        }
        if (r.maybeCommit()) {
          // An entry of our term just committed: parked reads can be served now.
          releasePendingReadIndexMessages(r);
          r.bcastAppend();
        } else if (oldPaused) {
          // The follower was paused and may have missed our commit index.
          r.sendAppend(m.from);
        }
        // Flow control may have opened: send as much as the window allows, but no
        // empty MsgApps.
        while (r.maybeSendAppend(m.from, { sendIfEmpty: false })) {
          // keep sending
        }
        if (m.from === r.leadTransferee && pr.match === r.raftLog.lastIndex()) {
          r.logger.info(`${r.id} sent MsgTimeoutNow to ${m.from} after received MsgAppResp`);
          r.sendTimeoutNow(m.from);
        }
      }
      return;
    case MT.MsgHeartbeatResp:
      pr.recentActive = true;
      pr.probeSent = false;
      // A full window could be the result of lost MsgApps: free one slot per heartbeat
      // response so replication keeps moving.
      if (pr.state === ProgressState.Replicate && pr.inflights.full()) pr.inflights.freeFirstOne();
      if (pr.match < r.raftLog.lastIndex()) r.sendAppend(m.from);
      onHeartbeatAckForReads(r, m);
      return;
    case MT.MsgSnapStatus:
      if (pr.state !== ProgressState.Snapshot) return;
      if (!m.reject) {
        pr.becomeProbe();
        r.logger.debug(`${r.id} snapshot succeeded, resumed sending replication messages to ${m.from} [${pr.toString()}]`);
      } else {
        // Clear pendingSnapshot first, or probing would start after a snapshot the
        // follower never applied.
        pr.pendingSnapshot = 0;
        pr.becomeProbe();
        r.logger.debug(`${r.id} snapshot failed, resumed sending replication messages to ${m.from} [${pr.toString()}]`);
      }
      // Success: wait for the follower's MsgAppResp. Failure: wait a heartbeat.
      pr.probeSent = true;
      return;
    case MT.MsgUnreachable:
      // While pipelining, an unreachable peer most likely lost an MsgApp.
      if (pr.state === ProgressState.Replicate) pr.becomeProbe();
      r.logger.debug(`${r.id} failed to send message to ${m.from} because it is unreachable [${pr.toString()}]`);
      return;
    case MT.MsgTransferLeader:
      leaderTransfer(r, m.from);
      return;
  }
}

function leaderPropose(r: Raft, m: Message): void {
  if (m.entries.length === 0) throw new ProposalDroppedError(`${r.id} stepped empty MsgProp`);
  // Removed from the configuration while leading: accept nothing new.
  if (!r.prs.progress.has(r.id)) throw new ProposalDroppedError();
  if (r.leadTransferee !== None) {
    r.logger.debug(`${r.id} [term ${r.term}] transfer leadership to ${r.leadTransferee} is in progress; dropping proposal`);
    throw new ProposalDroppedError();
  }
  const ents: Entry[] = m.entries.map((e, i) => {
    if (e.type !== EntryType.ConfChange) return e;
    // One conf change at a time (single-step changes are only safe one by one): a
    // second one while one is unapplied becomes an empty normal entry, as in etcd.
    if (r.pendingConfIndex > r.raftLog.applied) {
      r.logger.info(
        `${r.id} ignoring conf change at index ${r.raftLog.lastIndex() + i + 1}: possible unapplied conf change at index ${r.pendingConfIndex} (applied to ${r.raftLog.applied})`,
      );
      return { term: 0, index: 0, type: EntryType.Normal, data: new Uint8Array(0) };
    }
    r.pendingConfIndex = r.raftLog.lastIndex() + i + 1;
    return e;
  });
  r.appendEntry(ents);
  r.bcastAppend();
}

function leaderTransfer(r: Raft, transferee: number): void {
  const pr = r.prs.progress.get(transferee)!;
  if (pr.isLearner) {
    r.logger.debug(`${r.id} is learner. Ignored transferring leadership`);
    return;
  }
  const last = r.leadTransferee;
  if (last !== None) {
    if (last === transferee) {
      r.logger.info(`${r.id} [term ${r.term}] transfer leadership to ${transferee} is in progress, ignores request to same node ${transferee}`);
      return;
    }
    r.abortLeaderTransfer();
    r.logger.info(`${r.id} [term ${r.term}] abort previous transferring leadership to ${last}`);
  }
  if (transferee === r.id) {
    r.logger.debug(`${r.id} is already leader. Ignored transferring leadership to self`);
    return;
  }
  r.logger.info(`${r.id} [term ${r.term}] starts to transfer leadership to ${transferee}`);
  // The transfer must finish within one election timeout (tickHeartbeat aborts it).
  r.electionElapsed = 0;
  r.leadTransferee = transferee;
  if (pr.match === r.raftLog.lastIndex()) {
    r.sendTimeoutNow(transferee);
    r.logger.info(`${r.id} sends MsgTimeoutNow to ${transferee} immediately as ${transferee} already has up-to-date log`);
  } else {
    // Catch it up first; MsgTimeoutNow follows its MsgAppResp.
    r.sendAppend(transferee);
  }
}

/** Shared by StateCandidate and StatePreCandidate. */
export function stepCandidate(r: Raft, m: Message): void {
  // Only count responses to our own kind of campaign: a candidate may still receive
  // stale pre-vote responses of this term.
  const myVoteRespType = r.state === StateType.PreCandidate ? MT.MsgPreVoteResp : MT.MsgVoteResp;
  switch (m.type) {
    case MT.MsgProp:
      r.logger.info(`${r.id} no leader at term ${r.term}; dropping proposal`);
      throw new ProposalDroppedError();
    case MT.MsgApp:
      // A leader exists for our term (m.term === r.term): concede (§5.2).
      r.becomeFollower(m.term, m.from);
      handleAppendEntries(r, m);
      return;
    case MT.MsgHeartbeat:
      r.becomeFollower(m.term, m.from);
      handleHeartbeat(r, m);
      return;
    case MT.MsgSnap:
      r.becomeFollower(m.term, m.from);
      handleSnapshot(r, m);
      return;
    case myVoteRespType: {
      const { granted, rejected, result } = r.poll(m.from, m.type, !m.reject);
      r.logger.info(`${r.id} has received ${granted} ${messageTypeName(m.type)} votes and ${rejected} vote rejections`);
      if (result === VoteResult.Won) {
        if (r.state === StateType.PreCandidate) {
          r.campaign(CampaignType.Election);
        } else {
          r.becomeLeader();
          r.bcastAppend();
        }
      } else if (result === VoteResult.Lost) {
        // A pre-vote response carries our future term: stay at r.term.
        r.becomeFollower(r.term, None);
      }
      return;
    }
    case MT.MsgVoteResp:
      if (r.state === StateType.PreCandidate) lateVote(r, m);
      return;
    case MT.MsgTimeoutNow:
      r.logger.debug(`${r.id} [term ${r.term} state ${r.state}] ignored MsgTimeoutNow from ${m.from}`);
      return;
  }
}

/**
 * An answer to this member's candidacy that came after it had timed out and gone back to
 * pre-voting at the same term (quickCandidateRetry: a candidate waits only half an
 * election timeout, less than one vote round trip on a loaded machine, where every late
 * vote was dropped and the next round lost the same way). A quorum of them elects it at
 * that term: each voter persisted its vote for this member at this term before
 * answering, and this member still votes for itself, so no other member can win the
 * term; its log cannot have changed since it asked (entries come only from a leader of
 * this term, which cannot exist, or of a later one, which would have moved its term).
 */
function lateVote(r: Raft, m: Message): void {
  const c = r.candidacyVotes;
  if (c === undefined || c.term !== r.term || m.term !== r.term || r.vote !== r.id) return;
  if (!c.votes.has(m.from)) c.votes.set(m.from, !m.reject);
  r.logger.info(`${r.id} received late ${messageTypeName(m.type)}${m.reject ? " rejection" : ""} from ${m.from} at term ${r.term}`);
  if (voteResult(r.prs.voters, c.votes) !== VoteResult.Won) return;
  r.candidacyVotes = undefined;
  r.logger.info(`${r.id} has a quorum of late ${messageTypeName(m.type)} votes at term ${r.term}`);
  r.becomeLeader();
  r.bcastAppend();
}

export function stepFollower(r: Raft, m: Message): void {
  switch (m.type) {
    case MT.MsgProp:
      if (r.lead === None) {
        r.logger.info(`${r.id} no leader at term ${r.term}; dropping proposal`);
        throw new ProposalDroppedError();
      }
      if (r.disableProposalForwarding) {
        r.logger.info(`${r.id} not forwarding to leader ${r.lead} at term ${r.term}; dropping proposal`);
        throw new ProposalDroppedError();
      }
      r.send({ ...m, to: r.lead });
      return;
    case MT.MsgApp:
      r.electionElapsed = 0;
      r.lead = m.from;
      handleAppendEntries(r, m);
      return;
    case MT.MsgHeartbeat:
      r.electionElapsed = 0;
      r.lead = m.from;
      handleHeartbeat(r, m);
      return;
    case MT.MsgSnap:
      r.electionElapsed = 0;
      r.lead = m.from;
      handleSnapshot(r, m);
      return;
    case MT.MsgTransferLeader:
      if (r.lead === None) {
        r.logger.info(`${r.id} no leader at term ${r.term}; dropping leader transfer msg`);
        return;
      }
      r.send({ ...m, to: r.lead });
      return;
    case MT.MsgTimeoutNow:
      if (r.promotable()) {
        r.logger.info(`${r.id} [term ${r.term}] received MsgTimeoutNow from ${m.from} and starts an election to get leadership.`);
        // No pre-vote for a transfer: the leader asked for it, there is no partition
        // to protect against.
        r.campaign(CampaignType.Transfer);
      } else {
        r.logger.info(`${r.id} received MsgTimeoutNow from ${m.from} but is not promotable`);
      }
      return;
    case MT.MsgReadIndex:
      if (r.lead === None) {
        r.logger.info(`${r.id} no leader at term ${r.term}; dropping index reading msg`);
        return;
      }
      r.send({ ...m, to: r.lead });
      return;
    case MT.MsgReadIndexResp:
      if (m.entries.length !== 1) {
        r.logger.error(`${r.id} invalid format of MsgReadIndexResp from ${m.from}, entries count: ${m.entries.length}`);
        return;
      }
      r.readStates.push({ index: m.index, requestCtx: m.entries[0]!.data });
      return;
  }
}
