// etcd 3.4's require-leader interceptors over a GrpcServer on the fake backend: calls with
// hasleader=true (clientv3.WithRequireLeader) are refused while no leader is known, and
// streams opened so end after 3 election-timeout checks without one. Before, kvctl ignored
// the metadata: etcd's Go client watching a member cut off from its cluster got nothing
// (etcd 3.4.23 ended the watch with 'etcdserver: no leader' 5 s after the other members
// stopped).
import assert from "node:assert/strict";
import type http2 from "node:http2";
import { after, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { until } from "../../until.test-helper.ts";
import { FakeV3Backend } from "../http/v3-fake-backend.test-helper.ts";
import { decodeGrpcMessage, frameMessage } from "./frames.ts";
import { WatchRequestSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { grpcHeaders, rangeFrame, startGrpcTestServer, type GrpcTestServer } from "./grpc-test-server.test-helper.ts";
import { LeaderMonitor, MAX_NO_LEADER_CHECKS } from "./require-leader.ts";

const running: GrpcTestServer<FakeV3Backend>[] = [];
after(() => {
  for (const r of running) r.close();
});

const REQUIRE = { hasleader: "true" };

async function start(): Promise<{ s: GrpcTestServer<FakeV3Backend>; monitor: LeaderMonitor; leader: { known: boolean } }> {
  const leader = { known: true };
  const monitor = new LeaderMonitor(() => leader.known, 0);
  const s = await startGrpcTestServer(new FakeV3Backend(), { server: { leader: monitor } });
  running.push(s);
  return { s, monitor, leader };
}

function status(req: http2.ClientHttp2Stream): Promise<{ code: string; message: string }> {
  return new Promise((resolve) => {
    let code = "";
    let message = "";
    const take = (h: http2.IncomingHttpHeaders): void => {
      if (h["grpc-status"] !== undefined) code = String(h["grpc-status"]);
      if (h["grpc-message"] !== undefined) message = decodeGrpcMessage(String(h["grpc-message"]));
    };
    req.on("response", take);
    req.on("trailers", take);
    req.on("data", () => undefined);
    req.on("error", () => undefined);
    req.on("close", () => resolve({ code, message }));
  });
}

function range(client: http2.ClientHttp2Session, extra: http2.OutgoingHttpHeaders = {}): Promise<{ code: string; message: string }> {
  const req = client.request(grpcHeaders("/etcdserverpb.KV/Range", extra));
  const done = status(req);
  req.end(rangeFrame("k"));
  return done;
}

function watch(client: http2.ClientHttp2Session, extra: http2.OutgoingHttpHeaders = {}): { ended: Promise<{ code: string; message: string }>; created: Promise<void> } {
  const req = client.request(grpcHeaders("/etcdserverpb.Watch/Watch", extra));
  const created = new Promise<void>((r) => req.once("data", () => r()));
  const ended = status(req);
  req.write(frameMessage(toBinary(WatchRequestSchema, create(WatchRequestSchema, { requestUnion: { case: "createRequest", value: { key: Buffer.from("k") } } }))));
  return { ended, created };
}

const NO_LEADER = { code: "14", message: "etcdserver: no leader" };

test("without a leader, a call that requires one is refused (unary and stream); others are served", async () => {
  const { s, leader } = await start();
  const client = s.connect();
  assert.deepEqual(await range(client, REQUIRE), { code: "0", message: "" });
  leader.known = false;
  assert.deepEqual(await range(client, REQUIRE), NO_LEADER);
  assert.deepEqual(await range(client), { code: "0", message: "" });
  assert.deepEqual(await watch(client, REQUIRE).ended, NO_LEADER);
  client.destroy();
});

test("a stream that required a leader ends after 3 checks in a row without one; a leader in between restarts the count", async () => {
  const { s, monitor, leader } = await start();
  const client = s.connect();
  const required = watch(client, REQUIRE);
  const plain = watch(client);
  await Promise.all([required.created, plain.created]);
  assert.equal(monitor.size, 1);
  let ended = false;
  void required.ended.then(() => (ended = true));
  leader.known = false;
  monitor.check();
  monitor.check();
  leader.known = true;
  monitor.check(); // the count starts again
  leader.known = false;
  for (let i = 1; i < MAX_NO_LEADER_CHECKS; i++) monitor.check();
  // check() ends streams at once, taking them off the monitor; and a range answered on the
  // same connection comes after any end the server had written for the watch.
  assert.equal(monitor.size, 1, "still watched after one check too few");
  assert.deepEqual(await range(client), { code: "0", message: "" });
  assert.equal(ended, false);
  monitor.check();
  assert.deepEqual(await required.ended, NO_LEADER);
  assert.equal(monitor.size, 0);
  // The stream without the metadata is still open: a range on the same connection works.
  assert.deepEqual(await range(client), { code: "0", message: "" });
  client.destroy();
  assert.equal((await plain.ended).code, "");
});

test("a stream that ends by itself is no longer watched", async () => {
  const { s, monitor } = await start();
  const client = s.connect();
  const w = watch(client, REQUIRE);
  await w.created;
  assert.equal(monitor.size, 1);
  client.destroy();
  await w.ended;
  // The server learns of the end from its side of the connection, after the client did.
  await until(() => monitor.size === 0, "the ended stream off the monitor");
});
