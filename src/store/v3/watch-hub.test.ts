// WatchHub: replay then live without gap or duplicate, single-key / prefix / range /
// from-key watchers, filters, prevKv, compacted and future starts, cancel, progress,
// sinks that throw, and the cost of thousands of watchers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V3KeySpace } from "./key-space.ts";
import { MvccStore } from "./mvcc-store.ts";
import type { WriteResult } from "./mvcc-store.ts";
import type { RevisionEvents } from "./types.ts";
import { EventType } from "./types.ts";
import type { WatchCreate, WatchMessage } from "./watch-hub.ts";
import { REPLAY_BATCH_REVISIONS, WatchHub } from "./watch-hub.ts";
import { FROM_KEY, b, delReq, opDel, opPut, putReq, txnReq } from "./v3.test-helper.ts";

/** A store and hub wired like the server: every write's changes go to notify(). */
function setup() {
  const store = new MvccStore();
  const hub = new WatchHub(store);
  const apply = <R>(r: WriteResult<R>): R => {
    if (r.changes !== undefined) hub.notify(r.changes);
    return r.response;
  };
  return { store, hub, apply };
}

let nextId = 1;
function watchReq(key: string, over: Partial<WatchCreate> = {}): WatchCreate {
  return {
    id: nextId++,
    key: b(key),
    rangeEnd: Buffer.alloc(0),
    startRevision: 0,
    prevKv: false,
    filters: { noPut: false, noDelete: false },
    progressNotify: false,
    ...over,
  };
}

function recorder() {
  const msgs: WatchMessage[] = [];
  const sink = { send: (m: WatchMessage) => void msgs.push(m) };
  /** "rev: TYPE key=value ..." per message. */
  const lines = () =>
    msgs.map(
      (m) =>
        `${m.revision}:` +
        m.events.map((e) => ` ${e.type === EventType.PUT ? "PUT" : "DEL"} ${e.kv.key}=${e.kv.value}${e.prevKv ? ` (was ${e.prevKv.value})` : ""}`).join(""),
    );
  return { msgs, sink, lines };
}

test("single-key watcher sees puts and deletes of its key only, in revision order", () => {
  const { store, hub, apply } = setup();
  const r = recorder();
  hub.watch(watchReq("w/a"), r.sink);
  apply(store.put(putReq("w/a", "1"))); // 2
  apply(store.put(putReq("w/other", "x"))); // 3
  apply(store.put(putReq("w/a", "2"))); // 4
  apply(store.deleteRange(delReq("w/a"))); // 5
  assert.deepEqual(r.lines(), ["2: PUT w/a=1", "4: PUT w/a=2", "5: DEL w/a="]);
  const del = r.msgs[2]!.events[0]!;
  assert.deepEqual([del.kv.modRevision, del.kv.createRevision, del.kv.version], [5, 0, 0]);
});

test("prefix, interval, from-key and all-keys watchers match their keys", () => {
  const { store, hub, apply } = setup();
  const prefix = recorder();
  const interval = recorder();
  const fromKey = recorder();
  const all = recorder();
  hub.watch(watchReq("p/", { rangeEnd: b("p0") }), prefix.sink);
  hub.watch(watchReq("a", { rangeEnd: b("c") }), interval.sink);
  hub.watch(watchReq("p/m", { rangeEnd: FROM_KEY }), fromKey.sink);
  hub.watch(watchReq("\0", { rangeEnd: FROM_KEY }), all.sink);
  for (const k of ["p/a", "p0", "b", "c", "p/z", "p"]) apply(store.put(putReq(k, "v")));
  assert.deepEqual(prefix.lines(), ["2: PUT p/a=v", "6: PUT p/z=v"]);
  assert.deepEqual(interval.lines(), ["4: PUT b=v"]);
  assert.deepEqual(fromKey.lines(), ["3: PUT p0=v", "6: PUT p/z=v"]);
  assert.equal(all.lines().length, 6);
});

test("a txn or a multi-key delete is one message with several events", () => {
  const { store, hub, apply } = setup();
  const r = recorder();
  hub.watch(watchReq("t/", { rangeEnd: b("t0") }), r.sink);
  apply(store.txn(txnReq({ success: [opPut("t/a", "1"), opPut("x", "1"), opPut("t/b", "2")] }))); // 2
  apply(store.txn(txnReq({ success: [opDel("t/", { rangeEnd: b("t0") })] }))); // 3
  assert.deepEqual(r.lines(), ["2: PUT t/a=1 PUT t/b=2", "3: DEL t/a= DEL t/b="]);
});

test("filters drop puts or deletes and an emptied message is not sent", () => {
  const { store, hub, apply } = setup();
  const noPut = recorder();
  const noDelete = recorder();
  hub.watch(watchReq("k", { filters: { noPut: true, noDelete: false } }), noPut.sink);
  hub.watch(watchReq("k", { filters: { noPut: false, noDelete: true } }), noDelete.sink);
  apply(store.put(putReq("k", "1"))); // 2
  apply(store.deleteRange(delReq("k"))); // 3
  assert.deepEqual(noPut.lines(), ["3: DEL k="]);
  assert.deepEqual(noDelete.lines(), ["2: PUT k=1"]);
});

test("prevKv is delivered only to watchers that asked", () => {
  const { store, hub, apply } = setup();
  const withPrev = recorder();
  const without = recorder();
  hub.watch(watchReq("k", { prevKv: true }), withPrev.sink);
  hub.watch(watchReq("k"), without.sink);
  apply(store.put(putReq("k", "1")));
  apply(store.put(putReq("k", "2")));
  apply(store.deleteRange(delReq("k")));
  assert.deepEqual(withPrev.lines(), ["2: PUT k=1", "3: PUT k=2 (was 1)", "4: DEL k= (was 2)"]);
  assert.deepEqual(without.lines(), ["2: PUT k=1", "3: PUT k=2", "4: DEL k="]);
});

test("a one-event revision hands its watchers two shared lists (with and without prevKv), filters still apply", () => {
  const { store, hub, apply } = setup();
  const got = Array.from({ length: 6 }, () => recorder());
  hub.watch(watchReq("k", { prevKv: true }), got[0]!.sink);
  hub.watch(watchReq("k", { prevKv: true }), got[1]!.sink);
  hub.watch(watchReq("k"), got[2]!.sink);
  hub.watch(watchReq("k", { rangeEnd: b("l") }), got[3]!.sink);
  hub.watch(watchReq("k", { filters: { noPut: true, noDelete: false } }), got[4]!.sink);
  hub.watch(watchReq("other"), got[5]!.sink);
  apply(store.put(putReq("k", "1")));
  apply(store.put(putReq("k", "2")));
  assert.deepEqual(got.map((g) => g.lines()), [
    ["2: PUT k=1", "3: PUT k=2 (was 1)"],
    ["2: PUT k=1", "3: PUT k=2 (was 1)"],
    ["2: PUT k=1", "3: PUT k=2"],
    ["2: PUT k=1", "3: PUT k=2"],
    [],
    [],
  ]);
  const last = got.slice(0, 4).map((g) => g.msgs[1]!.events);
  assert.equal(last[0], last[1], "the prevKv watchers share one list");
  assert.equal(last[2], last[3], "the others share another");
  assert.notEqual(last[0], last[2]);
});

test("a start revision in the past replays history then follows live with no gap or duplicate", () => {
  const { store, hub, apply } = setup();
  apply(store.put(putReq("k", "1"))); // 2
  apply(store.put(putReq("k", "2"))); // 3
  apply(store.put(putReq("other", "x"))); // 4
  const r = recorder();
  hub.watch(watchReq("k", { startRevision: 3, prevKv: true }), r.sink);
  // History goes out as one message under the current revision, as etcd's catch-up does.
  assert.deepEqual(r.lines(), ["4: PUT k=2 (was 1)"]);
  apply(store.put(putReq("k", "3"))); // 5
  assert.deepEqual(r.lines(), ["4: PUT k=2 (was 1)", "5: PUT k=3 (was 2)"]);
});

test("a watch created after a write is applied but before its notify gets it exactly once", () => {
  const { store, hub } = setup();
  store.put(putReq("k", "1")); // 2, notified below
  const changes = store.put(putReq("k", "2")).changes!; // 3, not yet notified
  const fromNow = recorder();
  const fromThree = recorder();
  hub.watch(watchReq("k"), fromNow.sink);
  hub.watch(watchReq("k", { startRevision: 3 }), fromThree.sink);
  hub.notify(changes);
  assert.deepEqual(fromNow.lines(), [], "start 0 means after the current revision");
  assert.deepEqual(fromThree.lines(), ["3: PUT k=2"], "replayed once, not again live");
});

test("a future start revision waits for it", () => {
  const { store, hub, apply } = setup();
  const r = recorder();
  hub.watch(watchReq("k", { startRevision: 4 }), r.sink);
  apply(store.put(putReq("k", "1"))); // 2
  apply(store.put(putReq("k", "2"))); // 3
  apply(store.put(putReq("k", "3"))); // 4
  assert.deepEqual(r.lines(), ["4: PUT k=3"]);
});

test("replay sends at most REPLAY_BATCH_REVISIONS revisions per message, each under the current revision", () => {
  const { store, hub, apply } = setup();
  for (let i = 0; i < REPLAY_BATCH_REVISIONS + 5; i++) apply(store.put(putReq("k", `${i}`)));
  const r = recorder();
  hub.watch(watchReq("k", { startRevision: 2 }), r.sink);
  assert.deepEqual(r.msgs.map((m) => [m.revision, m.events.length]), [[store.revision, REPLAY_BATCH_REVISIONS], [store.revision, 5]]);
});

test("a start revision below the compaction revision is canceled with compact_revision", () => {
  const { store, hub, apply } = setup();
  for (let i = 0; i < 4; i++) apply(store.put(putReq("k", `${i}`))); // 2..5
  store.compact(4);
  const old = recorder();
  assert.equal(hub.watch(watchReq("k", { startRevision: 3 }), old.sink), "canceled");
  assert.deepEqual(old.msgs, [{ revision: 5, events: [], canceled: true, compactRevision: 4 }]);
  const atCompaction = recorder();
  assert.equal(hub.watch(watchReq("k", { startRevision: 4 }), atCompaction.sink), "watching");
  assert.deepEqual(atCompaction.lines(), ["5: PUT k=2 PUT k=3"]);
  assert.equal(hub.size, 1);
});

test("a negative start revision: live (no history) before any compaction, canceled with compact_revision after one (etcd's minRev)", () => {
  const { store, hub, apply } = setup();
  apply(store.put(putReq("k", "0"))); // 2
  const before = recorder();
  assert.equal(hub.watch(watchReq("k", { startRevision: -1 }), before.sink), "watching");
  apply(store.put(putReq("k", "1"))); // 3
  assert.deepEqual(before.lines(), ["3: PUT k=1"]);
  store.compact(2);
  const after = recorder();
  assert.equal(hub.watch(watchReq("k", { startRevision: -5 }), after.sink), "canceled");
  assert.deepEqual(after.msgs, [{ revision: 3, events: [], canceled: true, compactRevision: 2 }]);
});

test("cancel stops delivery and is idempotent", () => {
  const { store, hub, apply } = setup();
  const r = recorder();
  const req = watchReq("k");
  hub.watch(req, r.sink);
  apply(store.put(putReq("k", "1")));
  assert.equal(hub.cancel(req.id), true);
  assert.equal(hub.cancel(req.id), false);
  apply(store.put(putReq("k", "2")));
  assert.equal(r.msgs.length, 1);
  assert.equal(hub.size, 0);
});

test("a sink that cancels itself during delivery is not called again", () => {
  const { store, hub, apply } = setup();
  const req = watchReq("k", { startRevision: 1 });
  let calls = 0;
  apply(store.put(putReq("k", "1")));
  apply(store.put(putReq("k", "2")));
  hub.watch(req, { send: () => void (calls++, hub.cancel(req.id)) });
  apply(store.put(putReq("k", "3")));
  assert.equal(calls, 1);
});

test("a sink that throws loses its watcher and others still get the event", () => {
  const store = new MvccStore();
  const errors: number[] = [];
  const hub = new WatchHub(store, { onSinkError: (id) => errors.push(id) });
  const bad = watchReq("k");
  const good = recorder();
  hub.watch(bad, { send: () => { throw new Error("boom"); } });
  hub.watch(watchReq("k"), good.sink);
  hub.notify(store.put(putReq("k", "1")).changes!);
  assert.deepEqual(errors, [bad.id]);
  assert.equal(hub.has(bad.id), false);
  assert.deepEqual(good.lines(), ["2: PUT k=1"]);
});

test("progress goes only to watchers that asked; requestProgress to one", () => {
  const { hub } = setup();
  const asked = recorder();
  const silent = recorder();
  hub.watch(watchReq("k", { progressNotify: true }), asked.sink);
  const s = watchReq("k");
  hub.watch(s, silent.sink);
  hub.progress(1);
  assert.deepEqual(asked.msgs, [{ revision: 1, events: [] }]);
  assert.deepEqual(silent.msgs, []);
  assert.equal(hub.requestProgress(s.id, 1), true);
  assert.deepEqual(silent.msgs, [{ revision: 1, events: [] }]);
});

test("a progress tick is elided for a watcher that got events since the last tick (etcd's sendLoop)", () => {
  const { store, hub, apply } = setup();
  const busy = recorder();
  const idle = recorder();
  hub.watch(watchReq("w/busy", { progressNotify: true }), busy.sink);
  hub.watch(watchReq("w/idle", { progressNotify: true }), idle.sink);
  apply(store.put(putReq("w/busy", "1"))); // 2
  hub.progress(2);
  assert.deepEqual(busy.lines(), ["2: PUT w/busy=1"], "events since the last tick: no notification");
  assert.deepEqual(idle.msgs, [{ revision: 2, events: [] }]);
  hub.progress(2);
  assert.deepEqual(busy.lines(), ["2: PUT w/busy=1", "2:"], "quiet for a whole interval: notified");
  assert.equal(idle.msgs.length, 2);
  apply(store.put(putReq("w/idle", "2"))); // 3
  hub.progress(3);
  assert.deepEqual(idle.lines(), ["2:", "2:", "3: PUT w/idle=2"]);
  assert.deepEqual(busy.lines(), ["2: PUT w/busy=1", "2:", "3:"], "a revision that did not touch its keys: notified at the current one");
});

test("history replayed at creation counts as events for the first progress tick", () => {
  const { store, hub, apply } = setup();
  apply(store.put(putReq("h", "1"))); // 2
  const r = recorder();
  hub.watch(watchReq("h", { startRevision: 1, progressNotify: true }), r.sink);
  hub.progress(2);
  assert.deepEqual(r.lines(), ["2: PUT h=1"]);
  hub.progress(2);
  assert.deepEqual(r.lines(), ["2: PUT h=1", "2:"]);
});

test("notify rejects revisions out of order and duplicate ids are refused", () => {
  const { hub } = setup();
  const ev = (revision: number): RevisionEvents => ({ revision, events: [] });
  hub.notify(ev(3));
  assert.throws(() => hub.notify(ev(3)), /notified after 3/);
  const req = watchReq("k");
  hub.watch(req, recorder().sink);
  assert.throws(() => hub.watch(req, recorder().sink), /duplicate watcher id/);
});

test("lease expiry reaches watchers as one message with a delete per key", () => {
  const ks = new V3KeySpace();
  const hub = new WatchHub(ks);
  const r = recorder();
  ks.leaseGrant({ id: 1n, ttl: 2 }, 0);
  ks.put(putReq("exp/a", "1", { lease: 1n }));
  ks.put(putReq("exp/b", "2", { lease: 1n }));
  hub.watch(watchReq("exp/", { rangeEnd: b("exp0") }), r.sink);
  for (const c of ks.expireLeases(2_000).changes) hub.notify(c);
  assert.deepEqual(r.lines(), ["4: DEL exp/a= DEL exp/b="]);
});

test("5000 single-key watchers, 2000 prefix watchers: each write reaches only its watchers, cheaply", () => {
  const { store, hub, apply } = setup();
  const counts = new Map<number, number>();
  const sink = (id: number) => ({ send: () => void counts.set(id, (counts.get(id) ?? 0) + 1) });
  const ids: number[] = [];
  for (let i = 0; i < 5000; i++) {
    const req = watchReq(`key/${i}`);
    hub.watch(req, sink(req.id));
    ids.push(req.id);
  }
  for (let i = 0; i < 2000; i++) {
    const req = watchReq(`pre/${i}/`, { rangeEnd: b(`pre/${i}0`) });
    hub.watch(req, sink(req.id));
    ids.push(req.id);
  }
  const started = performance.now();
  for (let i = 0; i < 5000; i++) apply(store.put(putReq(`key/${i}`, "v")));
  for (let i = 0; i < 2000; i++) apply(store.put(putReq(`pre/${i}/x`, "v")));
  const elapsed = performance.now() - started;
  assert.equal(counts.size, 7000, "every watcher got its key");
  assert.ok([...counts.values()].every((n) => n === 1), "and nothing else");
  // 7000 writes + deliveries; a scan of all watchers per event would be ~49M visits.
  assert.ok(elapsed < 2000, `7000 writes with 7000 watchers took ${elapsed.toFixed(0)} ms`);
  for (const id of ids) assert.equal(hub.cancel(id), true);
  assert.equal(hub.size, 0);
});

test("restore after a snapshot install catches watchers up or cancels the compacted ones", () => {
  const { store, hub, apply } = setup();
  const lost = recorder();
  const behind = recorder();
  hub.watch(watchReq("j"), lost.sink); // needs revision 2 on
  apply(store.put(putReq("k", "1"))); // 2
  hub.watch(watchReq("k", { prevKv: true }), behind.sink); // needs revision 3 on
  // Another member's store moved on: k written at 3 and 4, j at 5, compacted at 3.
  const leader = new MvccStore();
  leader.put(putReq("k", "1"));
  leader.put(putReq("k", "2"));
  leader.put(putReq("k", "3"));
  leader.put(putReq("j", "1"));
  leader.compact(3);
  const installed = MvccStore.fromImage(leader.toImage());
  hub.restore(installed);
  assert.deepEqual(lost.msgs, [{ revision: 5, events: [], canceled: true, compactRevision: 3 }]);
  // The value before revision 3 is compacted: no prevKv for it (etcd alike).
  assert.deepEqual(behind.lines(), ["5: PUT k=2 PUT k=3 (was 2)"]);
  assert.equal(hub.size, 1);
  hub.notify(installed.put(putReq("k", "4")).changes!);
  assert.deepEqual(behind.lines().at(-1), "6: PUT k=4 (was 3)");
});

/** A sink that refuses events while `full` (a transport whose stream holds too much). */
function refuser() {
  const r = recorder();
  const state = { full: false, refused: 0 };
  const sink = {
    send: (m: WatchMessage): boolean => {
      if (state.full && m.events.length > 0 && m.canceled !== true) {
        state.refused++;
        return false;
      }
      r.msgs.push(m);
      return true;
    },
  };
  return { ...r, sink, state };
}

test("a sink that refuses pauses its watcher; resume catches it up from the store in order, then live", () => {
  const { store, hub, apply } = setup();
  const r = refuser();
  const req = watchReq("k");
  hub.watch(req, r.sink);
  apply(store.put(putReq("k", "a"))); // 2
  r.state.full = true;
  apply(store.put(putReq("k", "b"))); // 3: refused
  apply(store.put(putReq("k", "c"))); // 4: not even offered
  apply(store.txn(txnReq({ success: [opPut("k", "d"), opPut("other", "x")] }))); // 5
  assert.equal(r.state.refused, 1);
  assert.equal(hub.isPaused(req.id), true);
  assert.equal(hub.behind, 1, "a paused watcher is behind (etcd's slow_watcher_total)");
  hub.progress(store.revision); // a paused watcher is behind: no progress
  assert.equal(hub.resume(req.id + 1000), false);
  r.state.full = false;
  assert.equal(hub.resume(req.id), true);
  assert.equal(hub.resume(req.id), false, "not paused any more");
  assert.equal(hub.behind, 0);
  apply(store.put(putReq("k", "e"))); // 6: live again
  assert.deepEqual(r.lines(), ["2: PUT k=a", "5: PUT k=b PUT k=c PUT k=d", "6: PUT k=e"]);
});

test("a refused catch-up batch is offered again from its first revision; batches stay under REPLAY_BATCH_BYTES", () => {
  const { store, hub, apply } = setup();
  const big = "v".repeat(256 * 1024);
  for (let i = 0; i < 10; i++) apply(store.put(putReq("k", `${i}${big}`))); // 2..11
  const r = refuser();
  r.state.full = true;
  const req = watchReq("k", { startRevision: 2 });
  assert.equal(hub.watch(req, r.sink), "watching");
  assert.equal(hub.isPaused(req.id), true);
  assert.equal(r.msgs.length, 0);
  // Taken one batch at a time: the sink fills again after each.
  let resumes = 0;
  while (hub.isPaused(req.id) && resumes < 20) {
    r.state.full = false;
    const before = r.msgs.length;
    const sink = r.sink.send;
    r.sink.send = (m) => {
      const ok = sink(m);
      if (r.msgs.length > before) r.state.full = true;
      return ok;
    };
    hub.resume(req.id);
    r.sink.send = sink;
    resumes++;
  }
  const revisions = r.msgs.flatMap((m) => m.events.map((e) => e.kv.modRevision));
  assert.deepEqual(revisions, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  assert.ok(r.msgs.length >= 3, `${r.msgs.length} batches`);
  for (const m of r.msgs) assert.ok(m.events.length <= 5, `a batch of ${m.events.length} values of 256 KiB`);
  r.state.full = false;
  apply(store.put(putReq("k", "live"))); // 12
  assert.equal(r.msgs.at(-1)?.events[0]?.kv.modRevision, 12);
});

test("a paused watcher whose next revision was compacted gets the compacted answer on resume and is gone", () => {
  const { store, hub, apply } = setup();
  const r = refuser();
  const req = watchReq("k");
  hub.watch(req, r.sink);
  r.state.full = true;
  apply(store.put(putReq("k", "a"))); // 2: refused
  apply(store.put(putReq("k", "b"))); // 3
  apply(store.put(putReq("k", "c"))); // 4
  store.compact(3);
  r.state.full = false;
  assert.equal(hub.resume(req.id), true);
  assert.deepEqual(r.msgs, [{ revision: 4, events: [], canceled: true, compactRevision: 3 }]);
  assert.equal(hub.has(req.id), false);
  // Paused at the compaction revision itself: still readable, caught up.
  const r2 = refuser();
  const req2 = watchReq("k");
  hub.watch(req2, r2.sink);
  r2.state.full = true;
  apply(store.put(putReq("k", "d"))); // 5
  apply(store.put(putReq("k", "e"))); // 6
  store.compact(5);
  r2.state.full = false;
  hub.resume(req2.id);
  assert.deepEqual(r2.lines(), ["6: PUT k=d PUT k=e"]);
});

test("a sink with more() is caught up in steps of at most catchUpStepRevisions scanned, live writes meanwhile arrive after its replay, none twice", () => {
  const store = new MvccStore();
  const step = 2 * REPLAY_BATCH_REVISIONS;
  const hub = new WatchHub(store, { catchUpStepRevisions: step });
  const apply = <R>(r: WriteResult<R>): R => {
    if (r.changes !== undefined) hub.notify(r.changes);
    return r.response;
  };
  // 9,000 revisions on other keys, and the watched prefix written at 3 spread revisions.
  for (let i = 0; i < 9000; i++) {
    const key = i === 100 || i === 4500 || i === 8999 ? `idle/${i}` : `busy/${i % 50}`;
    apply(store.put(putReq(key, String(i))));
  }
  const scans: Array<[number, number]> = [];
  const history = {
    get revision() {
      return store.revision;
    },
    get compactRevision() {
      return store.compactRevision;
    },
    eventsInRange: (q: Parameters<MvccStore["eventsInRange"]>[0]) => {
      scans.push([q.from, Math.min(q.to, store.revision)]);
      return store.eventsInRange(q);
    },
  };
  hub.restore(history);
  const msgs: WatchMessage[] = [];
  let more = 0;
  const req = watchReq("idle/", { rangeEnd: b("idle0"), startRevision: 1, progressNotify: true });
  hub.watch(req, { send: (m) => void msgs.push(m), more: () => void more++ });
  const scanned = () => scans.reduce((n, [f, t]) => n + t - f + 1, 0);
  assert.equal(more, 1, "the first step ended at its budget");
  assert.equal(scanned(), step);
  assert.equal(hub.isPaused(req.id), true);
  assert.equal(hub.behind, 1, "catching up is behind (etcd's unsynced group)");
  // Live writes while it catches up: the matching one must come after the replay, once.
  apply(store.put(putReq("idle/live1", "L1"))); // 9002
  hub.progress(store.revision); // still catching up: no progress
  assert.equal(hub.requestProgress(req.id, store.revision), true);
  assert.equal(msgs.filter((m) => m.events.length === 0).length, 0, "no progress while unsynced");
  let steps = 1;
  while (hub.isPaused(req.id)) {
    const before = scanned();
    const moreBefore: number = more;
    assert.equal(hub.resume(req.id), true);
    steps++;
    assert.ok(scanned() - before <= step, `step ${steps} scanned ${scanned() - before}`);
    if (hub.isPaused(req.id)) assert.equal(more, moreBefore + 1);
    if (steps === 3) apply(store.put(putReq("idle/live2", "L2")));
  }
  assert.equal(steps, Math.ceil(store.revision / step));
  assert.equal(hub.behind, 0, "caught up: synced");
  apply(store.put(putReq("idle/live3", "L3")));
  const keys = msgs.flatMap((m) => m.events.map((e) => `${e.kv.modRevision}:${e.kv.key}`));
  // The i-th put is revision i + 2 (the store begins at revision 1).
  assert.deepEqual(keys, ["102:idle/100", "4502:idle/4500", "9001:idle/8999", "9002:idle/live1", "9003:idle/live2", "9004:idle/live3"]);
  hub.progress(store.revision);
  assert.equal(msgs.at(-1)!.events.length, 1, "events since the last tick elide it");
  hub.progress(store.revision);
  assert.deepEqual(msgs.at(-1), { revision: store.revision, events: [] }, "synced: progress again");
});

test("a sink without more() is caught up in one call, however long the history", () => {
  const { store, hub, apply } = setup();
  for (let i = 0; i < 25 * REPLAY_BATCH_REVISIONS; i++) apply(store.put(putReq("busy", String(i))));
  apply(store.put(putReq("idle/x", "1")));
  const r = recorder();
  const req = watchReq("idle/", { rangeEnd: b("idle0"), startRevision: 1 });
  hub.watch(req, r.sink);
  assert.equal(hub.isPaused(req.id), false);
  assert.deepEqual(r.lines(), [`${store.revision}: PUT idle/x=1`]);
});
