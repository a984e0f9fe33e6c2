// grpc-go 1.33's (etcd 3.4's) answers at the edges of the wire, checked against etcd by hand
// with node:http2 (src/server/grpc/README.md): grpc-timeout, grpc-encoding, the flag byte,
// a unary request cut short or not half-closed, and what a response carries.
import assert from "node:assert/strict";
import http2 from "node:http2";
import { after, before, describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import type { RangeRequest, RangeResponse } from "../../store/v3/index.ts";
import type { V3CallContext } from "../http/v3-backend.ts";
import { until } from "../../until.test-helper.ts";
import { FakeV3Backend } from "../http/v3-fake-backend.test-helper.ts";
import { frameMessage } from "./frames.ts";
import { WatchRequestSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { grpcHeaders, rangeFrame, startGrpcTestServer, type GrpcTestServer } from "./grpc-test-server.test-helper.ts";

/** A Range on key "held" never answers; every call's deadline is noted. */
class HoldingBackend extends FakeV3Backend {
  readonly deadlines: boolean[] = [];
  override async range(req: RangeRequest, ctx: V3CallContext): Promise<RangeResponse> {
    this.deadlines.push(ctx.deadline !== undefined);
    if (req.key.toString() === "held") return new Promise<RangeResponse>(() => {});
    return super.range(req, ctx);
  }
}

interface Outcome {
  headers: http2.IncomingHttpHeaders | undefined;
  trailers: http2.IncomingHttpHeaders | undefined;
  data: Buffer;
  rstCode: number | undefined;
  ms: number;
}

describe("gRPC wire edges as grpc-go 1.33", () => {
  const backend = new HoldingBackend();
  let server: GrpcTestServer<HoldingBackend>;
  let client: http2.ClientHttp2Session;

  before(async () => {
    server = await startGrpcTestServer(backend);
    client = server.connect();
  });
  after(() => server.close());

  /** One call: `body` written, the request ended after `endAfterMs` (0: at once); resolves at the answer's end. */
  function call(path: string, body: Buffer, extra: Record<string, string> = {}, endAfterMs = 0): Promise<Outcome> {
    const t0 = performance.now();
    const req = client.request(grpcHeaders(path, extra));
    const out: Outcome = { headers: undefined, trailers: undefined, data: Buffer.alloc(0), rstCode: undefined, ms: 0 };
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        out.ms = performance.now() - t0;
        resolve(out);
      };
      req.on("response", (h) => {
        out.headers = h;
        if (h["grpc-status"] !== undefined) done();
      });
      req.on("data", (d: Buffer) => (out.data = Buffer.concat([out.data, d])));
      req.on("trailers", (t) => {
        out.trailers = t;
        done();
      });
      req.on("error", () => {});
      req.on("close", () => {
        out.rstCode = req.rstCode;
        done();
      });
      if (body.length > 0) req.write(body);
      if (endAfterMs === 0) req.end();
      else timer = setTimeout(() => req.end(), endAfterMs);
    });
  }
  const status = (o: Outcome): [string | string[] | undefined, string | string[] | undefined] => {
    const h = o.trailers ?? o.headers;
    return [h?.["grpc-status"], h?.["grpc-message"]];
  };

  test("a grpc-timeout grpc-go cannot read resets the stream (PROTOCOL_ERROR, no status)", async () => {
    for (const bad of ["tomorrow", "1", "123456789S", "5s", "1.5S"]) {
      const o = await call("/etcdserverpb.KV/Range", rangeFrame("k"), { "grpc-timeout": bad });
      assert.equal(o.headers, undefined, bad);
      assert.equal(o.rstCode, http2.constants.NGHTTP2_PROTOCOL_ERROR, bad);
    }
    const ok = await call("/etcdserverpb.KV/Range", rangeFrame("k"), { "grpc-timeout": "+5S" });
    assert.deepEqual(status(ok), ["0", ""]);
    assert.equal(backend.deadlines.at(-1), true, "the backend sees the call's deadline");
  });

  test("a deadline passed before the request was read: DEADLINE_EXCEEDED", async () => {
    for (const t of ["0S", "-5S", "1n"]) {
      assert.deepEqual(status(await call("/etcdserverpb.KV/Range", rangeFrame("k"), { "grpc-timeout": t })), ["4", "context deadline exceeded"], t);
    }
  });

  test("a deadline passing while the call waits ends it then ('context deadline exceeded', Unknown, as etcd's handlers return it)", async () => {
    const o = await call("/etcdserverpb.KV/Range", rangeFrame("held"), { "grpc-timeout": "150m" });
    assert.deepEqual(status(o), ["2", "context deadline exceeded"]);
    assert.ok(o.ms >= 140 && o.ms < 2000, `${o.ms} ms`);
  });

  test("a deadline on a stream ends it with DEADLINE_EXCEEDED and cancels its watchers", async () => {
    const watch = frameMessage(toBinary(WatchRequestSchema, create(WatchRequestSchema, { requestUnion: { case: "createRequest", value: { key: Buffer.from("k") } } })));
    const o = await call("/etcdserverpb.Watch/Watch", watch, { "grpc-timeout": "200m" }, 3000);
    assert.ok(o.data.length > 0, "the created message went out first");
    assert.deepEqual(status(o), ["4", "context deadline exceeded"]);
    assert.ok(o.ms >= 190 && o.ms < 2500, `${o.ms} ms`);
    await until(() => backend.watchers.size === 0, "the stream's watchers canceled");
    const expired = await call("/etcdserverpb.Lease/LeaseKeepAlive", Buffer.alloc(0), { "grpc-timeout": "0m" }, 1000);
    assert.deepEqual(status(expired), ["4", "context deadline exceeded"]);
  });

  test("grpc-encoding other than identity: Unimplemented from the headers, before any message", async () => {
    const o = await call("/etcdserverpb.KV/Range", Buffer.alloc(0), { "grpc-encoding": "gzip" }, 2000);
    assert.deepEqual(status(o), ["12", 'grpc: Decompressor is not installed for grpc-encoding "gzip"']);
    assert.ok(o.ms < 1500, "answered without waiting for the request");
    const s = await call("/etcdserverpb.Watch/Watch", Buffer.alloc(0), { "grpc-encoding": "snappy" }, 2000);
    assert.deepEqual(status(s), ["12", 'grpc: Decompressor is not installed for grpc-encoding "snappy"']);
    // An unknown method is judged first, as in grpc-go.
    assert.deepEqual(status(await call("/etcdserverpb.KV/Nope", rangeFrame("k"), { "grpc-encoding": "gzip" })), ["12", "unknown method Nope for service etcdserverpb.KV"]);
    assert.deepEqual(status(await call("/etcdserverpb.KV/Range", rangeFrame("k"), { "grpc-encoding": "identity" })), ["0", ""]);
  });

  test("the flag byte: compressed without an encoding, or unknown, is Internal", async () => {
    const flagged = (flag: number): Buffer => {
      const b = Buffer.from(rangeFrame("k"));
      b[0] = flag;
      return b;
    };
    assert.deepEqual(status(await call("/etcdserverpb.KV/Range", flagged(1))), ["13", "grpc: compressed flag set with identity or empty encoding"]);
    assert.deepEqual(status(await call("/etcdserverpb.KV/Range", flagged(1), { "grpc-encoding": "identity" })), ["13", "grpc: compressed flag set with identity or empty encoding"]);
    assert.deepEqual(status(await call("/etcdserverpb.KV/Range", flagged(2))), ["13", "grpc: received unexpected payload format 2"]);
    const watchFlagged = Buffer.from([1, 0, 0, 0, 5, 0x0a, 3, 0x0a, 1, 0x6b]);
    assert.deepEqual(status(await call("/etcdserverpb.Watch/Watch", watchFlagged, {}, 1000)), ["13", "grpc: compressed flag set with identity or empty encoding"]);
  });

  test("a unary request: served at its first message, EOF and unexpected EOF as grpc-go's parser", async () => {
    const open = await call("/etcdserverpb.KV/Range", rangeFrame("k"), {}, 1500);
    assert.equal(open.headers?.[":status"], 200);
    assert.ok(open.data.length > 0);
    const two = await call("/etcdserverpb.KV/Range", Buffer.concat([rangeFrame("k"), rangeFrame("k")]));
    assert.deepEqual(status(two), ["0", ""], "a second message is ignored");
    assert.deepEqual(status(await call("/etcdserverpb.KV/Range", Buffer.alloc(0))), ["2", "EOF"]);
    assert.deepEqual(status(await call("/etcdserverpb.KV/Range", rangeFrame("k").subarray(0, 6))), ["2", "unexpected EOF"]);
    assert.deepEqual(status(await call("/etcdserverpb.KV/Range", rangeFrame("k").subarray(0, 3))), ["2", "unexpected EOF"]);
  });

  test("content-type as grpc-go 1.33's: not gRPC's resets the stream; a subtype is echoed (the codec stays proto); :method is not looked at", async () => {
    for (const bad of ["text/plain", "application/json", "application/grpcx", "Application/grpc"]) {
      const o = await call("/etcdserverpb.KV/Range", rangeFrame("k"), { "content-type": bad });
      assert.equal(o.headers, undefined, bad);
      assert.equal(o.rstCode, http2.constants.NGHTTP2_PROTOCOL_ERROR, bad);
    }
    for (const [ct, answered] of [["application/grpc+json", "application/grpc+json"], ["application/grpc;x", "application/grpc+x"], ["application/grpc+", "application/grpc"], ["application/grpc+proto", "application/grpc+proto"]] as const) {
      const o = await call("/etcdserverpb.KV/Range", rangeFrame("k"), { "content-type": ct });
      assert.deepEqual(status(o), ["0", ""], ct);
      assert.equal(o.headers?.["content-type"], answered, ct);
    }
    const failed = await call("/etcdserverpb.KV/Nope", rangeFrame("k"), { "content-type": "application/grpc+json" });
    assert.equal(failed.headers?.["content-type"], "application/grpc+json", "a trailers-only answer too");
    const put = await call("/etcdserverpb.KV/Range", rangeFrame("k"), { ":method": "PUT" });
    assert.deepEqual(status(put), ["0", ""]);
  });

  test("method names as grpc-go 1.33's handleStream: the leading '/' optional, none at all is ResourceExhausted, the last '/' splits", async () => {
    assert.deepEqual(status(await call("etcdserverpb.KV/Range", rangeFrame("k"))), ["0", ""]);
    assert.deepEqual(status(await call("/", rangeFrame("k"))), ["8", 'malformed method name: "/"']);
    assert.deepEqual(status(await call("Range", rangeFrame("k"))), ["8", 'malformed method name: "Range"']);
    assert.deepEqual(status(await call("/etcdserverpb.KV/", rangeFrame("k"))), ["12", "unknown method  for service etcdserverpb.KV"]);
    assert.deepEqual(status(await call("/etcdserverpb.KV/Range/", rangeFrame("k"))), ["12", "unknown service etcdserverpb.KV/Range"]);
    assert.equal(status(await call("//Range", rangeFrame("k")))[0], "12", "service \"\" (node's client trims the message's trailing space)");
  });

  test("a response carries no date and is never compressed, whatever grpc-accept-encoding says", async () => {
    const o = await call("/etcdserverpb.KV/Range", rangeFrame("k"), { "grpc-accept-encoding": "gzip,identity" });
    assert.deepEqual(status(o), ["0", ""]);
    assert.equal(o.headers?.["date"], undefined);
    assert.equal(o.headers?.["grpc-encoding"], undefined);
    assert.equal(o.data[0], 0, "message flag: not compressed");
  });
});
