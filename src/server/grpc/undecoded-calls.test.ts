// A unary request that does not decode is refused by grpc-go (code 13) before etcd's
// interceptors see it: go-grpc-prometheus counts neither its start nor its code. Checked
// against etcd 3.4.23: an undecodable Put and Range left grpc_server_started_total and
// grpc_server_handled_total as they were. A request that decodes and is then refused is
// counted, as etcd's handlers refuse it inside the interceptors.
import assert from "node:assert/strict";
import type http2 from "node:http2";
import { after, before, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { FakeV3Backend } from "../http/v3-fake-backend.test-helper.ts";
import { frameMessage } from "./frames.ts";
import { PutRequestSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { grpcHeaders, rangeFrame, startGrpcTestServer, type GrpcTestServer } from "./grpc-test-server.test-helper.ts";
import type { GrpcObserver } from "./server.ts";

const started: string[] = [];
const handled: Array<[string, number]> = [];
const requests: string[] = [];
const observer: GrpcObserver = {
  callStarted: (path) => void started.push(path),
  callHandled: (path, code) => void handled.push([path, code]),
  clientRequest: (path) => void requests.push(path),
  traffic: () => undefined,
};
let server: GrpcTestServer<FakeV3Backend>;
let client: http2.ClientHttp2Session;

before(async () => {
  server = await startGrpcTestServer(new FakeV3Backend(), { server: { observer } });
  client = server.connect();
});
after(() => server.close());

function status(path: string, framed: Uint8Array): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = client.request(grpcHeaders(path));
    let code = "";
    const take = (h: http2.IncomingHttpHeaders): void => void (h["grpc-status"] !== undefined && (code = String(h["grpc-status"])));
    req.on("response", take);
    req.on("trailers", take);
    req.on("error", reject);
    req.on("close", () => resolve(code));
    req.resume();
    req.end(framed);
  });
}

/** A truncated tag: no message of any method decodes from it. */
const UNDECODABLE = frameMessage(new Uint8Array([0xff]));

for (const path of ["/etcdserverpb.KV/Put", "/etcdserverpb.KV/Range", "/etcdserverpb.KV/Txn", "/etcdserverpb.KV/DeleteRange", "/etcdserverpb.Lease/LeaseGrant", "/etcdserverpb.Cluster/MemberList"]) {
  test(`${path}: a request that does not decode is answered 13 and counted nowhere`, async () => {
    const before = [started.length, handled.length, requests.length];
    assert.equal(await status(path, UNDECODABLE), "13");
    assert.deepEqual([started.length, handled.length, requests.length], before);
  });
}

test("a request that decodes is counted, refused (an empty key: 3) or served", async () => {
  started.length = handled.length = requests.length = 0;
  const emptyKey = frameMessage(toBinary(PutRequestSchema, create(PutRequestSchema, { value: Buffer.from("v") })));
  assert.equal(await status("/etcdserverpb.KV/Put", emptyKey), "3");
  assert.equal(await status("/etcdserverpb.KV/Range", rangeFrame("k")), "0");
  assert.deepEqual(started, ["/etcdserverpb.KV/Put", "/etcdserverpb.KV/Range"]);
  assert.deepEqual(handled, [["/etcdserverpb.KV/Put", 3], ["/etcdserverpb.KV/Range", 0]]);
  assert.deepEqual(requests, ["/etcdserverpb.KV/Put", "/etcdserverpb.KV/Range"]);
});
