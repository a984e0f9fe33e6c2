// hashKV: etcd's HashByRev rules (revision 0 = current, compacted at or below the
// compaction revision, future above the current one) and the property members rely on:
// the same history gives the same hash, and a past revision's hash is what revision 0
// answered back then.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V3Errors } from "../../api/v3-errors.ts";
import { hashKV } from "./hash-kv.ts";
import { V3KeySpace } from "./key-space.ts";
import { MvccStore } from "./mvcc-store.ts";
import { b, delReq, opDel, opPut, putReq, txnReq } from "./v3.test-helper.ts";

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

test("etcd's number: the same history as on etcd 3.4.23 (puts, a txn, deletes, a lease revoked, a physical compaction) hashes as `etcdctl endpoint hashkv --rev` answered there", () => {
  const ks = new V3KeySpace();
  ks.put(putReq("a", "1")); // 2
  ks.put(putReq("b", "2")); // 3
  ks.leaseGrant({ id: 4660n, ttl: 600 }, 0);
  ks.put(putReq("c", "3", { lease: 4660n })); // 4
  ks.put(putReq("a", "11")); // 5
  ks.deleteRange(delReq("b")); // 6
  ks.txn(txnReq({ success: [opPut("d", "4"), opPut("e", ""), opDel("c")] })); // 7: subs 0, 1, 2
  ks.put(putReq("b", "22")); // 8
  ks.compact(6); // keeps a@5 and c@4; the tombstone of b at 6 is not etcd's
  ks.put(putReq("f", "6")); // 9
  ks.put(putReq("a", "111")); // 10
  ks.put(putReq("g", "7", { lease: 4660n })); // 11
  ks.put(putReq("h", "8", { lease: 4660n })); // 12
  ks.leaseRevoke(4660n); // 13: g, h
  // c@4 no longer counts at 7 (deleted there), a@5 not from 10 on (overwritten).
  const etcd = new Map([[7, 2315685027], [8, 3102472974], [10, 520547002], [13, 3424463140]]);
  for (const [rev, hash] of etcd) assert.equal(hashKV(ks, rev).hash, hash, `revision ${rev}`);
  ks.deleteRange(delReq("\0", { rangeEnd: b("\0") })); // 14: nothing live, so etcd counts every kept record again
  assert.equal(hashKV(ks, 13).hash, 3424463140);
  assert.deepEqual(hashKV(ks, 0), { hash: 2496410057, revision: 14, compactRevision: 6 });
});
