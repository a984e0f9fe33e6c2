// Watch semantics through the store (exact, recursive, hidden, ancestor delete, stream,
// history, removal, the watchers gauge) plus the hub's cost model.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V2Error } from "../../api/v2-errors.ts";
import type { V2Event } from "./event.ts";
import { V2Store } from "./store.ts";
import { WatcherHub } from "./watcher-hub.ts";

const T0 = Date.UTC(2026, 0, 1);

function collector(): { events: V2Event[]; sink: (e: V2Event) => void; keys: () => string[] } {
  const events: V2Event[] = [];
  return { events, sink: (e) => events.push(e), keys: () => events.map((e) => `${e.action} ${e.node.key ?? ""} ${e.etcdIndex}`) };
}

const watchers = (s: V2Store): number => s.statsJSON().watchers;

test("a watch on a key gets the next change synchronously, then is removed", () => {
  const s = new V2Store();
  s.set("/w/a", { value: "one" }, T0);
  const c = collector();
  const w = s.watch("/w/a", {}, c.sink);
  assert.equal(w.startIndex, 1);
  assert.equal(watchers(s), 1);
  s.set("/w/a", { value: "two" }, T0);
  assert.deepEqual(c.keys(), ["set /w/a 2"], "delivered inside set()");
  assert.equal(c.events[0]?.prevNode?.value, "one");
  assert.equal(watchers(s), 0);
  s.set("/w/a", { value: "three" }, T0);
  assert.equal(c.events.length, 1);
  w.remove(); // idempotent after self-removal
});

test("a watch on a missing key or below a file waits for it", () => {
  const s = new V2Store();
  s.set("/f", { value: "file" }, T0);
  const missing = collector();
  const below = collector();
  s.watch("/w/new", {}, missing.sink);
  s.watch("/f/child", {}, below.sink);
  s.create("/w/new", { value: "x" }, T0);
  assert.deepEqual(missing.keys(), ["create /w/new 2"]);
  assert.equal(below.events.length, 0);
});

test("a non-recursive watch on a dir ignores children but sees the dir itself", () => {
  const s = new V2Store();
  s.set("/w/d/x", { value: "1" }, T0);
  const c = collector();
  s.watch("/w/d", {}, c.sink);
  s.set("/w/d/x", { value: "2" }, T0);
  s.create("/w/d", { unique: true }, T0);
  assert.equal(c.events.length, 0);
  s.delete("/w/d", { recursive: true }, T0);
  assert.deepEqual(c.keys(), ["delete /w/d 4"]);
});

test("a recursive watch sees descendants but not hidden ones", () => {
  const s = new V2Store();
  const c = collector();
  s.watch("/w", { recursive: true, stream: true }, c.sink);
  s.set("/w/_hidden", { value: "h" }, T0);
  s.set("/w/_hdir/x", { value: "h" }, T0);
  s.set("/w/sub/deep", { value: "v" }, T0);
  s.set("/other", { value: "o" }, T0);
  assert.throws(() => s.set("/w", { value: "self" }, T0), V2Error); // /w is a dir: no event
  assert.deepEqual(c.keys(), ["set /w/sub/deep 3"]);
});

test("a recursive watch from the history sees hidden descendants, as etcd's history scan does", () => {
  const s = new V2Store();
  s.set("/w/_hidden", { value: "h" }, T0);
  s.set("/w/_hdir/x", { value: "h" }, T0);
  s.set("/w/visible", { value: "v" }, T0);
  const first = collector();
  const stream = collector();
  s.watch("/w", { recursive: true, sinceIndex: 1 }, first.sink);
  s.watch("/w", { recursive: true, stream: true, sinceIndex: 2 }, stream.sink);
  return Promise.resolve().then(() => {
    assert.deepEqual(first.keys(), ["set /w/_hidden 3"]);
    assert.deepEqual(stream.keys(), ["set /w/_hdir/x 3", "set /w/visible 3"]);
    s.set("/w/_hidden", { value: "live" }, T0);
    assert.equal(stream.events.length, 2, "live delivery still hides them");
  });
});

test("hidden keys reach watchers of the exact key and recursive watchers inside the hidden dir", () => {
  const s = new V2Store();
  const exact = collector();
  const inside = collector();
  const root = collector();
  s.watch("/w/_h", {}, exact.sink);
  s.watch("/w/_d", { recursive: true }, inside.sink);
  s.watch("/", { recursive: true, stream: true }, root.sink);
  s.set("/w/_h", { value: "1" }, T0);
  s.set("/w/_d/x", { value: "1" }, T0);
  assert.deepEqual(exact.keys(), ["set /w/_h 1"]);
  assert.deepEqual(inside.keys(), ["set /w/_d/x 2"]);
  assert.equal(root.events.length, 0);
});

test("watchers of nodes below a deleted dir get the dir's delete event once", () => {
  const s = new V2Store();
  s.set("/w/d/x/y", { value: "1" }, T0);
  s.set("/w/d/_h", { value: "1" }, T0);
  const deep = collector();
  const hidden = collector();
  const missing = collector();
  const streamOnKey = collector();
  const parent = collector();
  s.watch("/w/d/x/y", {}, deep.sink);
  s.watch("/w/d/_h", {}, hidden.sink);
  s.watch("/w/d/nope", {}, missing.sink);
  s.watch("/w/d", { stream: true }, streamOnKey.sink);
  s.watch("/w", {}, parent.sink); // non-recursive ancestor: not interested
  s.delete("/w/d", { recursive: true }, T0);
  for (const c of [deep, hidden, streamOnKey]) assert.deepEqual(c.keys(), ["delete /w/d 3"]);
  assert.deepEqual(deep.events[0]?.node, { key: "/w/d", dir: true, modifiedIndex: 3, createdIndex: 1 });
  assert.equal(missing.events.length, 0, "only existing nodes are notified live (as etcd)");
  assert.equal(parent.events.length, 0);
});

test("a stream watch stays registered until removed", () => {
  const s = new V2Store();
  const c = collector();
  const w = s.watch("/w", { recursive: true, stream: true }, c.sink);
  s.set("/w/a", { value: "1" }, T0);
  s.set("/w/b", { value: "1" }, T0);
  assert.equal(watchers(s), 1);
  w.remove();
  w.remove();
  assert.equal(watchers(s), 0);
  s.set("/w/c", { value: "1" }, T0);
  assert.deepEqual(c.keys(), ["set /w/a 1", "set /w/b 2"]);
});

test("refresh does not wake watchers and is skipped by history watches", async () => {
  const s = new V2Store();
  s.set("/w/r", { value: "v", expireTime: T0 + 5000 }, T0);
  const c = collector();
  s.watch("/w/r", {}, c.sink);
  s.update("/w/r", { refresh: true, expireTime: T0 + 9000 }, T0);
  s.set("/w/r", { refresh: true, expireTime: T0 + 9000 }, T0);
  assert.equal(c.events.length, 0);
  const h = collector();
  s.watch("/w/r", { sinceIndex: 2 }, h.sink);
  await Promise.resolve();
  assert.equal(h.events.length, 0, "still waiting");
  s.set("/w/r", { value: "real" }, T0);
  assert.deepEqual(c.keys(), ["set /w/r 4"]);
  assert.deepEqual(h.keys(), ["set /w/r 4"]);
});

test("a history match is delivered after watch() returns, stamped with the current index", async () => {
  const s = new V2Store();
  s.set("/h/a", { value: "one" }, T0);
  s.set("/h/a", { value: "two" }, T0);
  s.set("/h/other", { value: "x" }, T0);
  s.set("/h/a", { value: "three" }, T0);
  const order: string[] = [];
  const c = collector();
  const w = s.watch("/h/a", { sinceIndex: 3 }, (e) => {
    order.push("event");
    c.sink(e);
  });
  order.push("returned");
  assert.equal(w.startIndex, 4);
  assert.equal(watchers(s), 0, "answered from history: never registered");
  await Promise.resolve();
  assert.deepEqual(order, ["returned", "event"]);
  assert.deepEqual(c.events.map((e) => [e.node.value, e.node.modifiedIndex, e.etcdIndex]), [["three", 4, 4]]);
  const r = collector();
  s.watch("/h", { recursive: true, sinceIndex: 3 }, r.sink);
  await Promise.resolve();
  assert.deepEqual(r.keys(), ["set /h/other 4"]);
});

test("removing a watcher before its history microtask cancels the delivery", async () => {
  const s = new V2Store();
  s.set("/h/a", { value: "one" }, T0);
  const c = collector();
  s.watch("/h/a", { sinceIndex: 1 }, c.sink).remove();
  await Promise.resolve();
  assert.equal(c.events.length, 0);
});

test("sinceIndex in the future waits for the first event at or after it; 0 means from now", () => {
  const s = new V2Store();
  s.set("/f/a", { value: "1" }, T0);
  const future = collector();
  const zero = collector();
  s.watch("/f/a", { sinceIndex: 3 }, future.sink);
  s.watch("/f/a", { sinceIndex: 0 }, zero.sink);
  s.set("/f/a", { value: "2" }, T0);
  s.set("/f/a", { value: "3" }, T0);
  assert.deepEqual(zero.keys(), ["set /f/a 2"]);
  assert.deepEqual(future.keys(), ["set /f/a 3"]);
});

test("a sinceIndex older than the history throws 401 with the current index", () => {
  const s = new V2Store();
  s.set("/c/a", { value: "first" }, T0);
  for (let i = 0; i < 1005; i++) s.set("/c/b", { value: "filler" }, T0);
  assert.throws(
    () => s.watch("/c/a", { sinceIndex: 1 }, () => {}),
    (err: unknown) =>
      err instanceof V2Error &&
      err.errorCode === 401 &&
      err.cause_ === "the requested history has been cleared [7/1]" &&
      err.index === 1006,
  );
  assert.equal(watchers(s), 0);
});

test("a stream watch from history replays every match, then continues live in order", async () => {
  const s = new V2Store();
  s.set("/s/a", { value: "1" }, T0);
  s.set("/s/b", { value: "1" }, T0);
  s.set("/s/a", { value: "2" }, T0);
  const c = collector();
  const w = s.watch("/s/a", { stream: true, sinceIndex: 1 }, c.sink);
  s.set("/s/a", { value: "3" }, T0); // live, before the replay microtask ran
  assert.equal(c.events.length, 0);
  await Promise.resolve();
  assert.deepEqual(c.keys(), ["set /s/a 3", "set /s/a 3", "set /s/a 4"]);
  assert.deepEqual(c.events.map((e) => e.node.modifiedIndex), [1, 3, 4]);
  assert.equal(watchers(s), 1);
  w.remove();
});

test("a throwing sink loses its watcher but not the write", () => {
  const errors: unknown[] = [];
  const s = new V2Store({ onSinkError: (err) => errors.push(err) });
  const ok = collector();
  s.watch("/x", {}, () => {
    throw new Error("boom");
  });
  s.watch("/x", { stream: true }, ok.sink);
  assert.equal(s.set("/x", { value: "1" }, T0).node.value, "1");
  s.set("/x", { value: "2" }, T0);
  assert.equal(errors.length, 1);
  assert.equal(ok.events.length, 2);
  assert.equal(watchers(s), 1);
});

test("watchers gauge counts registered watchers across paths", () => {
  const s = new V2Store();
  const ws = Array.from({ length: 50 }, (_, i) => s.watch(`/g/${i % 5}`, {}, () => {}));
  assert.equal(watchers(s), 50);
  s.set("/g/0", { value: "x" }, T0);
  assert.equal(watchers(s), 40);
  for (const w of ws) w.remove();
  assert.equal(watchers(s), 0);
});

test("an event visits only its ancestors' watcher lists, not every watcher", () => {
  const hub = new WatcherHub();
  let offered = 0;
  for (let i = 0; i < 5000; i++) hub.watch(`/k/${i}`, { recursive: false, stream: true, since: 1, storeIndex: 0 }, () => offered++);
  assert.equal(hub.count, 5000);
  for (let i = 1; i <= 100; i++) {
    hub.notify({ action: "set", node: { key: `/k/${i}`, value: "v", modifiedIndex: i, createdIndex: i }, etcdIndex: i });
  }
  assert.equal(offered, 100);
  assert.equal(hub.count, 5000);
});
