// Votes that reach a candidate after it timed out (quickCandidateRetry: it waits only half
// an election timeout) and went back to pre-voting at the same term.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Raft } from "./raft.ts";
import { newTestRaft, readMessages } from "./raft.test-helper.ts";
import { MessageType as MT, StateType, message } from "./types.ts";

/** Member 1 of `peers`, a candidate at term 1 (pre-vote won), then timed out into pre-voting at term 1. */
function timedOutCandidate(peers: number[], quickCandidateRetry: boolean): Raft {
  const r = newTestRaft(1, peers, 10, 1, undefined, { preVote: true, quickCandidateRetry });
  r.stepMessage(message({ type: MT.MsgHup }));
  for (const from of peers.slice(1, Math.floor(peers.length / 2) + 1)) r.stepMessage(message({ type: MT.MsgPreVoteResp, from, to: 1, term: 1 }));
  assert.equal(r.state, StateType.Candidate);
  assert.equal(r.term, 1);
  assert.deepEqual(
    readMessages(r).filter((m) => m.type === MT.MsgVote).map((m) => m.to),
    peers.slice(1),
  );
  for (let i = 0; i < 40 && r.state === StateType.Candidate; i++) r.tick();
  assert.equal(r.state, StateType.PreCandidate);
  assert.equal(r.term, 1);
  readMessages(r);
  return r;
}

const vote = (from: number, term: number, reject = false) => message({ type: MT.MsgVoteResp, from, to: 1, term, reject });

test("a quorum of votes for its candidacy that arrive while it pre-votes again elects it at that term", () => {
  const r = timedOutCandidate([1, 2, 3, 4, 5], true);
  r.stepMessage(vote(2, 1));
  r.stepMessage(vote(3, 1, true));
  assert.equal(r.state, StateType.PreCandidate, "itself and one vote are 2 of 5");
  r.stepMessage(vote(4, 1));
  assert.equal(r.state, StateType.Leader);
  assert.equal(r.term, 1);
  // As any new leader: its empty entry goes out at once.
  const apps = readMessages(r).filter((m) => m.type === MT.MsgApp);
  assert.deepEqual(apps.map((m) => m.to).sort(), [2, 3, 4, 5]);
  assert.ok(apps.every((m) => m.term === 1 && m.entries.length === 1));
});

test("without quick retries a late vote is dropped, as etcd's raft does", () => {
  const r = timedOutCandidate([1, 2, 3], false);
  r.stepMessage(vote(2, 1));
  assert.equal(r.state, StateType.PreCandidate);
});

test("votes of another term, or to a member that did not campaign at this term, elect nobody", () => {
  // A vote from the term before its candidacy is dropped as of a lower term.
  const r = timedOutCandidate([1, 2, 3], true);
  r.stepMessage(vote(2, 0));
  assert.equal(r.state, StateType.PreCandidate);

  // A member that voted for another at term 1 and then pre-votes at term 1 was never a
  // candidate there: a stray vote at term 1 must not make it leader.
  const f = newTestRaft(1, [1, 2, 3], 10, 1, undefined, { preVote: true, quickCandidateRetry: true });
  f.stepMessage(message({ type: MT.MsgVote, from: 2, to: 1, term: 1, logTerm: 0, index: 0 }));
  assert.equal(f.vote, 2);
  for (let i = 0; i < 40 && f.state === StateType.Follower; i++) f.tick();
  assert.equal(f.state, StateType.PreCandidate);
  f.stepMessage(vote(3, 1));
  assert.equal(f.state, StateType.PreCandidate);

  // Once its own pre-vote won and it campaigns at term 2, term-1 votes are stale.
  const c = timedOutCandidate([1, 2, 3], true);
  c.stepMessage(message({ type: MT.MsgPreVoteResp, from: 3, to: 1, term: 2 }));
  assert.equal(c.state, StateType.Candidate);
  assert.equal(c.term, 2);
  c.stepMessage(vote(2, 1));
  assert.equal(c.state, StateType.Candidate);
});
