// hashKV: etcd's HashByRev rules (revision 0 = current, compacted at or below the
// compaction revision, future above the current one) and the property members rely on:
// the same history gives the same hash, and a past revision's hash is what revision 0
// answered back then.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V3Errors } from "../../api/v3-errors.ts";
import { hashKV } from "./hash-kv.ts";
import { MvccStore } from "./mvcc-store.ts";
import { delReq, putReq } from "./v3.test-helper.ts";

/** The same writes on any store: puts, overwrites, deletes. */
function write(s: MvccStore, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    if (i % 7 === 3) s.deleteRange(delReq(`k${i % 5}`));
    else s.put(putReq(`k${i % 5}`, `v${i}`));
  }
}

test("revision 0 is the current one; same writes, same hash; past revisions keep their hash", () => {
  const a = new MvccStore();
  const b = new MvccStore();
  const atRev = new Map<number, number>();
  for (let i = 0; i < 30; i++) {
    write(a, i, i + 1);
    const r = hashKV(a, 0);
    assert.equal(r.revision, a.revision);
    assert.equal(r.compactRevision, -1, "never compacted: -1, as etcd");
    atRev.set(a.revision, r.hash);
  }
  write(b, 0, 30);
  assert.equal(hashKV(b, 0).hash, hashKV(a, 0).hash);
  for (const [rev, hash] of atRev) assert.equal(hashKV(a, rev).hash, hash, `revision ${rev}`);
  assert.equal(new Set(atRev.values()).size, atRev.size, "every revision hashes differently");
});

test("compacted: at or below the compaction revision fails; above it, both members agree; future fails", () => {
  const a = new MvccStore();
  const b = new MvccStore();
  write(a, 0, 40);
  write(b, 0, 40);
  const before = hashKV(a, 30).hash;
  a.compact(20);
  b.compact(20);
  assert.throws(() => hashKV(a, 20), (e) => e instanceof Error && e.message === V3Errors.compacted().message);
  assert.throws(() => hashKV(a, 5), (e) => e instanceof Error && e.message === V3Errors.compacted().message);
  assert.throws(() => hashKV(a, a.revision + 1), (e) => e instanceof Error && e.message === V3Errors.futureRev().message);
  const r = hashKV(a, 30);
  assert.equal(r.compactRevision, 20);
  assert.equal(r.revision, a.revision);
  assert.equal(r.hash, hashKV(b, 30).hash);
  assert.notEqual(r.hash, before, "records the compaction dropped no longer count (etcd alike)");
  assert.equal(hashKV(a, 0).hash, hashKV(b, 0).hash);
  write(a, 40, 41);
  assert.notEqual(hashKV(a, 0).hash, hashKV(b, 0).hash, "one more write on one member shows");
  assert.equal(hashKV(a, 30).hash, hashKV(b, 30).hash, "below it they still agree");
});

test("what a compaction keeps counts by value: a member that compacted later agrees once it compacts too", () => {
  const a = new MvccStore();
  const b = new MvccStore();
  write(a, 0, 25);
  write(b, 0, 25);
  a.compact(10);
  write(a, 25, 35);
  write(b, 25, 35);
  b.compact(10);
  assert.equal(hashKV(a, 0).hash, hashKV(b, 0).hash);
  assert.equal(hashKV(a, -1).hash, hashKV(new MvccStore(), -1).hash, "a negative revision counts no record");
});

test("a compaction that drops nothing leaves the hash as it was (etcd alike); one that drops records changes it", () => {
  const a = new MvccStore();
  for (let i = 1; i <= 5; i++) a.put(putReq(`k${i}`, `v${i}`));
  const before = hashKV(a, 0).hash;
  a.compact(4);
  assert.equal(hashKV(a, 0).hash, before);
  a.put(putReq("k1", "again"));
  a.put(putReq("k1", "and again"));
  const grown = hashKV(a, 0).hash;
  a.compact(a.revision);
  assert.notEqual(hashKV(a, 0).hash, grown, "the overwritten k1 record no longer counts");
});
