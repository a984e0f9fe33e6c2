import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { etcdSnapshotStatus, readEtcdV3State } from "./etcd-bolt.ts";

const fixture = (): Buffer => readFileSync(new URL("./testdata/etcd-3.4.23.snapshot.db", import.meta.url));

test("status: what etcdctl 3.4.23 snapshot status printed for the fixture", () => {
  // etcdctl snapshot status -w json: {"hash":980336340,"revision":16,"totalKey":27,"totalSize":24576}
  assert.deepEqual(etcdSnapshotStatus(fixture()), { hash: 980336340, revision: 16, totalKey: 27, totalSize: 24576 });
});

test("v3 state: revisions from the compaction on, tombstones, lease, auth", () => {
  const s = readEtcdV3State(fixture());
  assert.equal(s.revision, 16);
  assert.equal(s.compactRevision, 5);
  assert.equal(s.scheduledCompactRevision, 5);
  const hist = s.revisions.map((r) => `${r.main}.${r.sub}${r.tombstone ? "t" : ""}:${Buffer.from(r.kv.key).toString()}=${Buffer.from(r.kv.value).toString()}`);
  // The compaction at 5 keeps each key's latest revision at or before 5: a's put at 4
  // stays (its deletion came at 6), foo's puts at 2 goes (3 is its latest by then).
  assert.deepEqual(hist, [
    "3.0:foo=bar2", "4.0:a=1", "5.0:b=2", "6.0t:a=", "7.0:c=3", "8.0:foo=bar3", "8.1:t1=x", "9.0:lk1=v1",
    "10.0:lk2=v2", "11.0:foo=bar4", "12.0:foo=bar5", "13.0t:b=", "14.0:c=33", "15.0:d=4", "16.0:d=4",
  ]);
  const foo = s.revisions.find((r) => r.main === 12)!;
  assert.deepEqual([foo.kv.createRevision, foo.kv.modRevision, foo.kv.version], [2n, 12n, 5n]);
  assert.deepEqual(s.leases.map((l) => [l.id.toString(16), l.ttl]), [["2a12a21b27269c0c", 600]]);
  assert.equal(s.revisions.filter((r) => r.kv.lease === 0x2a12a21b27269c0cn).length, 2);
  assert.equal(s.authEnabled, true);
  assert.deepEqual(s.users.map((u) => [Buffer.from(u.name).toString(), u.roles]), [["alice", ["r1"]], ["root", ["root"]]]);
  const r1 = s.roles.find((r) => Buffer.from(r.name).toString() === "r1")!;
  assert.deepEqual(r1.keyPermission.map((p) => [p.permType, Buffer.from(p.key).toString(), Buffer.from(p.rangeEnd).toString()]), [[2, "/x", "/y"]]);
  assert.ok(s.consistentIndex > 0n);
});
