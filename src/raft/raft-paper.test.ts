// The Raft paper's rules, section by section (etcd's raft_paper_test.go), including
// figure 7 (leader repairs divergent follower logs) and figure 8 (no commit by counting
// for entries of an older term). Whole outbound message lists are compared.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { Raft } from "./raft.ts";
import {
  Network,
  acceptAndReply,
  blackHole,
  commitNoopEntry,
  describe,
  ent,
  idsBySize,
  ltoa,
  msgs,
  mustAppendEntry,
  newStorageWithEnts,
  newTestRaft,
  readMessages,
  sortMessages,
} from "./raft.test-helper.ts";
import { MemoryStorage } from "./storage.ts";
import { type Entry, type StateType, MessageType as MT, StateType as ST, message } from "./types.ts";

const roles = [ST.Follower, ST.Candidate, ST.Leader] as const;

function inRole(r: Raft, state: StateType): void {
  if (state === ST.Follower) r.becomeFollower(1, 2);
  else if (state === ST.Candidate) r.becomeCandidate();
  else {
    r.becomeCandidate();
    r.becomeLeader();
  }
}

// §5.1: a message of a higher term updates our term and makes us follower.
for (const state of roles) {
  test(`${state} updates its term and becomes follower on a higher-term message (§5.1)`, () => {
    const r = newTestRaft(1, [1, 2, 3], 10, 1);
    inRole(r, state);
    r.stepMessage(message({ type: MT.MsgApp, term: 2 }));
    assert.equal(r.term, 2);
    assert.equal(r.state, ST.Follower);
  });
}

test("a stale-term message never reaches the step function (§5.1)", () => {
  let called = false;
  const r = newTestRaft(1, [1, 2, 3], 10, 1);
  r.step = () => {
    called = true;
  };
  r.loadState({ term: 2, vote: 0, commit: 0 });
  r.stepMessage(message({ type: MT.MsgApp, term: r.term - 1 }));
  assert.equal(called, false);
});

test("a raft starts as follower (§5.2)", () => {
  assert.equal(newTestRaft(1, [1, 2, 3], 10, 1).state, ST.Follower);
});

test("leader broadcasts heartbeats every heartbeat timeout (§5.2)", () => {
  const r = newTestRaft(1, [1, 2, 3], 10, 1);
  r.becomeCandidate();
  r.becomeLeader();
  for (let i = 0; i < 10; i++) mustAppendEntry(r, ent(0, i + 1));
  r.tick();
  assert.deepStrictEqual(
    sortMessages(readMessages(r)),
    msgs({ type: MT.MsgHeartbeat, from: 1, to: 2, term: 1 }, { type: MT.MsgHeartbeat, from: 1, to: 3, term: 1 }),
  );
});

for (const state of [ST.Follower, ST.Candidate] as const) {
  test(`${state} starts a new election after an election timeout without a leader (§5.2)`, () => {
    const r = newTestRaft(1, [1, 2, 3], 10, 1);
    inRole(r, state);
    for (let i = 1; i < 2 * 10; i++) r.tick();
    assert.equal(r.term, 2);
    assert.equal(r.state, ST.Candidate);
    assert.equal(r.prs.votes.get(r.id), true);
    assert.deepStrictEqual(
      sortMessages(readMessages(r)),
      msgs({ type: MT.MsgVote, from: 1, to: 2, term: 2 }, { type: MT.MsgVote, from: 1, to: 3, term: 2 }),
    );
  });
}

const oneRoundCases: Array<{ size: number; votes: Array<[number, boolean]>; state: StateType }> = [
  { size: 1, votes: [], state: ST.Leader },
  { size: 3, votes: [[2, true], [3, true]], state: ST.Leader },
  { size: 3, votes: [[2, true]], state: ST.Leader },
  { size: 5, votes: [[2, true], [3, true], [4, true], [5, true]], state: ST.Leader },
  { size: 5, votes: [[2, true], [3, true], [4, true]], state: ST.Leader },
  { size: 5, votes: [[2, true], [3, true]], state: ST.Leader },
  // Return to follower state if it receives a quorum of rejections.
  { size: 3, votes: [[2, false], [3, false]], state: ST.Follower },
  { size: 5, votes: [[2, false], [3, false], [4, false], [5, false]], state: ST.Follower },
  { size: 5, votes: [[2, true], [3, false], [4, false], [5, false]], state: ST.Follower },
  // Stay candidate if no quorum either way.
  { size: 3, votes: [], state: ST.Candidate },
  { size: 5, votes: [[2, true]], state: ST.Candidate },
  { size: 5, votes: [[2, false], [3, false]], state: ST.Candidate },
  { size: 5, votes: [], state: ST.Candidate },
];
for (const [i, tt] of oneRoundCases.entries()) {
  test(`candidate of ${tt.size} ends as ${tt.state} after one round of votes #${i} (§5.2)`, () => {
    const r = newTestRaft(1, idsBySize(tt.size), 10, 1);
    r.stepMessage(message({ type: MT.MsgHup, from: 1, to: 1 }));
    for (const [id, vote] of tt.votes) {
      r.stepMessage(message({ type: MT.MsgVoteResp, from: id, to: 1, term: r.term, reject: !vote }));
    }
    assert.equal(r.state, tt.state);
    assert.equal(r.term, 1);
  });
}

const followerVoteCases = [
  { vote: 0, nvote: 1, wreject: false },
  { vote: 0, nvote: 2, wreject: false },
  { vote: 1, nvote: 1, wreject: false },
  { vote: 2, nvote: 2, wreject: false },
  { vote: 1, nvote: 2, wreject: true },
  { vote: 2, nvote: 1, wreject: true },
];
for (const tt of followerVoteCases) {
  test(`follower that voted ${tt.vote} ${tt.wreject ? "rejects" : "grants"} a vote for ${tt.nvote} (§5.2 first-come-first-served)`, () => {
    const r = newTestRaft(1, [1, 2, 3], 10, 1);
    r.loadState({ term: 1, vote: tt.vote, commit: 0 });
    r.stepMessage(message({ type: MT.MsgVote, from: tt.nvote, to: 1, term: 1 }));
    assert.deepStrictEqual(readMessages(r), msgs({ type: MT.MsgVoteResp, from: 1, to: tt.nvote, term: 1, reject: tt.wreject }));
  });
}

for (const term of [1, 2]) {
  test(`candidate falls back to follower on an MsgApp of term ${term} >= its own (§5.2)`, () => {
    const r = newTestRaft(1, [1, 2, 3], 10, 1);
    r.stepMessage(message({ type: MT.MsgHup, from: 1, to: 1 }));
    assert.equal(r.state, ST.Candidate);
    r.stepMessage(message({ type: MT.MsgApp, from: 2, to: 1, term }));
    assert.equal(r.state, ST.Follower);
    assert.equal(r.term, term);
  });
}

for (const state of [ST.Follower, ST.Candidate] as const) {
  test(`${state} election timeouts are randomized over [et+1, 2et) (§5.2)`, () => {
    const et = 10;
    const r = newTestRaft(1, [1, 2, 3], et, 1);
    const timeouts = new Set<number>();
    for (let round = 0; round < 50 * et; round++) {
      if (state === ST.Follower) r.becomeFollower(r.term + 1, 2);
      else r.becomeCandidate();
      let time = 0;
      while (readMessages(r).length === 0) {
        r.tick();
        time++;
      }
      timeouts.add(time);
    }
    for (let d = et + 1; d < 2 * et; d++) assert.ok(timeouts.has(d), `timeout in ${d} ticks should happen`);
  });

  test(`${state}s of five rarely time out together (§5.2 split votes)`, () => {
    const ids = idsBySize(5);
    const rs = ids.map((id) => newTestRaft(id, ids, 10, 1));
    let conflicts = 0;
    for (let round = 0; round < 1000; round++) {
      for (const r of rs) {
        if (state === ST.Follower) r.becomeFollower(r.term + 1, 0);
        else r.becomeCandidate();
      }
      let timeoutNum = 0;
      while (timeoutNum === 0) {
        for (const r of rs) {
          r.tick();
          if (readMessages(r).length > 0) timeoutNum++;
        }
      }
      if (timeoutNum > 1) conflicts++;
    }
    assert.ok(conflicts / 1000 <= 0.3, `probability of conflicts = ${conflicts / 1000}`);
  });
}

function newLeaderWithNoop(size = 3): { r: Raft; s: MemoryStorage; li: number } {
  const s = new MemoryStorage();
  const r = newTestRaft(1, idsBySize(size), 10, 1, s);
  r.becomeCandidate();
  r.becomeLeader();
  commitNoopEntry(r, s);
  return { r, s, li: r.raftLog.lastIndex() };
}

const propose = (r: Raft, data = "some data"): void =>
  r.stepMessage(message({ type: MT.MsgProp, from: 1, to: 1, entries: [ent(0, 0, data)] }));

test("leader appends a proposal and sends MsgApp to every follower (§5.3)", () => {
  const { r, li } = newLeaderWithNoop();
  propose(r);
  assert.equal(r.raftLog.lastIndex(), li + 1);
  assert.equal(r.raftLog.committed, li);
  const wents = [ent(1, li + 1, "some data")];
  assert.deepStrictEqual(
    sortMessages(readMessages(r)),
    msgs(
      { type: MT.MsgApp, from: 1, to: 2, term: 1, index: li, logTerm: 1, entries: wents, commit: li },
      { type: MT.MsgApp, from: 1, to: 3, term: 1, index: li, logTerm: 1, entries: wents, commit: li },
    ),
  );
  assert.deepStrictEqual(r.raftLog.unstableEntries(), wents);
});

test("leader commits once a majority acknowledged, and tells followers (§5.3)", () => {
  const { r, li } = newLeaderWithNoop();
  propose(r);
  for (const m of readMessages(r)) r.stepMessage(acceptAndReply(m));
  assert.equal(r.raftLog.committed, li + 1);
  assert.deepStrictEqual(r.raftLog.nextEnts(), [ent(1, li + 1, "some data")]);
  const out = sortMessages(readMessages(r));
  assert.deepStrictEqual(
    out.map((m) => [m.to, m.type, m.commit]),
    [
      [2, MT.MsgApp, li + 1],
      [3, MT.MsgApp, li + 1],
    ],
  );
});

const ackCases = [
  { size: 1, acceptors: [], wack: true },
  { size: 3, acceptors: [], wack: false },
  { size: 3, acceptors: [2], wack: true },
  { size: 3, acceptors: [2, 3], wack: true },
  { size: 5, acceptors: [], wack: false },
  { size: 5, acceptors: [2], wack: false },
  { size: 5, acceptors: [2, 3], wack: true },
  { size: 5, acceptors: [2, 3, 4], wack: true },
  { size: 5, acceptors: [2, 3, 4, 5], wack: true },
];
for (const tt of ackCases) {
  test(`leader of ${tt.size} with acks from [${tt.acceptors.join(",")}] ${tt.wack ? "commits" : "does not commit"} (§5.3)`, () => {
    const { r, li } = newLeaderWithNoop(tt.size);
    propose(r);
    for (const m of readMessages(r)) if (tt.acceptors.includes(m.to)) r.stepMessage(acceptAndReply(m));
    assert.equal(r.raftLog.committed > li, tt.wack);
  });
}

const precedingCases: Entry[][] = [[], [ent(2, 1)], [ent(1, 1), ent(2, 2)], [ent(1, 1)]];
for (const [i, tt] of precedingCases.entries()) {
  test(`leader commits preceding entries with its own #${i} (§5.3)`, () => {
    const storage = newStorageWithEnts(tt);
    const r = newTestRaft(1, [1, 2, 3], 10, 1, storage);
    r.loadState({ term: 2, vote: 0, commit: 0 });
    r.becomeCandidate();
    r.becomeLeader();
    propose(r);
    for (const m of readMessages(r)) r.stepMessage(acceptAndReply(m));
    const li = tt.length;
    assert.deepStrictEqual(r.raftLog.nextEnts(), [...tt, ent(3, li + 1), ent(3, li + 2, "some data")]);
  });
}

const followerCommitCases = [
  { ents: [ent(1, 1, "some data")], commit: 1 },
  { ents: [ent(1, 1, "some data"), ent(1, 2, "some data2")], commit: 2 },
  { ents: [ent(1, 1, "some data2"), ent(1, 2, "some data")], commit: 2 },
  { ents: [ent(1, 1, "some data"), ent(1, 2, "some data2")], commit: 1 },
];
for (const [i, tt] of followerCommitCases.entries()) {
  test(`follower commits up to the leader's commit index #${i} (§5.3)`, () => {
    const r = newTestRaft(1, [1, 2, 3], 10, 1);
    r.becomeFollower(1, 2);
    r.stepMessage(message({ type: MT.MsgApp, from: 2, to: 1, term: 1, entries: tt.ents, commit: tt.commit }));
    assert.equal(r.raftLog.committed, tt.commit);
    assert.deepStrictEqual(r.raftLog.nextEnts(), tt.ents.slice(0, tt.commit));
  });
}

const checkAppCases = [
  // Match with committed entries.
  { term: 0, index: 0, windex: 1, wreject: false, wrejectHint: 0 },
  { term: 1, index: 1, windex: 1, wreject: false, wrejectHint: 0 },
  // Match with uncommitted entries.
  { term: 2, index: 2, windex: 2, wreject: false, wrejectHint: 0 },
  // Unmatch with existing entry.
  { term: 1, index: 2, windex: 2, wreject: true, wrejectHint: 2 },
  // Unexisting entry.
  { term: 3, index: 3, windex: 3, wreject: true, wrejectHint: 2 },
];
for (const [i, tt] of checkAppCases.entries()) {
  test(`follower ${tt.wreject ? "rejects" : "accepts"} MsgApp at (${tt.index}, ${tt.term}) by the consistency check #${i} (§5.3)`, () => {
    const r = newTestRaft(1, [1, 2, 3], 10, 1, newStorageWithEnts([ent(1, 1), ent(2, 2)]));
    r.loadState({ term: 0, vote: 0, commit: 1 });
    r.becomeFollower(2, 2);
    r.stepMessage(message({ type: MT.MsgApp, from: 2, to: 1, term: 2, logTerm: tt.term, index: tt.index }));
    assert.deepStrictEqual(
      readMessages(r),
      msgs({ type: MT.MsgAppResp, from: 1, to: 2, term: 2, index: tt.windex, reject: tt.wreject, rejectHint: tt.wrejectHint }),
    );
  });
}

const appendCases = [
  { index: 2, term: 2, ents: [ent(3, 3)], wents: [ent(1, 1), ent(2, 2), ent(3, 3)], wunstable: [ent(3, 3)] },
  { index: 1, term: 1, ents: [ent(3, 2), ent(4, 3)], wents: [ent(1, 1), ent(3, 2), ent(4, 3)], wunstable: [ent(3, 2), ent(4, 3)] },
  { index: 0, term: 0, ents: [ent(1, 1)], wents: [ent(1, 1), ent(2, 2)], wunstable: [] },
  { index: 0, term: 0, ents: [ent(3, 1)], wents: [ent(3, 1)], wunstable: [ent(3, 1)] },
];
for (const [i, tt] of appendCases.entries()) {
  test(`follower deletes conflicting entries and appends new ones #${i} (§5.3)`, () => {
    const r = newTestRaft(1, [1, 2, 3], 10, 1, newStorageWithEnts([ent(1, 1), ent(2, 2)]));
    r.becomeFollower(2, 2);
    r.stepMessage(message({ type: MT.MsgApp, from: 2, to: 1, term: 2, logTerm: tt.term, index: tt.index, entries: tt.ents }));
    assert.deepStrictEqual(r.raftLog.allEntries(), tt.wents);
    assert.deepStrictEqual(r.raftLog.unstableEntries(), tt.wunstable);
  });
}

// Figure 7: the leader's log (term 8) and six possible follower logs (a)-(f).
const fig7Leader = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6];
const fig7Followers: Record<string, number[]> = {
  a: [1, 1, 1, 4, 4, 5, 5, 6, 6],
  b: [1, 1, 1, 4],
  c: [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6],
  d: [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7],
  e: [1, 1, 1, 4, 4, 4, 4],
  f: [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3],
};
for (const [name, terms] of Object.entries(fig7Followers)) {
  test(`leader brings follower (${name}) of figure 7 to its own log (§5.3)`, () => {
    const term = 8;
    const toEnts = (ts: number[]): Entry[] => ts.map((t, i) => ent(t, i + 1));
    const lead = newTestRaft(1, [1, 2, 3], 10, 1, newStorageWithEnts(toEnts(fig7Leader)));
    lead.loadState({ term, vote: 0, commit: lead.raftLog.lastIndex() });
    const follower = newTestRaft(2, [1, 2, 3], 10, 1, newStorageWithEnts(toEnts(terms)));
    follower.loadState({ term: term - 1, vote: 0, commit: 0 });
    // The third node grants its vote so that the leader wins; the follower's vote
    // depends on whose log is more up to date.
    const n = new Network([lead, follower, blackHole]);
    n.send(message({ type: MT.MsgHup, from: 1, to: 1 }));
    n.send(message({ type: MT.MsgVoteResp, from: 3, to: 1, term: term + 1 }));
    n.send(message({ type: MT.MsgProp, from: 1, to: 1, entries: [ent(0, 0)] }));
    assert.equal(ltoa(follower), ltoa(lead));
  });
}

const voteRequestCases = [
  { ents: [ent(1, 1)], wterm: 2 },
  { ents: [ent(1, 1), ent(2, 2)], wterm: 3 },
];
for (const [j, tt] of voteRequestCases.entries()) {
  test(`vote requests carry the candidate's last log index and term #${j} (§5.4.1)`, () => {
    const r = newTestRaft(1, [1, 2, 3], 10, 1);
    r.stepMessage(message({ type: MT.MsgApp, from: 2, to: 1, term: tt.wterm - 1, entries: tt.ents }));
    readMessages(r);
    for (let i = 1; i < r.electionTimeout * 2; i++) r.tickElection();
    const last = tt.ents[tt.ents.length - 1]!;
    assert.deepStrictEqual(
      sortMessages(readMessages(r)),
      msgs(
        { type: MT.MsgVote, from: 1, to: 2, term: tt.wterm, index: last.index, logTerm: last.term },
        { type: MT.MsgVote, from: 1, to: 3, term: tt.wterm, index: last.index, logTerm: last.term },
      ),
    );
  });
}

const voterCases = [
  // Same logterm.
  { ents: [ent(1, 1)], logterm: 1, index: 1, wreject: false },
  { ents: [ent(1, 1)], logterm: 1, index: 2, wreject: false },
  { ents: [ent(1, 1), ent(1, 2)], logterm: 1, index: 1, wreject: true },
  // Candidate higher logterm.
  { ents: [ent(1, 1)], logterm: 2, index: 1, wreject: false },
  { ents: [ent(1, 1)], logterm: 2, index: 2, wreject: false },
  { ents: [ent(1, 1), ent(1, 2)], logterm: 2, index: 1, wreject: false },
  // Voter higher logterm.
  { ents: [ent(2, 1)], logterm: 1, index: 1, wreject: true },
  { ents: [ent(2, 1)], logterm: 1, index: 2, wreject: true },
  { ents: [ent(2, 1), ent(1, 2)], logterm: 1, index: 1, wreject: true },
];
for (const [i, tt] of voterCases.entries()) {
  test(`voter ${tt.wreject ? "rejects" : "grants"} a candidate whose log is ${tt.wreject ? "behind" : "up to date"} #${i} (§5.4.1)`, () => {
    const r = newTestRaft(1, [1, 2], 10, 1, newStorageWithEnts(tt.ents));
    r.stepMessage(message({ type: MT.MsgVote, from: 2, to: 1, term: 3, logTerm: tt.logterm, index: tt.index }));
    const out = readMessages(r);
    assert.equal(out.length, 1, describe(out));
    assert.equal(out[0]!.type, MT.MsgVoteResp);
    assert.equal(out[0]!.reject, tt.wreject);
  });
}

const currentTermCases = [
  // Do not commit log entries in previous terms.
  { index: 1, wcommit: 0 },
  { index: 2, wcommit: 0 },
  // Commit log in current term.
  { index: 3, wcommit: 3 },
];
for (const tt of currentTermCases) {
  test(`leader commits by counting only entries of its current term, ack at ${tt.index} (§5.4.2)`, () => {
    const r = newTestRaft(1, [1, 2], 10, 1, newStorageWithEnts([ent(1, 1), ent(2, 2)]));
    r.loadState({ term: 2, vote: 0, commit: 0 });
    r.becomeCandidate();
    r.becomeLeader();
    readMessages(r);
    r.stepMessage(message({ type: MT.MsgProp, from: 1, to: 1, entries: [ent(0, 0)] }));
    r.stepMessage(message({ type: MT.MsgAppResp, from: 2, to: 1, term: r.term, index: tt.index }));
    assert.equal(r.raftLog.committed, tt.wcommit);
  });
}

test("figure 8: an old-term entry on a majority is not committed until a current-term entry is (§5.4.2)", () => {
  // (a) S1 leads term 2 and replicates index 2 to S2 only.
  const n = new Network([undefined, undefined, undefined, undefined, undefined]);
  n.send(message({ type: MT.MsgHup, from: 1, to: 1 }));
  const s1 = n.raft(1);
  assert.equal(s1.state, ST.Leader);
  for (const id of [3, 4, 5]) n.cut(1, id);
  n.send(message({ type: MT.MsgProp, from: 1, to: 1, entries: [ent(0, 0, "term1-entry")] }));
  const idx = s1.raftLog.lastIndex();
  assert.equal(n.raft(2).raftLog.lastIndex(), idx);
  assert.ok(s1.raftLog.committed < idx);
  // (b) S1 crashes; S5 is elected by S3, S4 (and itself) but its entries reach nobody.
  n.recover();
  n.isolate(1);
  n.cut(5, 2);
  n.ignore(MT.MsgApp);
  n.send(message({ type: MT.MsgHup, from: 5, to: 5 }));
  const s5 = n.raft(5);
  assert.equal(s5.state, ST.Leader);
  n.send(message({ type: MT.MsgProp, from: 5, to: 5, entries: [ent(0, 0, "s5-entry")] }));
  // (c) S5 crashes; S1 restarts and is elected by S2, S3 (S3 voted for S5 in S5's term,
  // so it takes S1 a second campaign) and replicates its old-term entry to S3.
  n.recover();
  n.isolate(5);
  n.cut(1, 4);
  s1.becomeFollower(s1.term, 0); // the restart: S1 lost its leadership
  n.send(message({ type: MT.MsgHup, from: 1, to: 1 }));
  n.send(message({ type: MT.MsgHup, from: 1, to: 1 }));
  assert.equal(s1.state, ST.Leader);
  // The old-term entry is committed only together with S1's new-term entry (the empty
  // entry of its election), which the majority {1,2,3} holds as well.
  const term = s1.term;
  const committed = s1.raftLog.committed;
  assert.ok(committed > idx, `committed ${committed} <= ${idx}`);
  assert.equal(s1.raftLog.zeroTermOnErrCompacted(committed), term, "commit point is an entry of the current term");
  // (d/e) S5 can no longer be elected and overwrite it: its log is behind the majority's.
  n.recover();
  n.isolate(1);
  s5.becomeFollower(s5.term, 0); // S5 restarts
  n.send(message({ type: MT.MsgHup, from: 5, to: 5 }));
  n.send(message({ type: MT.MsgHup, from: 5, to: 5 }));
  assert.notEqual(s5.state, ST.Leader);
  const fromS1 = new TextDecoder().decode(n.raft(3).raftLog.slice(idx, idx + 1, Infinity)[0]!.data);
  assert.equal(fromS1, "term1-entry");
});

test("figure 8 message lists: the leader's commit only advances on a current-term ack", () => {
  const r = newTestRaft(1, [1, 2, 3], 10, 1, newStorageWithEnts([ent(1, 1), ent(2, 2)]));
  r.loadState({ term: 3, vote: 0, commit: 1 });
  r.becomeCandidate();
  r.becomeLeader();
  assert.equal(r.term, 4);
  readMessages(r);
  // Index 2 (term 2) acked by a majority: still not committed.
  r.stepMessage(message({ type: MT.MsgAppResp, from: 2, to: 1, term: 4, index: 2 }));
  assert.equal(r.raftLog.committed, 1);
  // Index 3 (term 4, the empty entry) acked: 2 and 3 commit together.
  r.stepMessage(message({ type: MT.MsgAppResp, from: 2, to: 1, term: 4, index: 3 }));
  assert.equal(r.raftLog.committed, 3);
  assert.deepStrictEqual(
    sortMessages(readMessages(r)).filter((m) => m.to === 3),
    // 3 was never probed: it gets the entries after index 2 and the new commit index.
    msgs({ type: MT.MsgApp, from: 1, to: 3, term: 4, index: 2, logTerm: 2, entries: [ent(4, 3)], commit: 3 }),
  );
});
