// RaftLog and Unstable (etcd's log_test.go / log_unstable_test.go, selected).

import assert from "node:assert/strict";
import { test } from "node:test";
import { CompactedError } from "./errors.ts";
import { RaftLog } from "./log.ts";
import { Unstable } from "./log-unstable.ts";
import { ent, newStorageWithEnts } from "./raft.test-helper.ts";
import { MemoryStorage } from "./storage.ts";
import { type Entry, type Snapshot, discardLogger } from "./types.ts";

const prev: Entry[] = [ent(1, 1), ent(2, 2), ent(3, 3)];

function logWith(ents: Entry[]): RaftLog {
  const l = new RaftLog(new MemoryStorage(), discardLogger);
  l.append(ents);
  return l;
}

const conflictCases: Array<{ ents: Entry[]; w: number }> = [
  { ents: [], w: 0 },
  { ents: [ent(1, 1), ent(2, 2), ent(3, 3)], w: 0 },
  { ents: [ent(2, 2), ent(3, 3)], w: 0 },
  { ents: [ent(3, 3)], w: 0 },
  { ents: [ent(1, 1), ent(2, 2), ent(3, 3), ent(4, 4), ent(4, 5)], w: 4 },
  { ents: [ent(4, 4), ent(4, 5)], w: 4 },
  { ents: [ent(4, 1), ent(4, 2)], w: 1 },
  { ents: [ent(1, 2), ent(4, 3), ent(4, 4)], w: 2 },
  { ents: [ent(1, 3), ent(2, 4), ent(4, 5), ent(4, 6)], w: 3 },
];
for (const [i, tt] of conflictCases.entries()) {
  test(`findConflict returns the first new or conflicting index #${i}`, () => {
    assert.equal(logWith(prev).findConflict(tt.ents), tt.w);
  });
}

const upToDateCases = [
  { lastIndex: 2, term: 4, w: true },
  { lastIndex: 3, term: 4, w: true },
  { lastIndex: 4, term: 4, w: true },
  { lastIndex: 2, term: 2, w: false },
  { lastIndex: 3, term: 2, w: false },
  { lastIndex: 4, term: 2, w: false },
  { lastIndex: 2, term: 3, w: false },
  { lastIndex: 3, term: 3, w: true },
  { lastIndex: 4, term: 3, w: true },
];
for (const tt of upToDateCases) {
  test(`isUpToDate(${tt.lastIndex}, ${tt.term}) against last 3/3 is ${tt.w} (§5.4.1)`, () => {
    assert.equal(logWith(prev).isUpToDate(tt.lastIndex, tt.term), tt.w);
  });
}

const maybeAppendCases = [
  // Not match: term differs, index out of bound.
  { logTerm: 2, index: 3, committed: 3, ents: [ent(4, 4)], wlasti: undefined, wcommit: 1 },
  { logTerm: 3, index: 4, committed: 3, ents: [ent(4, 5)], wlasti: undefined, wcommit: 1 },
  // Match with the last existing entry.
  { logTerm: 3, index: 3, committed: 3, ents: [], wlasti: 3, wcommit: 3 },
  { logTerm: 3, index: 3, committed: 4, ents: [], wlasti: 3, wcommit: 3 },
  { logTerm: 3, index: 3, committed: 2, ents: [], wlasti: 3, wcommit: 2 },
  { logTerm: 3, index: 3, committed: 0, ents: [], wlasti: 3, wcommit: 1 },
  { logTerm: 3, index: 3, committed: 4, ents: [ent(4, 4)], wlasti: 4, wcommit: 4 },
  { logTerm: 3, index: 3, committed: 5, ents: [ent(4, 4)], wlasti: 4, wcommit: 4 },
  { logTerm: 3, index: 3, committed: 5, ents: [ent(4, 4), ent(4, 5)], wlasti: 5, wcommit: 5 },
  // Match with an entry in the middle: truncation of the conflicting suffix.
  { logTerm: 1, index: 1, committed: 3, ents: [ent(4, 2)], wlasti: 2, wcommit: 2 },
  { logTerm: 2, index: 2, committed: 3, ents: [ent(4, 3), ent(4, 4)], wlasti: 4, wcommit: 3 },
];
for (const [i, tt] of maybeAppendCases.entries()) {
  test(`maybeAppend checks (index, logTerm) and commits min(committed, last new) #${i}`, () => {
    const l = logWith(prev);
    l.committed = 1;
    assert.equal(l.maybeAppend(tt.index, tt.logTerm, tt.committed, tt.ents), tt.wlasti);
    assert.equal(l.committed, tt.wcommit);
    if (tt.wlasti !== undefined && tt.ents.length > 0) {
      assert.deepStrictEqual(l.slice(l.lastIndex() - tt.ents.length + 1, l.lastIndex() + 1, Infinity), tt.ents);
    }
  });
}

test("maybeAppend refuses to truncate a committed entry", () => {
  const l = logWith(prev);
  l.committed = 2;
  assert.throws(() => l.maybeAppend(0, 0, 3, [ent(4, 1)]), { code: "ERR_RAFT_INVARIANT" });
});

test("commitTo never decreases and never passes the last index", () => {
  const l = logWith(prev);
  l.commitTo(2);
  l.commitTo(1);
  assert.equal(l.committed, 2);
  assert.throws(() => l.commitTo(4), { code: "ERR_RAFT_INVARIANT" });
});

test("appliedTo keeps applied within [applied, committed]", () => {
  const l = logWith(prev);
  l.commitTo(2);
  l.appliedTo(2);
  assert.throws(() => l.appliedTo(3), { code: "ERR_RAFT_INVARIANT" });
  assert.throws(() => l.appliedTo(1), { code: "ERR_RAFT_INVARIANT" });
});

test("nextEnts and hasNextEnts hand out committed entries after applied and the snapshot", () => {
  const storage = new MemoryStorage();
  storage.applySnapshot({ data: new Uint8Array(0), metadata: { index: 3, term: 1, confState: { voters: [], learners: [] } } });
  const l = new RaftLog(storage, discardLogger);
  l.append([ent(1, 4), ent(1, 5), ent(1, 6)]);
  l.commitTo(5);
  for (const [applied, want] of [
    [0, [4, 5]],
    [3, [4, 5]],
    [4, [5]],
    [5, []],
  ] as const) {
    const l2 = new RaftLog(storage, discardLogger);
    l2.append([ent(1, 4), ent(1, 5), ent(1, 6)]);
    l2.commitTo(5);
    if (applied > 0) l2.appliedTo(applied);
    assert.deepStrictEqual(
      l2.nextEnts().map((e) => e.index),
      want,
    );
    assert.equal(l2.hasNextEnts(), want.length > 0);
  }
  assert.equal(l.firstIndex(), 4);
});

test("stableTo only drops unstable entries whose term still matches", () => {
  for (const [i, t, wunstable] of [
    [1, 1, 2],
    [2, 2, 3],
    [2, 1, 1], // bad term
    [3, 1, 1], // bad index
  ] as const) {
    const l = new RaftLog(new MemoryStorage(), discardLogger);
    l.append([ent(1, 1), ent(2, 2)]);
    l.stableTo(i, t);
    assert.equal(l.unstable.offset, wunstable, `stableTo(${i}, ${t})`);
  }
});

test("term is known from the snapshot index to the last index and 0 outside", () => {
  const storage = new MemoryStorage();
  storage.applySnapshot({ data: new Uint8Array(0), metadata: { index: 100, term: 1, confState: { voters: [], learners: [] } } });
  const l = new RaftLog(storage, discardLogger);
  for (let i = 1; i < 100; i++) l.append([ent(i + 1, 100 + i)]);
  assert.equal(l.term(99), 0);
  assert.equal(l.term(100), 1);
  assert.equal(l.term(150), 51);
  assert.equal(l.term(199), 100);
  assert.equal(l.term(200), 0);
});

test("slice throws CompactedError below the first index and respects maxSize", () => {
  const storage = newStorageWithEnts([ent(1, 1), ent(1, 2), ent(1, 3), ent(1, 4)]);
  storage.compact(2);
  const l = new RaftLog(storage, discardLogger);
  l.append([ent(1, 5), ent(1, 6)]);
  assert.throws(() => l.slice(2, 4, Infinity), CompactedError);
  assert.deepStrictEqual(
    l.slice(3, 7, Infinity).map((e) => e.index),
    [3, 4, 5, 6],
  );
  assert.deepStrictEqual(
    l.slice(3, 7, 0).map((e) => e.index),
    [3],
  );
  assert.throws(() => l.slice(3, 8, Infinity), { code: "ERR_RAFT_INVARIANT" });
});

test("restore replaces the log by the snapshot and commits it", () => {
  const l = new RaftLog(new MemoryStorage(), discardLogger);
  const snap: Snapshot = { data: new Uint8Array(0), metadata: { index: 10, term: 5, confState: { voters: [1], learners: [] } } };
  l.restore(snap);
  assert.equal(l.committed, 10);
  assert.equal(l.firstIndex(), 11);
  assert.equal(l.lastIndex(), 10);
  assert.equal(l.term(10), 5);
  assert.deepStrictEqual(l.unstableEntries(), []);
});

const truncateCases: Array<{ entries: Entry[]; offset: number; toappend: Entry[]; woffset: number; wentries: Entry[] }> = [
  // Append to the end.
  { entries: [ent(1, 5)], offset: 5, toappend: [ent(1, 6), ent(1, 7)], woffset: 5, wentries: [ent(1, 5), ent(1, 6), ent(1, 7)] },
  // Replace the unstable entries.
  { entries: [ent(1, 5)], offset: 5, toappend: [ent(2, 5), ent(2, 6)], woffset: 5, wentries: [ent(2, 5), ent(2, 6)] },
  { entries: [ent(1, 5)], offset: 5, toappend: [ent(2, 4), ent(2, 5), ent(2, 6)], woffset: 4, wentries: [ent(2, 4), ent(2, 5), ent(2, 6)] },
  // Truncate the existing entries and append.
  { entries: [ent(1, 5), ent(1, 6), ent(1, 7)], offset: 5, toappend: [ent(2, 6)], woffset: 5, wentries: [ent(1, 5), ent(2, 6)] },
  { entries: [ent(1, 5), ent(1, 6), ent(1, 7)], offset: 5, toappend: [ent(2, 7), ent(2, 8)], woffset: 5, wentries: [ent(1, 5), ent(1, 6), ent(2, 7), ent(2, 8)] },
];
for (const [i, tt] of truncateCases.entries()) {
  test(`unstable truncateAndAppend keeps indexes contiguous #${i}`, () => {
    const u = new Unstable(tt.offset, discardLogger);
    u.entries = tt.entries;
    const before = u.entries;
    u.truncateAndAppend(tt.toappend);
    assert.equal(u.offset, tt.woffset);
    assert.deepStrictEqual(u.entries, tt.wentries);
    assert.deepStrictEqual(before, tt.entries, "the previous array (held by a Ready) is not mutated");
  });
}

test("unstable maybeTerm knows its entries and its snapshot's index only", () => {
  const u = new Unstable(5, discardLogger);
  u.entries = [ent(1, 5)];
  u.snapshot = { data: new Uint8Array(0), metadata: { index: 4, term: 1, confState: { voters: [], learners: [] } } };
  assert.equal(u.maybeTerm(5), 1);
  assert.equal(u.maybeTerm(6), undefined);
  assert.equal(u.maybeTerm(4), 1);
  assert.equal(u.maybeTerm(3), undefined);
  assert.equal(u.maybeFirstIndex(), 5);
  assert.equal(u.maybeLastIndex(), 5);
  u.stableSnapTo(4);
  assert.equal(u.snapshot, undefined);
});
