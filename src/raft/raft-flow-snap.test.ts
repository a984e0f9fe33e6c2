// Flow control (etcd's raft_flow_control_test.go) and snapshot progress
// (raft_snap_test.go): the inflight window bounds pipelining; a follower whose next
// entry is compacted gets a snapshot and nothing else until it is reported.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { Raft } from "./raft.ts";
import { restore } from "./raft-handlers.ts";
import { Network, newTestRaft, propMsg, readMessages } from "./raft.test-helper.ts";
import { MemoryStorage } from "./storage.ts";
import { ProgressState } from "./tracker/progress.ts";
import { type Snapshot, MessageType as MT, StateType, message } from "./types.ts";

function leaderOfTwo(): Raft {
  const r = newTestRaft(1, [1, 2], 5, 1);
  r.becomeCandidate();
  r.becomeLeader();
  r.prs.progress.get(2)!.becomeReplicate();
  return r;
}

const prop = (r: Raft): void => r.stepMessage(propMsg(1, 1));

test("leader stops sending MsgApp once the inflight window is full", () => {
  const r = leaderOfTwo();
  const pr2 = r.prs.progress.get(2)!;
  for (let i = 0; i < r.prs.maxInflight; i++) {
    prop(r);
    assert.equal(readMessages(r).length, 1, `#${i}`);
  }
  assert.equal(pr2.inflights.full(), true);
  for (let i = 0; i < 10; i++) {
    prop(r);
    assert.equal(readMessages(r).length, 0, `#${i}`);
  }
});

test("an ack frees the window up to its index and lets exactly that much through", () => {
  const r = leaderOfTwo();
  const pr2 = r.prs.progress.get(2)!;
  for (let i = 0; i < r.prs.maxInflight; i++) {
    prop(r);
    readMessages(r);
  }
  // 1 is the empty entry of the term; 2..maxInflight+1 are in flight.
  for (let tt = 2; tt < r.prs.maxInflight; tt++) {
    r.stepMessage(message({ type: MT.MsgAppResp, from: 2, to: 1, index: tt }));
    readMessages(r);
    prop(r);
    assert.equal(readMessages(r).length, 1, `#${tt}`);
    assert.equal(pr2.inflights.full(), true);
    // Stale acks free nothing.
    for (let i = 0; i < tt; i++) {
      r.stepMessage(message({ type: MT.MsgAppResp, from: 2, to: 1, index: i }));
      assert.equal(pr2.inflights.full(), true, `#${tt}.${i}`);
    }
  }
});

test("a heartbeat response frees one slot of a full window", () => {
  const r = leaderOfTwo();
  const pr2 = r.prs.progress.get(2)!;
  for (let i = 0; i < r.prs.maxInflight; i++) {
    prop(r);
    readMessages(r);
  }
  for (let tt = 1; tt < 5; tt++) {
    assert.equal(pr2.inflights.full(), true, `#${tt}`);
    for (let i = 0; i < tt; i++) {
      r.stepMessage(message({ type: MT.MsgHeartbeatResp, from: 2, to: 1 }));
      readMessages(r);
      assert.equal(pr2.inflights.full(), false, `#${tt}.${i}`);
    }
    prop(r);
    assert.equal(readMessages(r).length, 1, `#${tt}: free slot`);
    for (let i = 0; i < 10; i++) {
      prop(r);
      assert.equal(readMessages(r).length, 0, `#${tt}.${i}`);
    }
    r.stepMessage(message({ type: MT.MsgHeartbeatResp, from: 2, to: 1 }));
    readMessages(r);
  }
});

const testingSnap: Snapshot = {
  data: new Uint8Array(0),
  metadata: { index: 11, term: 11, confState: { voters: [1, 2], learners: [] } },
};

function leaderFromSnap(peers: number[]): Raft {
  const sm = newTestRaft(1, peers, 10, 1, new MemoryStorage());
  restore(sm, testingSnap);
  sm.becomeCandidate();
  sm.becomeLeader();
  return sm;
}

test("leader sends a snapshot and records it pending when the follower's next entry is compacted", () => {
  const sm = leaderFromSnap([1]);
  const pr2 = sm.prs.progress.get(2)!;
  pr2.next = sm.raftLog.firstIndex();
  sm.stepMessage(message({ type: MT.MsgAppResp, from: 2, to: 1, index: pr2.next - 1, reject: true }));
  assert.equal(pr2.pendingSnapshot, 11);
  assert.equal(pr2.state, ProgressState.Snapshot);
  const out = readMessages(sm);
  assert.equal(out.length, 1);
  assert.equal(out[0]!.type, MT.MsgSnap);
  assert.deepStrictEqual(out[0]!.snapshot, testingSnap);
});

test("a pending snapshot pauses replication to that follower", () => {
  const sm = leaderFromSnap([1, 2]);
  sm.prs.progress.get(2)!.becomeSnapshot(11);
  sm.stepMessage(propMsg(1, 1));
  assert.deepStrictEqual(readMessages(sm), []);
});

test("a failed snapshot report resets pendingSnapshot and probes again after a pause", () => {
  const sm = leaderFromSnap([1, 2]);
  const pr2 = sm.prs.progress.get(2)!;
  pr2.next = 1;
  pr2.becomeSnapshot(11);
  sm.stepMessage(message({ type: MT.MsgSnapStatus, from: 2, to: 1, reject: true }));
  assert.equal(pr2.pendingSnapshot, 0);
  assert.equal(pr2.next, 1);
  assert.equal(pr2.probeSent, true);
});

test("a successful snapshot report probes from just after the snapshot", () => {
  const sm = leaderFromSnap([1, 2]);
  const pr2 = sm.prs.progress.get(2)!;
  pr2.next = 1;
  pr2.becomeSnapshot(11);
  sm.stepMessage(message({ type: MT.MsgSnapStatus, from: 2, to: 1, reject: false }));
  assert.equal(pr2.pendingSnapshot, 0);
  assert.equal(pr2.next, 12);
  assert.equal(pr2.probeSent, true);
});

test("an ack at or past the pending snapshot aborts it and resumes replication", () => {
  const sm = leaderFromSnap([1, 2]);
  const pr2 = sm.prs.progress.get(2)!;
  pr2.next = 1;
  pr2.becomeSnapshot(11);
  // The follower caught up another way (e.g. an earlier append): back to replicate.
  sm.stepMessage(message({ type: MT.MsgAppResp, from: 2, to: 1, index: 11 }));
  assert.equal(pr2.pendingSnapshot, 0);
  assert.equal(pr2.next, 13);
  assert.equal(pr2.inflights.count(), 1);
});

test("a lagging follower catches up from the leader's snapshot and then by appends", () => {
  // etcd's TestSlowNodeRestore, end to end over the synchronous network.
  const nt = new Network([undefined, undefined, undefined]);
  nt.send(message({ type: MT.MsgHup, from: 1, to: 1 }));
  nt.isolate(3);
  for (let j = 0; j <= 100; j++) nt.send(propMsg(1, 1));
  const lead = nt.raft(1);
  const ls = nt.storage.get(1)!;
  // Persist and compact the leader's log.
  ls.append(lead.raftLog.unstableEntries());
  lead.raftLog.stableTo(lead.raftLog.lastIndex(), lead.raftLog.lastTerm());
  lead.raftLog.appliedTo(lead.raftLog.committed);
  ls.createSnapshot(lead.raftLog.applied, { voters: [1, 2, 3], learners: [] }, new TextEncoder().encode("state"));
  ls.compact(lead.raftLog.applied);
  nt.recover();
  // Heartbeats until the leader notices 3 is active (so it may send a snapshot).
  for (;;) {
    nt.send(message({ type: MT.MsgBeat, from: 1, to: 1 }));
    if (lead.prs.progress.get(3)!.recentActive) break;
  }
  // Trigger the snapshot, then report it applied (as the transport would).
  nt.send(propMsg(1, 1));
  const follower = nt.raft(3);
  nt.send(message({ type: MT.MsgSnapStatus, from: 3, to: 1 }));
  nt.send(propMsg(1, 1));
  assert.equal(follower.raftLog.committed, lead.raftLog.committed);
  assert.equal(follower.state, StateType.Follower);
});
