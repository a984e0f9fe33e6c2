// A Watch stream whose client stops reading, on a real member: the member keeps answering,
// the watchers on other streams and connections get every event in order while its bytes
// pile up, and past the stream buffer (8 MiB) the slow watcher stops taking events (etcd's
// victims) and, once its client reads again, is caught up from the store: every event, in
// order, none canceled; one paused behind a compaction gets compact_revision. Fan-outs that wait for their
// connection's turn (src/server/grpc/watch.ts) are part of what is checked: small writes
// go to 300 more watchers (and to the slow one), more than one turn of the event loop
// writes, so most of their messages wait for their connection's turn. And a client that
// vanishes without resetting its streams leaves no watcher behind.
import assert from "node:assert/strict";
import http2 from "node:http2";
import { after, before, test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { MessageReader, decodeGrpcMessage, frameMessage } from "../../src/server/grpc/frames.ts";
import { CompactionRequestSchema, PutRequestSchema, RangeRequestSchema, RangeResponseSchema, WatchRequestSchema, WatchResponseSchema } from "../../src/server/grpc/gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { startGrpcServer, waitGrpcReady, type GrpcTestServer } from "../helpers/grpc.ts";
import { until } from "../helpers/http.ts";

const HEADERS = (path: string): http2.OutgoingHttpHeaders => ({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
const PREFIX = Buffer.from("slow/");
const PUTS = 320;
const VALUE = Buffer.alloc(32 * 1024, 0x61); // 320 x 32 KiB: 10 MiB of events per watcher, past the buffer
const READERS = 8;
const LIGHT = Buffer.from("slow/light");
const LIGHT_READERS = 300;

let srv: GrpcTestServer | undefined;
const sessions: http2.ClientHttp2Session[] = [];
before(async () => {
  srv = await startGrpcServer("kvctl");
  await waitGrpcReady(srv);
});
after(async () => {
  for (const s of sessions) s.destroy();
  await srv?.stop();
});

function connect(settings?: http2.Settings, connectionWindow?: number): http2.ClientHttp2Session {
  const s = http2.connect(srv!.url, settings === undefined ? {} : { settings });
  s.on("error", () => undefined);
  if (connectionWindow !== undefined) s.on("connect", () => s.setLocalWindowSize(connectionWindow));
  sessions.push(s);
  return s;
}

/**
 * A reader that keeps up, as grpc-go's clients do (their windows grow with the measured
 * bandwidth-delay product, to megabytes): with node's 64 KiB defaults, four 10 MiB
 * streams on one connection are bound by a WINDOW_UPDATE round trip per 64 KiB, and
 * would be paused and caught up like the slow one; these check the live path.
 */
const readerConnection = (): http2.ClientHttp2Session => connect({ initialWindowSize: 4 << 20 }, 64 << 20);

interface Watch {
  stream: http2.ClientHttp2Stream;
  revisions: number[];
  cancelReason: string | undefined;
  compactRevision: number;
  status: { code: string; message: string } | undefined;
  created: Promise<void>;
}

/** A watch of PREFIX (or of one key) on its own stream; `pauseAfterCreated`: reads nothing after its `created`. */
function watch(session: http2.ClientHttp2Session, opts: { pauseAfterCreated?: boolean; key?: Buffer } = {}): Watch {
  const stream = session.request(HEADERS("/etcdserverpb.Watch/Watch"));
  stream.on("error", () => undefined);
  const reader = new MessageReader(1 << 30);
  let resolveCreated = (): void => undefined;
  const w: Watch = { stream, revisions: [], cancelReason: undefined, compactRevision: 0, status: undefined, created: new Promise<void>((r) => (resolveCreated = r)) };
  stream.on("data", (c: Buffer) => {
    for (const m of reader.push(c)) {
      const r = fromBinary(WatchResponseSchema, m);
      if (r.created) {
        resolveCreated();
        if (opts.pauseAfterCreated === true) stream.pause();
      }
      if (r.canceled) {
        w.cancelReason = r.cancelReason;
        w.compactRevision = Number(r.compactRevision);
      }
      for (const e of r.events) w.revisions.push(Number(e.kv!.modRevision));
    }
  });
  stream.on("trailers", (t) => (w.status = { code: String(t["grpc-status"]), message: decodeGrpcMessage(String(t["grpc-message"] ?? "")) }));
  const end = Buffer.from(PREFIX);
  end[end.length - 1]! += 1;
  const value = opts.key === undefined ? { key: PREFIX, rangeEnd: end } : { key: opts.key };
  stream.write(frameMessage(toBinary(WatchRequestSchema, create(WatchRequestSchema, { requestUnion: { case: "createRequest", value } }))));
  return w;
}

/** A unary call on `session`: its grpc-status and how long it took (ms). */
function unary(session: http2.ClientHttp2Session, path: string, message: Uint8Array): Promise<{ status: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = session.request(HEADERS(path));
    let status = "";
    req.on("response", (h) => {
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
    });
    req.on("trailers", (t) => (status = String(t["grpc-status"])));
    req.on("data", () => undefined);
    req.on("error", reject);
    req.on("end", () => resolve({ status, ms: performance.now() - t0 }));
    req.end(frameMessage(message));
  });
}

const put = (session: http2.ClientHttp2Session, key: Buffer, value: Buffer): Promise<{ status: string; ms: number }> =>
  unary(session, "/etcdserverpb.KV/Put", toBinary(PutRequestSchema, create(PutRequestSchema, { key, value })));

/** Each revision once, in increasing order. */
function assertInOrder(revisions: number[], what: string): void {
  for (let i = 1; i < revisions.length; i++) assert.ok(revisions[i]! > revisions[i - 1]!, `${what}: ${revisions[i - 1]} then ${revisions[i]}`);
}

test("a Watch stream that stops reading stalls neither the member nor the other streams, and once read gets every event in order", { timeout: 120_000 }, async (t) => {
  // The slow reader: a small window, so the member's writes pile up in its buffers soon.
  const slowConn = connect({ initialWindowSize: 65_535 });
  const slow = watch(slowConn, { pauseAfterCreated: true });
  // Readers: streams on other connections (on the slow one's own connection, a paused
  // stream keeps the connection-level window it took: HTTP/2's rule, etcd alike).
  const readers: Watch[] = [];
  const readerConns = [readerConnection(), readerConnection()];
  for (let i = 0; i < READERS; i++) readers.push(watch(readerConns[i % 2]!));
  const light: Watch[] = [];
  const lightConns = [connect(), connect(), connect()];
  for (let i = 0; i < LIGHT_READERS; i++) light.push(watch(lightConns[i % 3]!, { key: LIGHT }));
  await Promise.all([slow.created, ...readers.map((w) => w.created), ...light.map((w) => w.created)]);

  const writer = connect();
  const slowestPut: number[] = [];
  const ranges: number[] = [];
  // Eight writers at a time, a small write to LIGHT after every 8 big ones, and every 20
  // puts a serializable Range (no wait for the disk).
  let next = 0;
  let lightPuts = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (;;) {
        const i = next++;
        if (i >= PUTS) return;
        const r = await put(writer, Buffer.concat([PREFIX, Buffer.from(String(i % 16))]), VALUE);
        assert.equal(r.status, "0", `put ${i}`);
        slowestPut.push(r.ms);
        if (i % 8 === 0) {
          assert.equal((await put(writer, LIGHT, Buffer.from(`v${i}`))).status, "0");
          lightPuts++;
        }
        if (i % 20 === 0) {
          const range = await unary(writer, "/etcdserverpb.KV/Range", toBinary(RangeRequestSchema, create(RangeRequestSchema, { key: Buffer.from("nothing"), serializable: true })));
          assert.equal(range.status, "0");
          ranges.push(range.ms);
        }
      }
    }),
  );
  slowestPut.sort((a, b) => a - b);
  ranges.sort((a, b) => a - b);
  t.diagnostic(`put median ${slowestPut[slowestPut.length >> 1]!.toFixed(1)} ms, slowest ${slowestPut[slowestPut.length - 1]!.toFixed(1)}; range slowest ${ranges[ranges.length - 1]!.toFixed(1)}`);
  // Generous bounds (shared machines, fdatasyncs of 256 KiB batches): what matters is that
  // nothing waited on the slow reader, which would have held calls for good.
  assert.ok(slowestPut[slowestPut.length >> 1]! < 1000, `median put ${slowestPut[slowestPut.length >> 1]} ms`);
  assert.ok(ranges[ranges.length - 1]! < 5000, `slowest range ${ranges[ranges.length - 1]} ms`);

  // Every reader gets every event, each revision once, in order.
  const all = PUTS + lightPuts;
  await until(() => readers.every((w) => w.revisions.length >= all) && light.every((w) => w.revisions.length >= lightPuts), 30_000, "every reader to get every event");
  for (const w of readers) {
    assert.equal(w.revisions.length, all);
    for (let i = 1; i < w.revisions.length; i++) assert.equal(w.revisions[i], w.revisions[i - 1]! + 1);
    assert.equal(w.cancelReason, undefined);
  }
  for (const w of light) {
    assert.equal(w.revisions.length, lightPuts);
    assertInOrder(w.revisions, "a light reader");
    assert.equal(w.cancelReason, undefined);
  }

  // The slow watcher was paused, not canceled: read again, it is caught up from the store
  // with every event, each revision once, in order.
  const before = slow.revisions.length;
  assert.ok(before < all, `the slow reader got ${before} events before it read`);
  slow.stream.resume();
  await until(() => slow.revisions.length >= all || slow.cancelReason !== undefined || slow.status !== undefined, 30_000, "the slow reader to catch up");
  assert.equal(slow.cancelReason, undefined);
  assert.equal(slow.status, undefined);
  assert.equal(slow.revisions.length, all);
  for (let i = 1; i < all; i++) assert.equal(slow.revisions[i], slow.revisions[i - 1]! + 1);
  assert.deepEqual(slow.revisions, readers[0]!.revisions);
  const metrics = await (await fetch(`${srv!.url}/metrics`)).text();
  assert.match(metrics, new RegExp(`^etcd_debugging_mvcc_watcher_total ${READERS + LIGHT_READERS + 1}$`, "m"));
  for (const w of [slow, ...readers, ...light]) w.stream.close();
});

test("a slow reader paused behind a compaction gets compact_revision when it reads again", { timeout: 60_000 }, async () => {
  const slowConn = connect({ initialWindowSize: 65_535 });
  const slow = watch(slowConn, { pauseAfterCreated: true });
  await slow.created;
  const writer = connect();
  const key = Buffer.concat([PREFIX, Buffer.from("compacted")]);
  // 12 MiB for a reader that takes 64 KiB: past the 8 MiB buffer, whatever the kernel holds.
  for (let i = 0; i < 384; i++) assert.equal((await put(writer, key, VALUE)).status, "0");
  const last = await new Promise<number>((resolve, reject) => {
    const req = writer.request(HEADERS("/etcdserverpb.KV/Range"));
    const reader = new MessageReader(1 << 20);
    req.on("data", (c: Buffer) => {
      for (const m of reader.push(c)) resolve(Number(fromBinary(RangeResponseSchema, m).header!.revision));
    });
    req.on("error", reject);
    req.end(frameMessage(toBinary(RangeRequestSchema, create(RangeRequestSchema, { key }))));
  });
  const compact = await unary(writer, "/etcdserverpb.KV/Compact", toBinary(CompactionRequestSchema, create(CompactionRequestSchema, { revision: BigInt(last) })));
  assert.equal(compact.status, "0");
  slow.stream.resume();
  await until(() => slow.cancelReason !== undefined || slow.status !== undefined, 30_000, "the compacted answer");
  assert.equal(slow.compactRevision, last);
  assert.ok(slow.revisions.length < 384, `${slow.revisions.length} events before the compacted answer`);
  assertInOrder(slow.revisions, "the slow reader");
  slow.stream.close();
});

test("a client that goes away without resetting its streams leaves no watcher behind", async () => {
  const count = async (): Promise<number> => Number(/^etcd_debugging_mvcc_watcher_total (\d+)$/m.exec(await (await fetch(`${srv!.url}/metrics`)).text())?.[1]);
  // The earlier tests closed their streams; a compacted watcher counts until its stream's
  // close reaches the member (as etcd's), so wait for it rather than count it in `before`.
  await until(async () => (await count()) === 0, 5000, "the earlier tests' watchers to go");
  const before = await count();
  const gone = connect();
  const ws = Array.from({ length: 3 }, () => watch(gone, { key: Buffer.from("gone") }));
  await Promise.all(ws.map((w) => w.created));
  assert.equal(await count(), before + 3);
  // Destroyed at once: the streams' resets may not all reach the member before the FIN.
  gone.destroy();
  await until(async () => (await count()) === before, 5000, "the watchers of the closed connection to go");
});

test("a watcher created from an old revision behind 25,000 revisions on other keys is caught up in steps: its events in order, a put meanwhile answered, progress -1 after its events", { timeout: 120_000 }, async (t) => {
  const writer = connect();
  // From the revision after this one (an earlier test compacted the history before it).
  const start = await new Promise<number>((resolve, reject) => {
    const req = writer.request(HEADERS("/etcdserverpb.KV/Range"));
    const reader = new MessageReader(1 << 20);
    req.on("data", (c: Buffer) => {
      for (const m of reader.push(c)) resolve(Number(fromBinary(RangeResponseSchema, m).header!.revision) + 1);
    });
    req.on("error", reject);
    req.end(frameMessage(toBinary(RangeRequestSchema, create(RangeRequestSchema, { key: Buffer.from("nothing") }))));
  });
  const idle = Buffer.from("idle-prefix/");
  const idleEnd = Buffer.from("idle-prefix0");
  assert.equal((await put(writer, Buffer.concat([idle, Buffer.from("a")]), Buffer.from("1"))).status, "0");
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < 25_000; i = next++) assert.equal((await put(writer, Buffer.from(`busy/${i % 100}`), Buffer.from("x"))).status, "0");
    }),
  );
  assert.equal((await put(writer, Buffer.concat([idle, Buffer.from("b")]), Buffer.from("2"))).status, "0");
  const stream = connect().request(HEADERS("/etcdserverpb.Watch/Watch"));
  stream.on("error", () => undefined);
  const reader = new MessageReader(1 << 30);
  const seen: string[] = [];
  let progressRevision = 0;
  stream.on("data", (c: Buffer) => {
    for (const m of reader.push(c)) {
      const r = fromBinary(WatchResponseSchema, m);
      if (r.created) seen.push("created");
      for (const e of r.events) seen.push(`${e.kv!.modRevision}:${Buffer.from(e.kv!.key).toString()}`);
      if (r.watchId === -1n) {
        seen.push("progress");
        progressRevision = Number(r.header!.revision);
      }
    }
  });
  const t0 = performance.now();
  stream.write(frameMessage(toBinary(WatchRequestSchema, create(WatchRequestSchema, { requestUnion: { case: "createRequest", value: { key: idle, rangeEnd: idleEnd, startRevision: BigInt(start) } } }))));
  stream.write(frameMessage(toBinary(WatchRequestSchema, create(WatchRequestSchema, { requestUnion: { case: "progressRequest", value: {} } }))));
  // A write to the prefix while the watcher may still be catching up: once, after the replay.
  const during = await put(writer, Buffer.concat([idle, Buffer.from("c")]), Buffer.from("3"));
  assert.equal(during.status, "0");
  await until(() => seen.includes("progress") && seen.filter((s) => s.includes(":")).length >= 3, 30_000, "the catch-up, the live write and the progress answer");
  t.diagnostic(`caught up and answered in ${(performance.now() - t0).toFixed(0)} ms; the put meanwhile took ${during.ms.toFixed(1)} ms`);
  const events = seen.filter((s) => s.includes(":"));
  assert.deepEqual(events.map((s) => s.split(":")[1]), ["idle-prefix/a", "idle-prefix/b", "idle-prefix/c"]);
  assertInOrder(events.map((s) => Number(s.split(":")[0])), "the idle watcher");
  assert.equal(seen[0], "created");
  // The -1 answer vouches for every event up to its revision: those came before it.
  const at = seen.indexOf("progress");
  for (const e of events) if (Number(e.split(":")[0]) <= progressRevision) assert.ok(seen.indexOf(e) < at, `${e} before the progress answer at ${progressRevision}`);
  stream.close();
});
