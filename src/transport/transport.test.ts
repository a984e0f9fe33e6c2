import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { EntryType, MessageType, message, type Message } from "../raft/index.ts";
import { app, countStreams, gate, mesh, memberFactory, waitFor, type Member } from "./transport.test-helper.ts";

const member = memberFactory();

/**
 * Counts socket writes (net.Socket's Writable hooks) until restore(): what send() hands to
 * the kernel, and when. Only writes to `peer`'s port count: the receiver's acknowledgements
 * leave on a timer of their own, which a loaded machine may run inside a measured window.
 */
function countSocketWrites(peer: Member): { count: () => number; restore: () => void } {
  const port = Number(new URL(peer.url).port);
  const proto = net.Socket.prototype as unknown as Record<"_write" | "_writev", (...args: unknown[]) => void>;
  const saved = { _write: proto._write, _writev: proto._writev };
  let writes = 0;
  for (const k of ["_write", "_writev"] as const) {
    const original = saved[k];
    proto[k] = function (this: net.Socket, ...args: unknown[]) {
      if (this.remotePort === port) writes++;
      return original.apply(this, args);
    };
  }
  return { count: () => writes, restore: () => Object.assign(proto, saved) };
}

/** Two members whose stream from 1 to 2 is open and has carried one message (index 1). */
async function streamingPair(): Promise<{ a: Member; b: Member }> {
  // No link heartbeat (an idle stream's empty frame) inside the windows the tests count.
  const a = await member({ id: 1, limits: { linkHeartbeatMs: 600_000 } });
  const b = await member({ id: 2 });
  mesh([a, b]);
  a.transport.send([app(1, 2, 1)]);
  await waitFor("the stream to carry a first message", () => b.received().length === 1);
  return { a, b };
}

test("two transports exchange batches in both directions", async () => {
  const a = await member({ id: 1 });
  const b = await member({ id: 2 });
  mesh([a, b]);
  const toB: Message[] = [
    app(1, 2, 1),
    message({ type: MessageType.MsgHeartbeat, from: 1, to: 2, term: 1, commit: 1, context: Uint8Array.of(1, 2) }),
    message({
      type: MessageType.MsgApp,
      from: 1,
      to: 2,
      term: 1,
      index: 1,
      entries: [{ term: 1, index: 2, type: EntryType.Normal, data: new TextEncoder().encode("hello") }],
    }),
  ];
  const toA = [message({ type: MessageType.MsgAppResp, from: 2, to: 1, term: 1, index: 2, reject: true, rejectHint: 1 })];
  a.transport.send(toB);
  b.transport.send(toA);
  await waitFor("both sides to receive", () => b.received().length === 3 && a.received().length === 1);
  assert.deepStrictEqual(b.batches, [toB], "one send() to one idle peer is one request");
  assert.deepStrictEqual(a.received(), toA);
  // The receiver has the batch before the sender has the answer: wait for the latter.
  await waitFor("a's request to complete", () => a.transport.stats()["2"]!.sent === 2);
  assert.equal(a.transport.stats()["2"]!.failed, 0);
  const self = a.transport.selfStats();
  assert.equal(self.messagesSent, 3);
  assert.equal(self.sendAppendRequestCnt, 2);
  assert.equal(b.transport.selfStats().messagesReceived, 3);
  assert.equal(b.transport.selfStats().bytesReceived, self.bytesSent);
  assert.ok(self.sendBandwidthRate >= 0);
});

test("messages sent while the receiver is held are written at once and arrive in order", async () => {
  const a = await member({ id: 1 });
  const b = await member({ id: 2 });
  mesh([a, b]);
  const g = gate();
  b.gate = g.promise;
  a.transport.send([app(1, 2, 1)]);
  a.transport.send([app(1, 2, 2)]);
  a.transport.send([app(1, 2, 3), app(1, 2, 4)]);
  assert.equal(a.transport.selfStats().messagesSent, 4, "all four are on the stream before any answer");
  g.open();
  await waitFor("four messages", () => b.received().length === 4);
  assert.deepStrictEqual(b.received().map((m) => m.index), [1, 2, 3, 4]);
  await waitFor("the acknowledgement", () => a.transport.stats()["2"]!.sent === 4);
});

test("send({ immediate }) hands the bytes to the kernel before it returns; send() at the end of the turn", async () => {
  const { a, b } = await streamingPair();
  // Count socket writes while send() runs synchronously: the leader calls send() and then
  // blocks on its WAL write, so only these reach a follower before its disk write starts.
  const writes = countSocketWrites(b);
  let lazy: number;
  let lazyAfterTurn: number;
  let eager: number;
  try {
    a.transport.send([app(1, 2, 2)]);
    lazy = writes.count();
    await new Promise((r) => setImmediate(r));
    lazyAfterTurn = writes.count();
    const before = writes.count();
    a.transport.send([app(1, 2, 3)], { immediate: true });
    eager = writes.count() - before;
  } finally {
    writes.restore();
  }
  assert.equal(lazy, 0, "send() leaves the bytes corked until the turn ends");
  assert.ok(lazyAfterTurn > 0, "and writes them when it ends");
  assert.ok(eager > 0, "send({ immediate: true }) writes before it returns");
  await waitFor("all three messages", () => b.received().length === 3);
  assert.deepStrictEqual(b.received().map((m) => m.index), [1, 2, 3]);
});

test("send({ deferred }) writes after this turn's ticks and microtasks, and a later send() takes it along in order", async () => {
  const { a, b } = await streamingPair();
  const writes = countSocketWrites(b);
  let afterTicks: number;
  let afterImmediate: number;
  let takenAlong: number;
  let nothingLeft: number;
  try {
    a.transport.send([app(1, 2, 2)], { deferred: true });
    // What a server does in the same turn (answer its clients) runs in ticks and microtasks.
    await new Promise((r) => process.nextTick(r));
    await Promise.resolve();
    await new Promise((r) => process.nextTick(r));
    afterTicks = writes.count();
    await new Promise((r) => setImmediate(r));
    afterImmediate = writes.count();
    const before = writes.count();
    a.transport.send([app(1, 2, 3)], { deferred: true });
    a.transport.send([app(1, 2, 4)], { immediate: true });
    takenAlong = writes.count() - before;
    await new Promise((r) => setImmediate(r));
    nothingLeft = writes.count() - before - takenAlong;
  } finally {
    writes.restore();
  }
  assert.equal(afterTicks, 0, "nothing is written while the turn's ticks and microtasks run");
  assert.ok(afterImmediate > 0, "written once the loop reaches its check phase");
  assert.equal(takenAlong, 1, "the immediate send writes the deferred message with its own, in one write");
  assert.equal(nothingLeft, 0, "the deferred flush finds nothing left to write");
  await waitFor("all four messages", () => b.received().length === 4);
  assert.deepStrictEqual(b.received().map((m) => m.index), [1, 2, 3, 4]);
});

test("send({ deferred, lingerMs }) waits up to lingerMs for a later send() to take it along", async () => {
  const { a, b } = await streamingPair();
  const writes = countSocketWrites(b);
  let afterImmediate: number;
  let takenAlong: number;
  // Longer than any stall of a loaded machine between this send and the check phase: a
  // linger short enough to run out there would write before the check (seen at load 8).
  const holdMs = 60_000;
  const lingerMs = 40;
  try {
    a.transport.send([app(1, 2, 2)], { deferred: true, lingerMs: holdMs });
    await new Promise((r) => setImmediate(r));
    afterImmediate = writes.count();
    const before = writes.count();
    a.transport.send([app(1, 2, 3)], { immediate: true });
    takenAlong = writes.count() - before;
  } finally {
    writes.restore();
  }
  assert.equal(afterImmediate, 0, "a lingering message is not written when the turn ends");
  assert.equal(takenAlong, 1, "the next send writes it with its own, in one write");
  await waitFor("both messages", () => b.received().length === 3);
  const sentAt = performance.now();
  a.transport.send([app(1, 2, 4)], { deferred: true, lingerMs });
  await waitFor("the lingering message, on its own", () => b.received().length === 4);
  assert.ok(performance.now() - sentAt >= lingerMs - 1, "with no later send it leaves once lingerMs passed");
  assert.deepStrictEqual(b.received().map((m) => m.index), [1, 2, 3, 4]);
});

test("once the peer accepted the stream, a frame is one HTTP chunk in one socket write, not node:http's", async () => {
  const { a, b } = await streamingPair();
  await waitFor("the peer's acceptance", () => a.transport.stats()["2"]!.sent === 1);
  const proto = http.ClientRequest.prototype as unknown as { write: (...args: unknown[]) => boolean };
  const requestWrite = proto.write;
  let requestWrites = 0;
  proto.write = function (this: unknown, ...args: unknown[]) {
    requestWrites++;
    return requestWrite.apply(this, args);
  };
  const writes = countSocketWrites(b);
  let socketWrites: number;
  try {
    a.transport.send([app(1, 2, 2)], { immediate: true });
    socketWrites = writes.count();
  } finally {
    writes.restore();
    proto.write = requestWrite;
  }
  assert.equal(requestWrites, 0, "the request's write() is not used");
  assert.equal(socketWrites, 1, "one write reaches the socket");
  await waitFor("the second message", () => b.received().length === 2);
  assert.deepStrictEqual(b.received().map((m) => m.index), [1, 2]);
});

test("a stream written in chunks that fills the socket keeps the rest queued and sends it in order on drain", async () => {
  const a = await member({ id: 1, limits: { maxBatchBytes: 64 * 1024 } });
  const b = await member({ id: 2 });
  mesh([a, b]);
  a.transport.send([app(1, 2, 0)]);
  await waitFor("the peer's acceptance", () => a.transport.stats()["2"]!.sent === 1);
  // 40 x 256 KiB in one synchronous send: the receiver (this process) reads nothing
  // meanwhile, so the kernel buffers fill and most of it must wait for 'drain'.
  const big = (i: number): Message =>
    message({ type: MessageType.MsgApp, from: 1, to: 2, term: 1, index: i, entries: [{ term: 1, index: i, type: EntryType.Normal, data: new Uint8Array(256 * 1024).fill(i) }] });
  a.transport.send(Array.from({ length: 40 }, (_, i) => big(i + 1)), { immediate: true });
  await waitFor("41 messages", () => b.received().length === 41, 20_000);
  assert.deepStrictEqual(b.received().map((m) => m.index), Array.from({ length: 41 }, (_, i) => i));
  for (const m of b.received().slice(1)) assert.equal(m.entries[0]!.data[1000], m.index % 256, "entry bytes intact");
});

test("leader stats latency is the heartbeat round trip", async () => {
  const a = await member({ id: 1 });
  const b = await member({ id: 2 });
  mesh([a, b]);
  for (let i = 0; i < 3; i++) {
    a.transport.send([message({ type: MessageType.MsgHeartbeat, from: 1, to: 2, term: 1 })]);
    await waitFor("heartbeat", () => b.received().length === i + 1);
    b.transport.send([message({ type: MessageType.MsgHeartbeatResp, from: 2, to: 1, term: 1 })]);
    await waitFor("heartbeat response", () => a.received().length === i + 1);
  }
  const lat = a.transport.stats()["2"]!.latencyMs;
  assert.ok(lat.minimum > 0 && lat.minimum <= lat.average && lat.average <= lat.maximum, JSON.stringify(lat));
  assert.ok(lat.standardDeviation >= 0);
});

test("batches are split at maxBatchBytes but a single larger message still goes", async () => {
  const a = await member({ id: 1, limits: { maxBatchBytes: 2000 } });
  const b = await member({ id: 2 });
  mesh([a, b]);
  const g = gate();
  b.gate = g.promise;
  const big = (i: number): Message =>
    message({ type: MessageType.MsgApp, from: 1, to: 2, index: i, entries: [{ term: 1, index: i, type: EntryType.Normal, data: new Uint8Array(900) }] });
  a.transport.send([app(1, 2, 0)]);
  a.transport.send([big(1), big(2), big(3), message({ ...big(4), entries: [{ term: 1, index: 4, type: EntryType.Normal, data: new Uint8Array(5000) }] })]);
  g.open();
  await waitFor("five messages", () => b.received().length === 5);
  assert.deepStrictEqual(
    b.batches.map((batch) => batch.map((m) => m.index)),
    [[0], [1, 2], [3], [4]],
  );
});

test("three transports keep per-peer order across many sends", async () => {
  const ms = [await member({ id: 1 }), await member({ id: 2 }), await member({ id: 3 })];
  mesh(ms);
  const n = 300;
  for (let i = 1; i <= n; i++) {
    for (const from of ms) {
      from.transport.send(ms.filter((to) => to !== from).map((to) => app(from.id, to.id, i)));
    }
  }
  await waitFor("every member to get 2n messages", () => ms.every((m) => m.received().length === 2 * n));
  for (const to of ms) {
    for (const from of ms) {
      if (from === to) continue;
      const seq = to.received().filter((m) => m.from === from.id).map((m) => m.index);
      assert.deepStrictEqual(seq, Array.from({ length: n }, (_, i) => i + 1), `order ${from.id} -> ${to.id}`);
    }
  }
});

test("a 20 MB snapshot is streamed in its own request and reported finished", async () => {
  const a = await member({ id: 1 });
  const b = await member({ id: 2, withSnapshotHandler: true });
  mesh([a, b]);
  const data = new Uint8Array(20 * 1024 * 1024);
  for (let i = 0; i < data.length; i += 4096) data[i] = (i / 4096) % 251;
  const snap = message({
    type: MessageType.MsgSnap,
    from: 1,
    to: 2,
    term: 3,
    snapshot: { data, metadata: { index: 5000, term: 3, confState: { voters: [1, 2, 3], learners: [] } } },
  });
  a.transport.send([snap, app(1, 2, 1)]);
  await waitFor("snapshot status", () => a.snapshotStatus.length === 1, 20_000);
  assert.deepStrictEqual(a.snapshotStatus, [{ id: 2, failed: false }]);
  assert.equal(b.snapshots.length, 1);
  const got = b.snapshots[0]!;
  assert.deepStrictEqual(got.snapshot!.metadata, snap.snapshot!.metadata);
  assert.ok(Buffer.from(got.snapshot!.data).equals(data), "snapshot data differs");
  assert.deepStrictEqual({ ...got, snapshot: undefined }, { ...snap, snapshot: undefined });
  assert.deepStrictEqual(b.received(), [app(1, 2, 1)], "the MsgApp went on the normal lane");
});

test("a snapshot without onSnapshot reaches onMessages", async () => {
  const a = await member({ id: 1 });
  const b = await member({ id: 2 });
  mesh([a, b]);
  const snap = message({
    type: MessageType.MsgSnap,
    from: 1,
    to: 2,
    snapshot: { data: Uint8Array.of(9), metadata: { index: 7, term: 1, confState: { voters: [1, 2], learners: [] } } },
  });
  a.transport.send([snap]);
  await waitFor("snapshot delivered", () => b.received().length === 1);
  assert.deepStrictEqual(b.received(), [snap]);
  await waitFor("snapshot status", () => a.snapshotStatus.length === 1);
  assert.deepStrictEqual(a.snapshotStatus, [{ id: 2, failed: false }]);
});

test("a member learns a remote link from X-Peer-Urls and can answer an unknown sender", async () => {
  const a = await member({ id: 1, localUrls: true });
  const b = await member({ id: 2 });
  a.transport.addPeer(2, [b.url]);
  a.transport.send([app(1, 2, 1)]);
  await waitFor("b receives", () => b.received().length === 1);
  b.transport.send([message({ type: MessageType.MsgAppResp, from: 2, to: 1, index: 1 })]);
  await waitFor("a receives the answer", () => a.received().length === 1);
  assert.deepStrictEqual(Object.keys(b.transport.stats()), [], "remotes are not in leader stats");
});

test("addPeer refuses URLs it cannot use with a stable error code", async () => {
  const a = await member({ id: 1 });
  for (const urls of [["https://127.0.0.1:1"], ["not a url"], []]) {
    assert.throws(() => a.transport.addPeer(2, urls), (err: unknown) => (err as { code?: string }).code === "ERR_PEER_URL");
  }
});

test("updatePeer moves later messages to the new URL", async () => {
  const a = await member({ id: 1 });
  const b1 = await member({ id: 2 });
  const b2 = await member({ id: 2 });
  a.transport.addPeer(2, [b1.url]);
  a.transport.send([app(1, 2, 1)]);
  await waitFor("first member", () => b1.received().length === 1);
  await waitFor("request done", () => a.transport.stats()["2"]!.sent === 1);
  a.transport.updatePeer(2, [b2.url]);
  a.transport.send([app(1, 2, 2)]);
  await waitFor("second member", () => b2.received().length === 1);
  assert.deepStrictEqual(b1.received().map((m) => m.index), [1]);
  assert.deepStrictEqual(b2.received().map((m) => m.index), [2]);
});

test("a removed member's requests are answered 410 and it is told it was removed", async () => {
  const a = await member({ id: 1 });
  const b = await member({ id: 2 });
  const fromB = countStreams(a, "2");
  mesh([a, b]);
  // b's stream to a is open before the removal (streams are kept open): a cuts it at b's
  // next write, and the re-dial is answered 410.
  await waitFor("b's stream to a", () => fromB.n === 1);
  a.transport.removePeer(2);
  b.transport.send([app(2, 1, 1)]);
  await waitFor("b to learn it was removed", () => b.removed > 0);
  assert.equal(a.received().length, 0, "nothing from a removed member reaches raft");
  assert.ok(b.lines.some((l) => l.msg.includes("removed from the cluster")));
});
