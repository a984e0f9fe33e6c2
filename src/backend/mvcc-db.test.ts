// The v3 backend: record layout, the consistent index written with the effects, values
// leaving memory once committed, and the state a restart rebuilds from the file.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { V3KeySpace, type PutRequest } from "../store/v3/index.ts";
import { StoredRecord } from "../store/v3/key-index.ts";
import { createRequire } from "node:module";
import { MvccDb } from "./mvcc-db.ts";
import { decodeRecordHead, encodeRecord, parseRevisionKey, recordValue, revisionKey, revisionOf } from "./record-codec.ts";

const lmdb = createRequire(import.meta.url)("lmdb") as typeof import("lmdb");
const dir = mkdtempSync(join(tmpdir(), "kvctl-mvcc-db-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => join(dir, `db${n++}`, "db");

const put = (key: string, value: string, lease = 0n): PutRequest => ({ key: Buffer.from(key), value: Buffer.from(value), lease, prevKv: false, ignoreValue: false, ignoreLease: false });
const all = { rangeEnd: Buffer.from([0]), limit: 0, revision: 0, sortOrder: 0, sortTarget: 0, serializable: true, keysOnly: false, countOnly: false, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0 } as const;
const rangeAll = (ks: V3KeySpace, revision = 0): string[] =>
  ks.range({ ...all, key: Buffer.from([0]), revision }).kvs.map((kv) => `${kv.key.toString()}=${kv.value.toString()}@${kv.modRevision}/v${kv.version}`);

test("revision keys sort as revisions and round-trip", () => {
  const revs = [
    [1, 0],
    [1, 1],
    [2, 0],
    [255, 3],
    [256, 0],
    [2 ** 40, 7],
    [2 ** 47 - 1, 2 ** 20],
  ] as const;
  const keys = revs.map(([m, s]) => revisionKey(m, s));
  const sorted = [...keys].sort(Buffer.compare);
  assert.deepEqual(sorted, keys);
  for (const [i, [m, s]] of revs.entries()) assert.deepEqual(parseRevisionKey(keys[i]!), { main: m, sub: s });
  assert.throws(() => parseRevisionKey(Buffer.alloc(8)), /16|8 bytes/);
});

test("a record's head round-trips without its value, which stays readable in the encoding", () => {
  const lease = 2n ** 62n + 12345n; // past 2^53: never a JS number
  const rec = new StoredRecord("k\u00ff\u0000", 9, 2, 7, 3, Buffer.from("value bytes"), lease, false);
  const enc = encodeRecord(rec);
  // Decoded from inside a larger buffer, as LMDB hands out its shared read buffer.
  const shared = Buffer.alloc(enc.length + 100);
  enc.copy(shared, 37);
  const back = revisionOf(decodeRecordHead(shared.subarray(37), enc.length), revisionKey(9, 2));
  assert.deepEqual(back, { id: rec.id, main: 9, sub: 2, createRevision: 7, version: 3, lease, tombstone: false });
  assert.equal(Buffer.from(recordValue(enc)).toString(), "value bytes");
  const noLease = encodeRecord(new StoredRecord("k", 11, 0, 11, 1, Buffer.from("v"), 0n, false));
  assert.equal(decodeRecordHead(noLease, noLease.length).lease, 0n);
  const tombBytes = encodeRecord(new StoredRecord("k", 10, 0, 0, 0, Buffer.alloc(0), 0n, true));
  const tomb = revisionOf(decodeRecordHead(tombBytes, tombBytes.length), revisionKey(2 ** 47 - 1, 2 ** 20));
  assert.deepEqual([tomb.tombstone, tomb.main, tomb.sub], [true, 2 ** 47 - 1, 2 ** 20]);
  assert.equal(recordValue(tombBytes).length, 0);
  assert.throws(() => revisionOf(tomb, Buffer.alloc(8)), /8 bytes/);
});

test("commit writes the consistent index with the batch; nothing is written when nothing changed", async () => {
  const path = fresh();
  const db = MvccDb.open({ path });
  const ks = new V3KeySpace({ backend: db });
  assert.equal(db.consistentIndex, 0);
  db.commit(3); // nothing changed yet
  await db.flushed();
  assert.equal(db.consistentIndex, 0);
  ks.put(put("a", "1"));
  db.commit(4);
  await db.flushed();
  assert.equal(db.consistentIndex, 4);
  await db.close();
  const again = MvccDb.open({ path });
  assert.equal(again.consistentIndex, 4);
  assert.deepEqual(rangeAll(V3KeySpace.restore(again.load(), again)), ["a=1@2/v1"]);
  await again.close();
});

test("a restart attaches to each lease exactly the live keys whose current value has it", async () => {
  const path = fresh();
  const db = MvccDb.open({ path });
  const ks = new V3KeySpace({ backend: db });
  const now = Date.now();
  ks.leaseGrant({ id: 7n, ttl: 600 }, now);
  ks.leaseGrant({ id: 8n, ttl: 600 }, now);
  ks.put(put("kept", "1", 7n));
  ks.put(put("moved", "1", 7n));
  ks.put(put("moved", "2", 8n));
  ks.put(put("dropped", "1", 7n));
  ks.put(put("dropped", "2")); // a put without a lease leaves it
  ks.put(put("gone", "1", 8n));
  ks.deleteRange({ key: Buffer.from("gone"), rangeEnd: Buffer.alloc(0), prevKv: false });
  ks.put(put("plain", "1"));
  db.commit(10);
  await db.flushed();
  await db.close();
  const again = MvccDb.open({ path });
  const back = V3KeySpace.restore(again.load(), again);
  const keysOf = (id: bigint) => back.timeToLive(id, now, { keys: true })?.keys.map((k) => k.toString()).sort();
  assert.deepEqual(keysOf(7n), ["kept"]);
  assert.deepEqual(keysOf(8n), ["moved"]);
  // Revoking takes exactly those keys with it.
  back.leaseRevoke(7n);
  assert.deepEqual(rangeAll(back).map((s) => s.split("=")[0]), ["dropped", "moved", "plain"]);
  await again.close();
});

test("records of 1 KiB values fill the file's pages: under 1,300 bytes each with their heads", async () => {
  const db = MvccDb.open({ path: fresh() });
  const ks = new V3KeySpace({ backend: db });
  const value = "v".repeat(1024);
  for (let i = 0; i < 3000; i++) ks.put(put(`fill/${i}`, value));
  db.commit(3001);
  await db.flushed();
  // 4 KiB pages hold three such records (~1,430 bytes each with the head table); 8 KiB, seven.
  const perRecord = db.sizes().inUse / 3000;
  assert.ok(perRecord < 1300, `${perRecord.toFixed(0)} bytes a record`);
  await db.close();
});

test("a batch commits before its interval ends once commitLimit writes wait (etcd's --backend-batch-limit)", async () => {
  const db = MvccDb.open({ path: fresh(), commitDelayMs: 60_000, commitLimit: 5 });
  const ks = new V3KeySpace({ backend: db });
  ks.put(put("a", "1"));
  const small = db.commit(2);
  for (let i = 0; i < 5; i++) ks.put(put(`b${i}`, "1"));
  const full = db.commit(7);
  // The guard is cleared once the commits settle: left pending, it kept the test file's
  // process alive after its last test until the 5 s were up.
  let guard: ReturnType<typeof setTimeout> | undefined;
  const settled = await Promise.race([Promise.all([small, full]).then(() => true), new Promise<false>((r) => (guard = setTimeout(() => r(false), 5000)))]);
  clearTimeout(guard);
  assert.ok(settled, "both batches committed long before the 60 s interval");
  await db.close();
});

test("values leave memory once their batch is committed and are read back from the file", async () => {
  const db = MvccDb.open({ path: fresh() });
  const ks = new V3KeySpace({ backend: db });
  ks.put(put("k", "first"));
  const held = ks.range({ ...all, key: Buffer.from("k"), rangeEnd: Buffer.alloc(0) });
  assert.equal(held.kvs[0]!.value.toString(), "first");
  db.commit(1);
  await db.flushed();
  ks.put(put("k", "second"));
  // Before its commit the new value is served from memory (LMDB does not show it yet)...
  assert.deepEqual(rangeAll(ks), ["k=second@3/v2"]);
  db.commit(2);
  await db.flushed();
  // ...and after it from the file, as is the old revision's.
  assert.deepEqual(rangeAll(ks), ["k=second@3/v2"]);
  assert.deepEqual(rangeAll(ks, 2), ["k=first@2/v1"]);
  await db.close();
});

test("a restart rebuilds the same key space: generations, tombstones, compaction, leases and alarms", async () => {
  const path = fresh();
  const db = MvccDb.open({ path });
  const ks = new V3KeySpace({ backend: db });
  ks.leaseGrant({ id: 2n ** 60n, ttl: 30 }, 1_000);
  for (let i = 0; i < 50; i++) ks.put(put(`key${i % 7}`, `v${i}`, i % 5 === 0 ? 2n ** 60n : 0n));
  ks.deleteRange({ key: Buffer.from("key3"), rangeEnd: Buffer.alloc(0), prevKv: false });
  ks.put(put("key3", "reborn"));
  ks.put(put("leased", "l", 2n ** 60n));
  ks.compact(30);
  ks.txn({ compare: [], success: [{ put: put("t1", "x") }, { deleteRange: { key: Buffer.from("key1"), rangeEnd: Buffer.alloc(0), prevKv: false } }], failure: [] });
  ks.alarm({ action: 1, memberId: "18446744073709551615", alarm: 1 });
  db.commit(99);
  await db.flushed();
  const want = { hash: ks.hash(), range: rangeAll(ks), at40: rangeAll(ks, 40), rev: ks.revision, leases: ks.leases(), alarms: ks.alarms() };
  await db.close();

  const reopened = MvccDb.open({ path });
  const back = V3KeySpace.restore(reopened.load(), reopened);
  assert.equal(reopened.consistentIndex, 99);
  assert.deepEqual({ hash: back.hash(), range: rangeAll(back), at40: rangeAll(back, 40), rev: back.revision, leases: back.leases(), alarms: back.alarms() }, want);
  assert.throws(() => back.range({ ...all, key: Buffer.from([0]), revision: 29 }), /compacted/);
  // The lease's keys were re-attached: revoking it deletes them.
  back.leaseRevoke(2n ** 60n);
  assert.ok(!rangeAll(back).some((kv) => kv.startsWith("leased=")), "the leased key went with its lease");
  // NOSPACE survived: puts are refused until it is disarmed.
  assert.throws(() => back.put(put("z", "1")), /database space exceeded/);
  back.alarm({ action: 2, memberId: "18446744073709551615", alarm: 1 });
  back.put(put("z", "1"));
  await reopened.close();
});

test("a file without the head table (older kvctl, or written by one since) gets it rebuilt when opened", async () => {
  const path = fresh();
  const db = MvccDb.open({ path });
  const ks = new V3KeySpace({ backend: db });
  for (let i = 0; i < 40; i++) ks.put(put(`k${i % 9}`, `v${i}`));
  ks.deleteRange({ key: Buffer.from("k2"), rangeEnd: Buffer.alloc(0), prevKv: false });
  db.commit(50);
  await db.flushed();
  const want = { hash: ks.hash(), range: rangeAll(ks), at20: rangeAll(ks, 20) };
  await db.close();
  // As an older kvctl leaves the file: no head table and no mark; then as one that wrote
  // records after a newer one: a stale head table, its mark behind the consistent index.
  for (const damage of ["no table", "stale table"] as const) {
    const raw = lmdb.open({ path, noSubdir: true, maxDbs: 8 });
    const heads = raw.openDB({ name: "head", encoding: "binary", keyEncoding: "binary" });
    const meta = raw.openDB<unknown, string>({ name: "meta", encoding: "msgpack", keyEncoding: "ordered-binary" });
    if (damage === "no table") {
      await heads.drop();
      await meta.remove("headsAt");
    } else {
      const first = [...heads.getKeys({ limit: 1 })][0] as Buffer;
      await heads.remove(first);
      await meta.put("headsAt", 49);
    }
    await raw.close();
    const again = MvccDb.open({ path });
    const back = V3KeySpace.restore(again.load(), again);
    assert.deepEqual({ hash: back.hash(), range: rangeAll(back), at20: rangeAll(back, 20) }, want, damage);
    fileState(again);
    await again.close();
  }
});

test("compaction removes the records no revision can read any more, and defragment shrinks the file", async () => {
  const db = MvccDb.open({ path: fresh() });
  const ks = new V3KeySpace({ backend: db });
  const big = "x".repeat(2000);
  for (let i = 0; i < 2000; i++) ks.put(put(`k${i % 10}`, big));
  db.commit(1);
  await db.flushed();
  const before = db.sizes();
  ks.compact(ks.revision);
  db.commit(2);
  await db.compactionFinished(ks.revision);
  const compacted = db.sizes();
  assert.ok(compacted.inUse < before.inUse / 10, `in use ${before.inUse} -> ${compacted.inUse}`);
  await db.defragment();
  const after = db.sizes();
  assert.ok(after.size < before.size / 10, `file ${before.size} -> ${after.size}`);
  assert.equal(rangeAll(ks).length, 10);
  assert.equal(ks.range({ ...all, key: Buffer.from("k3"), rangeEnd: Buffer.alloc(0) }).kvs[0]!.value.toString(), big);
  await db.close();
});

test("a reader sees the last commit, not later writes", async () => {
  const db = MvccDb.open({ path: fresh() });
  const ks = new V3KeySpace({ backend: db });
  ks.put(put("a", "1"));
  db.commit(5);
  await db.flushed();
  const r = db.reader();
  ks.put(put("b", "2"));
  db.commit(6);
  await db.flushed();
  assert.equal([...r.records()].length, 1);
  assert.equal(r.meta.consistentIndex, 5);
  r.done();
  await db.close();
});

test("commits within the batch interval go to LMDB together, their values readable meanwhile", async () => {
  const path = fresh();
  const db = MvccDb.open({ path, commitDelayMs: 50 });
  const ks = new V3KeySpace({ backend: db });
  const commits: Promise<void>[] = [];
  const firstCommit = performance.now();
  for (let i = 0; i < 3; i++) {
    ks.put(put(`k${i}`, `v${i}`));
    commits.push(db.commit(10 + i)!);
    await new Promise((r) => setImmediate(r));
  }
  ks.deleteRange({ key: Buffer.from("k0"), rangeEnd: Buffer.alloc(0), prevKv: false });
  commits.push(db.commit(13)!);
  assert.deepEqual(rangeAll(ks), ["k1=v1@3/v1", "k2=v2@4/v1"], "served before the commit");
  // When each settled, not whether any had after a sleep: a loaded machine may stall the
  // sleep past the interval.
  const settledAfter = await Promise.all(commits.map((c) => c.then(() => performance.now() - firstCommit)));
  assert.ok(settledAfter.every((ms) => ms >= 49), `nothing is committed before the interval ends: ${settledAfter.map((ms) => ms.toFixed(1)).join(", ")} ms`);
  assert.deepEqual(rangeAll(ks, 4), ["k0=v0@2/v1", "k1=v1@3/v1", "k2=v2@4/v1"], "read back from the file");
  await db.close();
  const again = MvccDb.open({ path });
  assert.equal(again.consistentIndex, 13);
  assert.deepEqual(rangeAll(V3KeySpace.restore(again.load(), again)), ["k1=v1@3/v1", "k2=v2@4/v1"]);
  await again.close();
});

test("lease checkpoints reach the file only with persistLeaseCheckpoints, and come back at a restart", async () => {
  const remaining = async (persist: boolean): Promise<(number | undefined)[]> => {
    const path = fresh();
    const db = MvccDb.open({ path, persistLeaseCheckpoints: persist });
    const ks = new V3KeySpace({ backend: db });
    ks.leaseGrant({ id: 1n, ttl: 60 }, 1_000);
    ks.leaseGrant({ id: 2n, ttl: 60 }, 1_000);
    db.commit(1);
    ks.leaseCheckpoint([{ id: 1n, remainingTtl: 17 }, { id: 2n, remainingTtl: 30 }]);
    ks.leaseCheckpoint([{ id: 2n, remainingTtl: 0 }]);
    db.commit(2);
    await db.close();
    const again = MvccDb.open({ path });
    const back = V3KeySpace.restore(again.load(), again);
    const r = [back.leaseRemainingTtl(1n), back.leaseRemainingTtl(2n), again.consistentIndex];
    const reader = again.reader();
    r.push(reader.leases().find((l) => l.id === 1n)?.remainingTtl);
    reader.done();
    await again.close();
    return r;
  };
  assert.deepEqual(await remaining(true), [17, 0, 2, 17], "persisted: a restart resumes from the checkpoint, and a backup carries it");
  assert.deepEqual(await remaining(false), [0, 0, 1, undefined], "etcd 3.4's default: checkpoints live in memory, and write nothing");
});

/** Every record key in the file and its meta, as a reader sees the last commit. */
function fileState(db: MvccDb): { records: string[]; meta: unknown } {
  const r = db.reader();
  try {
    const records = [...r.records()].map(([k]) => { const { main, sub } = parseRevisionKey(k); return `${main}.${sub}`; });
    const heads = [...db.load().records].map((h) => `${h.main}.${h.sub}`);
    assert.deepEqual(heads, records, "the head table holds the head of every record, and nothing else");
    return { records, meta: r.meta };
  } finally {
    r.done();
  }
}

/**
 * 100 keys put 3 times each (revisions 2..301), k000..k007 deleted (302..309), compacted at
 * 308: k000..k005 lose all 4 records, k006 its puts (its delete is at 308), k007 and the
 * other 92 keys their first 2 puts: 213 records dropped, 95 kept.
 */
function compactionHistory(ks: V3KeySpace, db: MvccDb): number {
  for (let round = 0; round < 3; round++) for (let i = 0; i < 100; i++) ks.put(put(`k${String(i).padStart(3, "0")}`, `v${round}`));
  for (let i = 0; i < 8; i++) ks.deleteRange({ key: Buffer.from(`k${String(i).padStart(3, "0")}`), rangeEnd: Buffer.alloc(0), prevKv: false });
  db.commit(1);
  ks.compact(ks.revision - 1);
  db.commit(2);
  return ks.revision - 1;
}

test("a compaction's records go in batches of the limit, each its own commit, with the same result as one batch", async () => {
  const results: { records: string[]; meta: unknown }[] = [];
  for (const limit of [30, 100_000]) {
    const db = MvccDb.open({ path: fresh(), compactionBatchLimit: limit });
    const ks = new V3KeySpace({ backend: db });
    const rev = compactionHistory(ks, db);
    const dropped = 213;
    await db.compactionFinished(rev);
    assert.deepEqual(db.compactionStats, { batches: Math.ceil(dropped / limit), deleted: dropped, pending: 0, limit });
    await db.flushed();
    results.push(fileState(db));
    await db.close();
  }
  assert.deepEqual(results[0], results[1], "batched and unbatched leave the same file");
  assert.equal(results[0]!.records.length, 95);
});

test("between two compaction batches the member goes on: writes commit and reads see them", async () => {
  const db = MvccDb.open({ path: fresh(), compactionBatchLimit: 10 });
  const ks = new V3KeySpace({ backend: db });
  const rev = compactionHistory(ks, db);
  let done = false;
  const finished = db.compactionFinished(rev).then(() => (done = true));
  let writesDuring = 0;
  for (let i = 0; !done; i++) {
    ks.put(put(`during${i}`, "x"));
    await db.commit(10 + i);
    if (!done && db.compactionStats.batches > 0) writesDuring++;
    assert.equal(ks.range({ ...all, key: Buffer.from(`during${i}`), rangeEnd: Buffer.alloc(0) }).kvs[0]?.value.toString(), "x");
  }
  await finished;
  assert.equal(db.compactionStats.batches, 22);
  assert.ok(writesDuring >= 5, `${writesDuring} writes committed between the batches`);
  await db.close();
});

test("a restart during a compaction's batches compacts again and ends with the file an unbroken compaction leaves", async () => {
  const want = MvccDb.open({ path: fresh() });
  const wantKs = new V3KeySpace({ backend: want });
  const rev = compactionHistory(wantKs, want);
  await want.compactionFinished(rev);
  await want.flushed();
  const wantFile = fileState(want);
  const wantRange = rangeAll(wantKs);
  await want.close();

  const path = fresh();
  const db = MvccDb.open({ path, compactionBatchLimit: 20 });
  compactionHistory(new V3KeySpace({ backend: db }), db);
  await until(() => db.compactionStats.batches >= 3, 5000, "three batches");
  await db.close(); // the rest is not deleted: as after a crash between two batches
  assert.ok(db.compactionStats.deleted < 213, `${db.compactionStats.deleted} deleted before the stop`);

  const again = MvccDb.open({ path, compactionBatchLimit: 20 });
  const loaded = again.load();
  assert.equal(loaded.compactionPending, true);
  const ks = V3KeySpace.restore(loaded, again);
  assert.deepEqual(rangeAll(ks), wantRange, "the index is compacted again before any batch");
  assert.throws(() => ks.range({ ...all, key: Buffer.from([0]), revision: rev - 1 }), /compacted/);
  await again.compactionFinished(rev);
  await again.flushed();
  assert.deepEqual(fileState(again), wantFile);
  await again.close();

  const third = MvccDb.open({ path });
  assert.equal(third.load().compactionPending, false, "finished: nothing to do at the next start");
  await third.close();
});

test("a defragmentation during a compaction's batches holds them, and none is lost with the old file", async () => {
  const db = MvccDb.open({ path: fresh(), compactionBatchLimit: 10 });
  const ks = new V3KeySpace({ backend: db });
  const rev = compactionHistory(ks, db);
  await until(() => db.compactionStats.batches >= 2, 5000, "two batches");
  const defrag = db.defragment();
  const atStart = db.compactionStats.batches;
  await defrag;
  assert.ok(db.compactionStats.batches <= atStart + 1, "at most the batch in flight went on during the copy");
  await db.compactionFinished(rev);
  await db.flushed();
  assert.equal(fileState(db).records.length, 95);
  assert.equal(rangeAll(ks).length, 92);
  await db.close();
});

async function until(pred: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

test("the quota's size counts what was written and not committed yet, and the file takes it over at the commit", async () => {
  // A commit interval longer than the test: the writes stay queued until flushed().
  const db = MvccDb.open({ path: fresh(), commitDelayMs: 60_000 });
  const ks = new V3KeySpace({ backend: db });
  const before = db.size;
  assert.equal(db.quotaSize, before);
  const big = "x".repeat(200_000);
  ks.put(put("big", big));
  ks.put(put("big", big));
  void db.commit(1);
  assert.equal(db.size, before, "nothing committed yet");
  assert.ok(db.quotaSize >= before + 400_000, `quotaSize ${db.quotaSize} counts both values`);
  assert.ok(db.quotaSize < before + 410_000, `quotaSize ${db.quotaSize} is not far above them`);
  await db.flushed();
  assert.ok(db.size >= before + 400_000, `the file grew by the values: ${db.size}`);
  assert.equal(db.quotaSize, db.size, "nothing in flight after the commit");
  await db.close();
});
