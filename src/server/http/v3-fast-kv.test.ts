import { test } from "node:test";
import assert from "node:assert/strict";
import { V3Errors } from "../../api/v3-errors.ts";
import { firstOf, parseHead, renderResponse, type FastHandler, type FastResponse, type RequestHead } from "./fast-lane.ts";
import { UNARY_ROUTES } from "./v3-handlers.ts";
import { fastV3Route, v3FastKv, type V3FastHost } from "./v3-fast-kv.ts";
import { v3ErrorParts, v3SuccessParts } from "./v3-respond.ts";
import { GatewayDecodeError } from "./v3-wire.ts";
import { FakeV3Backend } from "./v3-fake-backend.test-helper.ts";
import { WriteTracer } from "../write-trace.ts";
import type { Logger } from "../logger.ts";

const post = (target: string, extra: Partial<RequestHead> = {}): RequestHead => ({ method: "POST", target, host: "127.0.0.1:2379", authorization: undefined, length: 0, body: "{}", ...extra });

test("fastV3Route takes a plain POST of kv/put or kv/range under /v3/ or /v3beta/, with the gateway's own handler", () => {
  assert.equal(fastV3Route(post("/v3/kv/put"), []), UNARY_ROUTES.get("kv/put"));
  assert.equal(fastV3Route(post("/v3/kv/range"), []), UNARY_ROUTES.get("kv/range"));
  assert.equal(fastV3Route(post("/v3beta/kv/put"), []), UNARY_ROUTES.get("kv/put"));
  assert.equal(fastV3Route(post("/v3/kv/range?x=1"), []), UNARY_ROUTES.get("kv/range"));
});

test("fastV3Route declines what the router must answer: other methods and routes, escapes, unclean paths, tokens, hosts not listed", () => {
  const declined: RequestHead[] = [
    post("/v3/kv/put", { method: "PUT" }),
    post("/v3/kv/txn"),
    post("/v3/kv/deleterange"),
    post("/v3alpha/kv/put"),
    post("/v3/kv/%70ut"),
    post("/v3//kv/put"),
    post("/v3/kv/./put"),
    post("/v3/kv/put/"),
    post("/v3/kv/put", { authorization: "tok" }),
    post("/v3/kv/put", { grpcToken: "tok" }),
    post("/v3/kv/put?" + "x".repeat(5000)),
  ];
  for (const h of declined) assert.equal(fastV3Route(h, []), undefined, `${h.method} ${h.target.slice(0, 40)}`);
  assert.equal(fastV3Route(post("/v3/kv/put"), ["example.com"]), undefined);
  assert.equal(fastV3Route(post("/v3/kv/put", { host: "example.com:2379" }), ["example.com"]), UNARY_ROUTES.get("kv/put"));
});

test("parseHead keeps the Grpc-Metadata-Token header, and declines it twice", () => {
  const one = parseHead("POST /v3/kv/put HTTP/1.1\r\nHost: h\r\nGrpc-Metadata-Token: abc\r\n\r\n", 0, 16384, 16384);
  assert.ok(typeof one === "object");
  assert.equal(one.grpcToken, "abc");
  assert.equal(parseHead("POST /v3/kv/put HTTP/1.1\r\nHost: h\r\nGrpc-Metadata-Token: a\r\ngrpc-metadata-token: b\r\n\r\n", 0, 16384, 16384), "decline");
});

test("a response with a trailer is rendered chunked as node:http sends one with addTrailers", () => {
  const res: FastResponse = { status: 404, headers: ["A", "b", "Content-Type", "application/json", "Trailer", "Grpc-Trailer-Content-Type"], body: '{"x":"é"}', trailer: ["Grpc-Trailer-Content-Type", "application/grpc"] };
  const now = Date.UTC(2026, 10, 26, 10, 17, 1);
  // The bytes node:http 20 wrote for the same writeHead, addTrailers and end.
  const node =
    "HTTP/1.1 404 Not Found\r\nA: b\r\nContent-Type: application/json\r\nTrailer: Grpc-Trailer-Content-Type\r\nDate: Thu, 26 Nov 2026 10:17:01 GMT\r\n" +
    'Connection: keep-alive\r\nKeep-Alive: timeout=30\r\nTransfer-Encoding: chunked\r\n\r\na\r\n{"x":"é"}\r\n0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n';
  assert.equal(renderResponse(res, 30, now), node);
});

test("answer parts: a success has gRPC metadata and a length; a gateway error neither trailer nor metadata; a server error the trailer", () => {
  assert.deepEqual(v3SuccessParts({ a: "1" }), { status: 200, extra: ["Grpc-Metadata-Content-Type", "application/grpc"], body: '{"a":"1"}' });
  assert.deepEqual(v3ErrorParts(new GatewayDecodeError("unexpected EOF")), { status: 400, extra: [], body: '{"error":"unexpected EOF","message":"unexpected EOF","code":3}' });
  const server = v3ErrorParts(V3Errors.noLeader());
  assert.equal(server.status, 503);
  assert.deepEqual(server.extra, ["Trailer", "Grpc-Trailer-Content-Type"]);
  assert.deepEqual(server.trailer, ["Grpc-Trailer-Content-Type", "application/grpc"]);
});

function lane(host: Partial<V3FastHost> = {}, config: Partial<V3FastHost["config"]> = {}, tracer?: WriteTracer): { handler: FastHandler; backend: FakeV3Backend; counted: () => number } {
  const backend = new FakeV3Backend();
  let n = 0;
  const server: V3FastHost = {
    config: { enableGrpcGateway: true, cors: ["*"], hostWhitelist: [], ...config },
    v3auth: { enabled: false },
    noteClientRequest: () => void n++,
    ...host,
  };
  return { handler: v3FastKv({ server, v3Gateway: { backend, maxRequestBytes: 1572864, maxTxnOps: 128 } }, tracer), backend, counted: () => n };
}

test("v3FastKv answers a put through the backend, counts it, and answers a decoding error without calling it", async () => {
  const { handler, backend, counted } = lane();
  const res = await handler(post("/v3/kv/put", { body: '{"key":"YQ==","value":"Yg=="}' }));
  assert.ok(res !== undefined);
  assert.equal(res.status, 200);
  assert.match(res.body, /"revision":"2"/);
  assert.equal(backend.kvs.get("a")?.value.toString(), "b");
  const bad = await handler(post("/v3/kv/put", { body: '{"key":5}' }));
  assert.equal(bad?.status, 400);
  assert.equal(bad?.trailer, undefined);
  assert.deepEqual(backend.calls.map((c) => c.method), ["put"]);
  assert.equal(counted(), 2);
});

test("v3FastKv declines with v3 auth on, the gateway off, or --cors restricted, before counting anything", () => {
  const h = post("/v3/kv/put", { body: '{"key":"YQ=="}' });
  for (const l of [lane({ v3auth: { enabled: true } }), lane({}, { enableGrpcGateway: false }), lane({}, { cors: ["http://a"] })]) {
    assert.equal(l.handler(h), undefined);
    assert.equal(l.counted(), 0);
    assert.deepEqual(l.backend.calls, []);
  }
});

test("firstOf answers with the first handler that takes the request", () => {
  const seen: string[] = [];
  const a: FastHandler = () => void seen.push("a");
  const b: FastHandler = () => ({ status: 200, headers: [], body: "b" });
  const c: FastHandler = () => void seen.push("c");
  assert.equal((firstOf(a, b, c)(post("/")) as FastResponse).body, "b");
  assert.deepEqual(seen, ["a"]);
  assert.equal(firstOf(a, c)(post("/")), undefined);
});

test("a traced put is logged once written, with its answer built before the write", async () => {
  const logged: Array<Record<string, unknown> | undefined> = [];
  const log: Logger = { debug: () => undefined, info: (_m, f) => void logged.push(f), warn: () => undefined, error: () => undefined };
  let clock = 0;
  const { handler } = lane({}, {}, new WriteTracer(1, log, () => ++clock));
  const res = await handler(post("/v3/kv/put", { body: '{"key":"YQ=="}' }));
  assert.equal(res?.status, 200);
  assert.equal(logged.length, 0);
  res?.written?.();
  assert.equal(logged.length, 1);
  const us = logged[0]?.["us"] as Record<string, number>;
  assert.deepEqual(Object.keys(us), ["received", "answered", "responded"]);
});
