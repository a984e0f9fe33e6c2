// The gRPC layer in process: framing, cmux classification, and calls made with node:http2
// through mux -> server -> services against the gateway tests' fake backend.
import assert from "node:assert/strict";
import http2 from "node:http2";
import type { Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { V3Errors } from "../../api/v3-errors.ts";
import { until as waitUntil } from "../../until.test-helper.ts";
import { FakeV3Backend } from "../http/v3-fake-backend.test-helper.ts";
import { MessageReader, decodeGrpcMessage, encodeGrpcMessage, frameMessage } from "./frames.ts";
import { grpcHeaders, rangeFrame, startGrpcTestServer, type GrpcTestServer } from "./grpc-test-server.test-helper.ts";
import { HTTP2_PREFACE, classify, muxConnections } from "./mux.ts";
import {
  LeaseGrantRequestSchema,
  LeaseGrantResponseSchema,
  PutRequestSchema,
  PutResponseSchema,
  RangeRequestSchema,
  RangeResponseSchema,
  TxnRequestSchema,
  TxnResponseSchema,
  WatchRequestSchema,
  WatchResponseSchema,
} from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";

test("frames: split anywhere, several per chunk, limit refused at the prefix", () => {
  const a = frameMessage(Buffer.from("hello"));
  const b = frameMessage(Buffer.alloc(0));
  const all = Buffer.concat([a, b, a]);
  const r = new MessageReader(100);
  const got: string[] = [];
  for (let i = 0; i < all.length; i += 3) for (const m of r.push(all.subarray(i, i + 3))) got.push(Buffer.from(m).toString());
  assert.deepEqual(got, ["hello", "", "hello"]);
  assert.equal(r.partial, false);
  const small = new MessageReader(4);
  assert.throws(() => small.push(a.subarray(0, 5)), { code: 8, message: "grpc: received message larger than max (5 vs. 4)" });
});

test("grpc-message percent-encoding round trip", () => {
  assert.equal(encodeGrpcMessage("etcdserver: key is not provided"), "etcdserver: key is not provided");
  assert.equal(encodeGrpcMessage("100% é\n"), "100%25 %C3%A9%0A");
  assert.equal(decodeGrpcMessage(encodeGrpcMessage("100% é\n")), "100% é\n");
});

test("cmux classification: the preface, a prefix of it, anything else", () => {
  assert.equal(classify(HTTP2_PREFACE), "grpc");
  assert.equal(classify(HTTP2_PREFACE.subarray(0, 10)), undefined);
  assert.equal(classify(Buffer.from("POST /v3/kv/range HTTP/1.1\r\n")), "http");
  assert.equal(classify(Buffer.from("PRI * HTTP/1.1")), "http");
});


describe("gRPC calls through the mux", () => {
  const backend = new FakeV3Backend();
  let server: GrpcTestServer<FakeV3Backend>;
  let client: http2.ClientHttp2Session;
  const httpSeen: string[] = [];

  before(async () => {
    const toHttp = (s: Socket): void => {
      s.once("data", (d: Buffer) => {
        httpSeen.push(d.toString("latin1").split("\r\n")[0] ?? "");
        s.end("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
      });
      s.resume(); // the mux hands over a paused socket (as node:http resumes it)
    };
    server = await startGrpcTestServer(backend, { connections: (toGrpc) => muxConnections(toHttp, toGrpc) });
    client = server.connect();
  });
  after(() => server.close());

  interface Reply {
    status: string;
    message: string;
    messages: Uint8Array[];
  }

  function call(path: string, bodies: Uint8Array[], headers: http2.OutgoingHttpHeaders = {}): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = client.request(grpcHeaders(path, headers));
      const reader = new MessageReader(1 << 30);
      const messages: Uint8Array[] = [];
      let status = "";
      let message = "";
      req.on("response", (h) => {
        if (h["grpc-status"] !== undefined) {
          status = String(h["grpc-status"]);
          message = decodeGrpcMessage(String(h["grpc-message"] ?? ""));
        }
      });
      req.on("trailers", (t) => {
        status = String(t["grpc-status"]);
        message = decodeGrpcMessage(String(t["grpc-message"] ?? ""));
      });
      req.on("data", (c: Buffer) => messages.push(...reader.push(c)));
      req.on("end", () => resolve({ status, message, messages }));
      req.on("error", reject);
      for (const b of bodies) req.write(frameMessage(b));
      req.end();
    });
  }

  async function unary<I extends DescMessage, O extends DescMessage>(path: string, i: I, o: O, body: MessageInitShape<I>): Promise<MessageShape<O>> {
    const r = await call(path, [toBinary(i, create(i, body))]);
    assert.equal(r.status, "0", r.message);
    assert.equal(r.messages.length, 1);
    return fromBinary(o, r.messages[0]!);
  }

  test("Put then Range: bytes, int64 revisions, header IDs beyond 2^53", async () => {
    await unary("/etcdserverpb.KV/Put", PutRequestSchema, PutResponseSchema, { key: Buffer.from("k"), value: Buffer.from("v") });
    const r = await unary("/etcdserverpb.KV/Range", RangeRequestSchema, RangeResponseSchema, { key: Buffer.from("k") });
    assert.equal(Buffer.from(r.kvs[0]!.value).toString(), "v");
    assert.equal(r.count, 1n);
    assert.equal(r.header?.clusterId, 14841639068965178418n);
    assert.equal(r.header?.revision, BigInt(backend.revision));
  });

  test("a lease ID above 2^53 survives the round trip", async () => {
    const id = 0x7fff_ffff_ffff_fff1n;
    const r = await unary("/etcdserverpb.Lease/LeaseGrant", LeaseGrantRequestSchema, LeaseGrantResponseSchema, { ID: id, TTL: 30n });
    assert.equal(r.ID, id);
    assert.ok(backend.leases.has(id));
  });

  test("etcd's errors keep their code and message", async () => {
    backend.failNext = V3Errors.compacted();
    const r = await call("/etcdserverpb.KV/Range", [toBinary(RangeRequestSchema, create(RangeRequestSchema, { key: Buffer.from("k") }))]);
    assert.deepEqual([r.status, r.message, r.messages.length], ["11", "etcdserver: mvcc: required revision has been compacted", 0]);
    const empty = await call("/etcdserverpb.KV/Put", [toBinary(PutRequestSchema, create(PutRequestSchema, {}))]);
    assert.deepEqual([empty.status, empty.message], ["3", "etcdserver: key is not provided"]);
    const dup = await call("/etcdserverpb.KV/Txn", [
      toBinary(TxnRequestSchema, create(TxnRequestSchema, { success: [1, 2].map(() => ({ request: { case: "requestPut" as const, value: { key: Buffer.from("d") } } })) })),
    ]);
    assert.deepEqual([dup.status, dup.message], ["3", "etcdserver: duplicate key given in txn request"]);
  });

  test("unknown services and methods are UNIMPLEMENTED with grpc-go's wording", async () => {
    const m = await call("/etcdserverpb.KV/Nope", [new Uint8Array()]);
    assert.deepEqual([m.status, m.message], ["12", "unknown method Nope for service etcdserverpb.KV"]);
    // etcd 3.4 registers no reflection service either.
    const s = await call("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", [new Uint8Array()]);
    assert.deepEqual([s.status, s.message], ["12", "unknown service grpc.reflection.v1alpha.ServerReflection"]);
    const lock = await call("/v3lockpb.Lock/Nope", [new Uint8Array()]);
    assert.deepEqual([lock.status, lock.message], ["12", "unknown method Nope for service v3lockpb.Lock"]);
  });

  test("the token metadata reaches the backend", async () => {
    const body = toBinary(RangeRequestSchema, create(RangeRequestSchema, { key: Buffer.from("k") }));
    await call("/etcdserverpb.KV/Range", [body], { token: "tok123" });
    assert.equal(backend.calls.at(-1)?.token, "tok123");
  });

  test("Txn nests responses with revision-only headers", async () => {
    const r = await unary("/etcdserverpb.KV/Txn", TxnRequestSchema, TxnResponseSchema, {
      success: [{ request: { case: "requestRange", value: { key: Buffer.from("k") } } }],
    });
    assert.equal(r.succeeded, true);
    const op = r.responses[0]!.response;
    assert.equal(op.case, "responseRange");
    if (op.case === "responseRange") assert.deepEqual([op.value.header?.clusterId, op.value.header?.revision], [0n, BigInt(backend.revision)]);
  });

  test("Watch: created, then events, progress answered with -1, half-close keeps the stream", async () => {
    const req = client.request(grpcHeaders("/etcdserverpb.Watch/Watch"));
    const reader = new MessageReader(1 << 30);
    const got: MessageShape<typeof WatchResponseSchema>[] = [];
    let wake: () => void = () => undefined;
    req.on("data", (c: Buffer) => {
      for (const m of reader.push(c)) got.push(fromBinary(WatchResponseSchema, m));
      wake();
    });
    const until = async (n: number): Promise<void> => {
      while (got.length < n) await new Promise<void>((r) => (wake = r));
    };
    const send = (m: MessageInitShape<typeof WatchRequestSchema>): void => void req.write(frameMessage(toBinary(WatchRequestSchema, create(WatchRequestSchema, m))));
    send({ requestUnion: { case: "createRequest", value: { key: Buffer.from("w") } } });
    await until(1);
    assert.deepEqual([got[0]!.created, got[0]!.watchId], [true, 0n]);
    await unary("/etcdserverpb.KV/Put", PutRequestSchema, PutResponseSchema, { key: Buffer.from("w"), value: Buffer.from("1") });
    await until(2);
    assert.equal(Buffer.from(got[1]!.events[0]!.kv!.value).toString(), "1");
    send({ requestUnion: { case: "progressRequest", value: {} } });
    await until(3);
    assert.equal(got[2]!.watchId, -1n);
    send({ requestUnion: { case: "createRequest", value: { key: Buffer.from("x") } } });
    req.end();
    await until(4);
    assert.deepEqual([got[3]!.created, got[3]!.watchId], [true, 1n]);
    // A later call on the connection is answered only after the server has read the half-close.
    await unary("/etcdserverpb.KV/Range", RangeRequestSchema, RangeResponseSchema, { key: Buffer.from("k") });
    assert.equal(backend.watchers.size, 2, "a half-closed call keeps its watchers");
    req.close();
    await waitUntil(() => backend.watchers.size === 0, "closing the call cancels its watchers");
  });

  test("HTTP/1.1 on the same port goes to the HTTP side", async () => {
    const res = await fetch(`${server.url}/version`);
    assert.equal(res.status, 204);
    assert.deepEqual(httpSeen, ["GET /version HTTP/1.1"]);
  });
});

test("a call the client resets while it is being served is counted as Canceled and the server lives on", async () => {
  // The backend holds the first Range until the client has reset it: the stream closes with
  // no headers sent (as when a client times out on a write waiting for the raft log). As
  // go-grpc-prometheus, the call is counted when its handler returns.
  let release = (): void => {};
  let entered = (): void => {};
  const inRange = new Promise<void>((r) => (entered = r));
  class HeldBackend extends FakeV3Backend {
    #held = false;
    override async range(...args: Parameters<FakeV3Backend["range"]>): ReturnType<FakeV3Backend["range"]> {
      if (!this.#held) {
        this.#held = true;
        entered();
        await new Promise<void>((r) => (release = r));
      }
      return super.range(...args);
    }
  }
  const handled: [string, number][] = [];
  const observer = { callStarted: (): void => {}, callHandled: (path: string, code: number): void => void handled.push([path, code]), traffic: (): void => {} };
  const server = await startGrpcTestServer(new HeldBackend(), { server: { observer } });
  const client = server.connect();
  const rangeBody = rangeFrame("k");
  const headers = grpcHeaders("/etcdserverpb.KV/Range");
  const range = (): Promise<string | string[] | undefined> => {
    const ok = client.request(headers);
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      ok.on("trailers", resolve);
      ok.on("error", reject);
    });
    ok.resume();
    ok.end(rangeBody);
    return trailers.then((t) => t["grpc-status"]);
  };
  try {
    const req = client.request(headers);
    req.on("error", () => {});
    req.end(rangeBody);
    await inRange;
    req.close(http2.constants.NGHTTP2_CANCEL);
    // A later call on the connection is answered only after the server has read the reset.
    assert.equal(await range(), "0");
    release();
    await waitUntil(() => handled.length === 2, "the reset call handled");
    assert.deepEqual(handled, [["/etcdserverpb.KV/Range", 0], ["/etcdserverpb.KV/Range", 1]]);
    assert.equal(await range(), "0");
  } finally {
    server.close();
  }
});
