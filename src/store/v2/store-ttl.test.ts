// TTLs: rendering, refresh, dir TTL update, and expiry through deleteExpiredKeys.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V2Error } from "../../api/v2-errors.ts";
import type { V2Event } from "./event.ts";
import { V2Store } from "./store.ts";

const T0 = Date.UTC(2026, 10, 22, 4, 13, 41) + 0.830374; // sub-ms precision, like a log entry's time
const sec = (n: number): number => T0 + n * 1000;

test("set with a TTL renders expiration (RFC 3339 nano) and ttl rounded up", () => {
  const s = new V2Store();
  const e = s.set("/t/a", { value: "v", expireTime: sec(100) }, T0);
  assert.equal(
    JSON.stringify(e.node),
    '{"key":"/t/a","value":"v","expiration":"2026-11-22T04:15:21.00083Z","ttl":100,"modifiedIndex":1,"createdIndex":1}',
  );
  assert.equal(s.get("/t/a", {}, sec(0.5)).node.ttl, 100, "99.5 s left rounds up");
  assert.equal(s.get("/t/a", {}, sec(1)).node.ttl, 99);
  assert.equal(s.hasTtlKeys(), true);
  // set without TTL makes the key permanent again; prevNode shows the old TTL
  const p = s.set("/t/a", { value: "v2" }, sec(1));
  assert.deepEqual(p.node, { key: "/t/a", value: "v2", modifiedIndex: 2, createdIndex: 2 });
  assert.equal(p.prevNode?.ttl, 99);
  assert.equal(s.hasTtlKeys(), false);
});

test("ttl=0 means expiration = now, no ttl field, gone at the next sweep", () => {
  const s = new V2Store();
  const e = s.set("/t/z", { value: "v", expireTime: T0 }, T0);
  assert.deepEqual(e.node, { key: "/t/z", value: "v", expiration: "2026-11-22T04:13:41.00083Z", modifiedIndex: 1, createdIndex: 1 });
  s.deleteExpiredKeys(T0 + 500);
  assert.throws(() => s.get("/t/z", {}, T0), V2Error);
});

test("expire times before 2000 make a created key permanent (etcd's duration overflow)", () => {
  const s = new V2Store();
  const e = s.set("/t/huge", { value: "x", expireTime: -9e12 }, T0);
  assert.deepEqual(e.node, { key: "/t/huge", value: "x", modifiedIndex: 1, createdIndex: 1 });
  assert.equal(s.hasTtlKeys(), false);
  assert.equal(s.set("/t/inf", { value: "x", expireTime: Infinity }, T0).node.ttl, undefined);
  assert.throws(() => s.set("/t/nan", { value: "x", expireTime: NaN }, T0), RangeError);
  assert.throws(() => s.update("/t/huge", { value: "changed", expireTime: NaN }, T0), RangeError);
  assert.throws(() => s.compareAndSwap("/t/huge", { value: "changed", expireTime: NaN }, T0), RangeError);
  assert.deepEqual([s.get("/t/huge", {}, T0).node.value, s.index], ["x", 2], "a rejected op changes nothing");
});

test("update with only a TTL empties the value; without a TTL clears it", () => {
  const s = new V2Store();
  s.set("/t/c", { value: "v", expireTime: sec(100) }, T0);
  const cleared = s.update("/t/c", { value: "v" }, T0);
  assert.deepEqual(cleared.node, { key: "/t/c", value: "v", modifiedIndex: 2, createdIndex: 1 });
  assert.equal(cleared.prevNode?.ttl, 100);
  assert.equal(s.hasTtlKeys(), false);
  assert.deepEqual(s.update("/t/c", { expireTime: sec(100) }, T0).node, {
    key: "/t/c",
    value: "",
    expiration: "2026-11-22T04:15:21.00083Z",
    ttl: 100,
    modifiedIndex: 3,
    createdIndex: 1,
  });
});

test("compareAndSwap can set and clear a TTL", () => {
  const s = new V2Store();
  s.set("/t/cas", { value: "one" }, T0);
  assert.equal(s.compareAndSwap("/t/cas", { prevValue: "one", value: "two", expireTime: sec(100) }, T0).node.ttl, 100);
  assert.equal(s.get("/t/cas", {}, T0).node.ttl, 100);
  const e = s.compareAndSwap("/t/cas", { prevValue: "two", value: "three" }, T0);
  assert.equal(e.node.expiration, undefined);
  assert.equal(e.prevNode?.ttl, 100);
  assert.equal(s.hasTtlKeys(), false);
});

test("refresh keeps the value through update, set and compareAndSwap", () => {
  const s = new V2Store();
  s.set("/t/r", { value: "keep", expireTime: sec(100) }, T0);
  const u = s.update("/t/r", { refresh: true, expireTime: sec(200) }, T0);
  assert.deepEqual([u.action, u.node.value, u.node.ttl, u.node.createdIndex, u.prevNode?.ttl], ["update", "keep", 200, 1, 100]);
  const st = s.set("/t/r", { refresh: true, expireTime: sec(150) }, T0);
  assert.deepEqual([st.action, st.node.value, st.node.ttl, st.node.createdIndex], ["set", "keep", 150, 3]);
  const c = s.compareAndSwap("/t/r", { refresh: true, prevValue: "keep", expireTime: sec(120) }, T0);
  assert.deepEqual([c.action, c.node.value, c.node.ttl], ["compareAndSwap", "keep", 120]);
  // refresh gives a permanent key a TTL
  s.set("/t/p", { value: "permanent" }, T0);
  assert.equal(s.set("/t/p", { refresh: true, expireTime: sec(100) }, T0).node.ttl, 100);
  // refresh of a missing key: 100 through set and update
  for (const op of [() => s.set("/t/missing", { refresh: true, expireTime: sec(1) }, T0), () => s.update("/t/missing", { refresh: true, expireTime: sec(1) }, T0)]) {
    assert.throws(op, (err: unknown) => err instanceof V2Error && err.errorCode === 100 && err.cause_ === "/t/missing" && err.index === 6);
  }
});

test("a dir TTL update does not bump the dir's own modifiedIndex", () => {
  const s = new V2Store();
  s.set("/t/d", { dir: true }, T0);
  s.set("/t/d/child", { value: "c" }, T0);
  const e = s.update("/t/d", { expireTime: sec(30) }, T0);
  assert.equal(
    JSON.stringify({ node: e.node, prevNode: e.prevNode }),
    '{"node":{"key":"/t/d","dir":true,"expiration":"2026-11-22T04:14:11.00083Z","ttl":30,"modifiedIndex":3,"createdIndex":1},"prevNode":{"key":"/t/d","dir":true,"modifiedIndex":1,"createdIndex":1}}',
  );
  assert.equal(s.index, 3);
  const g = s.get("/t/d", {}, T0).node;
  assert.deepEqual([g.modifiedIndex, g.ttl], [1, 30]);
  const cleared = s.update("/t/d", {}, T0);
  assert.deepEqual(cleared.node, { key: "/t/d", dir: true, modifiedIndex: 4, createdIndex: 1 });
  assert.equal(s.hasTtlKeys(), false);
});

test("deleteExpiredKeys expires due nodes only, one index and one event each", () => {
  const s = new V2Store();
  const events: V2Event[] = [];
  s.watch("/", { recursive: true, stream: true }, (e) => events.push(e));
  s.set("/e/a", { value: "short-lived", expireTime: sec(1) }, T0); // 1
  s.set("/e/b", { value: "later", expireTime: sec(10) }, T0); // 2
  s.set("/e/c", { value: "same time", expireTime: sec(1) }, T0); // 3
  s.deleteExpiredKeys(sec(0.999));
  assert.equal(s.index, 3);
  s.deleteExpiredKeys(sec(1)); // cutoff == expireTime expires
  assert.equal(s.index, 5);
  const expired = events.filter((e) => e.action === "expire");
  assert.equal(
    JSON.stringify({ action: expired[0]?.action, node: expired[0]?.node, prevNode: expired[0]?.prevNode }),
    '{"action":"expire","node":{"key":"/e/a","modifiedIndex":4,"createdIndex":1},"prevNode":{"key":"/e/a","value":"short-lived","expiration":"2026-11-22T04:13:42.00083Z","modifiedIndex":1,"createdIndex":1}}',
  );
  assert.deepEqual(expired.map((e) => [e.node.key, e.etcdIndex]), [["/e/a", 4], ["/e/c", 5]]);
  assert.throws(() => s.get("/e/a", {}, sec(2)), (err: unknown) => err instanceof V2Error && err.errorCode === 100 && err.index === 5);
  assert.equal(s.get("/e/b", {}, sec(2)).node.value, "later");
  assert.equal(s.statsJSON().expireCount, 2);
  s.deleteExpiredKeys(sec(100));
  assert.equal(s.hasTtlKeys(), false);
  assert.equal(s.nextExpireTime(), undefined);
});

test("an expiring dir takes its subtree (and their TTLs) with one event", () => {
  const s = new V2Store();
  s.set("/e/d", { dir: true, expireTime: sec(5) }, T0);
  s.set("/e/d/x", { value: "1", expireTime: sec(50) }, T0);
  s.set("/e/d/sub/y", { value: "2" }, T0);
  const seen: V2Event[] = [];
  s.watch("/e/d/sub/y", {}, (e) => seen.push(e));
  s.watch("/e/d", {}, (e) => seen.push(e));
  s.deleteExpiredKeys(sec(6));
  assert.equal(s.index, 4);
  assert.equal(s.hasTtlKeys(), false, "the child's TTL entry left the heap with it");
  assert.equal(seen.length, 2);
  for (const e of seen) {
    assert.deepEqual(e.node, { key: "/e/d", dir: true, modifiedIndex: 4, createdIndex: 1 });
    assert.deepEqual(e.prevNode, { key: "/e/d", dir: true, expiration: "2026-11-22T04:13:46.00083Z", modifiedIndex: 1, createdIndex: 1 });
  }
});

test("TTL bookkeeping follows replace, delete and TTL changes", () => {
  const s = new V2Store();
  s.set("/k", { value: "1", expireTime: sec(5) }, T0);
  s.set("/k", { value: "2", expireTime: sec(50) }, T0); // replaced node leaves the heap
  assert.equal(s.nextExpireTime(), sec(50));
  s.update("/k", { value: "3", expireTime: sec(7) }, T0);
  assert.equal(s.nextExpireTime(), sec(7));
  s.delete("/k", {}, T0);
  assert.equal(s.hasTtlKeys(), false);
  s.set("/d/x", { value: "1", expireTime: sec(5) }, T0);
  s.delete("/d", { recursive: true }, T0);
  assert.equal(s.hasTtlKeys(), false);
  s.set("/f", { value: "1", expireTime: sec(5) }, T0);
  s.set("/f", { dir: true }, T0);
  assert.equal(s.hasTtlKeys(), false);
  s.deleteExpiredKeys(sec(1000));
  assert.equal(s.get("/f", {}, T0).node.dir, true);
  assert.throws(() => s.deleteExpiredKeys(NaN), RangeError);
});

test("nodes due at the same time expire in path order, parents before children", () => {
  const s = new V2Store();
  s.set("/p/q/k", { value: "v" }, T0); // creates /p and /p/q at index 1
  s.update("/p/q", { expireTime: sec(1) }, T0);
  s.update("/p", { expireTime: sec(1) }, T0);
  s.set("/a", { value: "v", expireTime: sec(1) }, T0);
  const order: string[] = [];
  s.watch("/", { recursive: true, stream: true }, (e) => order.push(`${e.action} ${e.node.key ?? ""}`));
  s.deleteExpiredKeys(sec(1));
  assert.deepEqual(order, ["expire /a", "expire /p"], "/p took /p/q with it");
  assert.equal(s.hasTtlKeys(), false);
});

test("a node due long ago but not yet expired by a SYNC reads as gone, never with a negative ttl", () => {
  const s = new V2Store();
  const t0 = 1_800_000_000_000;
  s.set("/d/k", { value: "v", expireTime: t0 + 2000 }, t0);
  s.set("/d/p", { value: "v" }, t0);
  // Just due (within the SYNC period): still shown, without a ttl, as etcd shows it.
  const due = s.get("/d/k", {}, t0 + 2500);
  assert.equal(due.node.ttl, undefined);
  // Due for longer (a member restarted after the time ran out): 404 and not listed.
  assert.throws(() => s.get("/d/k", {}, t0 + 10_000), (e: unknown) => e instanceof V2Error && e.errorCode === 100 && e.cause_ === "/d/k");
  const list = s.get("/d", { recursive: true }, t0 + 10_000);
  assert.deepEqual(list.node.nodes?.map((n) => n.key), ["/d/p"]);
});

test("expirations keep their nanoseconds through writes, events, reads and images", () => {
  const s = new V2Store();
  const at = Date.UTC(2026, 10, 26, 1, 48, 35, 550);
  const set = s.set("/n", { value: "1", expireTime: at + 100_000, expireNs: 621324 }, at + 0.621324);
  assert.equal(set.node.expiration, "2026-11-26T01:50:15.550621324Z");
  assert.equal(set.node.ttl, 100);
  const up = s.update("/n", { expireTime: at + 50_000, expireNs: 582080, refresh: true }, at);
  assert.equal(up.node.expiration, "2026-11-26T01:49:25.55058208Z");
  assert.equal(up.prevNode?.expiration, "2026-11-26T01:50:15.550621324Z");
  const again = V2Store.recover(s.save());
  assert.equal(again.save(), s.save());
  assert.equal(again.get("/n", {}, at).node.expiration, "2026-11-26T01:49:25.55058208Z");
  s.create("/c", { value: "x", expireTime: at + 1000, expireNs: 1 }, at);
  assert.equal(s.get("/c", {}, at).node.expiration, "2026-11-26T01:48:36.550000001Z");
});

test("keys due in the same ms expire in ns order, and not before their ns", () => {
  const s = new V2Store();
  const at = Date.UTC(2026, 10, 26, 1, 0, 0);
  s.set("/a", { value: "", expireTime: at + 1000, expireNs: 900 }, at);
  s.set("/b", { value: "", expireTime: at + 1000, expireNs: 100 }, at);
  s.deleteExpiredKeys(at + 1000); // due later within that ms: not yet
  assert.equal(s.hasTtlKeys(), true);
  const order: string[] = [];
  s.watch("/", { recursive: true, stream: true }, (e) => void order.push(e.node.key ?? ""));
  s.deleteExpiredKeys(at + 1001);
  assert.deepEqual(order, ["/b", "/a"]);
});

test("an expire event's prevNode shows its expiration to the ns and no ttl, as etcd's", () => {
  const s = new V2Store();
  const at = Date.UTC(2026, 10, 26, 1, 0, 0);
  s.set("/x", { value: "v", expireTime: at + 1000, expireNs: 999_999 }, at);
  const events: V2Event[] = [];
  s.watch("/", { recursive: true, stream: true }, (e) => void events.push(e));
  s.deleteExpiredKeys(at + 1001);
  assert.deepEqual(events.map((e) => [e.action, e.prevNode]), [["expire", { key: "/x", value: "v", expiration: "2026-11-26T01:00:01.000999999Z", modifiedIndex: 1, createdIndex: 1 }]]);
});

test("a past expiration (a wrapped TTL) makes set permanent and update due, as etcd", () => {
  const s = new V2Store();
  const at = Date.UTC(2026, 10, 26);
  const past = Date.UTC(1688, 5, 13);
  assert.equal(s.set("/k", { value: "1", expireTime: past, expireNs: 5 }, at).node.expiration, undefined);
  const up = s.update("/k", { value: "2", expireTime: past, expireNs: 5 }, at);
  assert.equal(up.node.ttl, -9223372036);
  assert.match(up.node.expiration ?? "", /^1688-06-13T00:00:00.000000005Z$/);
  // Until a SYNC expires it, reads show it with that ttl as etcd does (not 404: it is no
  // node a missed SYNC left behind).
  assert.equal(s.get("/k", {}, at + 100).node.ttl, -9223372036);
  assert.deepEqual(s.get("/", {}, at + 100).node.nodes?.map((n) => [n.key, n.ttl]), [["/k", -9223372036]]);
  const again = V2Store.recover(s.save());
  assert.equal(again.save(), s.save());
  const expired: V2Event[] = [];
  s.watch("/", { recursive: true, stream: true }, (e) => void expired.push(e));
  s.deleteExpiredKeys(at);
  assert.equal(s.hasTtlKeys(), false);
  // Its expire event's prevNode: the ttl etcd computes at its SYNC, centuries past.
  assert.deepEqual(expired.map((e) => [e.action, e.prevNode?.ttl]), [["expire", -9223372036]]);
});
