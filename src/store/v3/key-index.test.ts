// KeyIndex: generations (create, update, delete, recreate), lookups at revisions, compaction.
import assert from "node:assert/strict";
import { test } from "node:test";
import { KeyIndex, MemoryValues } from "./key-index.ts";
import type { StoredRecord } from "./key-index.ts";

const v = (s: string) => Buffer.from(s);
/** A key index whose puts keep their values (the store does this through its backend). */
function newIndex(): KeyIndex {
  const values = new MemoryValues();
  const ki = new KeyIndex("k", values);
  const put = ki.put.bind(ki);
  ki.put = (opts) => {
    const rec = put(opts);
    values.keep(rec);
    return rec;
  };
  return ki;
}
const fields = (r: StoredRecord | undefined) => r && [r.main, r.sub, r.createRevision, r.version, r.tombstone, r.lease];
const shape = (ki: KeyIndex) =>
  ki.generations().map((g) => g.map((r) => `${r.main}.${r.sub}${r.tombstone ? "t" : `v${r.version}c${r.createRevision}`}`));

function history(): KeyIndex {
  const ki = newIndex();
  ki.put({ main: 2, sub: 0, value: v("a"), lease: 0n });
  ki.put({ main: 3, sub: 0, value: v("b"), lease: 0n });
  ki.tombstone(4, 0);
  ki.put({ main: 6, sub: 1, value: v("c"), lease: 0n });
  ki.tombstone(8, 0);
  ki.put({ main: 9, sub: 0, value: v("d"), lease: 0n });
  return ki;
}

test("key index starts a new generation after each tombstone", () => {
  assert.deepEqual(shape(history()), [["2.0v1c2", "3.0v2c2", "4.0t"], ["6.1v1c6", "8.0t"], ["9.0v1c9"]]);
});

test("key index answers the record visible at each revision", () => {
  const ki = history();
  const at = (rev: number) => ki.visibleAt(rev)?.value.toString();
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(at), [undefined, "a", "b", undefined, undefined, "c", "c", undefined, "d", "d"]);
  assert.equal(ki.at(4)?.tombstone, true);
  assert.equal(ki.live()?.value.toString(), "d");
});

test("key index refuses revisions that do not increase and tombstones of a deleted key", () => {
  const ki = history();
  assert.throws(() => ki.put({ main: 9, sub: 0, value: v("x"), lease: 0n }), /not after/);
  ki.tombstone(10, 0);
  assert.throws(() => ki.tombstone(11, 0), /not live/);
});

const compactCases: { at: number; shape: string[][]; empty?: boolean }[] = [
  { at: 1, shape: [["2.0v1c2", "3.0v2c2", "4.0t"], ["6.1v1c6", "8.0t"], ["9.0v1c9"]] },
  { at: 3, shape: [["3.0v2c2", "4.0t"], ["6.1v1c6", "8.0t"], ["9.0v1c9"]] },
  { at: 4, shape: [["4.0t"], ["6.1v1c6", "8.0t"], ["9.0v1c9"]] }, // the delete at 4 stays replayable
  { at: 5, shape: [["6.1v1c6", "8.0t"], ["9.0v1c9"]] },
  { at: 7, shape: [["6.1v1c6", "8.0t"], ["9.0v1c9"]] },
  { at: 9, shape: [["9.0v1c9"]] },
];
for (const c of compactCases) {
  test(`key index compaction at ${c.at} keeps what a range at ${c.at} or later can see`, () => {
    const ki = history();
    assert.equal(ki.compact(c.at), false);
    assert.deepEqual(shape(ki), c.shape);
    for (let rev = c.at; rev <= 10; rev++) {
      assert.equal(ki.visibleAt(rev)?.value.toString(), history().visibleAt(rev)?.value.toString());
    }
  });
}

test("key index compaction past a final tombstone empties the index", () => {
  const ki = history();
  ki.tombstone(10, 0);
  assert.equal(ki.compact(10), false, "the delete at 10 is kept");
  assert.equal(ki.compact(11), true);
});

test("a txn deleting and re-creating a key makes two generations in one revision", () => {
  const ki = newIndex();
  ki.put({ main: 2, sub: 0, value: v("a"), lease: 0n });
  const t = ki.tombstone(3, 0);
  const p = ki.put({ main: 3, sub: 1, value: v("b"), lease: 0n });
  assert.deepEqual(shape(ki), [["2.0v1c2", "3.0t"], ["3.1v1c3"]]);
  assert.deepEqual(fields(ki.visibleAt(3)), fields(p));
  assert.equal(ki.visibleAt(3)?.value.toString(), "b");
  assert.equal(ki.holds(t), true);
  assert.equal(ki.holds(p), true);
  assert.equal(ki.holds({ main: 3, sub: 2 }), false);
  assert.equal(ki.holds({ main: 2, sub: 0 }), true);
  assert.deepEqual(ki.between(3, 3).map(fields), [fields(t), fields(p)]);
  ki.compact(3);
  assert.equal(ki.holds({ main: 2, sub: 0 }), false, "compacted away");
  assert.equal(ki.holds(t), false, "not what a range at 3 sees");
  assert.deepEqual(ki.between(3, 3).map(fields), [fields(p)]);
});

test("leases are kept per record, only for keys that had one", () => {
  const ki = newIndex();
  ki.put({ main: 2, sub: 0, value: v("a"), lease: 0n });
  ki.put({ main: 3, sub: 0, value: v("b"), lease: 2n ** 62n });
  assert.equal(ki.liveLease(), 2n ** 62n);
  assert.equal(ki.at(2)?.lease, 0n);
  assert.equal(ki.at(3)?.lease, 2n ** 62n);
  ki.tombstone(4, 0);
  assert.equal(ki.liveLease(), undefined);
  assert.equal(ki.at(4)?.lease, 0n);
  ki.compact(3);
  assert.equal(ki.at(3)?.lease, 2n ** 62n);
  assert.deepEqual(ki.generations().map((g) => g.map((r) => r.lease)), [[2n ** 62n, 0n]]);
});

test("fromRecords rejects misplaced tombstones and disorder", () => {
  const recs = history().generations().map((g) => [...g]);
  const source = new MemoryValues();
  assert.deepEqual(shape(KeyIndex.fromRecords("k", source, recs)), shape(history()));
  assert.throws(() => KeyIndex.fromRecords("k", source, [recs[1]!, recs[0]!]), /out of order/);
  assert.throws(() => KeyIndex.fromRecords("k", source, [[...recs[0]!, ...recs[1]!]]), /misplaced tombstone/);
});
