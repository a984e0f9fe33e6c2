import assert from "node:assert/strict";
import { test } from "node:test";
import { BoltDb, fnv64a } from "./bbolt.ts";
import { BoltWriteError, BoltWriter, type BucketHeader } from "./bbolt-writer.ts";

/** The file a writer makes, assembled in memory from its drained writes. */
function build(fill: (w: BoltWriter) => BucketHeader, drainEvery = 0): Buffer {
  const w = new BoltWriter();
  const writes: { position: number; data: Buffer }[] = [];
  const origQueue = w.queue.bind(w);
  if (drainEvery > 0) {
    let n = 0;
    w.queue = (id, data): void => {
      origQueue(id, data);
      if (++n % drainEvery === 0) writes.push(...w.drain());
    };
  }
  const root = fill(w);
  const size = w.finish(root);
  writes.push(...w.drain());
  const file = Buffer.alloc(size);
  for (const x of writes) {
    assert.ok(x.position + x.data.length <= size, "a write past the file's end");
    x.data.copy(file, x.position);
  }
  return file;
}

const key = (i: number): Buffer => Buffer.from(`key-${String(i).padStart(8, "0")}`);

/** One top-level bucket per [name, entries] pair, names in order. */
function simple(buckets: [string, [Buffer, Buffer][]][]): (w: BoltWriter) => BucketHeader {
  return (w) => {
    const heads = buckets.map(([name, entries]) => {
      const b = w.bucket();
      for (const [k, v] of entries) b.put(k, v);
      return [name, b.finish()] as const;
    });
    const root = w.bucket();
    for (const [name, h] of heads) root.putBucket(Buffer.from(name), h);
    return root.finish();
  };
}

const entriesOf = (db: BoltDb, ...path: string[]): [string, string][] =>
  [...(db.bucket(...path) ?? [])].map((e) => [e.key.toString("hex"), e.value?.toString("hex") ?? "<bucket>"]);

test("0 keys: an empty root bucket, and empty buckets, read back", () => {
  const empty = new BoltDb(build((w) => w.bucket().finish()));
  assert.deepEqual([...empty.roots()], []);
  assert.equal(empty.size, 4 * 4096, "metas, freelist, one empty leaf");
  const db = new BoltDb(build(simple([["a", []], ["b", []]])));
  assert.deepEqual([...db.buckets()].map((b) => [b.name.toString(), [...b.entries].length]), [["a", 0], ["b", 0]]);
});

test("many keys across page boundaries: leaves and two levels of branches, in order", () => {
  const n = 60_000;
  const entries: [Buffer, Buffer][] = [];
  for (let i = 0; i < n; i++) entries.push([key(i), Buffer.from(`v${i}`.repeat(1 + (i % 7)))]);
  const file = build(simple([["big", entries]]), 50);
  const db = new BoltDb(file);
  const got = [...db.bucket("big")!];
  assert.equal(got.length, n);
  got.forEach((e, i) => {
    assert.equal(e.key.toString(), key(i).toString());
    assert.equal(e.value?.toString(), entries[i]![1].toString());
  });
  // The tree has branch pages above branch pages: the bucket's root is a branch whose first child is a branch.
  const page = (id: bigint): number => Number(id) * 4096;
  const rootLeaf = page(db.meta.root);
  const el = rootLeaf + 16;
  const bucketRoot = file.readBigUInt64LE(el + file.readUInt32LE(el + 4) + file.readUInt32LE(el + 8));
  assert.equal(file.readUInt16LE(page(bucketRoot) + 8), 0x01, "the bucket's root is a branch");
  const child = file.readBigUInt64LE(page(bucketRoot) + 16 + 8);
  assert.equal(file.readUInt16LE(page(child) + 8), 0x01, "its first child is a branch too");
});

test("a key exactly filling a page, values bigger than a page (overflow), and small keys around them", () => {
  const exact = Buffer.alloc(4096 - 16 - 16 - 10, 0x61);
  const entries: [Buffer, Buffer][] = [
    [Buffer.from("a"), Buffer.from("1")],
    [Buffer.from("b-exact-10"), exact],
    [Buffer.from("c-big"), Buffer.alloc(3 * 4096 + 5, 0x62)],
    [Buffer.from("d"), Buffer.from("4")],
    [Buffer.from("e-huge"), Buffer.alloc(1024 * 1024 + 1, 0x63)],
    [Buffer.from("f"), Buffer.alloc(0)],
  ];
  const db = new BoltDb(build(simple([["o", entries]])));
  assert.deepEqual(entriesOf(db, "o"), entries.map(([k, v]) => [k.toString("hex"), v.toString("hex")]));
});

test("many buckets and nested buckets, each with its own pages", () => {
  const file = build((w) => {
    const names = Array.from({ length: 300 }, (_, i) => `bucket-${String(i).padStart(4, "0")}`);
    const heads = names.map((name, i) => {
      const b = w.bucket();
      if (i % 3 === 0) {
        const child = w.bucket();
        for (let j = 0; j < 200; j++) child.put(key(j), Buffer.from(name));
        b.put(Buffer.from("a"), Buffer.from("before"));
        b.putBucket(Buffer.from("child"), child.finish());
        b.put(Buffer.from("z"), Buffer.from("after"));
      } else {
        for (let j = 0; j < i % 5; j++) b.put(key(j), Buffer.from(String(j)));
      }
      return [name, b.finish()] as const;
    });
    const root = w.bucket();
    for (const [name, h] of heads) root.putBucket(Buffer.from(name), h);
    return root.finish();
  });
  const db = new BoltDb(file);
  const buckets = [...db.buckets()];
  assert.equal(buckets.length, 300);
  assert.deepEqual(entriesOf(db, "bucket-0003"), [
    [Buffer.from("a").toString("hex"), Buffer.from("before").toString("hex")],
    [Buffer.from("child").toString("hex"), "<bucket>"],
    [Buffer.from("z").toString("hex"), Buffer.from("after").toString("hex")],
  ]);
  const child = [...db.bucket("bucket-0297", "child")!];
  assert.equal(child.length, 200);
  assert.equal(child[199]!.value?.toString(), "bucket-0297");
  assert.equal([...db.bucket("bucket-0004")!].length, 4);
});

test("meta pages: magic, version, page size, bbolt's FNV-64a checksum of the 56 bytes before it, ids by txid", () => {
  const file = build(simple([["k", [[Buffer.from("x"), Buffer.from("y")]]]]));
  for (const page of [0, 1]) {
    const at = page * 4096;
    assert.equal(file.readBigUInt64LE(at), BigInt(page), "page id");
    assert.equal(file.readUInt16LE(at + 8), 0x04, "meta flag");
    const m = file.subarray(at + 16, at + 16 + 64);
    assert.equal(m.readUInt32LE(0), 0xed0cdaed);
    assert.equal(m.readUInt32LE(4), 2);
    assert.equal(m.readUInt32LE(8), 4096);
    assert.equal(m.readBigUInt64LE(32), 2n, "freelist page");
    assert.equal(m.readBigUInt64LE(40), BigInt(file.length / 4096), "high-water mark: the file's pages");
    assert.equal(m.readBigUInt64LE(48) % 2n, BigInt(page), "txid % 2 is the page");
    // Computed here from the definition (FNV-1a, 64 bits), not by the writer's function.
    let h = 0xcbf29ce484222325n;
    for (const b of m.subarray(0, 56)) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
    assert.equal(m.readBigUInt64LE(56), h);
    assert.equal(fnv64a(m.subarray(0, 56)), h);
  }
  assert.equal(file.readUInt16LE(2 * 4096 + 8), 0x10, "freelist flag");
  assert.equal(file.readUInt16LE(2 * 4096 + 10), 0, "no free pages");
});

test("refuses keys out of order, empty keys, and a finish with open buckets", () => {
  const w = new BoltWriter();
  const b = w.bucket();
  b.put(Buffer.from("b"), Buffer.from(""));
  assert.throws(() => b.put(Buffer.from("a"), Buffer.from("")), BoltWriteError);
  assert.throws(() => b.put(Buffer.from("b"), Buffer.from("")), BoltWriteError);
  assert.throws(() => b.put(Buffer.alloc(0), Buffer.from("")), BoltWriteError);
  const h = b.finish();
  const open = w.bucket();
  assert.throws(() => w.finish(h), /not finished/);
  open.finish();
});
