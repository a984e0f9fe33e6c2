import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { gunzipSync } from "node:zlib";
import { BoltDb, BoltFormatError, fnv64a, looksLikeBolt } from "./bbolt.ts";

const here = new URL("./testdata/", import.meta.url);
const etcdFile = (): Buffer => readFileSync(new URL("etcd-3.4.23.snapshot.db", here));
const shapes = (): Buffer => gunzipSync(readFileSync(new URL("bolt-shapes.db.gz", here)));
const keys = (it: Iterable<{ key: Buffer }> | undefined): string[] => [...(it ?? [])].map((e) => e.key.toString());

test("fnv64a matches the published test vectors", () => {
  assert.equal(fnv64a(Buffer.alloc(0)), 0xcbf29ce484222325n);
  assert.equal(fnv64a(Buffer.from("a")), 0xaf63dc4c8601ec8cn);
  assert.equal(fnv64a(Buffer.from("foobar")), 0x85944171f73967e8n);
});

test("etcd 3.4.23 snapshot: meta, buckets and their key counts", () => {
  const buf = etcdFile();
  assert.ok(looksLikeBolt(buf));
  const db = new BoltDb(buf);
  assert.equal(db.meta.pageSize, 4096);
  assert.equal(db.size, 24576);
  const counts = [...db.buckets()].map((b) => `${b.name.toString()}=${[...b.entries].length}`);
  assert.deepEqual(counts, ["alarm=0", "auth=2", "authRoles=2", "authUsers=2", "cluster=1", "key=15", "lease=1", "members=1", "members_removed=0", "meta=3"]);
  assert.deepEqual(keys(db.bucket("authUsers")), ["alice", "root"]);
  assert.equal(db.bucket("nope"), undefined);
  // Revision keys sort by revision: the key bucket's order is the history's.
  const revs = [...db.bucket("key")!].map((e) => e.key.readBigUInt64BE(0));
  assert.deepEqual(revs, [...revs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
});

test("branch pages, an overflow value, inline and paged nested buckets", () => {
  const db = new BoltDb(shapes());
  const many = keys(db.bucket("many"));
  assert.equal(many.length, 600);
  assert.equal(many[0], "k00000");
  assert.equal(many[599], "k00599");
  const big = [...db.bucket("overflow")!].find((e) => e.key.toString() === "big")?.value;
  assert.equal(big?.length, 10000);
  assert.ok(big!.every((b, i) => b === i % 251));
  const nested = [...db.bucket("nested")!].map((e) => [e.key.toString(), e.value?.toString()]);
  assert.deepEqual(nested, [["a", "1"], ["inner-inline", undefined], ["inner-paged", undefined], ["z", "26"]]);
  assert.deepEqual(keys(db.bucket("nested", "inner-inline")), ["deeper", "x"]);
  assert.deepEqual([...db.bucket("nested", "inner-inline", "deeper")!].map((e) => e.value?.toString()), ["r"]);
  const paged = keys(db.bucket("nested", "inner-paged"));
  assert.equal(paged.length, 300);
  assert.equal(paged[299], "p0299");
});

test("a torn meta falls back to the other; both torn is refused", () => {
  const buf = shapes();
  const db = new BoltDb(buf);
  const current = db.meta.txid;
  // The current meta is page txid % 2; break its checksum.
  const at = Number(current % 2n) * 4096 + 16 + 56;
  buf.writeBigUInt64LE(buf.readBigUInt64LE(at) ^ 1n, at);
  const older = new BoltDb(buf);
  assert.equal(older.meta.txid, current - 1n);
  // The older meta is the empty database bbolt made first.
  assert.equal(older.bucket("many"), undefined);
  const other = Number((current + 1n) % 2n) * 4096 + 16 + 56;
  buf.writeBigUInt64LE(buf.readBigUInt64LE(other) ^ 1n, other);
  assert.throws(() => new BoltDb(buf), BoltFormatError);
  assert.throws(() => new BoltDb(Buffer.from("not a database at all, not at all")), BoltFormatError);
});
