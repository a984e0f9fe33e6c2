// The transport-neutral watch session, driven through a recording wire: the rules both the
// gateway and gRPC rely on, without either encoding.
import { test } from "node:test";
import assert from "node:assert/strict";
import { V3Errors } from "../../api/v3-errors.ts";
import type { V3Event, WatchCreate, WatchSink } from "../../store/v3/index.ts";
import { MvccStore, WatchHub } from "../../store/v3/index.ts";
import { putReq } from "../../store/v3/v3.test-helper.ts";
import type { V3GatewayContext, V3Header } from "./v3-backend.ts";
import { FakeV3Backend } from "./v3-fake-backend.test-helper.ts";
import type { WatchCreateMsg } from "./v3-decode.ts";
import { WatchMetrics } from "../metrics/watch-metrics.ts";
import { DUPLICATE_WATCH_ID, EMPTY_WATCHER_RANGE, WatchSession, slowReaderReason, type WatchControl, type WatchWire } from "./v3-watch-session.ts";

type Sent = { control: WatchControl } | { events: { revision: number; watchId: number; events: readonly V3Event[]; fragment: boolean } };

class RecordingWire implements WatchWire {
  readonly sent: Sent[] = [];
  unsent = 0;
  overflowed: number | undefined;
  failed: unknown;
  #drainWaiters: Array<() => void> = [];
  /** drained() waits still pending. */
  get drainWaits(): number {
    return this.#drainWaiters.length;
  }
  drained(): Promise<void> {
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }
  /** The client read everything: unsent 0, drained() waiters resolve. */
  drain(): void {
    this.unsent = 0;
    const w = this.#drainWaiters;
    this.#drainWaiters = [];
    for (const f of w) f();
  }
  control(r: WatchControl): void {
    this.sent.push({ control: r });
  }
  events(revision: number, watchId: number, events: readonly V3Event[], fragment: boolean): void {
    this.sent.push({ events: { revision, watchId, events, fragment } });
  }
  overflow(limit: number): void {
    this.overflowed = limit;
  }
  fail(err: unknown): void {
    this.failed = err;
  }
}

const create = (key: string, opts: { watchId?: number; startRevision?: number; fragment?: boolean } = {}): WatchCreateMsg => ({
  create: { key: Buffer.from(key), rangeEnd: Buffer.alloc(0), startRevision: opts.startRevision ?? 0, prevKv: false, filters: { noPut: false, noDelete: false }, progressNotify: false },
  watchId: opts.watchId ?? 0,
  fragment: opts.fragment ?? false,
});

function setup(opts: { maxRequestBytes?: number; streamBufferBytes?: number } = {}): { backend: FakeV3Backend; wire: RecordingWire; session: WatchSession } {
  const backend = new FakeV3Backend();
  const wire = new RecordingWire();
  const gw = { backend, maxRequestBytes: opts.maxRequestBytes ?? 1.5 * 1024 * 1024, maxTxnOps: 128, streamBufferBytes: opts.streamBufferBytes ?? 1000 };
  return { backend, wire, session: new WatchSession(gw, { token: undefined }, wire) };
}

const flush = (): Promise<void> => new Promise((r) => setImmediate(r));
const put = (b: FakeV3Backend, key: string, value: string): Promise<unknown> => b.put({ key: Buffer.from(key), value: Buffer.from(value), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, { token: undefined });

test("created goes out before replayed events; IDs automatic from 0, explicit kept, duplicate refused; progress is -1", async () => {
  const { backend, wire, session } = setup();
  await put(backend, "a", "1");
  session.enqueue(create("a", { startRevision: 1 }));
  session.enqueue(create("b", { watchId: 5 }));
  session.enqueue(create("c", { watchId: 5 }));
  session.enqueue(create("d"));
  session.enqueue({ progress: true });
  session.enqueue({ none: true });
  await flush();
  const kinds = wire.sent.map((s) => ("control" in s ? `c${s.control.watchId}${s.control.created === true ? "+" : ""}${s.control.canceled === true ? "x" : ""}` : `e${s.events.watchId}`));
  assert.deepEqual(kinds, ["c0+", "e0", "c5+", "c-1+x", "c1+", "c-1"]);
  const dup = wire.sent[3]!;
  assert.ok("control" in dup && dup.control.cancelReason === DUPLICATE_WATCH_ID);
  assert.equal(session.size, 3);
  session.close();
  assert.equal(backend.watchers.size, 0, "close cancels every watcher");
});

test("a refused create answers -1 created+canceled and does not use up the automatic ID", async () => {
  const { backend, wire, session } = setup();
  backend.refuseWatch = V3Errors.permissionDenied();
  session.enqueue(create("a"));
  await flush();
  backend.refuseWatch = undefined;
  session.enqueue(create("a"));
  await flush();
  const [refused, ok] = wire.sent;
  assert.ok(refused !== undefined && "control" in refused);
  assert.equal(refused.control.watchId, -1);
  assert.match(refused.control.cancelReason ?? "", /^rpc error: code = PermissionDenied desc = etcdserver: permission denied$/);
  assert.ok(ok !== undefined && "control" in ok && ok.control.watchId === 0 && ok.control.created === true);
});

test("an empty range (end not above the key, not \"\\0\") is refused as etcd's watchStream.Watch: -1 created+canceled, before the ID is checked or taken", async () => {
  const { backend, wire, session } = setup();
  const ranged = (key: string, end: string, watchId = 0): WatchCreateMsg => ({ ...create(key, { watchId }), create: { ...create(key).create, rangeEnd: Buffer.from(end, "latin1") } });
  session.enqueue(create("x", { watchId: 3 }));
  session.enqueue(ranged("b", "a"));
  session.enqueue(ranged("a", "a", 3)); // the duplicate ID is not what it is refused for
  session.enqueue(ranged("a\0", "a"));
  session.enqueue(ranged("a", "\0")); // from key
  session.enqueue(ranged("a", "b"));
  await flush();
  const c = wire.sent.map((s) => ("control" in s ? [s.control.watchId, s.control.created === true, s.control.canceled === true, s.control.cancelReason] : ["events"]));
  assert.deepEqual(c, [[3, true, false, undefined], [-1, true, true, EMPTY_WATCHER_RANGE], [-1, true, true, EMPTY_WATCHER_RANGE], [-1, true, true, EMPTY_WATCHER_RANGE], [0, true, false, undefined], [1, true, false, undefined]]);
  assert.equal(backend.watchers.size, 3);
  session.close();
});

test("a compacted start answers canceled with compact_revision and header revision 0; the ID stays taken", async () => {
  const { backend, wire, session } = setup();
  backend.revision = 10;
  backend.compactRevision = 5;
  session.enqueue(create("a", { startRevision: 2 }));
  session.enqueue(create("b"));
  await flush();
  const c = wire.sent.map((s) => ("control" in s ? s.control : undefined));
  assert.deepEqual([c[0]?.created, c[0]?.watchId], [true, 0]);
  assert.deepEqual([c[1]?.canceled, c[1]?.compactRevision, c[1]?.header.revision, c[1]?.watchId], [true, 5, 0, 0]);
  assert.equal(c[2]?.watchId, 1);
});

test("cancel answers canceled; an unknown ID gets no answer", async () => {
  const { wire, session } = setup();
  session.enqueue(create("a"));
  session.enqueue({ cancel: 0 });
  session.enqueue({ cancel: 7 });
  await flush();
  assert.equal(wire.sent.length, 2);
  const last = wire.sent[1]!;
  assert.ok("control" in last && last.control.canceled === true && last.control.watchId === 0);
});

test("fragment: a large revision goes out in parts, all but the last flagged", async () => {
  const { backend, wire, session } = setup({ maxRequestBytes: 300 });
  const kv = (k: string): V3Event => ({ type: 0, kv: { key: Buffer.from(k), createRevision: 2, modRevision: 2, version: 1, value: Buffer.alloc(200, 97), lease: 0n } });
  backend.revision = 2;
  backend.history.push({ revision: 2, events: [kv("k1"), kv("k2"), kv("k3")] });
  session.enqueue({ ...create("k", { startRevision: 1, fragment: true }), create: { ...create("k").create, startRevision: 1, rangeEnd: Buffer.from([0]) } });
  await flush();
  const parts = wire.sent.flatMap((s) => ("events" in s ? [s.events] : []));
  assert.deepEqual(parts.map((p) => [p.events.length, p.fragment]), [[1, true], [1, true], [1, false]]);
  assert.ok("control" in wire.sent[0]!, "created first");
});

/** Event revisions written for watch `id`, in order. */
const revisionsOf = (wire: RecordingWire, id: number): number[] =>
  wire.sent.flatMap((s) => ("events" in s && s.events.watchId === id ? s.events.events.map((e) => e.kv.modRevision) : []));

test("a slow reader: over the limit watchers stop taking events, and once the wire drains each is caught up in order, none canceled", async () => {
  const { backend, wire, session } = setup({ streamBufferBytes: 1000 });
  session.enqueue(create("a"));
  session.enqueue(create("b"));
  await flush();
  await put(backend, "a", "1"); // 2
  wire.unsent = 1500;
  await put(backend, "a", "2"); // 3: refused, watcher 0 paused
  await put(backend, "b", "1"); // 4: refused, watcher 1 paused
  await put(backend, "a", "3"); // 5: not offered (paused)
  backend.progressAll();
  assert.deepEqual(revisionsOf(wire, 0), [2]);
  assert.deepEqual(revisionsOf(wire, 1), []);
  assert.equal(wire.sent.filter((s) => "control" in s && s.control.canceled === true).length, 0, "nothing canceled");
  assert.equal(wire.drainWaits, 1, "one wait for the whole stream");
  assert.equal(session.size, 2);
  wire.drain();
  await flush();
  assert.deepEqual(revisionsOf(wire, 0), [2, 3, 5]);
  assert.deepEqual(revisionsOf(wire, 1), [4]);
  await put(backend, "b", "2"); // 6: live again
  assert.deepEqual(revisionsOf(wire, 1), [4, 6]);
  assert.equal(wire.overflowed, undefined);
});

test("a slow reader behind a compaction gets compact_revision when it drains; answers that cannot wait past twice the limit end the stream", async () => {
  const { backend, wire, session } = setup({ streamBufferBytes: 1000 });
  session.enqueue(create("a"));
  await flush();
  wire.unsent = 1500;
  await put(backend, "a", "1"); // 2: refused
  await put(backend, "a", "2"); // 3
  backend.compactRevision = 3;
  wire.drain();
  await flush();
  const last = wire.sent.at(-1)!;
  assert.ok("control" in last);
  assert.deepEqual([last.control.watchId, last.control.canceled, last.control.compactRevision], [0, true, 3]);
  assert.deepEqual(revisionsOf(wire, 0), []);
  assert.equal(backend.watchers.size, 0);
  // A client that keeps creating watchers and never reads.
  wire.unsent = 2500;
  session.enqueue(create("b"));
  await flush();
  assert.equal(wire.overflowed, 1000);
  assert.equal(session.closed, true);
  assert.equal(backend.watchers.size, 0);
  const n = wire.sent.length;
  await put(backend, "b", "2");
  assert.equal(wire.sent.length, n, "nothing is written after the session closed");
  assert.match(slowReaderReason(1000), /2000 bytes unsent/);
});

test("history replayed while a create is in flight is held only up to the limit; the rest is caught up after created", async () => {
  const { backend, wire, session } = setup({ streamBufferBytes: 1000 });
  for (let i = 0; i < 20; i++) await put(backend, "a", "v".repeat(200)); // 2..21, ~210 bytes each
  let resumed = 0;
  const watch = backend.watch.bind(backend);
  backend.watch = async (...args) => {
    const reg = await watch(...args);
    return { ...reg, resume: () => (resumed++, reg.resume()) };
  };
  session.enqueue(create("a", { startRevision: 2 }));
  await flush();
  const first = wire.sent[0]!;
  assert.ok("control" in first && first.control.created === true, "created first");
  assert.ok(revisionsOf(wire, 0).length < 20, `held ${revisionsOf(wire, 0).length} revisions`);
  assert.equal(wire.drainWaits, 1);
  for (let i = 0; i < 20 && wire.drainWaits > 0; i++) {
    wire.drain();
    await flush();
  }
  assert.ok(resumed >= 1);
  assert.deepEqual(revisionsOf(wire, 0), Array.from({ length: 20 }, (_, i) => i + 2));
});

/** A real store and hub behind the session (the fake backend catches up in one go). */
function hubSetup(stepRevisions: number) {
  const store = new MvccStore();
  const hub = new WatchHub(store, { catchUpStepRevisions: stepRevisions });
  let nextId = 1;
  const header = (revision?: number): V3Header => ({ clusterId: "1", memberId: "1", revision: revision ?? store.revision, raftTerm: 1 });
  const backend = {
    header,
    watch: async (c: Omit<WatchCreate, "id">, sink: WatchSink) => {
      const id = nextId++;
      const status = hub.watch({ ...c, id }, sink);
      return { id, status, cancel: () => void hub.cancel(id), resume: () => void hub.resume(id) };
    },
  };
  const putKey = (key: string, value: string): void => {
    const r = store.put(putReq(key, value));
    if (r.changes !== undefined) hub.notify(r.changes);
  };
  const steps: Array<() => void> = [];
  const wire = new RecordingWire();
  const gw = { backend, maxRequestBytes: 1.5 * 1024 * 1024, maxTxnOps: 128, streamBufferBytes: 1 << 20 } as unknown as V3GatewayContext;
  const session = new WatchSession(gw, { token: undefined }, wire, { steps: { push: (f) => void steps.push(f) } });
  return { store, hub, putKey, steps, wire, session };
}

test("a create from an old revision is caught up in queued steps; live writes meanwhile come after its replay; progress -1 waits until it caught up", async () => {
  const { store, putKey, steps, wire, session } = hubSetup(1000);
  for (let i = 0; i < 4500; i++) putKey(i === 99 ? "idle/x" : "busy", String(i)); // idle/x at 101
  session.enqueue({ ...create("idle/", { startRevision: 1 }), create: { ...create("idle/").create, rangeEnd: Buffer.from("idle0"), startRevision: 1 } });
  await flush();
  assert.deepEqual(wire.sent[0], { control: { header: { clusterId: "1", memberId: "1", revision: 4501, raftTerm: 1 }, watchId: 0, created: true } });
  assert.equal(wire.sent.length, 2, "created, then the first step's replay (revision 101)");
  assert.equal(steps.length, 1, "the first step ended at its budget: one more queued");
  session.enqueue({ progress: true });
  await flush();
  putKey("idle/live", "1"); // 4502: held back, the watcher is still catching up
  assert.equal(wire.sent.length, 2, "the replayed event only; no -1 while a watcher is behind");
  session.enqueue({ progress: true }); // a second request while one waits adds nothing
  await flush();
  let n = 0;
  while (steps.length > 0) {
    steps.shift()!();
    n++;
    if (steps.length > 0) assert.ok(!wire.sent.some((s) => "control" in s && s.control.watchId === -1), `no -1 after step ${n}`);
  }
  assert.equal(n, 4, "4,502 revisions in steps of 1,000");
  const out = wire.sent.slice(1).map((s) => ("events" in s ? s.events.events.map((e) => `${e.kv.modRevision}:${e.kv.key}`).join(",") : `progress@${s.control.header.revision}/${s.control.watchId}`));
  assert.deepEqual(out, ["101:idle/x", "4502:idle/live", "progress@4502/-1"]);
  putKey("idle/y", "2"); // 4503: live
  session.enqueue({ progress: true }); // all caught up: answered at once
  await flush();
  assert.deepEqual(wire.sent.slice(-2).map((s) => ("events" in s ? s.events.revision : s.control.watchId)), [4503, -1]);
  assert.equal(store.revision, 4503);
  session.close();
});

test("a catch-up step with the wire over its limit pauses the watcher until the wire drains, then goes on", async () => {
  const { putKey, steps, wire, session } = hubSetup(1000);
  for (let i = 0; i < 3000; i++) putKey(i % 1000 === 0 ? `idle/${i}` : "busy", String(i));
  session.enqueue({ ...create("idle/"), create: { ...create("idle/").create, rangeEnd: Buffer.from("idle0"), startRevision: 1 } });
  await flush();
  assert.equal(steps.length, 1);
  wire.unsent = 2 << 20;
  steps.shift()!();
  assert.equal(steps.length, 0, "paused, not stepping");
  assert.equal(wire.drainWaits, 1);
  wire.drain();
  await flush();
  while (steps.length > 0) steps.shift()!();
  const revs = wire.sent.flatMap((s) => ("events" in s ? s.events.events.map((e) => e.kv.modRevision) : []));
  assert.deepEqual(revs, [2, 1002, 2002]);
  session.close();
});

test("watch counts: the stream open until closed, events once as taken, pending while held for created, a compacted watcher until canceled", async () => {
  const metrics = new WatchMetrics();
  const backend = new FakeV3Backend();
  const wire = new RecordingWire();
  const session = new WatchSession({ backend, maxRequestBytes: 1 << 20, maxTxnOps: 128, streamBufferBytes: 1000, watchMetrics: metrics }, { token: undefined }, wire);
  const counts = (): number[] => [metrics.streams, metrics.events.value(), metrics.pending, metrics.compacted];
  assert.deepEqual(counts(), [1, 0, 0, 0]);
  await put(backend, "a", "1");
  await put(backend, "a", "2");
  // The registration waits: the replayed events are held for `created`, pending until it goes out.
  let open: () => void = () => {};
  const gate = new Promise<void>((r) => (open = r));
  const watch = backend.watch.bind(backend);
  backend.watch = async (...args) => {
    const reg = await watch(...args);
    await gate;
    return reg;
  };
  session.enqueue(create("a", { startRevision: 1 }));
  await flush();
  assert.deepEqual(counts(), [1, 2, 2, 0]);
  open();
  await flush();
  assert.deepEqual(counts(), [1, 2, 0, 0]);
  await put(backend, "a", "3");
  await put(backend, "b", "1");
  assert.deepEqual(counts(), [1, 3, 0, 0], "a live event counts once; one no watcher takes counts nothing");
  backend.compactRevision = 2;
  session.enqueue(create("a", { startRevision: 1 }));
  await flush();
  assert.deepEqual(counts(), [1, 3, 0, 1]);
  session.enqueue({ cancel: 1 });
  await flush();
  assert.deepEqual(counts(), [1, 3, 0, 0]);
  // Held events of a create in flight are dropped with the stream: no longer pending.
  let open2: () => void = () => {};
  const gate2 = new Promise<void>((r) => (open2 = r));
  backend.watch = async (...args) => {
    const reg = await watch(...args);
    await gate2;
    return reg;
  };
  session.enqueue(create("a", { startRevision: 3 })); // a=2 (revision 3) and a=3 (4) replayed
  await flush();
  assert.deepEqual(counts(), [1, 5, 2, 0]);
  session.close();
  session.close();
  assert.deepEqual(counts(), [0, 5, 0, 0]);
  open2();
  await flush();
  assert.deepEqual(counts(), [0, 5, 0, 0]);
});
