// The gRPC watch wire's pacing of fan-outs (watch.ts): streams stand in for node:http2's,
// recording what is written to them and when.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary } from "@bufbuild/protobuf";
import { until } from "../../until.test-helper.ts";
import type { V3GatewayContext } from "../http/v3-backend.ts";
import { FakeV3Backend } from "../http/v3-fake-backend.test-helper.ts";
import { MESSAGE_PREFIX_BYTES } from "./frames.ts";
import { WatchRequestSchema, WatchResponseSchema, type WatchResponse } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { FANOUT_TURN_MESSAGES, serveWatch } from "./watch.ts";

class FakeRaw {
  writableLength = 0;
  closed = false;
  readonly written: WatchResponse[] = [];
  onClose: () => void = () => undefined;
  readonly session: object;
  constructor(session: object) {
    this.session = session;
  }
  sendFramed(framed: Buffer): boolean {
    if (this.closed) return false;
    this.written.push(fromBinary(WatchResponseSchema, framed.subarray(MESSAGE_PREFIX_BYTES)));
    return true;
  }
  finish(): void {
    this.closed = true;
  }
  drained(): Promise<void> {
    return Promise.resolve();
  }
}

interface Client {
  raw: FakeRaw;
  request(m: Parameters<typeof create<typeof WatchRequestSchema>>[1]): void;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** `n` watch streams spread over `connections` connections, each with one watcher of key "k". */
async function setup(n: number, connections: number, streamBufferBytes?: number, connection: () => object = () => ({})): Promise<{ backend: FakeV3Backend; clients: Client[] }> {
  const backend = new FakeV3Backend();
  const gw = { backend, maxRequestBytes: 1.5 * 1024 * 1024, maxTxnOps: 128, ...(streamBufferBytes === undefined ? {} : { streamBufferBytes }) } as V3GatewayContext;
  const sessions = Array.from({ length: connections }, connection);
  const clients: Client[] = [];
  for (let i = 0; i < n; i++) {
    const raw = new FakeRaw(sessions[i % connections]!);
    let onMessage: (m: ReturnType<typeof create<typeof WatchRequestSchema>>) => void = () => undefined;
    const stream = { raw, onMessage: (cb: typeof onMessage) => (onMessage = cb), send: () => true };
    serveWatch(stream as unknown as Parameters<typeof serveWatch>[0], gw, { token: undefined });
    clients.push({ raw, request: (m) => onMessage(create(WatchRequestSchema, m)) });
  }
  for (const c of clients) c.request({ requestUnion: { case: "createRequest", value: { key: Buffer.from("k") } } });
  await until(() => clients.every((c) => c.raw.written.length === 1), "every watcher created");
  return { backend, clients };
}

const written = (clients: Client[]): number => clients.reduce((n, c) => n + c.raw.written.length, 0);
const put = (backend: FakeV3Backend, value: string): Promise<unknown> =>
  backend.put({ key: Buffer.from("k"), value: Buffer.from(value), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, { token: undefined });

test("a fan-out past one turn's share: the first connection's messages at once, the others' in later turns, each stream in order", async () => {
  // 100 streams per connection: one connection fits a turn's share, two do not.
  assert.ok(FANOUT_TURN_MESSAGES >= 100 && FANOUT_TURN_MESSAGES < 200);
  const { backend, clients } = await setup(300, 3);
  const before = written(clients);
  // Two writes in one turn, then a progress request on a stream whose messages wait.
  void put(backend, "a");
  void put(backend, "b");
  assert.equal(written(clients) - before, 200, "written at once: both writes to the first connection");
  assert.ok(clients.every((c, i) => c.raw.written.length === (i % 3 === 0 ? 3 : 1)));
  const last = clients[clients.length - 1]!;
  last.request({ requestUnion: { case: "progressRequest", value: {} } });
  await nextTurn();
  assert.equal(written(clients) - before, 400, "one more connection in the next turn");
  await until(() => written(clients) - before === 601, "every message written");
  const rev = backend.revision;
  for (const c of clients) {
    const [created, a, b, ...rest] = c.raw.written;
    assert.equal(created!.created, true);
    assert.deepEqual([a!.events.map((e) => Buffer.from(e.kv!.value).toString()), a!.header!.revision], [["a"], BigInt(rev - 1)]);
    assert.deepEqual([b!.events.map((e) => Buffer.from(e.kv!.value).toString()), b!.header!.revision], [["b"], BigInt(rev)]);
    // The progress answer (watch ID -1) after the events it vouches for.
    if (c === last) assert.deepEqual(rest.map((m) => m.watchId), [-1n]);
    else assert.equal(rest.length, 0);
  }
});

test("a connection's waiting messages count as its streams' unsent bytes: past the limit a watcher pauses, then is caught up in order", async () => {
  // One event message is 49 bytes: two fit the limit, three do not.
  const { backend, clients } = await setup(300, 3, 80);
  const paused = new Set<number>();
  // Which watchers' sinks refused (paused), seen between the backend and the session.
  for (const w of backend.watchers.values()) {
    const sink = w.sink;
    w.sink = {
      send: (m) => {
        const taken = sink.send(m);
        if (taken === false) paused.add(w.id);
        return taken;
      },
    };
  }
  void put(backend, "a");
  void put(backend, "b");
  void put(backend, "c");
  await until(() => clients.every((c) => c.raw.written.length >= 4), "every stream got every event");
  // The streams of the connections whose messages waited passed the limit and paused; those
  // of the connection written at once did not. None was canceled; each got a, b, c in order.
  assert.equal(paused.size, 200);
  for (const c of clients) {
    assert.equal(c.raw.written.length, 4);
    assert.equal(c.raw.written.find((m) => m.canceled), undefined);
    assert.deepEqual(c.raw.written.slice(1).map((m) => Buffer.from(m.events[0]!.kv!.value).toString()), ["a", "b", "c"]);
  }
});

/** An HTTP/2 connection's unsent bytes as h2/connection.ts exposes them, set by the test. */
class FakeOutput {
  unsentBytes = 0;
  waits: number[] = [];
  #waiters: Array<{ below: number; resolve: () => void }> = [];
  unsentBelow(below: number): Promise<void> {
    if (this.unsentBytes <= below) return Promise.resolve();
    this.waits.push(below);
    return new Promise((resolve) => this.#waiters.push({ below, resolve }));
  }
  set(bytes: number): void {
    this.unsentBytes = bytes;
    const ready = this.#waiters.filter((w) => bytes <= w.below);
    this.#waiters = this.#waiters.filter((w) => bytes > w.below);
    for (const w of ready) w.resolve();
  }
}

test("a connection over twice the stream limit pauses the watchers of all its streams, though each stream holds nothing; they catch up in order once it drains", async () => {
  const outputs: FakeOutput[] = [];
  const { backend, clients } = await setup(4, 2, 1000, () => {
    const o = new FakeOutput();
    outputs.push(o);
    return o;
  });
  const [full, idle] = outputs as [FakeOutput, FakeOutput];
  full.set(2001); // other streams of connection 0 hold it (their clients do not read)
  await put(backend, "a");
  await put(backend, "b");
  const values = (c: Client) => c.raw.written.slice(1).map((m) => m.events.map((e) => Buffer.from(e.kv!.value).toString()).join(","));
  // Streams 0 and 2 are on connection 0: paused, nothing written. Streams 1 and 3: live.
  assert.deepEqual(clients.map(values), [[], ["a", "b"], [], ["a", "b"]]);
  assert.ok(full.waits.length > 0 && full.waits.every((b) => b === 1000), "they wait for the connection to fall to half its bound");
  full.set(1500); // under the bound, not yet under half of it
  await nextTurn();
  assert.deepEqual(clients.map(values), [[], ["a", "b"], [], ["a", "b"]]);
  full.set(0);
  await until(() => values(clients[0]!).length > 0 && values(clients[2]!).length > 0, "caught up");
  await put(backend, "c");
  // Caught up from the store in one message (the fake replays revision by revision), then live.
  for (const c of [clients[0]!, clients[2]!]) assert.deepEqual(values(c).join(",").split(","), ["a", "b", "c"]);
  assert.equal(idle.waits.length, 0);
  assert.ok(clients.every((c) => c.raw.written.every((m) => !m.canceled)));
});
