// The gRPC server's connection settings (--max-concurrent-streams, --grpc-keepalive-*)
// and a watch client that stops reading, on GrpcServer instances over the fake backend.
import assert from "node:assert/strict";
import http2 from "node:http2";
import { connect } from "node:net";
import { after, describe, test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { until } from "../../until.test-helper.ts";
import { FakeV3Backend } from "../http/v3-fake-backend.test-helper.ts";
import { MessageReader, decodeGrpcMessage, frameMessage } from "./frames.ts";
import { PutRequestSchema, WatchRequestSchema, WatchResponseSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { grpcHeaders, rangeFrame, startGrpcTestServer, type GrpcTestServer } from "./grpc-test-server.test-helper.ts";
import type { GrpcServerOptions } from "./server.ts";

const running: GrpcTestServer<FakeV3Backend>[] = [];
after(() => {
  for (const r of running) r.close();
});

async function start(server: Partial<GrpcServerOptions> = {}, streamBufferBytes?: number): Promise<GrpcTestServer<FakeV3Backend>> {
  const r = await startGrpcTestServer(new FakeV3Backend(), { server, ...(streamBufferBytes === undefined ? {} : { streamBufferBytes }) });
  running.push(r);
  return r;
}

function watchCreate(key: string, rangeEnd = ""): Buffer {
  return frameMessage(toBinary(WatchRequestSchema, create(WatchRequestSchema, { requestUnion: { case: "createRequest", value: { key: Buffer.from(key), rangeEnd: Buffer.from(rangeEnd) } } })));
}

function rangeCall(client: http2.ClientHttp2Session): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = client.request(grpcHeaders("/etcdserverpb.KV/Range"));
    let status = "";
    req.on("response", (h) => (status = String(h["grpc-status"] ?? status)));
    req.on("trailers", (t) => (status = String(t["grpc-status"])));
    req.on("data", () => undefined);
    req.on("end", () => resolve(status));
    req.on("error", reject);
    req.end(rangeFrame("k"));
  });
}

describe("--max-concurrent-streams", () => {
  test("announced in SETTINGS; a stream beyond it is refused", async () => {
    const s = await start({ maxConcurrentStreams: 2 });
    const client = s.connect();
    await new Promise<void>((r) => client.once("remoteSettings", () => r()));
    assert.equal(client.remoteSettings.maxConcurrentStreams, 2);
    // Two watch streams stay open; a third call waits for one of them to end.
    const open = [0, 1].map(() => {
      const w = client.request(grpcHeaders("/etcdserverpb.Watch/Watch"));
      w.on("data", () => undefined);
      w.on("error", () => undefined);
      return w;
    });
    const third = rangeCall(client);
    // No event marks the third call as held: a bounded look that it gets no answer, 200 ms,
    // many times what a range on this in-process backend takes.
    const early = await Promise.race([third, new Promise((r) => setTimeout(() => r("waiting"), 200))]);
    assert.equal(early, "waiting");
    open[0]!.close();
    assert.equal(await third, "0");
    client.destroy();
  });
});

describe("--grpc-keepalive-*", () => {
  test("a client pinging more often than the minimum time gets GOAWAY ENHANCE_YOUR_CALM too_many_pings", async () => {
    const s = await start({ keepAlive: { minTimeMs: 5_000, intervalMs: 0, timeoutMs: 0 } });
    const client = s.connect();
    client.on("error", () => undefined);
    await new Promise<void>((r) => client.once("connect", () => r()));
    const goaway = new Promise<{ code: number; data: string }>((r) => client.once("goaway", (code, _last, data) => r({ code, data: data?.toString() ?? "" })));
    // With a call open: the minimum time applies (etcd: PermitWithoutStream false).
    const w = client.request(grpcHeaders("/etcdserverpb.Watch/Watch"));
    w.on("error", () => undefined);
    const created = new Promise((r) => w.once("data", r));
    w.on("data", () => undefined);
    w.write(watchCreate("k"));
    await created; // the call is open on the server
    for (let i = 0; i < 4; i++) await new Promise<void>((r) => client.ping(() => r()));
    assert.deepEqual(await goaway, { code: http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, data: "too_many_pings" });
    client.destroy();
  });

  test("a ping after any frame the server wrote is no strike (grpc-go's BDP pings: a watch stream answering creates, a large event)", async () => {
    const s = await start({ keepAlive: { minTimeMs: 5_000, intervalMs: 0, timeoutMs: 0 } });
    const client = s.connect();
    client.on("error", () => undefined);
    let goaway = false;
    const refused = new Promise<never>((_, reject) =>
      client.on("goaway", (_code, _last, data) => {
        goaway = true;
        reject(new Error(`GOAWAY ${data?.toString() ?? ""}`));
      }),
    );
    refused.catch(() => undefined);
    const w = client.request(grpcHeaders("/etcdserverpb.Watch/Watch"));
    w.on("error", () => undefined);
    const reader = new MessageReader(1 << 30);
    const answers: unknown[] = [];
    let arrived: () => void = () => undefined;
    w.on("data", (chunk: Buffer) => {
      for (const m of reader.push(chunk)) answers.push(fromBinary(WatchResponseSchema, m));
      arrived();
    });
    // Before the fix the fourth ping was the third strike: GOAWAY too_many_pings.
    for (let i = 0; i < 6; i++) {
      const answered = new Promise<void>((r) => (arrived = r));
      w.write(watchCreate(`k${i}`));
      await Promise.race([answered, refused]);
      await new Promise<void>((r) => client.ping(() => r()));
    }
    assert.equal(answers.length, 6);
    // One large message (an event of 700 KB, in 16 KB DATA frames): the client pings after
    // each frame it reads, once the previous ping was answered; the message's frames
    // forgive them (grpc-go resets the strikes per DATA frame written, not per message).
    let pinging = false;
    w.on("data", () => {
      if (pinging) return;
      pinging = true;
      client.ping(() => (pinging = false));
    });
    const big = new Promise<void>((r) => (arrived = () => answers.length === 7 && r()));
    await s.backend.put({ key: Buffer.from("k0"), value: Buffer.alloc(700 * 1024, 0x61), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, { token: undefined });
    await Promise.race([big, refused]);
    assert.equal(goaway, false);
    assert.equal(await rangeCall(client), "0");
    client.destroy();
  });

  test("pings spaced by the minimum time are fine", async () => {
    const minTimeMs = 100;
    const s = await start({ keepAlive: { minTimeMs, intervalMs: 0, timeoutMs: 0 } });
    const client = s.connect();
    let goaway = false;
    client.on("goaway", () => (goaway = true));
    const w = client.request(grpcHeaders("/etcdserverpb.Watch/Watch"));
    w.on("data", () => undefined);
    // The server judges the time between pings by its clock: real time must pass, a little
    // more than the minimum so a timer firing early cannot make a ping too soon.
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((r) => client.ping(() => r()));
      await new Promise((r) => setTimeout(r, minTimeMs * 1.2));
    }
    assert.equal(goaway, false);
    assert.equal(await rangeCall(client), "0");
    client.destroy();
  });

  test("the server pings every interval; a connection that does not answer is closed after the timeout", async () => {
    const s = await start({ keepAlive: { minTimeMs: 5_000, intervalMs: 100, timeoutMs: 300 } });
    const client = s.connect();
    let pings = 0;
    client.on("ping", () => pings++);
    // Five intervals: past the timeout after the first ping, which the client answered.
    await until(() => pings >= 5, "five server pings", 3000);
    assert.equal(client.closed || client.destroyed, false, "an answering client stays connected");
    client.destroy();

    // A raw connection: the preface and SETTINGS, then silence (no PING ACK).
    const sock = connect(s.port, "127.0.0.1");
    sock.on("data", () => undefined);
    sock.on("error", () => undefined);
    sock.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]));
    const t0 = Date.now();
    await new Promise<void>((r) => sock.once("close", () => r()));
    const ms = Date.now() - t0;
    assert.ok(ms >= 300 && ms < 2_000, `closed after ${ms} ms`);
  });
});

describe("a watch client that stops reading", () => {
  test("cannot stall the member or other streams; past the buffer limit its watcher pauses, and once read it gets every event in order", async () => {
    const s = await start({}, 64 * 1024);
    const slow = s.connect({ settings: { initialWindowSize: 65_535 } });
    const w = slow.request(grpcHeaders("/etcdserverpb.Watch/Watch"));
    w.on("error", () => undefined);
    let trailers: { status: string; message: string } | undefined;
    const reader = new MessageReader(1 << 30);
    const created = new Promise<void>((resolve) =>
      w.once("data", (c: Buffer) => {
        reader.push(c);
        w.pause(); // reads nothing more: no WINDOW_UPDATE, the server's writes pile up
        resolve();
      }),
    );
    w.on("trailers", (t) => (trailers = { status: String(t["grpc-status"]), message: decodeGrpcMessage(String(t["grpc-message"] ?? "")) }));
    w.write(watchCreate("w", "x"));
    await created;

    const fast = s.connect();
    const value = Buffer.alloc(4096, 0x61);
    const started = performance.now();
    for (let i = 0; i < 200; i++) {
      await s.backend.put({ key: Buffer.from(`w${i}`), value, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, { token: undefined });
      if (i % 20 === 0) assert.equal(await rangeCall(fast), "0");
    }
    // 800 KiB of events for a reader that takes none: the other connection's calls kept
    // going, and a put through gRPC still answers at once.
    const put = await new Promise<string>((resolve) => {
      const req = fast.request(grpcHeaders("/etcdserverpb.KV/Put"));
      let status = "";
      req.on("trailers", (t) => (status = String(t["grpc-status"])));
      req.on("data", () => undefined);
      req.on("end", () => resolve(status));
      req.end(frameMessage(toBinary(PutRequestSchema, create(PutRequestSchema, { key: Buffer.from("z"), value: Buffer.from("v") }))));
    });
    assert.equal(put, "0");
    assert.ok(performance.now() - started < 5_000);
    // Past the limit the watcher is paused, not canceled: the member stopped sending to it.
    assert.equal(s.backend.watchers.size, 1);
    assert.equal([...s.backend.watchers.values()][0]!.paused, true);
    // Read again, the client gets every event, once each, in order, and nothing canceled.
    let canceled = false;
    const keys: string[] = [];
    w.on("data", (c: Buffer) => {
      for (const m of reader.push(c)) {
        const r = fromBinary(WatchResponseSchema, m);
        if (r.canceled) canceled = true;
        for (const e of r.events) keys.push(Buffer.from(e.kv!.key).toString());
      }
    });
    w.resume();
    await until(() => keys.length >= 200 || canceled || trailers !== undefined, "every event", 10_000);
    assert.deepEqual(keys, Array.from({ length: 200 }, (_, i) => `w${i}`));
    assert.equal(canceled, false);
    assert.equal(trailers, undefined);
    slow.destroy();
    fast.destroy();
  });
});
