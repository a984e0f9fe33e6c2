// MemoryStorage (etcd's storage_test.go).

import assert from "node:assert/strict";
import { test } from "node:test";
import { CompactedError, SnapOutOfDateError, UnavailableError } from "./errors.ts";
import { ent } from "./raft.test-helper.ts";
import { MemoryStorage } from "./storage.ts";
import type { Entry } from "./types.ts";

/** Storage holding a snapshot at 3/3 and entries 4/4, 5/5. */
function base(): MemoryStorage {
  const s = new MemoryStorage();
  s.append([ent(1, 1), ent(2, 2), ent(3, 3), ent(4, 4), ent(5, 5)]);
  s.compact(3);
  return s;
}

test("term throws CompactedError below the snapshot index and UnavailableError past the end", () => {
  const s = base();
  assert.throws(() => s.term(2), CompactedError);
  assert.equal(s.term(3), 3);
  assert.equal(s.term(4), 4);
  assert.equal(s.term(5), 5);
  assert.throws(() => s.term(6), UnavailableError);
});

test("entries returns [lo, hi) limited by size but at least one entry", () => {
  const s = base();
  s.append([ent(6, 6)]);
  assert.throws(() => s.entries(2, 6), CompactedError);
  assert.throws(() => s.entries(3, 4), CompactedError);
  assert.deepStrictEqual(s.entries(4, 5), [ent(4, 4)]);
  assert.deepStrictEqual(s.entries(4, 7), [ent(4, 4), ent(5, 5), ent(6, 6)]);
  assert.deepStrictEqual(s.entries(4, 7, 0), [ent(4, 4)]);
  assert.throws(() => s.entries(4, 8), { code: "ERR_RAFT_INVARIANT" });
});

test("first and last index follow compaction and appends", () => {
  const s = base();
  assert.equal(s.firstIndex(), 4);
  assert.equal(s.lastIndex(), 5);
  s.append([ent(5, 6)]);
  assert.equal(s.lastIndex(), 6);
  s.compact(4);
  assert.equal(s.firstIndex(), 5);
});

test("compact rejects indexes at or below the last compaction and past the end", () => {
  const s = base();
  assert.throws(() => s.compact(2), CompactedError);
  assert.throws(() => s.compact(3), CompactedError);
  assert.throws(() => s.compact(6), { code: "ERR_RAFT_INVARIANT" });
  s.compact(5);
  assert.equal(s.term(5), 5);
  assert.equal(s.lastIndex(), 5);
});

test("createSnapshot records index, term and conf state; older ones are refused", () => {
  const s = base();
  const cs = { voters: [1, 2, 3], learners: [] };
  const snap = s.createSnapshot(4, cs, new Uint8Array([1]));
  assert.deepStrictEqual(snap.metadata, { index: 4, term: 4, confState: cs });
  assert.throws(() => s.createSnapshot(4, cs, new Uint8Array(0)), SnapOutOfDateError);
  assert.deepStrictEqual(s.initialState().confState, cs);
});

const appendCases: Array<{ entries: Entry[]; want: Entry[] }> = [
  { entries: [ent(3, 3), ent(4, 4), ent(5, 5)], want: [ent(4, 4), ent(5, 5)] },
  { entries: [ent(3, 3), ent(6, 4), ent(6, 5)], want: [ent(6, 4), ent(6, 5)] },
  { entries: [ent(3, 3), ent(4, 4), ent(5, 5), ent(5, 6)], want: [ent(4, 4), ent(5, 5), ent(5, 6)] },
  // Truncate incoming entries that are already compacted.
  { entries: [ent(3, 2), ent(3, 3), ent(5, 4)], want: [ent(5, 4)] },
  // Truncate the existing suffix.
  { entries: [ent(5, 4)], want: [ent(5, 4)] },
  // Direct append.
  { entries: [ent(5, 6)], want: [ent(4, 4), ent(5, 5), ent(5, 6)] },
];
for (const [i, tt] of appendCases.entries()) {
  test(`append truncates what it overwrites and skips what is compacted #${i}`, () => {
    const s = base();
    s.append(tt.entries);
    assert.deepStrictEqual(s.entries(4, s.lastIndex() + 1), tt.want);
  });
}

test("append refuses a gap after the last index", () => {
  assert.throws(() => base().append([ent(6, 7)]), { code: "ERR_RAFT_INVARIANT" });
});

test("applySnapshot replaces everything and refuses older snapshots", () => {
  const s = new MemoryStorage();
  const cs = { voters: [1, 2, 3], learners: [] };
  s.applySnapshot({ data: new Uint8Array(0), metadata: { index: 4, term: 4, confState: cs } });
  assert.equal(s.firstIndex(), 5);
  assert.equal(s.lastIndex(), 4);
  assert.throws(
    () => s.applySnapshot({ data: new Uint8Array(0), metadata: { index: 3, term: 3, confState: cs } }),
    SnapOutOfDateError,
  );
});

test("entries hands out copies that later appends do not change", () => {
  const s = base();
  const got = s.entries(4, 6);
  s.append([ent(9, 4)]);
  assert.deepStrictEqual(got, [ent(4, 4), ent(5, 5)]);
});
