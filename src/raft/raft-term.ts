// The Raft state machine, part 2: the role-independent head of Step() (etcd's
// raft.Step before it dispatches to r.step): term comparison (§5.1), the local
// MsgHup (start an election) and the vote requests (§5.2, §5.4.1, pre-vote §9.6,
// check-quorum leases §6 / §4.2.3).

import type { Raft } from "./raft.ts";
import { type Message, EntryType, MessageType as MT, None, StateType, message, messageTypeName, voteRespMsgType } from "./types.ts";
import { bytesEqual } from "./util.ts";

/** Why a campaign starts; CampaignTransfer is also the ctx of a forced vote. */
export const CampaignType = {
  PreElection: "CampaignPreElection",
  Election: "CampaignElection",
  Transfer: "CampaignTransfer",
} as const;
export type CampaignType = (typeof CampaignType)[keyof typeof CampaignType];

/** "CampaignTransfer" as bytes: the ctx of a vote request that overrides leases. */
export const campaignTransferCtx = new TextEncoder().encode(CampaignType.Transfer);

/**
 * Handles the message's term and the messages every role treats alike. Returns true
 * when the message must still go to the role's step function.
 */
export function handleTermAndVote(r: Raft, m: Message): boolean {
  if (m.term > r.term) {
    if (!onHigherTerm(r, m)) return false;
  } else if (m.term !== 0 && m.term < r.term) {
    onLowerTerm(r, m);
    return false;
  }
  // m.term === 0 (local message) or m.term === r.term from here on.
  switch (m.type) {
    case MT.MsgHup:
      onHup(r);
      return false;
    case MT.MsgVote:
    case MT.MsgPreVote:
      onVoteRequest(r, m);
      return false;
    default:
      return true;
  }
}

/** Returns false if the message must be ignored (vote request inside a leader lease). */
function onHigherTerm(r: Raft, m: Message): boolean {
  if (m.type === MT.MsgVote || m.type === MT.MsgPreVote) {
    const force = bytesEqual(m.context, campaignTransferCtx);
    // Leader lease: with check-quorum, a node that heard from a live leader less than
    // an election timeout ago ignores vote requests, so a partitioned node rejoining
    // with a higher term cannot depose a healthy leader. A transfer overrides it.
    const inLease = r.checkQuorum && r.lead !== None && r.electionElapsed < r.electionTimeout;
    if (!force && inLease) {
      r.logger.info(
        `${r.id} [logterm: ${r.raftLog.lastTerm()}, index: ${r.raftLog.lastIndex()}, vote: ${r.vote}] ignored ${messageTypeName(m.type)} from ${m.from} [logterm: ${m.logTerm}, index: ${m.index}] at term ${r.term}: lease is not expired (remaining ticks: ${r.electionTimeout - r.electionElapsed})`,
      );
      return false;
    }
  }
  if (m.type === MT.MsgPreVote) {
    // Never change our term because of a pre-vote.
  } else if (m.type === MT.MsgPreVoteResp && !m.reject) {
    // A granted pre-vote carries the future term we asked about; we move to that term
    // only once a quorum granted it (stepCandidate). A rejection carries the
    // rejecter's term, which is real: we fall to follower below.
  } else {
    r.logger.info(
      `${r.id} [term: ${r.term}] received a ${messageTypeName(m.type)} message with higher term from ${m.from} [term: ${m.term}]`,
    );
    const fromLeader = m.type === MT.MsgApp || m.type === MT.MsgHeartbeat || m.type === MT.MsgSnap;
    r.becomeFollower(m.term, fromLeader ? m.from : None);
  }
  return true;
}

function onLowerTerm(r: Raft, m: Message): void {
  if ((r.checkQuorum || r.preVote) && (m.type === MT.MsgHeartbeat || m.type === MT.MsgApp)) {
    // A leader of an older term is talking to us. Either the message was delayed, or we
    // advanced our term while partitioned and, since check-quorum / pre-vote stop our
    // vote requests from raising the others' terms, we would stay stuck. Answering
    // (with our term) makes that leader step down and lets a fresh election include us.
    r.send(message({ type: MT.MsgAppResp, to: m.from }));
  } else if (m.type === MT.MsgPreVote) {
    // Reject explicitly so that a pre-candidate of an old term learns the new term
    // (dropping it could deadlock clusters migrating to pre-vote).
    r.logger.info(
      `${r.id} [logterm: ${r.raftLog.lastTerm()}, index: ${r.raftLog.lastIndex()}, vote: ${r.vote}] rejected ${messageTypeName(m.type)} from ${m.from} [logterm: ${m.logTerm}, index: ${m.index}] at term ${r.term}`,
    );
    r.send(message({ type: MT.MsgPreVoteResp, to: m.from, term: r.term, reject: true }));
  } else {
    r.logger.info(
      `${r.id} [term: ${r.term}] ignored a ${messageTypeName(m.type)} message with lower term from ${m.from} [term: ${m.term}]`,
    );
  }
}

function onHup(r: Raft): void {
  if (r.state === StateType.Leader) {
    r.logger.debug(`${r.id} ignoring MsgHup because already leader`);
    return;
  }
  if (!r.promotable()) {
    r.logger.warn(`${r.id} is unpromotable and can not campaign; ignoring MsgHup`);
    return;
  }
  // A committed but unapplied conf change may change whether we are a voter: wait
  // until it is applied before campaigning.
  if (r.raftLog.committed > r.raftLog.applied) {
    const ents = r.raftLog.slice(r.raftLog.applied + 1, r.raftLog.committed + 1, Number.POSITIVE_INFINITY);
    const n = ents.filter((e) => e.type === EntryType.ConfChange).length;
    if (n !== 0) {
      r.logger.warn(
        `${r.id} cannot campaign at term ${r.term} since there are still ${n} pending configuration changes to apply`,
      );
      return;
    }
  }
  r.logger.info(`${r.id} is starting a new election at term ${r.term}`);
  r.campaign(r.preVote ? CampaignType.PreElection : CampaignType.Election);
}

function onVoteRequest(r: Raft, m: Message): void {
  // We can vote if this repeats the vote we already cast, or if we have not voted and
  // know no leader in this term, or if it is a pre-vote for a future term...
  const canVote =
    r.vote === m.from ||
    (r.vote === None && r.lead === None) ||
    (m.type === MT.MsgPreVote && m.term > r.term);
  // ...and the candidate's log is at least as up to date as ours (§5.4.1). Learners
  // vote too: a learner may have been promoted without knowing it yet.
  if (canVote && r.raftLog.isUpToDate(m.index, m.logTerm)) {
    r.logger.info(
      `${r.id} [logterm: ${r.raftLog.lastTerm()}, index: ${r.raftLog.lastIndex()}, vote: ${r.vote}] cast ${messageTypeName(m.type)} for ${m.from} [logterm: ${m.logTerm}, index: ${m.index}] at term ${r.term}`,
    );
    // The response echoes the request's term, not ours: for a pre-vote ours may be
    // lower, and the pre-candidate would ignore a response of an older term.
    r.send(message({ type: voteRespMsgType(m.type), to: m.from, term: m.term }));
    if (m.type === MT.MsgVote) {
      // Only real votes are recorded (and restart our election timer).
      r.electionElapsed = 0;
      r.vote = m.from;
    }
  } else {
    r.logger.info(
      `${r.id} [logterm: ${r.raftLog.lastTerm()}, index: ${r.raftLog.lastIndex()}, vote: ${r.vote}] rejected ${messageTypeName(m.type)} from ${m.from} [logterm: ${m.logTerm}, index: ${m.index}] at term ${r.term}`,
    );
    r.send(message({ type: voteRespMsgType(m.type), to: m.from, term: r.term, reject: true }));
  }
}
