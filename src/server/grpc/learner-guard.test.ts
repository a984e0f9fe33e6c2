// A learner's refusals over gRPC in process (services.ts guardLearner, server.ts refuse):
// code 14 before the observer sees the call, Status and serializable Range served, a
// request that does not decode still grpc-go's code 13, and everything served again once
// the member is no learner.
import assert from "node:assert/strict";
import type http2 from "node:http2";
import { after, before, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { FakeV3Backend } from "../http/v3-fake-backend.test-helper.ts";
import { LEARNER_REFUSAL_MESSAGE } from "../learner-calls.ts";
import { decodeGrpcMessage, frameMessage } from "./frames.ts";
import { PutRequestSchema, RangeRequestSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { grpcHeaders, startGrpcTestServer, type GrpcTestServer } from "./grpc-test-server.test-helper.ts";
import type { GrpcObserver } from "./server.ts";

class LearnerBackend extends FakeV3Backend {
  isLearner = true;
}

const backend = new LearnerBackend();
const seen = { started: 0, counted: 0 };
const observer: GrpcObserver = {
  callStarted: () => void seen.started++,
  clientRequest: () => void seen.counted++,
  callHandled: () => undefined,
  traffic: () => undefined,
};
let server: GrpcTestServer<LearnerBackend>;
let client: http2.ClientHttp2Session;

before(async () => {
  server = await startGrpcTestServer(backend, { server: { observer } });
  client = server.connect();
});
after(() => server.close());

/** A call's status; `body` undefined: the client sends nothing and keeps its side open (a stream). */
function call(path: string, body: Uint8Array | undefined): Promise<{ status: string; message: string }> {
  return new Promise((resolve, reject) => {
    const req = client.request(grpcHeaders(path));
    let status = "";
    let message = "";
    const take = (h: http2.IncomingHttpHeaders): void => {
      if (h["grpc-status"] === undefined) return;
      status = String(h["grpc-status"]);
      message = decodeGrpcMessage(String(h["grpc-message"] ?? ""));
    };
    req.on("response", take);
    req.on("trailers", take);
    req.on("error", reject);
    req.on("close", () => resolve({ status, message }));
    req.resume();
    if (body !== undefined) req.end(frameMessage(body));
    else req.write(Buffer.alloc(0));
  });
}

const range = (serializable: boolean): Uint8Array => toBinary(RangeRequestSchema, create(RangeRequestSchema, { key: Buffer.from("a"), serializable }));
const put = toBinary(PutRequestSchema, create(PutRequestSchema, { key: Buffer.from("a"), value: Buffer.from("v") }));
const REFUSED = { status: "14", message: LEARNER_REFUSAL_MESSAGE };

test("a learner refuses all but Status and serializable Range, before the call is counted", async () => {
  backend.isLearner = true;
  assert.deepEqual(await call("/etcdserverpb.KV/Put", put), REFUSED);
  assert.deepEqual(await call("/etcdserverpb.KV/Range", range(false)), REFUSED);
  assert.deepEqual(await call("/etcdserverpb.Cluster/MemberList", new Uint8Array()), REFUSED);
  assert.deepEqual(await call("/grpc.health.v1.Health/Check", new Uint8Array()), REFUSED);
  assert.deepEqual(await call("/v3lockpb.Lock/Lock", new Uint8Array([0x0a, 1, 0x61])), REFUSED);
  assert.deepEqual(await call("/etcdserverpb.Watch/Watch", undefined), REFUSED);
  assert.deepEqual(await call("/etcdserverpb.Lease/LeaseKeepAlive", undefined), REFUSED);
  assert.deepEqual(seen, { started: 0, counted: 0 });
  assert.equal(backend.calls.length, 0, "nothing reached the backend");

  // grpc-go refuses a request that does not decode before etcd's interceptors see it.
  assert.equal((await call("/etcdserverpb.KV/Put", new Uint8Array([0xff]))).status, "13");

  assert.equal((await call("/etcdserverpb.KV/Range", range(true))).status, "0");
  assert.equal((await call("/etcdserverpb.Maintenance/Status", new Uint8Array())).status, "0");
  assert.deepEqual([seen.started, seen.counted], [2, 2], "the undecodable Put counted nowhere");
});

test("no longer a learner: the same calls are served", async () => {
  backend.isLearner = false;
  assert.equal((await call("/etcdserverpb.KV/Put", put)).status, "0");
  assert.equal((await call("/etcdserverpb.KV/Range", range(false))).status, "0");
  assert.equal((await call("/etcdserverpb.Cluster/MemberList", new Uint8Array())).status, "0");
});
