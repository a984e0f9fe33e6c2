// etcd's raft_test.go, selected: elections (pre-vote, check-quorum, partitions),
// replication through a proxy, commit counting, ReadIndex, leadership transfer and
// membership changes — over the synchronous in-memory network.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { Raft } from "./raft.ts";
import {
  Network,
  blackHole,
  bytes,
  ent,
  hup,
  newStorageWithEnts,
  newTestRaft,
  propMsg,
  readMessages,
} from "./raft.test-helper.ts";
import { MemoryStorage } from "./storage.ts";
import { ProgressState } from "./tracker/progress.ts";
import { type StateType, ConfChangeType, MessageType as MT, StateType as ST, message } from "./types.ts";

function cluster(n: number, extra: { preVote?: boolean; checkQuorum?: boolean } = {}): Network {
  return new Network(
    Array.from({ length: n }, () => undefined),
    { config: (c) => Object.assign(c, extra) },
  );
}

const electionCases: Array<{ peers: Array<typeof blackHole | undefined>; state: StateType; term: number }> = [
  { peers: [undefined, undefined, undefined], state: ST.Leader, term: 1 },
  { peers: [undefined, undefined, blackHole], state: ST.Leader, term: 1 },
  { peers: [undefined, blackHole, blackHole], state: ST.Candidate, term: 1 },
  { peers: [undefined, blackHole, blackHole, undefined], state: ST.Candidate, term: 1 },
  { peers: [undefined, blackHole, blackHole, undefined, undefined], state: ST.Leader, term: 1 },
];
for (const preVote of [false, true]) {
  for (const [i, tt] of electionCases.entries()) {
    // With pre-vote a candidate without a quorum stays pre-candidate at its old term.
    const want = preVote && tt.state === ST.Candidate ? ST.PreCandidate : tt.state;
    const wterm = preVote && tt.state === ST.Candidate ? 0 : tt.term;
    test(`election among ${tt.peers.length} with ${tt.peers.filter((p) => p === blackHole).length} dead ends ${want}${preVote ? " (pre-vote)" : ""} #${i}`, () => {
      const nt = new Network(tt.peers, { config: (c) => Object.assign(c, { preVote }) });
      nt.send(hup(1));
      assert.equal(nt.raft(1).state, want);
      assert.equal(nt.raft(1).term, wterm);
    });
  }
}

test("each node of a cluster can become leader in turn, the others follow", () => {
  for (const preVote of [false, true]) {
    const nt = cluster(3, { preVote });
    for (let campaigner = 1; campaigner <= 3; campaigner++) {
      nt.send(hup(campaigner));
      for (let id = 1; id <= 3; id++) {
        assert.equal(nt.raft(id).state, id === campaigner ? ST.Leader : ST.Follower, `campaigner ${campaigner} peer ${id}`);
      }
    }
  }
});

test("dueling candidates: the one with the stale log cannot win (§5.4.1)", () => {
  const nt = cluster(3);
  nt.cut(1, 3);
  nt.send(hup(1));
  nt.send(hup(3));
  assert.equal(nt.raft(1).state, ST.Leader);
  assert.equal(nt.raft(3).state, ST.Candidate);
  nt.recover();
  // 3 campaigns at a higher term; 1 and 2 have a longer log and reject it.
  nt.send(hup(3));
  assert.equal(nt.raft(1).state, ST.Follower);
  assert.equal(nt.raft(3).state, ST.Follower);
  assert.equal(nt.raft(3).term, 2);
  assert.equal(nt.raft(1).raftLog.committed, 1);
});

test("dueling pre-candidates: the stale one stays follower without raising terms", () => {
  const nt = cluster(3, { preVote: true });
  nt.cut(1, 3);
  nt.send(hup(1));
  nt.send(hup(3));
  assert.equal(nt.raft(1).state, ST.Leader);
  assert.equal(nt.raft(3).state, ST.Follower);
  nt.recover();
  nt.send(hup(3));
  assert.equal(nt.raft(1).state, ST.Leader);
  assert.equal(nt.raft(3).state, ST.Follower);
  assert.equal(nt.raft(1).term, 1);
});

test("a candidate concedes to a leader of its term and catches up", () => {
  const nt = cluster(3);
  nt.isolate(1);
  nt.send(hup(1));
  nt.send(hup(3));
  nt.recover();
  nt.send(message({ type: MT.MsgBeat, from: 3, to: 3 }));
  nt.send(propMsg(3, 3, "force follower"));
  nt.send(message({ type: MT.MsgBeat, from: 3, to: 3 }));
  assert.equal(nt.raft(1).state, ST.Follower);
  assert.equal(nt.raft(1).term, 1);
  assert.equal(nt.raft(1).raftLog.committed, 2);
});

test("messages of old terms are ignored and do not change the log", () => {
  const nt = cluster(3);
  nt.send(hup(1));
  nt.send(hup(2));
  nt.send(hup(1));
  // An MsgApp from 2 when it led term 2, delivered late: ignored.
  nt.send(message({ type: MT.MsgApp, from: 2, to: 1, term: 2, entries: [ent(2, 3)] }));
  nt.send(propMsg(1, 1));
  const l = nt.raft(1).raftLog;
  assert.deepStrictEqual(
    l.allEntries().map((e) => e.term),
    [1, 2, 3, 3],
  );
});

test("a follower forwards a proposal to the leader, which commits it everywhere", () => {
  const nt = cluster(3);
  nt.send(hup(1));
  nt.send(propMsg(2, 2));
  for (let id = 1; id <= 3; id++) assert.equal(nt.raft(id).raftLog.committed, 2);
});

test("a proposal with no leader is dropped, not queued", () => {
  const r = newTestRaft(1, [1, 2, 3], 10, 1);
  assert.throws(() => r.stepMessage(propMsg(1, 1)), { code: "ERR_PROPOSAL_DROPPED" });
  assert.deepStrictEqual(readMessages(r), []);
});

const commitCases = [
  // single
  { matches: [1], logs: [1], smTerm: 1, w: 1 },
  { matches: [1], logs: [1], smTerm: 2, w: 0 },
  { matches: [2], logs: [1, 2], smTerm: 2, w: 2 },
  { matches: [1], logs: [2], smTerm: 2, w: 1 },
  // odd
  { matches: [2, 1, 1], logs: [1, 2], smTerm: 1, w: 1 },
  { matches: [2, 1, 1], logs: [1, 1], smTerm: 2, w: 0 },
  { matches: [2, 1, 2], logs: [1, 2], smTerm: 2, w: 2 },
  { matches: [2, 1, 2], logs: [1, 1], smTerm: 2, w: 0 },
  // even
  { matches: [2, 1, 1, 1], logs: [1, 2], smTerm: 1, w: 1 },
  { matches: [2, 1, 1, 1], logs: [1, 1], smTerm: 2, w: 0 },
  { matches: [2, 1, 1, 2], logs: [1, 2], smTerm: 1, w: 1 },
  { matches: [2, 1, 1, 2], logs: [1, 1], smTerm: 2, w: 0 },
  { matches: [2, 1, 2, 2], logs: [1, 2], smTerm: 2, w: 2 },
  { matches: [2, 1, 2, 2], logs: [1, 1], smTerm: 2, w: 0 },
];
for (const [i, tt] of commitCases.entries()) {
  test(`leader commit is the quorum match of an entry of its term #${i}`, () => {
    const storage = newStorageWithEnts(tt.logs.map((t, j) => ent(t, j + 1)));
    storage.setHardState({ term: tt.smTerm, vote: 0, commit: 0 });
    const sm = newTestRaft(1, [1], 10, 2, storage);
    for (const [j, m] of tt.matches.entries()) {
      const id = j + 1;
      if (id > 1) sm.applyConfChange({ type: ConfChangeType.AddNode, nodeId: id, context: new Uint8Array(0) });
      const pr = sm.prs.progress.get(id)!;
      pr.match = m;
      pr.next = m + 1;
    }
    sm.maybeCommit();
    assert.equal(sm.raftLog.committed, tt.w);
  });
}

test("heartbeat commits up to the leader's hint but never decreases commit", () => {
  const commit = 2;
  for (const [m, wcommit] of [
    [commit + 1, commit + 1],
    [commit - 1, commit],
  ] as const) {
    const storage = newStorageWithEnts([ent(1, 1), ent(2, 2), ent(3, 3)]);
    const sm = newTestRaft(1, [1, 2], 5, 1, storage);
    sm.becomeFollower(2, 2);
    sm.raftLog.commitTo(commit);
    sm.stepMessage(message({ type: MT.MsgHeartbeat, from: 2, to: 1, term: 2, commit: m }));
    assert.equal(sm.raftLog.committed, wcommit);
    assert.deepStrictEqual(readMessages(sm), [message({ type: MT.MsgHeartbeatResp, from: 1, to: 2, term: 2 })]);
  }
});

test("leader steps down when quorum is lost, with check-quorum", () => {
  const sm = newTestRaft(1, [1, 2, 3], 5, 1, new MemoryStorage(), { checkQuorum: true });
  sm.becomeCandidate();
  sm.becomeLeader();
  for (let i = 0; i < sm.electionTimeout + 1; i++) sm.tick();
  assert.equal(sm.state, ST.Follower);
});

test("leader stays while a quorum answers heartbeats, with check-quorum", () => {
  const sm = newTestRaft(1, [1, 2, 3], 5, 1, new MemoryStorage(), { checkQuorum: true });
  sm.becomeCandidate();
  sm.becomeLeader();
  for (let i = 0; i < sm.electionTimeout + 1; i++) {
    sm.stepMessage(message({ type: MT.MsgHeartbeatResp, from: 2, term: sm.term }));
    sm.tick();
  }
  assert.equal(sm.state, ST.Leader);
});

test("check-quorum lease: a vote request inside an election timeout of a live leader is ignored", () => {
  const nt = cluster(3, { checkQuorum: true });
  const [a, b, c] = [nt.raft(1), nt.raft(2), nt.raft(3)];
  b.randomizedElectionTimeout = b.electionTimeout + 1;
  for (let i = 0; i < b.electionTimeout; i++) b.tick();
  nt.send(hup(1));
  assert.equal(a.state, ST.Leader);
  nt.send(hup(3));
  // 2 heard from 1 recently: it ignores 3, which stays candidate.
  assert.equal(c.state, ST.Candidate);
  for (let i = 0; i < b.electionTimeout; i++) b.tick();
  nt.send(hup(3));
  assert.equal(c.state, ST.Leader);
});

test("check-quorum frees a stuck candidate once it hears from the leader", () => {
  const nt = cluster(3, { checkQuorum: true });
  const [a, b, c] = [nt.raft(1), nt.raft(2), nt.raft(3)];
  b.randomizedElectionTimeout = b.electionTimeout + 1;
  for (let i = 0; i < b.electionTimeout; i++) b.tick();
  nt.send(hup(1));
  nt.isolate(1);
  nt.send(hup(3));
  assert.equal(b.state, ST.Follower);
  assert.equal(c.state, ST.Candidate);
  assert.equal(c.term, b.term + 1);
  nt.send(hup(3));
  assert.equal(c.term, b.term + 2);
  nt.recover();
  // 3 answers the stale leader's heartbeat with its higher term: 1 steps down.
  nt.send(message({ type: MT.MsgHeartbeat, from: 1, to: 3, term: a.term }));
  assert.equal(a.state, ST.Follower);
  assert.equal(c.term, a.term);
  nt.send(hup(3));
  assert.equal(c.state, ST.Leader);
});

test("pre-vote: a partitioned follower rejoining does not depose a healthy leader", () => {
  const nt = cluster(3, { checkQuorum: true, preVote: true });
  const [n1, n2, n3] = [nt.raft(1), nt.raft(2), nt.raft(3)];
  nt.send(hup(1));
  assert.equal(n1.state, ST.Leader);
  nt.isolate(3);
  for (let i = 0; i < 3; i++) nt.send(propMsg(1, 1));
  // 3 times out repeatedly while cut off: with pre-vote its term does not move.
  for (let i = 0; i < 5; i++) nt.send(hup(3));
  assert.equal(n3.term, 1);
  nt.recover();
  nt.send(hup(3));
  assert.equal(n1.state, ST.Leader);
  assert.equal(n2.state, ST.Follower);
  // 1 and 2 heard from the leader within the lease: they ignore the pre-vote, so 3
  // stays pre-candidate (at its old term) until the leader's next heartbeat.
  assert.equal(n3.state, ST.PreCandidate);
  assert.equal(n1.term, 1);
  nt.send(message({ type: MT.MsgHeartbeat, from: 1, to: 3, term: n1.term }));
  assert.equal(n3.state, ST.Follower);
  assert.equal(n1.state, ST.Leader);
  nt.send(propMsg(1, 1));
  assert.equal(n3.raftLog.committed, n1.raftLog.committed);
});

test("without pre-vote, a rejoining follower with a higher term forces a new election", () => {
  const nt = cluster(3, { checkQuorum: true });
  const [n1, n3] = [nt.raft(1), nt.raft(3)];
  nt.send(hup(1));
  nt.isolate(3);
  nt.send(propMsg(1, 1));
  nt.send(hup(3));
  assert.equal(n3.term, 2);
  nt.recover();
  // The leader's heartbeat is answered with term 2: the leader steps down (disruption).
  nt.send(message({ type: MT.MsgHeartbeat, from: 1, to: 3, term: n1.term }));
  assert.equal(n1.state, ST.Follower);
  assert.equal(n1.term, 2);
});

test("ReadIndex answers on every node with the commit index at request time and the ctx", () => {
  const nt = cluster(3);
  const [a, b, c] = [nt.raft(1), nt.raft(2), nt.raft(3)];
  b.randomizedElectionTimeout = b.electionTimeout + 1;
  for (let i = 0; i < b.electionTimeout; i++) b.tick();
  nt.send(hup(1));
  const cases: Array<[Raft, number, string]> = [
    [a, 11, "ctx1"],
    [b, 21, "ctx2"],
    [c, 31, "ctx3"],
    [a, 41, "ctx4"],
    [b, 51, "ctx5"],
    [c, 61, "ctx6"],
  ];
  for (const [sm, wri, wctx] of cases) {
    for (let j = 0; j < 10; j++) nt.send(message({ type: MT.MsgProp, from: 1, to: 1, entries: [ent(0, 0)] }));
    nt.send(message({ type: MT.MsgReadIndex, from: sm.id, to: sm.id, entries: [ent(0, 0, wctx)] }));
    assert.deepStrictEqual(sm.readStates, [{ index: wri, requestCtx: bytes(wctx) }]);
    sm.readStates = [];
  }
});

test("ReadIndex on a new leader waits for its first commit in its term", () => {
  const peers = [
    { id: 1, committed: 1, applied: 1, compact: 0 },
    { id: 2, committed: 2, applied: 2, compact: 2 },
    { id: 3, committed: 2, applied: 2, compact: 2 },
  ].map((c) => {
    const storage = newStorageWithEnts([ent(1, 1), ent(1, 2)]);
    storage.setHardState({ term: 1, vote: 0, commit: c.committed });
    if (c.compact !== 0) storage.compact(c.compact);
    return newTestRaft(c.id, [1, 2, 3], 10, 1, storage, { applied: c.applied });
  });
  const nt = new Network(peers);
  nt.ignore(MT.MsgApp);
  nt.send(hup(1));
  const sm = nt.raft(1);
  assert.equal(sm.state, ST.Leader);
  nt.send(message({ type: MT.MsgReadIndex, from: 1, to: 1, entries: [ent(0, 0, "ctx")] }));
  assert.deepStrictEqual(sm.readStates, []);
  nt.recover();
  for (let i = 0; i < sm.heartbeatTimeout; i++) sm.tick();
  nt.send(message({ type: MT.MsgProp, from: 1, to: 1, entries: [ent(0, 0)] }));
  assert.equal(sm.raftLog.committed, 4);
  assert.deepStrictEqual(sm.readStates, [{ index: 4, requestCtx: bytes("ctx") }]);
});

test("ReadIndex heartbeats carry the request ctx and acks from a quorum release it", () => {
  const sm = newTestRaft(1, [1, 2, 3], 10, 1);
  sm.becomeCandidate();
  sm.becomeLeader();
  sm.stepMessage(message({ type: MT.MsgAppResp, from: 2, to: 1, term: 1, index: 1 }));
  readMessages(sm);
  sm.stepMessage(message({ type: MT.MsgReadIndex, entries: [ent(0, 0, "rctx")] }));
  assert.deepStrictEqual(readMessages(sm), [
    message({ type: MT.MsgHeartbeat, from: 1, to: 2, term: 1, commit: 1, context: bytes("rctx") }),
    message({ type: MT.MsgHeartbeat, from: 1, to: 3, term: 1, commit: 0, context: bytes("rctx") }),
  ]);
  sm.stepMessage(message({ type: MT.MsgHeartbeatResp, from: 3, to: 1, term: 1, context: bytes("rctx") }));
  assert.deepStrictEqual(sm.readStates, [{ index: 1, requestCtx: bytes("rctx") }]);
  assert.equal(sm.readOnly.queue.length, 0, "released requests free their memory");
});

test("leadership transfers to an up-to-date follower at once (MsgTimeoutNow)", () => {
  const nt = cluster(3);
  nt.send(hup(1));
  nt.send(message({ type: MT.MsgTransferLeader, from: 2, to: 1 }));
  assert.equal(nt.raft(2).state, ST.Leader);
  assert.equal(nt.raft(1).state, ST.Follower);
  assert.equal(nt.raft(1).leadTransferee, 0);
  // And back, requested through the follower.
  nt.send(propMsg(2, 2));
  nt.send(message({ type: MT.MsgTransferLeader, from: 1, to: 1 }));
  assert.equal(nt.raft(1).state, ST.Leader);
});

test("leadership transfer to a slow follower first catches it up", () => {
  const nt = cluster(3);
  nt.send(hup(1));
  nt.isolate(3);
  nt.send(propMsg(1, 1));
  nt.recover();
  const lead = nt.raft(1);
  assert.equal(lead.prs.progress.get(3)!.match, 1);
  nt.send(message({ type: MT.MsgTransferLeader, from: 3, to: 1 }));
  assert.equal(nt.raft(3).state, ST.Leader);
});

test("leadership transfer drops proposals while in progress and times out after an election timeout", () => {
  const nt = cluster(3);
  nt.send(hup(1));
  nt.isolate(3);
  const lead = nt.raft(1);
  nt.send(message({ type: MT.MsgTransferLeader, from: 3, to: 1 }));
  assert.equal(lead.leadTransferee, 3);
  assert.throws(() => lead.stepMessage(propMsg(1, 1)), { code: "ERR_PROPOSAL_DROPPED" });
  for (let i = 0; i < lead.heartbeatTimeout; i++) lead.tick();
  assert.equal(lead.leadTransferee, 3);
  for (let i = 0; i < lead.electionTimeout - lead.heartbeatTimeout; i++) lead.tick();
  assert.equal(lead.leadTransferee, 0);
  assert.equal(lead.state, ST.Leader);
});

test("leadership transfer to self or to a non-member is ignored", () => {
  const nt = cluster(3);
  nt.send(hup(1));
  nt.send(message({ type: MT.MsgTransferLeader, from: 1, to: 1 }));
  nt.send(message({ type: MT.MsgTransferLeader, from: 4, to: 1 }));
  assert.equal(nt.raft(1).state, ST.Leader);
  assert.equal(nt.raft(1).leadTransferee, 0);
});

test("a forced (transfer) vote overrides the check-quorum lease", () => {
  const nt = cluster(3, { checkQuorum: true });
  nt.send(hup(1));
  nt.send(message({ type: MT.MsgTransferLeader, from: 2, to: 1 }));
  assert.equal(nt.raft(2).state, ST.Leader);
});

test("adding and removing a voter changes the quorum used for commit", () => {
  const r = newTestRaft(1, [1], 10, 1);
  r.applyConfChange({ type: ConfChangeType.AddNode, nodeId: 2, context: new Uint8Array(0) });
  assert.deepStrictEqual(r.prs.voterNodes(), [1, 2]);
  r.applyConfChange({ type: ConfChangeType.RemoveNode, nodeId: 2, context: new Uint8Array(0) });
  assert.deepStrictEqual(r.prs.voterNodes(), [1]);
  assert.throws(
    () => r.applyConfChange({ type: ConfChangeType.RemoveNode, nodeId: 1, context: new Uint8Array(0) }),
    { code: "ERR_RAFT_INVARIANT" },
  );
});

test("removing a lagging voter lets the leader commit with the remaining quorum", () => {
  const s = new MemoryStorage();
  const r = newTestRaft(1, [1, 2], 5, 1, s);
  r.becomeCandidate();
  r.becomeLeader();
  r.stepMessage(message({ type: MT.MsgAppResp, from: 2, to: 1, term: 1, index: 1 }));
  r.stepMessage(propMsg(1, 1));
  assert.equal(r.raftLog.committed, 1);
  r.applyConfChange({ type: ConfChangeType.RemoveNode, nodeId: 2, context: new Uint8Array(0) });
  assert.equal(r.raftLog.committed, 2);
});

test("a learner receives entries but never campaigns and is not counted", () => {
  const nt = new Network([undefined, undefined], {
    config: (c) => {
      c.peers = [1];
      c.learners = [2];
    },
  });
  const [n1, n2] = [nt.raft(1), nt.raft(2)];
  assert.equal(n2.isLearner, true);
  for (let i = 0; i < 2 * n2.electionTimeout; i++) n2.tick();
  assert.equal(n2.state, ST.Follower);
  nt.send(hup(1));
  nt.send(propMsg(1, 1));
  assert.equal(n1.raftLog.committed, 2);
  assert.equal(n2.raftLog.committed, 2);
  assert.equal(n1.prs.progress.get(2)!.match, n1.raftLog.committed);
  // Promotion makes it a voter that can campaign.
  for (const r of [n1, n2]) r.applyConfChange({ type: ConfChangeType.AddNode, nodeId: 2, context: new Uint8Array(0) });
  assert.equal(n2.isLearner, false);
  nt.send(hup(2));
  assert.equal(n2.state, ST.Leader);
});

test("a probing follower gets one MsgApp per heartbeat interval until it answers", () => {
  const r = newTestRaft(1, [1, 2], 10, 2);
  r.becomeCandidate();
  r.becomeLeader();
  readMessages(r);
  const pr2 = r.prs.progress.get(2)!;
  assert.equal(pr2.state, ProgressState.Probe);
  r.stepMessage(propMsg(1, 1));
  r.stepMessage(propMsg(1, 1));
  const first = readMessages(r);
  assert.equal(first.length, 1, "the second proposal waits for the probe's answer");
  assert.equal(pr2.probeSent, true);
  // The heartbeat response unpauses the probe: the next probe goes out at once.
  r.stepMessage(message({ type: MT.MsgHeartbeatResp, from: 2, to: 1, term: 1 }));
  assert.equal(readMessages(r).filter((m) => m.type === MT.MsgApp).length, 1);
});

test("an unreachable follower in replicate state falls back to probing", () => {
  const r = newTestRaft(1, [1, 2], 10, 1);
  r.becomeCandidate();
  r.becomeLeader();
  const pr2 = r.prs.progress.get(2)!;
  pr2.match = 1;
  pr2.becomeReplicate();
  r.stepMessage(message({ type: MT.MsgUnreachable, from: 2, to: 1 }));
  assert.equal(pr2.state, ProgressState.Probe);
  assert.equal(pr2.next, pr2.match + 1);
});
