// MvccStore: revisions and generations, ranges (at past revisions and every option),
// put/delete options, compaction, history for watchers, image and hash.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V3Error, V3Errors } from "../../api/v3-errors.ts";
import { MvccStore } from "./mvcc-store.ts";
import type { RangeRequest } from "./types.ts";
import { EventType, SortOrder, SortTarget } from "./types.ts";
import { FROM_KEY, b, delReq, keysOf, plain, putReq, rangeReq } from "./v3.test-helper.ts";

const errorIs = (make: () => V3Error) => (err: unknown) =>
  err instanceof V3Error && err.message === make().message && err.code === make().code;

function get(s: MvccStore, key: string, revision = 0) {
  return s.range(rangeReq(key, { revision })).kvs.map(plain);
}

test("store starts at revision 1 and each write takes the next revision", () => {
  const s = new MvccStore();
  assert.equal(s.revision, 1);
  assert.equal(s.put(putReq("a", "1")).response.revision, 2);
  assert.equal(s.put(putReq("b", "1")).response.revision, 3);
  assert.equal(s.revision, 3);
  assert.equal(s.range(rangeReq("a")).revision, 3);
});

test("store tracks create revision, mod revision and version across generations", () => {
  const s = new MvccStore();
  s.put(putReq("k", "v1")); // 2: create
  s.put(putReq("k", "v2")); // 3: update
  assert.deepEqual(get(s, "k"), [{ key: "k", create: 2, mod: 3, version: 2, value: "v2", lease: 0n }]);
  const del = s.deleteRange(delReq("k")); // 4: tombstone
  assert.equal(del.response.deleted, 1);
  assert.equal(del.response.revision, 4);
  assert.deepEqual(get(s, "k"), []);
  s.put(putReq("k", "v3")); // 5: new generation
  assert.deepEqual(get(s, "k"), [{ key: "k", create: 5, mod: 5, version: 1, value: "v3", lease: 0n }]);
  // Every past revision still answers.
  assert.deepEqual(get(s, "k", 1), []);
  assert.deepEqual(get(s, "k", 2), [{ key: "k", create: 2, mod: 2, version: 1, value: "v1", lease: 0n }]);
  assert.deepEqual(get(s, "k", 3)[0]?.value, "v2");
  assert.deepEqual(get(s, "k", 4), []);
});

test("delete of a missing key takes no revision and produces no changes", () => {
  const s = new MvccStore();
  s.put(putReq("a", "1"));
  const r = s.deleteRange(delReq("zzz"));
  assert.deepEqual(r.response, { revision: 2, deleted: 0, prevKvs: [] });
  assert.equal(r.changes, undefined);
  assert.equal(s.revision, 2);
});

test("deleteRange deletes a range in one revision with prev_kvs and one event per key", () => {
  const s = new MvccStore();
  for (const k of ["p/a", "p/b", "p/c", "q"]) s.put(putReq(k, k));
  const r = s.deleteRange(delReq("p/", { rangeEnd: b("p0"), prevKv: true }));
  assert.equal(r.response.deleted, 3);
  assert.equal(r.response.revision, 6);
  assert.deepEqual(keysOf(r.response.prevKvs), ["p/a", "p/b", "p/c"]);
  assert.equal(r.changes?.revision, 6);
  assert.deepEqual(
    r.changes?.events.map((e) => [e.type, e.kv.key.toString(), e.kv.modRevision, e.kv.version, e.prevKv?.value.toString()]),
    [
      [EventType.DELETE, "p/a", 6, 0, "p/a"],
      [EventType.DELETE, "p/b", 6, 0, "p/b"],
      [EventType.DELETE, "p/c", 6, 0, "p/c"],
    ],
  );
  assert.deepEqual(keysOf(s.range(rangeReq("\0", { rangeEnd: FROM_KEY })).kvs), ["q"]);
});

test("put answers prev_kv only when asked and the key existed", () => {
  const s = new MvccStore();
  assert.equal(s.put(putReq("k", "1", { prevKv: true })).response.prevKv, undefined);
  const r = s.put(putReq("k", "2", { prevKv: true }));
  assert.deepEqual(plain(r.response.prevKv!), { key: "k", create: 2, mod: 2, version: 1, value: "1", lease: 0n });
  assert.equal(s.put(putReq("k", "3")).response.prevKv, undefined);
  assert.equal(r.changes?.events[0]?.prevKv?.value.toString(), "1", "events always carry prevKv");
});

test("put with ignore_value keeps the value and with ignore_lease keeps the lease", () => {
  const s = new MvccStore();
  s.put(putReq("k", "v", { lease: 7n }));
  s.put(putReq("k", "", { ignoreValue: true }));
  assert.deepEqual(get(s, "k"), [{ key: "k", create: 2, mod: 3, version: 2, value: "v", lease: 0n }]);
  s.put(putReq("k", "w", { lease: 9n }));
  s.put(putReq("k", "x", { ignoreLease: true }));
  assert.deepEqual(get(s, "k"), [{ key: "k", create: 2, mod: 5, version: 4, value: "x", lease: 9n }]);
});

test("put with ignore_value or ignore_lease on a missing key fails with key not found", () => {
  const s = new MvccStore();
  assert.throws(() => s.put(putReq("m", "", { ignoreValue: true })), errorIs(V3Errors.keyNotFound));
  assert.throws(() => s.put(putReq("m", "v", { ignoreLease: true })), errorIs(V3Errors.keyNotFound));
  assert.equal(s.revision, 1);
});

test("put with an unknown lease fails and writes nothing when the store has a lessor", () => {
  const s = new MvccStore({ leases: { exists: (id) => id === 5n, attach() {}, detach() {} } });
  assert.throws(() => s.put(putReq("k", "v", { lease: 6n })), errorIs(V3Errors.leaseNotFound));
  assert.equal(s.revision, 1);
  s.put(putReq("k", "v", { lease: 5n }));
  assert.equal(get(s, "k")[0]?.lease, 5n);
});

function seeded(): MvccStore {
  // rev 2 c, 3 a, 4 b, 5 b again, 6 d (value "0")
  const s = new MvccStore();
  s.put(putReq("kv/c", "3"));
  s.put(putReq("kv/a", "1"));
  s.put(putReq("kv/b", "2"));
  s.put(putReq("kv/b", "22"));
  s.put(putReq("kv/d", "0"));
  return s;
}

const prefix = { rangeEnd: b("kv0") };
const rangeCases: { name: string; req: Partial<RangeRequest>; keys: string[]; count: number; more?: boolean }[] = [
  { name: "prefix range lists keys in order", req: prefix, keys: ["kv/a", "kv/b", "kv/c", "kv/d"], count: 4 },
  { name: "interval range excludes range_end", req: { rangeEnd: b("kv/c") }, keys: ["kv/a", "kv/b"], count: 2 },
  { name: "limit truncates and sets more", req: { ...prefix, limit: 2 }, keys: ["kv/a", "kv/b"], count: 4, more: true },
  { name: "limit equal to the count does not set more", req: { ...prefix, limit: 4 }, keys: ["kv/a", "kv/b", "kv/c", "kv/d"], count: 4 },
  { name: "count_only answers the count and no kvs", req: { ...prefix, countOnly: true }, keys: [], count: 4 },
  { name: "key order descending", req: { ...prefix, sortOrder: SortOrder.DESCEND }, keys: ["kv/d", "kv/c", "kv/b", "kv/a"], count: 4 },
  { name: "key order ascending", req: { ...prefix, sortOrder: SortOrder.ASCEND }, keys: ["kv/a", "kv/b", "kv/c", "kv/d"], count: 4 },
  { name: "mod ascending", req: { ...prefix, sortOrder: SortOrder.ASCEND, sortTarget: SortTarget.MOD }, keys: ["kv/c", "kv/a", "kv/b", "kv/d"], count: 4 },
  { name: "mod with order NONE sorts ascending", req: { ...prefix, sortTarget: SortTarget.MOD }, keys: ["kv/c", "kv/a", "kv/b", "kv/d"], count: 4 },
  { name: "create descending", req: { ...prefix, sortOrder: SortOrder.DESCEND, sortTarget: SortTarget.CREATE }, keys: ["kv/d", "kv/b", "kv/a", "kv/c"], count: 4 },
  // Ties keep key order in both directions (etcd's answer for small ranges).
  { name: "version descending keeps ties in key order", req: { ...prefix, sortOrder: SortOrder.DESCEND, sortTarget: SortTarget.VERSION }, keys: ["kv/b", "kv/a", "kv/c", "kv/d"], count: 4 },
  { name: "version ascending keeps ties in key order", req: { ...prefix, sortOrder: SortOrder.ASCEND, sortTarget: SortTarget.VERSION }, keys: ["kv/a", "kv/c", "kv/d", "kv/b"], count: 4 },
  { name: "value ascending compares bytes", req: { ...prefix, sortOrder: SortOrder.ASCEND, sortTarget: SortTarget.VALUE }, keys: ["kv/d", "kv/a", "kv/b", "kv/c"], count: 4 },
  { name: "sort then limit", req: { ...prefix, sortOrder: SortOrder.DESCEND, limit: 1 }, keys: ["kv/d"], count: 4, more: true },
  { name: "min_mod_revision filters but count does not", req: { ...prefix, minModRevision: 5 }, keys: ["kv/b", "kv/d"], count: 4 },
  { name: "max_mod_revision filters", req: { ...prefix, maxModRevision: 3 }, keys: ["kv/a", "kv/c"], count: 4 },
  { name: "min_create_revision filters", req: { ...prefix, minCreateRevision: 4 }, keys: ["kv/b", "kv/d"], count: 4 },
  { name: "max_create_revision filters", req: { ...prefix, maxCreateRevision: 2 }, keys: ["kv/c"], count: 4 },
  { name: "filters apply before limit", req: { ...prefix, minModRevision: 4, limit: 1 }, keys: ["kv/b"], count: 4, more: true },
  { name: "from key", req: { rangeEnd: FROM_KEY }, keys: ["kv/a", "kv/b", "kv/c", "kv/d"], count: 4 },
  { name: "at a past revision", req: { ...prefix, revision: 4 }, keys: ["kv/a", "kv/b", "kv/c"], count: 3 },
  { name: "range_end before key selects nothing", req: { rangeEnd: b("a") }, keys: [], count: 0 },
];
for (const c of rangeCases) {
  test(`range: ${c.name}`, () => {
    const r = seeded().range(rangeReq("kv/a", c.req));
    assert.deepEqual(keysOf(r.kvs), c.keys);
    assert.equal(r.count, c.count);
    assert.equal(r.more, c.more ?? false);
    assert.equal(r.revision, 6);
  });
}

test("range keys_only drops values and keeps revisions", () => {
  const r = seeded().range(rangeReq("kv/b", { keysOnly: true }));
  assert.deepEqual(r.kvs.map(plain), [{ key: "kv/b", create: 4, mod: 5, version: 2, value: "", lease: 0n }]);
});

test("range of all keys with key and range_end \\0", () => {
  const s = seeded();
  s.put(putReq("a", "x"));
  assert.deepEqual(keysOf(s.range(rangeReq("\0", { rangeEnd: FROM_KEY })).kvs), ["a", "kv/a", "kv/b", "kv/c", "kv/d"]);
});

test("range at a future revision fails and at the current one works", () => {
  const s = seeded();
  assert.throws(() => s.range(rangeReq("kv/a", { revision: 7 })), errorIs(V3Errors.futureRev));
  assert.equal(s.range(rangeReq("kv/a", { revision: 6 })).count, 1);
});

test("compaction fails ranges below it and keeps what a range at it sees", () => {
  const s = new MvccStore();
  s.put(putReq("a", "1")); // 2
  s.put(putReq("a", "2")); // 3
  s.put(putReq("gone", "x")); // 4
  s.deleteRange(delReq("gone")); // 5
  s.put(putReq("a", "3")); // 6
  assert.deepEqual(s.compact(5), { revision: 6 });
  assert.equal(s.compactRevision, 5);
  assert.throws(() => s.range(rangeReq("a", { revision: 4 })), errorIs(V3Errors.compacted));
  assert.deepEqual(get(s, "a", 5), [{ key: "a", create: 2, mod: 3, version: 2, value: "2", lease: 0n }]);
  assert.deepEqual(get(s, "a"), [{ key: "a", create: 2, mod: 6, version: 3, value: "3", lease: 0n }]);
  assert.deepEqual(get(s, "gone", 5), []);
  assert.throws(() => s.compact(5), errorIs(V3Errors.compacted));
  assert.throws(() => s.compact(4), errorIs(V3Errors.compacted));
  assert.throws(() => s.compact(7), errorIs(V3Errors.futureRev));
  s.compact(6);
  const img = s.toImage();
  assert.deepEqual(
    img.keys.map((k) => Buffer.from(k.key, "base64").toString()),
    ["a"],
    "tombstones below the compaction revision are dropped with their key",
  );
  assert.deepEqual(img.keys[0]?.generations, [[[6, 0, 2, 3, b("3").toString("base64"), "0"]]]);
});

test("compaction drops superseded records but history after it stays replayable", () => {
  const s = new MvccStore();
  for (let i = 0; i < 5; i++) s.put(putReq("k", `v${i}`)); // 2..6
  s.compact(4);
  const hist = s.eventsInRange({ from: 4, to: 6, key: b("k"), rangeEnd: Buffer.alloc(0), prevKv: true });
  assert.deepEqual(
    hist.map((r) => [r.revision, r.events.map((e) => [e.kv.value.toString(), e.prevKv?.value.toString()])]),
    [
      [4, [["v2", undefined]]], // the revision before 4 is compacted: no prevKv
      [5, [["v3", "v2"]]],
      [6, [["v4", "v3"]]],
    ],
  );
  assert.throws(() => s.eventsInRange({ from: 3, to: 6, key: b("k"), rangeEnd: Buffer.alloc(0), prevKv: false }), errorIs(V3Errors.compacted));
});

test("a delete exactly at the compaction revision is still replayed", () => {
  const s = new MvccStore();
  s.put(putReq("p/a", "1")); // 2
  s.deleteRange(delReq("p/a")); // 3
  s.put(putReq("p/b", "1")); // 4
  s.compact(3);
  const events = (key: string, rangeEnd: Buffer) =>
    s.eventsInRange({ from: 3, to: 4, key: b(key), rangeEnd, prevKv: false }).map((r) => [r.revision, r.events.map((e) => e.type)]);
  assert.deepEqual(events("p/", b("p0")), [[3, [EventType.DELETE]], [4, [EventType.PUT]]]);
  assert.deepEqual(events("p/a", Buffer.alloc(0)), [[3, [EventType.DELETE]]]);
  assert.deepEqual(get(s, "p/a", 3), []);
  const restored = MvccStore.fromImage(JSON.parse(JSON.stringify(s.toImage())));
  assert.deepEqual(
    restored.eventsInRange({ from: 3, to: 4, key: b("p/"), rangeEnd: b("p0"), prevKv: false }),
    s.eventsInRange({ from: 3, to: 4, key: b("p/"), rangeEnd: b("p0"), prevKv: false }),
  );
  s.compact(4);
  assert.deepEqual(s.toImage().keys.map((k) => Buffer.from(k.key, "base64").toString()), ["p/b"]);
});

test("eventsInRange groups one entry per revision, in order, for ranges and single keys", () => {
  const s = new MvccStore();
  s.put(putReq("w/a", "1")); // 2
  s.put(putReq("x", "1")); // 3
  s.put(putReq("w/b", "1")); // 4
  s.deleteRange(delReq("w/", { rangeEnd: b("w0") })); // 5
  const hist = s.eventsInRange({ from: 1, to: 99, key: b("w/"), rangeEnd: b("w0"), prevKv: false });
  assert.deepEqual(
    hist.map((r) => [r.revision, r.events.map((e) => `${e.type}:${e.kv.key}`)]),
    [
      [2, ["0:w/a"]],
      [4, ["0:w/b"]],
      [5, ["1:w/a", "1:w/b"]],
    ],
  );
  assert.equal(hist[2]?.events[0]?.prevKv, undefined, "prevKv only when asked");
  assert.deepEqual(s.eventsInRange({ from: 4, to: 4, key: b("w/a"), rangeEnd: Buffer.alloc(0), prevKv: false }), []);
});

test("image round trip gives the same hash and the same behaviour afterwards", () => {
  const s = new MvccStore();
  s.put(putReq("a", "1", { lease: 3n }));
  s.put(putReq("b", "\u0000\u00ff"));
  s.put(putReq("a", "2"));
  s.deleteRange(delReq("b"));
  s.put(putReq("b", "again"));
  s.compact(3);
  s.put(putReq("c", "1"));
  const json = JSON.stringify(s.toImage());
  const r = MvccStore.fromImage(JSON.parse(json));
  assert.equal(r.hash(), s.hash());
  assert.equal(JSON.stringify(r.toImage()), json);
  assert.equal(r.revision, s.revision);
  assert.equal(r.compactRevision, 3);
  for (const st of [s, r]) {
    st.put(putReq("a", "3"));
    st.deleteRange(delReq("c"));
  }
  assert.equal(r.hash(), s.hash());
  const all = rangeReq("\0", { rangeEnd: FROM_KEY, revision: 5 });
  assert.deepEqual(r.range(all), s.range(all));
  const q = { from: 3, to: 99, key: b("\0"), rangeEnd: FROM_KEY, prevKv: true };
  assert.deepEqual(r.eventsInRange(q), s.eventsInRange(q));
});

test("hash differs when the visible state or revision differs", () => {
  const a = new MvccStore();
  const c = new MvccStore();
  a.put(putReq("k", "1"));
  c.put(putReq("k", "2"));
  assert.notEqual(a.hash(), c.hash());
  const d = new MvccStore();
  d.put(putReq("k", "1"));
  assert.equal(a.hash(), d.hash());
  d.put(putReq("k", "1"));
  assert.notEqual(a.hash(), d.hash());
});

test("fromImage rejects a malformed image", () => {
  const s = seeded();
  const img = s.toImage();
  assert.throws(() => MvccStore.fromImage({ ...img, format: "x" as "kvctl-mvcc/1" }), /Cannot restore mvcc image/);
  const bad = structuredClone(img);
  bad.keys.reverse();
  assert.throws(() => MvccStore.fromImage(bad), /out of order/);
  const late = structuredClone(img);
  late.keys[0]!.generations[0]![0]![0] = 99;
  assert.throws(() => MvccStore.fromImage(late), /Cannot restore mvcc image/);
});
