import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { EntryType, MessageType, message } from "../raft/index.ts";
import { encodeBatch } from "./codec.ts";
import { PeerTransport } from "./transport.ts";
import { portIn, portRange } from "../ports.test-helper.ts";
import { app, countStreams, gate, mesh, recordingLogger, memberFactory, waitFor } from "./transport.test-helper.ts";

/**
 * A port nothing listens on yet, for the tests that need a peer's address before the peer
 * is up: probed free and never handed out twice (ports.test-helper.ts), from
 * KVCTL_TEST_PORTS or else below the kernel's ephemeral range, so that no outgoing
 * connection takes it meanwhile.
 */
const downPort = (): Promise<number> => portIn(portRange("KVCTL_TEST_PORTS", [23500, 23599])!);

const member = memberFactory();

/** A raw POST to a member's endpoint, answering status and body text. */
async function rawPost(url: string, path: string, headers: Record<string, string>, body: Uint8Array, method = "POST"): Promise<{ status: number; text: string }> {
  const res = await fetch(url + path, { method, headers, ...(method === "POST" ? { body } : {}) });
  return { status: res.status, text: await res.text() };
}
const okHeaders = { "X-Kv-Cluster-Id": "c1", "X-Server-From": "1", "X-Raft-To": "2" };
const batchTo2 = Buffer.concat(encodeBatch([app(1, 2, 1)]));

test("a peer that is down, then comes up, receives the messages sent after back-off", async () => {
  const port = await downPort();
  const a = await member({ id: 1, limits: { backoffMinMs: 20, backoffMaxMs: 100 } });
  a.transport.addPeer(2, [`http://127.0.0.1:${port}`]);
  a.transport.send([app(1, 2, 1)]);
  await waitFor("two failures (retry after back-off)", () => a.unreachable.length >= 1);
  a.transport.send([app(1, 2, 2)]);
  await waitFor("the queued message to fail too", () => a.transport.stats()["2"]!.failed >= 2);
  assert.ok(a.unreachable.every((id) => id === 2));
  assert.ok(a.lines.some((l) => l.level === "warn" && l.msg === "peer became inactive"), "inactive logged");
  const inactiveLogs = a.lines.filter((l) => l.msg === "peer became inactive").length;

  const b = await member({ id: 2, port });
  a.transport.send([app(1, 2, 3)]);
  await waitFor("b to receive after back-off", () => b.received().length > 0);
  assert.deepStrictEqual(b.received(), [app(1, 2, 3)], "failed batches are dropped, later ones delivered");
  await waitFor("active logged", () => a.lines.some((l) => l.msg === "peer became active"));
  assert.equal(a.lines.filter((l) => l.msg === "peer became inactive").length, inactiveLogs, "a down peer is logged once");
  await b.close();
  await a.close();
});

test("a down peer is logged again when the reason changes (refused, then a refusal by status)", async () => {
  const port = await downPort();
  const a = await member({ id: 1, limits: { backoffMinMs: 20, backoffMaxMs: 50 } });
  a.transport.addPeer(2, [`http://127.0.0.1:${port}`]);
  a.transport.send([app(1, 2, 1)]);
  await waitFor("refused", () => a.lines.some((l) => l.msg === "peer became inactive"));
  // Something answers on the port now, but refuses every request with 500 (at once: a
  // stream's body never ends).
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(500).end("no");
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  try {
    for (let i = 0; i < 5; i++) a.transport.send([app(1, 2, 2 + i)]);
    await waitFor("the new reason", () => a.lines.filter((l) => l.msg === "peer became inactive").length === 2);
    const [first, second] = a.lines.filter((l) => l.msg === "peer became inactive");
    assert.match(String(first!.fields["error"]), /ECONNREFUSED/);
    assert.match(String(second!.fields["error"]), /peer answered 500/);
  } finally {
    await a.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("members of different clusters refuse to talk: 412 and a log line on both sides", async () => {
  const a = await member({ id: 1, clusterId: 0xaaa });
  const b = await member({ id: 2, clusterId: 0xbbb });
  mesh([a, b]);
  a.transport.send([app(1, 2, 1)]);
  await waitFor("a to see the refusal", () => a.unreachable.length === 1);
  assert.deepStrictEqual(b.batches, []);
  const refused = b.lines.find((l) => l.msg.includes("cluster ID mismatch"));
  assert.ok(refused, "receiver logs the mismatch");
  assert.equal(refused.level, "warn");
  assert.equal(refused.fields["remoteClusterId"], "aaa");
  assert.equal(refused.fields["localClusterId"], "bbb");
  const sender = a.lines.find((l) => l.level === "error" && l.msg.includes("cluster ID mismatch"));
  assert.ok(sender, "sender logs the refusal as an error");
  const r = await rawPost(b.url, "/raft", { ...okHeaders, "X-Kv-Cluster-Id": "aaa" }, batchTo2);
  assert.deepStrictEqual(r, { status: 412, text: "cluster ID mismatch\n" });
});

// `undecoded`: bytes that did not decode, which the observer hears of (etcd's peer_received_failures_total).
const refusals: { name: string; path?: string; method?: string; headers: Record<string, string>; body?: Uint8Array; status: number; text: RegExp; undecoded?: true }[] = [
  { name: "the path is unknown", path: "/raft/stream", headers: okHeaders, status: 404, text: /404 page not found/ },
  { name: "the method is GET", method: "GET", headers: okHeaders, status: 405, text: /Method Not Allowed/ },
  { name: "the cluster id header is missing", headers: { "X-Server-From": "1", "X-Raft-To": "2" }, status: 412, text: /cluster ID mismatch/ },
  { name: "X-Server-From is missing", headers: { "X-Kv-Cluster-Id": "c1", "X-Raft-To": "2" }, status: 400, text: /X-Server-From/ },
  { name: "X-Raft-To names another member", headers: { ...okHeaders, "X-Raft-To": "3" }, status: 412, text: /to field mismatch/ },
  { name: "a message is addressed to another member", headers: okHeaders, body: Buffer.concat(encodeBatch([app(1, 2, 1), app(1, 3, 2)])), status: 400, text: /addressed to member 3, this is 2/ },
  { name: "a message claims another sender", headers: okHeaders, body: Buffer.concat(encodeBatch([app(4, 2, 1)])), status: 400, text: /from 4 sent by member 1/ },
  { name: "a message has a local type", headers: okHeaders, body: Buffer.concat(encodeBatch([message({ type: MessageType.MsgHup, from: 1, to: 2 })])), status: 400, text: /local message type MsgHup/ },
  { name: "the body does not decode", headers: okHeaders, body: Uint8Array.of(9), status: 400, text: /unsupported codec version 9/, undecoded: true },
  { name: "a snapshot's body does not decode", path: "/raft/snapshot", headers: okHeaders, body: Uint8Array.of(9), status: 400, text: /unsupported codec version 9/, undecoded: true },
  { name: "a snapshot request carries a MsgApp", path: "/raft/snapshot", headers: okHeaders, status: 400, text: /exactly one MsgSnap/ },
  { name: "a frame is larger than the limit", headers: okHeaders, body: Uint8Array.of(1, 0, 0, 0x20, 0, 0), status: 413, text: /frame of 8192 bytes exceeds the limit of 4096/, undecoded: true },
];

for (const c of refusals) {
  test(`the handler refuses a request when ${c.name}`, async () => {
    const b = await member({ id: 2, limits: { maxReceiveBatchBytes: 4096 } });
    const undecoded: string[] = [];
    const none = (): void => {};
    b.transport.observer = { sent: none, received: none, roundTrip: none, heartbeatDropped: none, peerActive: none, sendFailed: none, receiveFailed: (addr) => void undecoded.push(addr) };
    const r = await rawPost(b.url, c.path ?? "/raft", c.headers, c.body ?? batchTo2, c.method);
    assert.equal(r.status, c.status, r.text);
    assert.match(r.text, c.text);
    assert.deepStrictEqual(b.batches, [], "nothing reaches Raft");
    if (c.undecoded === true) {
      assert.equal(undecoded.length, 1, "the observer hears of the bytes that did not decode");
      assert.match(undecoded[0]!, /^127\.0\.0\.1:\d+$/, "labelled with the sender's address, as etcd's");
    } else assert.deepStrictEqual(undecoded, []);
    if (c.status !== 404 && c.status !== 405) assert.equal((await fetch(b.url + "/raft", { method: "POST", headers: okHeaders, body: batchTo2 })).status, 200);
  });
}

test("a transport refuses messages sent to a peer id that another member answers", async () => {
  const a = await member({ id: 1 });
  const b = await member({ id: 2 });
  a.transport.addPeer(3, [b.url]); // misconfigured: member 3's URL points at member 2
  a.transport.send([app(1, 3, 1)]);
  await waitFor("the refusal", () => a.unreachable.length === 1);
  assert.deepStrictEqual(b.batches, []);
  assert.ok(b.lines.some((l) => l.msg === "refused peer request: addressed to another member"));
});

test("the queue keeps the newest messages beyond its bound while the stream is full, and counts drops", async () => {
  const a = await member({ id: 1, limits: { maxQueuedMessages: 5 } });
  const b = await member({ id: 2 });
  mesh([a, b]);
  const g = gate();
  b.gate = g.promise;
  // 64 KiB of entry data fills the stream's buffer (the socket is not even connected yet):
  // what follows waits in the bounded queue.
  const big = message({
    type: MessageType.MsgApp,
    from: 1,
    to: 2,
    term: 1,
    index: 0,
    entries: [{ term: 1, index: 1, type: EntryType.Normal, data: new Uint8Array(64 * 1024) }],
  });
  a.transport.send([big]);
  for (let i = 1; i <= 10; i++) a.transport.send([app(1, 2, i)]);
  assert.equal(a.transport.stats()["2"]!.dropped, 5);
  assert.deepStrictEqual(a.unreachable, [2, 2, 2, 2, 2], "each drop is reported so Raft slows down");
  assert.equal(a.lines.filter((l) => l.msg === "dropped messages to peer: queue full").length, 1, "logged once");
  g.open();
  await waitFor("delivery", () => b.received().length === 6);
  assert.deepStrictEqual(
    b.received().map((m) => m.index),
    [0, 6, 7, 8, 9, 10],
  );
});

test("a peer gets a stream before anything is sent, and again after it restarts, with nothing to send", async () => {
  const a = await member({ id: 1, limits: { backoffMinMs: 20, backoffMaxMs: 50 } });
  const port = await downPort();
  const b = await member({ id: 2, port });
  const first = countStreams(b);
  a.transport.addPeer(2, [b.url]);
  // Followers do not talk to each other until an election: the vote must not be the
  // first thing to open a connection.
  await waitFor("a stream to b without a message", () => first.n === 1);
  await b.close();
  await waitFor("the loss noticed", () => a.unreachable.includes(2));
  const b2 = await member({ id: 2, port });
  const second = countStreams(b2);
  await waitFor("a stream to the restarted b without a message", () => second.n === 1);
  a.transport.send([app(1, 2, 7)]);
  await waitFor("delivery on the open stream", () => b2.received().length === 1);
  assert.equal(second.n, 1, "the message used the stream already open");
  await b2.close();
  await a.close();
});

test("an idle stream carries link heartbeats, so a peer that stops reading is noticed", async () => {
  const a = await member({ id: 1, limits: { linkHeartbeatMs: 30, requestTimeoutMs: 150 } });
  // Accepts the stream and acknowledges its first chunk, then never acknowledges again
  // (a peer hung after connecting; without heartbeats the idle stream would look fine).
  const server = http.createServer((req, res) => {
    let acked = false;
    req.on("data", () => {
      if (acked) return;
      acked = true;
      res.writeHead(200).write(Buffer.from([0x0a]));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    a.transport.addPeer(2, [`http://127.0.0.1:${(server.address() as { port: number }).port}`]);
    await waitFor("the silent peer noticed", () => a.lines.some((l) => l.msg === "peer became inactive"), 3000);
    assert.match(String(a.lines.find((l) => l.msg === "peer became inactive")?.fields["error"]), /no progress for 150 ms/);
    assert.ok(a.unreachable.includes(2));
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("a snapshot to a peer that is down is reported failed", async () => {
  const a = await member({ id: 1 });
  a.transport.addPeer(2, [`http://127.0.0.1:${await downPort()}`]);
  const snap = message({
    type: MessageType.MsgSnap,
    from: 1,
    to: 2,
    snapshot: { data: new Uint8Array(10), metadata: { index: 9, term: 1, confState: { voters: [1, 2], learners: [] } } },
  });
  a.transport.send([snap]);
  await waitFor("snapshot status", () => a.snapshotStatus.length === 1);
  assert.deepStrictEqual(a.snapshotStatus, [{ id: 2, failed: true }]);
  // The snapshot's failure and the message stream's own (it dials at once) both say so.
  assert.ok(a.unreachable.length >= 1 && a.unreachable.every((id) => id === 2), `unreachable: ${a.unreachable.join(",")}`);
  a.transport.send([{ ...snap, to: 9 }]);
  assert.deepStrictEqual(a.snapshotStatus[1], { id: 9, failed: true }, "a snapshot to an unknown member fails at once");
  await a.close();
});

test("removePeer stops sending and the handler answers 503 after stop", async () => {
  const a = await member({ id: 1 });
  const b = await member({ id: 2 });
  mesh([a, b]);
  a.transport.removePeer(2);
  a.transport.send([app(1, 2, 1)]);
  assert.deepStrictEqual(a.transport.stats(), {});
  await b.transport.stop();
  const r = await rawPost(b.url, "/raft", okHeaders, batchTo2);
  assert.equal(r.status, 503);
  assert.deepStrictEqual(b.batches, []);
});

test("a request without an answer times out and counts as a failure", async () => {
  const a = await member({ id: 1, limits: { requestTimeoutMs: 100 } });
  const b = await member({ id: 2 });
  mesh([a, b]);
  const g = gate();
  b.gate = g.promise; // b never answers while the gate is closed
  a.transport.send([app(1, 2, 1)]);
  await waitFor("timeout", () => a.transport.stats()["2"]!.failed === 1);
  assert.deepStrictEqual(a.unreachable, [2]);
  assert.match(String(a.lines.find((l) => l.msg === "peer became inactive")?.fields["error"]), /no progress for 100 ms/);
  g.open();
});

test("a newer pending snapshot replaces an older one, which is reported failed", async () => {
  const a = await member({ id: 1 });
  const b = await member({ id: 2, withSnapshotHandler: true });
  mesh([a, b]);
  const g = gate();
  b.gate = g.promise;
  const snap = (index: number) =>
    message({
      type: MessageType.MsgSnap,
      from: 1,
      to: 2,
      snapshot: { data: Uint8Array.of(index), metadata: { index, term: 1, confState: { voters: [1, 2], learners: [] } } },
    });
  a.transport.send([snap(10)]); // in flight, held
  a.transport.send([snap(20)]); // pending
  a.transport.send([snap(30)]); // replaces 20
  assert.deepStrictEqual(a.snapshotStatus, [{ id: 2, failed: true }]);
  g.open();
  await waitFor("both sent", () => a.snapshotStatus.length === 3);
  assert.deepStrictEqual(b.snapshots.map((m) => m.snapshot!.metadata.index), [10, 30]);
  assert.equal(a.transport.stats()["2"]!.dropped, 1);
});

function handles(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) out[r] = (out[r] ?? 0) + 1;
  return out;
}

test("stop() aborts requests, clears back-off timers and closes sockets", async () => {
  const down = await downPort();
  const before = handles();
  const { logger } = recordingLogger();
  const held = gate();
  // A server that never answers until told: the request stays in flight.
  const server = http.createServer((req, res) => void held.promise.then(() => res.writeHead(204).end()));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  const t = new PeerTransport({ memberId: 1, clusterId: 1, logger, onMessages() {} });
  t.addPeer(2, [`http://127.0.0.1:${port}`]);
  t.addPeer(3, [`http://127.0.0.1:${down}`]); // down: back-off timer pending
  t.send([app(1, 2, 1), app(1, 3, 1)]);
  await waitFor("peer 3 to fail", () => t.stats()["3"]!.failed === 1);
  await t.stop();
  await t.stop(); // idempotent
  t.send([app(1, 2, 2)]); // ignored after stop
  held.open();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  await waitFor("handles back to the baseline", () => {
    const now = handles();
    // +1 Timeout: waitFor's own poll timer may be listed.
    return (
      (now["TCPSocketWrap"] ?? 0) <= (before["TCPSocketWrap"] ?? 0) &&
      (now["TCPServerWrap"] ?? 0) <= (before["TCPServerWrap"] ?? 0) &&
      (now["Timeout"] ?? 0) <= (before["Timeout"] ?? 0) + 1
    );
  });
});

test("the observer sees a link come up and go down once, and the messages lost while it is down", async () => {
  const a = await member({ id: 1, limits: { backoffMinMs: 20, backoffMaxMs: 100 } });
  const b = await member({ id: 2 });
  const active: boolean[] = [];
  let failed = 0;
  a.transport.observer = {
    sent: () => {},
    received: () => {},
    roundTrip: () => {},
    heartbeatDropped: () => {},
    peerActive: (id, up) => {
      assert.equal(id, 2);
      active.push(up);
    },
    sendFailed: (to, n) => {
      assert.equal(to, 2);
      failed += n;
    },
  };
  a.transport.addPeer(2, [b.url]);
  a.transport.send([app(1, 2, 1)]);
  await waitFor("b to receive", () => b.received().length === 1);
  await waitFor("the link to be active", () => active.length === 1);
  assert.equal(failed, 0, "nothing lost while the peer is up");

  await b.close();
  await waitFor("the link to go down", () => active.length === 2);
  assert.deepStrictEqual(active, [true, false]);
  // What the broken stream held unacknowledged is lost; re-dialling a refused port with
  // nothing to send is no send failure, however long it goes on.
  const afterBreak = failed;
  const dials = a.unreachable.length;
  await waitFor("three more refused dials", () => a.unreachable.length >= dials + 3);
  assert.equal(failed, afterBreak, "refused dials with nothing written are no send failures");
  a.transport.send([app(1, 2, 2), app(1, 2, 3), app(1, 2, 4)]);
  await waitFor("the three messages counted lost", () => failed === afterBreak + 3);
  assert.deepStrictEqual(active, [true, false], "a down peer is deactivated once");
  await a.close();
});
