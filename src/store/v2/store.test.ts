// The v2 keys table of REFERENCE.md, at the store level: bodies as etcd renders them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V2Error } from "../../api/v2-errors.ts";
import { V2Store } from "./store.ts";

const T0 = Date.UTC(2026, 10, 22, 4, 13, 41);

function throwsV2(fn: () => unknown, want: { code: number; cause: string; index: number }): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof V2Error, `not a V2Error: ${String(err)}`);
    assert.deepEqual({ code: err.errorCode, cause: err.cause_, index: err.index }, want);
    return true;
  });
}

/** The HTTP body the server would write: the event without etcdIndex. */
function body(e: { action: string; node: unknown; prevNode?: unknown }): unknown {
  return e.prevNode === undefined ? { action: e.action, node: e.node } : { action: e.action, node: e.node, prevNode: e.prevNode };
}

test("set of a new key creates it without prevNode; get returns it", () => {
  const s = new V2Store();
  const e = s.set("/b-set1/a", { value: "one" }, T0);
  assert.equal(JSON.stringify(body(e)), '{"action":"set","node":{"key":"/b-set1/a","value":"one","modifiedIndex":1,"createdIndex":1}}');
  assert.equal(e.etcdIndex, 1);
  assert.equal(s.index, 1);
  const g = s.get("/b-set1/a", {}, T0);
  assert.equal(JSON.stringify(body(g)), '{"action":"get","node":{"key":"/b-set1/a","value":"one","modifiedIndex":1,"createdIndex":1}}');
  assert.equal(g.etcdIndex, 1);
});

test("set over an existing key replaces the node and returns prevNode", () => {
  const s = new V2Store();
  s.set("/k", { value: "one" }, T0);
  const e = s.set("/k", { value: "one" }, T0);
  assert.deepEqual(body(e), {
    action: "set",
    node: { key: "/k", value: "one", modifiedIndex: 2, createdIndex: 2 },
    prevNode: { key: "/k", value: "one", modifiedIndex: 1, createdIndex: 1 },
  });
});

test("get of a missing key names the first missing component", () => {
  const s = new V2Store();
  s.set("/x", { value: "1" }, T0);
  throwsV2(() => s.get("/b-miss/nothing", {}, T0), { code: 100, cause: "/b-miss", index: 1 });
  throwsV2(() => s.get("/b-miss/deep/er/key", {}, T0), { code: 100, cause: "/b-miss", index: 1 });
  s.set("/b-miss/file", { value: "x" }, T0);
  throwsV2(() => s.get("/b-miss/file/child", {}, T0), { code: 104, cause: "/b-miss/file", index: 2 });
  throwsV2(() => s.delete("/b-miss/nothing", {}, T0), { code: 100, cause: "/b-miss/nothing", index: 2 });
});

test("create fails with 105 on an existing key or dir", () => {
  const s = new V2Store();
  assert.equal(s.create("/c/a", { value: "one" }, T0).action, "create");
  throwsV2(() => s.create("/c/a", { value: "two" }, T0), { code: 105, cause: "/c/a", index: 1 });
  assert.deepEqual(body(s.create("/c/d", { dir: true }, T0)), {
    action: "create",
    node: { key: "/c/d", dir: true, modifiedIndex: 2, createdIndex: 2 },
  });
  throwsV2(() => s.create("/c/d", { dir: true }, T0), { code: 105, cause: "/c/d", index: 2 });
  throwsV2(() => s.create("/c/d", { value: "x" }, T0), { code: 105, cause: "/c/d", index: 2 });
});

test("update keeps createdIndex, and without a value empties the key", () => {
  const s = new V2Store();
  throwsV2(() => s.update("/u/a", { value: "one" }, T0), { code: 100, cause: "/u", index: 0 });
  s.set("/u/a", { value: "one" }, T0);
  assert.deepEqual(body(s.update("/u/a", { value: "two" }, T0)), {
    action: "update",
    node: { key: "/u/a", value: "two", modifiedIndex: 2, createdIndex: 1 },
    prevNode: { key: "/u/a", value: "one", modifiedIndex: 1, createdIndex: 1 },
  });
  assert.deepEqual(s.update("/u/a", {}, T0).node, { key: "/u/a", value: "", modifiedIndex: 3, createdIndex: 1 });
  assert.deepEqual(s.set("/u/b", {}, T0).node, { key: "/u/b", value: "", modifiedIndex: 4, createdIndex: 4 });
});

test("writes that hit a directory or walk through a file fail with 102 / 104", () => {
  const s = new V2Store();
  s.set("/b-sod/d/child", { value: "x" }, T0);
  throwsV2(() => s.set("/b-sod/d", { value: "y" }, T0), { code: 102, cause: "/b-sod/d", index: 1 });
  throwsV2(() => s.update("/b-sod/d", { value: "y" }, T0), { code: 102, cause: "/b-sod/d", index: 1 });
  throwsV2(() => s.set("/b-sod/d", { dir: true }, T0), { code: 102, cause: "/b-sod/d", index: 1 });
  throwsV2(() => s.set("/b-sod/d/child/deeper", { value: "z" }, T0), { code: 104, cause: "/b-sod/d/child", index: 1 });
  throwsV2(() => s.create("/b-sod/d/child/deeper", { value: "z" }, T0), { code: 104, cause: "/b-sod/d/child", index: 1 });
  throwsV2(() => s.create("/b-sod/d/child", { unique: true }, T0), { code: 104, cause: "/b-sod/d/child", index: 1 });
  // set dir=true replaces a file by a dir
  assert.deepEqual(body(s.set("/b-sod/d/child", { dir: true }, T0)), {
    action: "set",
    node: { key: "/b-sod/d/child", dir: true, modifiedIndex: 2, createdIndex: 2 },
    prevNode: { key: "/b-sod/d/child", value: "x", modifiedIndex: 1, createdIndex: 1 },
  });
  assert.equal(
    JSON.stringify(s.get("/b-sod", { recursive: true }, T0).node),
    '{"key":"/b-sod","dir":true,"nodes":[{"key":"/b-sod/d","dir":true,"nodes":[{"key":"/b-sod/d/child","dir":true,"modifiedIndex":2,"createdIndex":2}],"modifiedIndex":1,"createdIndex":1}],"modifiedIndex":1,"createdIndex":1}',
  );
});

test("delete answers key + indexes without value, prevNode with value; dir/recursive allowed on a file", () => {
  const s = new V2Store();
  s.set("/del/a", { value: "one" }, T0);
  assert.equal(
    JSON.stringify(body(s.delete("/del/a", {}, T0))),
    '{"action":"delete","node":{"key":"/del/a","modifiedIndex":2,"createdIndex":1},"prevNode":{"key":"/del/a","value":"one","modifiedIndex":1,"createdIndex":1}}',
  );
  throwsV2(() => s.get("/del/a", {}, T0), { code: 100, cause: "/del/a", index: 2 });
  s.set("/del/b", { value: "1" }, T0);
  assert.equal(s.delete("/del/b", { dir: true }, T0).action, "delete");
  s.set("/del/c", { value: "1" }, T0);
  assert.equal(s.delete("/del/c", { recursive: true }, T0).action, "delete");
});

test("compareAndSwap checks prevValue and prevIndex with etcd's causes", () => {
  const s = new V2Store();
  s.set("/c/a", { value: "one" }, T0);
  assert.deepEqual(body(s.compareAndSwap("/c/a", { prevValue: "one", value: "two" }, T0)), {
    action: "compareAndSwap",
    node: { key: "/c/a", value: "two", modifiedIndex: 2, createdIndex: 1 },
    prevNode: { key: "/c/a", value: "one", modifiedIndex: 1, createdIndex: 1 },
  });
  throwsV2(() => s.compareAndSwap("/c/a", { prevValue: "one", value: "x" }, T0), { code: 101, cause: "[one != two]", index: 2 });
  throwsV2(() => s.compareAndSwap("/c/a", { prevValue: "with space & amp" }, T0), { code: 101, cause: "[with space & amp != two]", index: 2 });
  throwsV2(() => s.compareAndSwap("/c/a", { prevIndex: 1 }, T0), { code: 101, cause: "[1 != 2]", index: 2 });
  throwsV2(() => s.compareAndSwap("/c/a", { prevValue: "bad", prevIndex: 2 }, T0), { code: 101, cause: "[bad != two]", index: 2 });
  throwsV2(() => s.compareAndSwap("/c/a", { prevValue: "two", prevIndex: 52 }, T0), { code: 101, cause: "[52 != 2]", index: 2 });
  throwsV2(() => s.compareAndSwap("/c/a", { prevValue: "bad", prevIndex: 52 }, T0), { code: 101, cause: "[bad != two] [52 != 2]", index: 2 });
  assert.equal(s.compareAndSwap("/c/a", { prevValue: "two", prevIndex: 2, value: "3" }, T0).node.value, "3");
  assert.equal(s.compareAndSwap("/c/a", { prevIndex: 0, value: "4" }, T0).node.value, "4", "prevIndex 0 always passes");
  throwsV2(() => s.compareAndSwap("/c-miss/a", { prevValue: "one" }, T0), { code: 100, cause: "/c-miss", index: 4 });
  s.set("/c/d", { dir: true }, T0);
  throwsV2(() => s.compareAndSwap("/c/d", { prevValue: "one", value: "x" }, T0), { code: 102, cause: "/c/d", index: 5 });
  throwsV2(() => s.compareAndDelete("/c/d", { prevValue: "one" }, T0), { code: 102, cause: "/c/d", index: 5 });
});

test("compareAndDelete deletes on a match and fails with 101 otherwise", () => {
  const s = new V2Store();
  s.set("/d-pv/a", { value: "one" }, T0);
  throwsV2(() => s.compareAndDelete("/d-pv/a", { prevValue: "two" }, T0), { code: 101, cause: "[two != one]", index: 1 });
  throwsV2(() => s.compareAndDelete("/d-pv/a", { prevIndex: 7 }, T0), { code: 101, cause: "[7 != 1]", index: 1 });
  assert.equal(
    JSON.stringify(body(s.compareAndDelete("/d-pv/a", { prevValue: "one" }, T0))),
    '{"action":"compareAndDelete","node":{"key":"/d-pv/a","modifiedIndex":2,"createdIndex":1},"prevNode":{"key":"/d-pv/a","value":"one","modifiedIndex":1,"createdIndex":1}}',
  );
  throwsV2(() => s.compareAndDelete("/d-pv/a", { prevValue: "one" }, T0), { code: 100, cause: "/d-pv/a", index: 2 });
});

test("directories: empty dir has no nodes, value with dir is dropped", () => {
  const s = new V2Store();
  assert.equal(JSON.stringify(s.set("/r/d", { dir: true }, T0).node), '{"key":"/r/d","dir":true,"modifiedIndex":1,"createdIndex":1}');
  assert.equal(JSON.stringify(s.get("/r/d", {}, T0).node), '{"key":"/r/d","dir":true,"modifiedIndex":1,"createdIndex":1}');
  assert.equal(JSON.stringify(s.set("/r/d2", { dir: true, value: "ignored" }, T0).node), '{"key":"/r/d2","dir":true,"modifiedIndex":2,"createdIndex":2}');
});

test("listings: one level shows sub-dirs without nodes, recursive shows all", () => {
  const s = new V2Store();
  s.set("/r-list/d/x", { value: "1" }, T0);
  s.set("/r-list/d/y", { value: "2" }, T0);
  s.set("/r-list/d/sub/z", { value: "3" }, T0);
  s.set("/r-list/d/empty", { dir: true }, T0);
  assert.deepEqual(s.get("/r-list/d/", {}, T0).node, {
    key: "/r-list/d",
    dir: true,
    nodes: [
      { key: "/r-list/d/x", value: "1", modifiedIndex: 1, createdIndex: 1 },
      { key: "/r-list/d/y", value: "2", modifiedIndex: 2, createdIndex: 2 },
      { key: "/r-list/d/sub", dir: true, modifiedIndex: 3, createdIndex: 3 },
      { key: "/r-list/d/empty", dir: true, modifiedIndex: 4, createdIndex: 4 },
    ],
    modifiedIndex: 1,
    createdIndex: 1,
  });
  const rec = s.get("/r-list/d", { recursive: true }, T0).node;
  assert.deepEqual(rec.nodes?.[2], {
    key: "/r-list/d/sub",
    dir: true,
    nodes: [{ key: "/r-list/d/sub/z", value: "3", modifiedIndex: 3, createdIndex: 3 }],
    modifiedIndex: 3,
    createdIndex: 3,
  });
});

test("sorted listings use byte order of the full key at every level", () => {
  const s = new V2Store();
  for (const k of ["c", "a", "B", "b/z", "b/y", "10", "9", "😀", "\uFF5E"]) s.set(`/r-sort/d/${k}`, { value: k }, T0);
  const keys = (n: { key?: string; nodes?: { key?: string }[] }): (string | undefined)[] => (n.nodes ?? []).map((c) => c.key);
  const sorted = s.get("/r-sort/d", { sorted: true, recursive: true }, T0).node;
  assert.deepEqual(keys(sorted), ["10", "9", "B", "a", "b", "c", "\uFF5E", "😀"].map((k) => `/r-sort/d/${k}`));
  assert.deepEqual(keys(sorted.nodes?.[4] ?? {}), ["/r-sort/d/b/y", "/r-sort/d/b/z"]);
});

test("deleting dirs needs dir (empty) or recursive (any)", () => {
  const s = new V2Store();
  s.set("/r/e", { dir: true }, T0);
  throwsV2(() => s.delete("/r/e", {}, T0), { code: 102, cause: "/r/e", index: 1 });
  assert.equal(
    JSON.stringify(body(s.delete("/r/e", { dir: true }, T0))),
    '{"action":"delete","node":{"key":"/r/e","dir":true,"modifiedIndex":2,"createdIndex":1},"prevNode":{"key":"/r/e","dir":true,"modifiedIndex":1,"createdIndex":1}}',
  );
  s.set("/r/f", { dir: true }, T0);
  assert.equal(s.delete("/r/f", { recursive: true }, T0).node.dir, true);
  s.set("/r/full/x", { value: "1" }, T0);
  s.set("/r/full/sub/y", { value: "2" }, T0);
  throwsV2(() => s.delete("/r/full", {}, T0), { code: 102, cause: "/r/full", index: 6 });
  throwsV2(() => s.delete("/r/full", { dir: true }, T0), { code: 108, cause: "/r/full", index: 6 });
  assert.equal(s.delete("/r/full", { dir: false, recursive: true }, T0).node.modifiedIndex, 7);
  throwsV2(() => s.get("/r/full/sub/y", {}, T0), { code: 100, cause: "/r/full", index: 7 });
  assert.deepEqual(s.get("/r", { recursive: true }, T0).node, { key: "/r", dir: true, modifiedIndex: 1, createdIndex: 1 });
});

test("hidden nodes are never listed but count for 108 and stay readable", () => {
  const s = new V2Store();
  s.set("/h/d/_only", { value: "x" }, T0);
  assert.deepEqual(s.get("/h/d", {}, T0).node, { key: "/h/d", dir: true, modifiedIndex: 1, createdIndex: 1 });
  throwsV2(() => s.delete("/h/d", { dir: true }, T0), { code: 108, cause: "/h/d", index: 1 });
  assert.equal(s.create("/h/_q", { unique: true, value: "in hidden" }, T0).node.key, "/h/_q/00000000000000000002");
  assert.deepEqual(s.get("/h", { recursive: true }, T0).node, {
    key: "/h",
    dir: true,
    nodes: [{ key: "/h/d", dir: true, modifiedIndex: 1, createdIndex: 1 }],
    modifiedIndex: 1,
    createdIndex: 1,
  });
  assert.equal(s.get("/h/d/_only", {}, T0).node.value, "x");
  assert.equal(s.get("/h/_q", {}, T0).node.nodes?.length, 1);
});

test("in-order create names the key after the new index and creates parents", () => {
  const s = new V2Store();
  s.set("/pad", { value: "" }, T0);
  assert.deepEqual(s.create("/o/q", { unique: true }, T0).node, { key: "/o/q/00000000000000000002", value: "", modifiedIndex: 2, createdIndex: 2 });
  assert.deepEqual(s.create("/o/q/", { unique: true, dir: true }, T0).node, { key: "/o/q/00000000000000000003", dir: true, modifiedIndex: 3, createdIndex: 3 });
  assert.equal(s.create("/o/new/nested", { unique: true, value: "n" }, T0).node.key, "/o/new/nested/00000000000000000004");
  assert.deepEqual(s.get("/o/new", {}, T0).node, {
    key: "/o/new",
    dir: true,
    nodes: [{ key: "/o/new/nested", dir: true, modifiedIndex: 4, createdIndex: 4 }],
    modifiedIndex: 4,
    createdIndex: 4,
  });
});

test("the root is read-only except for in-order creates", () => {
  const s = new V2Store();
  s.set("/x", { value: "1" }, T0);
  const ro = { code: 107, cause: "/", index: 1 };
  for (const p of ["/", "", "//", "/x/.."]) {
    throwsV2(() => s.set(p, { value: "x" }, T0), ro);
    throwsV2(() => s.set(p, { dir: true }, T0), ro);
    throwsV2(() => s.update(p, { value: "x" }, T0), ro);
    throwsV2(() => s.create(p, { value: "x" }, T0), ro);
    throwsV2(() => s.compareAndSwap(p, { prevValue: "y", value: "x" }, T0), ro);
    throwsV2(() => s.delete(p, {}, T0), ro);
    throwsV2(() => s.delete(p, { recursive: true }, T0), ro);
    throwsV2(() => s.delete(p, { dir: true }, T0), ro);
    throwsV2(() => s.compareAndDelete(p, { prevValue: "x" }, T0), { code: 102, cause: "", index: 1 });
  }
  assert.deepEqual(s.create("/", { unique: true, value: "at root" }, T0).node, {
    key: "/00000000000000000002",
    value: "at root",
    modifiedIndex: 2,
    createdIndex: 2,
  });
});

test("the root renders without key and indexes", () => {
  const s = new V2Store();
  assert.equal(JSON.stringify(body(s.get("/", {}, T0))), '{"action":"get","node":{"dir":true}}');
  s.create("/", { unique: true, value: "a" }, T0);
  s.set("/_hidden", { value: "h" }, T0);
  assert.equal(
    JSON.stringify(s.get("", { sorted: true }, T0).node),
    '{"dir":true,"nodes":[{"key":"/00000000000000000001","value":"a","modifiedIndex":1,"createdIndex":1}]}',
  );
});

test("namespaces are read-only dirs created at index 0", () => {
  const s = new V2Store({ namespaces: ["/0", "/1"] });
  assert.deepEqual(s.get("/1", {}, T0).node, { key: "/1", dir: true });
  throwsV2(() => s.set("/1", { value: "x" }, T0), { code: 107, cause: "/", index: 0 });
  throwsV2(() => s.delete("/1", { recursive: true }, T0), { code: 107, cause: "/", index: 0 });
  throwsV2(() => s.compareAndDelete("/1", { prevValue: "x" }, T0), { code: 102, cause: "/1", index: 0 });
  assert.equal(s.create("/1", { unique: true }, T0).node.key, "/1/00000000000000000001");
  assert.throws(() => new V2Store({ namespaces: ["/a/b"] }), RangeError);
});

test("paths are cleaned: trailing slash, double slashes, dot segments", () => {
  const s = new V2Store();
  s.set("a/b/", { value: "1" }, T0);
  assert.equal(s.get("/a/b", {}, T0).node.key, "/a/b");
  assert.equal(s.get("//a//b//", {}, T0).node.value, "1");
  assert.equal(s.get("/a/./c/../b", {}, T0).node.value, "1");
  assert.equal(s.update("/a/b/", { value: "2" }, T0).node.key, "/a/b");
});

const valueCases: [name: string, value: string][] = [
  ["form characters", "a&b=c%d+e"],
  ["JSON with HTML characters", '{"k": [1, 2, "<tag>&"]}'],
  ["unicode", "ünïcödé ✓ 😀"],
  ["NUL", "a\u0000b"],
  ["replacement characters", "\uFFFD\uFFFD"],
  ["multi-line", "line 1\nline 2\r\n\ttabbed\n"],
  ["64 KiB", "x".repeat(65536)],
];
for (const [name, value] of valueCases) {
  test(`values round-trip unchanged when they hold ${name}`, () => {
    const s = new V2Store();
    s.set("/v/k", { value }, T0);
    assert.equal(s.get("/v/k", {}, T0).node.value, value);
    assert.equal(JSON.parse(JSON.stringify(s.get("/v/k", {}, T0).node)).value, value);
  });
}

test("events are fresh objects: mutating one does not change the store", () => {
  const s = new V2Store();
  const e = s.set("/m", { value: "1" }, T0);
  (e.node as { value?: string }).value = "changed";
  assert.equal(s.get("/m", {}, T0).node.value, "1");
});

test("consumeIndex advances the index without touching the key space or any watch", () => {
  const s = new V2Store();
  s.set("/a", { value: "1" }, 0);
  assert.equal(s.consumeIndex(), 2);
  const ev = s.set("/b", { value: "2" }, 0);
  assert.equal(ev.node.modifiedIndex, 3);
  assert.equal(s.get("/", { recursive: true }, 0).node.nodes?.length, 2);
  const seen: string[] = [];
  s.watch("/", { recursive: true, sinceIndex: 2 }, (e) => seen.push(`${e.node.key ?? ""} ${e.node.modifiedIndex ?? 0}`));
  return Promise.resolve().then(() => assert.deepEqual(seen, ["/b 3"], "history replay skips the internal write"));
});

test("internal writes take history slots as etcd's events do: 401 from the same index", () => {
  // etcd 3.4.23 keeps auth and member records in its v2 store: after 1,010 key writes and
  // 10 auth changes, a watch is refused below current-999 (python-etcd scenario, 1 member).
  const s = new V2Store();
  for (let i = 0; i < 995; i++) s.set("/k", { value: String(i) }, 0);
  for (let i = 0; i < 10; i++) s.consumeIndex();
  const last = s.set("/k", { value: "last" }, 0).node.modifiedIndex ?? 0;
  assert.equal(last, 1006);
  assert.throws(
    () => s.watch("/k", { sinceIndex: last - 1000 }, () => undefined),
    (err: unknown) => err instanceof V2Error && err.errorCode === 401 && err.cause_ === `the requested history has been cleared [${last - 999}/${last - 1000}]`,
  );
  const round = V2Store.recover(s.save());
  assert.throws(() => round.watch("/k", { sinceIndex: last - 1000 }, () => undefined), /cleared \[7\/6\]/, "kept by snapshots");
});
