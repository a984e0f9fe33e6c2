// RawNode: the server-facing API, single-member cluster first (the server runs one
// from day one), then restart and multi-node Ready behaviour (etcd's rawnode_test.go).

import assert from "node:assert/strict";
import { test } from "node:test";
import { ProposalDroppedError } from "./errors.ts";
import { bytes, seededRandom } from "./raft.test-helper.ts";
import { RawNode } from "./raw-node.ts";
import { MemoryStorage } from "./storage.ts";
import {
  type ConfState,
  type Entry,
  type Ready,
  ConfChangeType,
  EntryType,
  MessageType as MT,
  StateType,
  message,
} from "./types.ts";
import { decodeConfChange, encodeConfChange } from "./util.ts";

function newNode(storage: MemoryStorage, extra: { applied?: number; id?: number } = {}): RawNode {
  return new RawNode({
    id: extra.id ?? 1,
    storage,
    electionTick: 10,
    heartbeatTick: 1,
    random: seededRandom(42),
    ...(extra.applied !== undefined ? { applied: extra.applied } : {}),
  });
}

/**
 * What the server loop does with a Ready, in the required order: persist (snapshot,
 * hard state, entries), then "send" (returned), then apply (conf changes through
 * applyConfChange), then advance.
 */
function handle(rn: RawNode, storage: MemoryStorage, applied: Entry[] = []): Ready {
  const rd = rn.ready();
  if (rd.snapshot !== undefined) storage.applySnapshot(rd.snapshot);
  if (rd.hardState !== undefined) storage.setHardState(rd.hardState);
  storage.append(rd.entries);
  for (const e of rd.committedEntries) {
    applied.push(e);
    if (e.type === EntryType.ConfChange) rn.applyConfChange(decodeConfChange(e.data));
  }
  rn.advance(rd);
  return rd;
}

/** bootstrap([1]) + first Ready handled: a fresh single-member cluster. */
function bootstrapped(): { rn: RawNode; storage: MemoryStorage; applied: Entry[]; first: Ready } {
  const storage = new MemoryStorage();
  const rn = newNode(storage);
  rn.bootstrap([1]);
  const applied: Entry[] = [];
  const first = handle(rn, storage, applied);
  return { rn, storage, applied, first };
}

test("bootstrap emits the AddNode entry as both entry and committed entry with a hard state", () => {
  const { first, storage } = bootstrapped();
  const cc = encodeConfChange({ type: ConfChangeType.AddNode, nodeId: 1, context: new Uint8Array(0) });
  const e1: Entry = { term: 1, index: 1, type: EntryType.ConfChange, data: cc };
  assert.deepStrictEqual(first.entries, [e1]);
  assert.deepStrictEqual(first.committedEntries, [e1]);
  assert.deepStrictEqual(first.hardState, { term: 1, vote: 0, commit: 1 });
  assert.deepStrictEqual(first.messages, []);
  assert.equal(first.mustSync, true);
  assert.equal(storage.lastIndex(), 1);
});

test("bootstrap throws when storage is not empty", () => {
  const storage = new MemoryStorage();
  storage.append([{ term: 1, index: 1, type: 0, data: new Uint8Array(0) }]);
  assert.throws(() => newNode(storage).bootstrap([1]), /not empty/);
});

test("single node campaign elects itself at once and commits the empty entry in the same Ready", () => {
  const { rn, storage, applied } = bootstrapped();
  rn.campaign();
  assert.equal(rn.hasReady(), true);
  const rd = handle(rn, storage, applied);
  const empty: Entry = { term: 2, index: 2, type: EntryType.Normal, data: new Uint8Array(0) };
  assert.deepStrictEqual(rd.softState, { lead: 1, raftState: StateType.Leader });
  assert.deepStrictEqual(rd.hardState, { term: 2, vote: 1, commit: 2 });
  assert.deepStrictEqual(rd.entries, [empty]);
  assert.deepStrictEqual(rd.committedEntries, [empty]);
  assert.deepStrictEqual(rd.messages, []);
  assert.equal(rd.mustSync, true);
  assert.equal(rn.hasReady(), false);
  assert.equal(rn.status().applied, 2);
});

test("single node becomes leader by ticks alone within 2*electionTick", () => {
  const { rn, storage, applied } = bootstrapped();
  let ticks = 0;
  while (rn.status().softState.raftState !== StateType.Leader) {
    rn.tick();
    ticks++;
    assert.ok(ticks < 20, "not leader after 2*electionTick ticks");
    if (rn.hasReady()) handle(rn, storage, applied);
  }
  assert.ok(ticks >= 10, `elected after ${ticks} ticks, before electionTick`);
  if (rn.hasReady()) handle(rn, storage, applied);
  assert.equal(rn.status().hardState.commit, 2);
});

test("single node campaign is refused until the bootstrap conf change is applied", () => {
  const storage = new MemoryStorage();
  const rn = newNode(storage);
  rn.bootstrap([1]);
  rn.campaign();
  // Still follower: the AddNode entry is committed but not applied yet.
  assert.equal(rn.status().softState.raftState, StateType.Follower);
  handle(rn, storage);
  rn.campaign();
  assert.equal(rn.status().softState.raftState, StateType.Leader);
});

test("single node proposal appears in entries and committedEntries of one Ready", () => {
  const { rn, storage, applied } = bootstrapped();
  rn.campaign();
  handle(rn, storage, applied);
  rn.propose(bytes("foo"));
  const rd = handle(rn, storage, applied);
  const e: Entry = { term: 2, index: 3, type: EntryType.Normal, data: bytes("foo") };
  assert.deepStrictEqual(rd.entries, [e]);
  assert.deepStrictEqual(rd.committedEntries, [e]);
  assert.deepStrictEqual(rd.hardState, { term: 2, vote: 1, commit: 3 });
  assert.equal(rd.softState, undefined);
  assert.equal(rd.mustSync, true);
  assert.deepStrictEqual(storage.entries(3, 4), [e]);
  assert.equal(rn.status().applied, 3);
});

test("single node proposals batched before one Ready commit together in order", () => {
  const { rn, storage, applied } = bootstrapped();
  rn.campaign();
  handle(rn, storage, applied);
  for (const s of ["a", "b", "c"]) rn.propose(bytes(s));
  const rd = handle(rn, storage, applied);
  assert.deepStrictEqual(
    rd.committedEntries.map((e) => [e.index, new TextDecoder().decode(e.data)]),
    [
      [3, "a"],
      [4, "b"],
      [5, "c"],
    ],
  );
  assert.deepStrictEqual(rd.entries, rd.committedEntries);
});

test("single node readIndex answers at once with the commit index and the ctx", () => {
  const { rn, storage, applied } = bootstrapped();
  rn.campaign();
  handle(rn, storage, applied);
  rn.propose(bytes("x"));
  rn.readIndex(bytes("req-1"));
  const rd = handle(rn, storage, applied);
  assert.deepStrictEqual(rd.readStates, [{ index: 3, requestCtx: bytes("req-1") }]);
  // Handed over once.
  assert.equal(rn.hasReady(), false);
});

test("single node readIndex works right after election, before the empty entry is advanced", () => {
  const { rn, storage } = bootstrapped();
  rn.campaign();
  rn.readIndex(bytes("r"));
  const rd = handle(rn, storage);
  assert.deepStrictEqual(rd.readStates, [{ index: 2, requestCtx: bytes("r") }]);
});

test("propose throws ProposalDroppedError when there is no leader", () => {
  const { rn } = bootstrapped();
  assert.throws(() => rn.propose(bytes("x")), ProposalDroppedError);
  assert.throws(() => rn.propose(bytes("x")), (err: unknown) => (err as { code: string }).code === "ERR_PROPOSAL_DROPPED");
});

test("advance moves applied to the last committed entry and marks entries stable", () => {
  const { rn, storage, applied } = bootstrapped();
  rn.campaign();
  handle(rn, storage, applied);
  rn.propose(bytes("a"));
  const rd = rn.ready();
  // Not advanced yet: the same entries are still unstable and applied is unchanged.
  assert.equal(rn.status().applied, 2);
  assert.equal(rn.raftForTesting.raftLog.unstable.entries.length, 1);
  storage.append(rd.entries);
  rn.advance(rd);
  assert.equal(rn.status().applied, 3);
  assert.equal(rn.raftForTesting.raftLog.unstable.entries.length, 0);
  assert.equal(rn.hasReady(), false);
});

test("mustSync is false for a commit-only hard state change", () => {
  // A follower learning a new commit from a heartbeat needs no fsync (etcd MustSync).
  const storage = new MemoryStorage();
  const rn = newNode(storage, { id: 2 });
  rn.bootstrap([1, 2]);
  handle(rn, storage);
  rn.step(
    message({
      type: MT.MsgApp,
      from: 1,
      to: 2,
      term: 2,
      logTerm: 1,
      index: 2,
      entries: [{ term: 2, index: 3, type: 0, data: new Uint8Array(0) }],
    }),
  );
  handle(rn, storage);
  rn.step(message({ type: MT.MsgHeartbeat, from: 1, to: 2, term: 2, commit: 3 }));
  const rd = rn.ready();
  assert.deepStrictEqual(rd.hardState, { term: 2, vote: 0, commit: 3 });
  assert.equal(rd.mustSync, false);
});

test("restart from storage keeps term, vote, log and membership, and skips applied entries", () => {
  const { rn, storage, applied } = bootstrapped();
  rn.campaign();
  handle(rn, storage, applied);
  rn.propose(bytes("a"));
  handle(rn, storage, applied);
  const cs: ConfState = { voters: [1], learners: [] };
  storage.createSnapshot(2, cs, bytes("snap"));
  storage.compact(2);
  const restarted = newNode(storage, { applied: 3 });
  const st = restarted.status();
  assert.deepStrictEqual(st.hardState, { term: 2, vote: 1, commit: 3 });
  assert.deepStrictEqual(st.config, cs);
  assert.equal(st.applied, 3);
  // Nothing to re-apply, nothing changed: no Ready until something happens.
  assert.equal(restarted.hasReady(), false);
  restarted.campaign();
  const rd = handle(restarted, storage);
  assert.deepStrictEqual(rd.hardState, { term: 3, vote: 1, commit: 4 });
  assert.deepStrictEqual(rd.committedEntries, [{ term: 3, index: 4, type: EntryType.Normal, data: new Uint8Array(0) }]);
});

test("restart without applied hands committed entries out again", () => {
  const { rn, storage, applied } = bootstrapped();
  rn.campaign();
  handle(rn, storage, applied);
  const restarted = newNode(storage);
  const rd = restarted.ready();
  assert.deepStrictEqual(
    rd.committedEntries.map((e) => e.index),
    [1, 2],
  );
  assert.equal(rd.hardState, undefined, "hard state unchanged since it was loaded");
});

test("single node conf change adds a second voter after commit and apply", () => {
  const { rn, storage, applied } = bootstrapped();
  rn.campaign();
  handle(rn, storage, applied);
  rn.proposeConfChange({ type: ConfChangeType.AddNode, nodeId: 2, context: bytes("ctx"), id: 7 });
  const rd = handle(rn, storage, applied);
  assert.equal(rd.committedEntries.length, 1);
  const cc = decodeConfChange(rd.committedEntries[0]!.data);
  assert.deepStrictEqual(cc, { type: ConfChangeType.AddNode, nodeId: 2, context: bytes("ctx"), id: 7 });
  assert.deepStrictEqual(rn.status().config, { voters: [1, 2], learners: [] });
  // Now two voters: a proposal no longer commits alone, and node 2 is probed.
  rn.propose(bytes("p"));
  const rd2 = handle(rn, storage, applied);
  assert.deepStrictEqual(rd2.committedEntries, []);
  assert.ok(rd2.messages.some((m) => m.type === MT.MsgApp && m.to === 2));
});

test("a second conf change proposed before the first is applied becomes an empty entry", () => {
  const { rn, storage, applied } = bootstrapped();
  rn.campaign();
  handle(rn, storage, applied);
  rn.proposeConfChange({ type: ConfChangeType.AddNode, nodeId: 2, context: new Uint8Array(0) });
  rn.proposeConfChange({ type: ConfChangeType.AddNode, nodeId: 3, context: new Uint8Array(0) });
  const rd = rn.ready();
  assert.deepStrictEqual(
    rd.entries.map((e) => e.type),
    [EntryType.ConfChange, EntryType.Normal],
  );
});

test("step ignores local message types and responses from unknown peers", () => {
  const { rn } = bootstrapped();
  rn.step(message({ type: MT.MsgHup, from: 1, to: 1 }));
  rn.step(message({ type: MT.MsgBeat, from: 1, to: 1 }));
  rn.step(message({ type: MT.MsgAppResp, from: 9, to: 1, term: 1 }));
  assert.equal(rn.status().softState.raftState, StateType.Follower);
  assert.equal(rn.hasReady(), false);
});

test("status shows progress only on the leader", () => {
  const { rn, storage } = bootstrapped();
  assert.equal(rn.status().progress, undefined);
  rn.campaign();
  handle(rn, storage);
  const st = rn.status();
  assert.equal(st.id, 1);
  assert.equal(st.leadTransferee, 0);
  assert.deepStrictEqual(st.progress?.get(1)?.match, 2);
  assert.equal(st.progress?.get(1)?.state, "StateReplicate");
});

test("a follower forwards a proposal to the leader it knows", () => {
  const storage = new MemoryStorage();
  const rn = newNode(storage, { id: 2 });
  rn.bootstrap([1, 2]);
  handle(rn, storage);
  rn.step(message({ type: MT.MsgHeartbeat, from: 1, to: 2, term: 2 }));
  handle(rn, storage);
  rn.propose(bytes("fwd"));
  const rd = rn.ready();
  assert.deepStrictEqual(rd.messages, [
    message({
      type: MT.MsgProp,
      from: 2,
      to: 1,
      entries: [{ term: 0, index: 0, type: EntryType.Normal, data: bytes("fwd") }],
    }),
  ]);
});

test("ready hands out copies: later appends do not change an earlier Ready", () => {
  const { rn, storage } = bootstrapped();
  rn.campaign();
  const rd = rn.ready();
  const before = rd.entries.length;
  rn.propose(bytes("late"));
  assert.equal(rd.entries.length, before);
  storage.append(rd.entries);
  rn.advance(rd);
  assert.equal(rn.ready().entries.length, 1);
});
