// The failures a real member gives only under faults (no leader, a lost leader, a proposal
// timing out, a stopped member, a failure that is no V3Error), answered by the v3 fast lane
// (src/server/http/v3-fast-kv.ts) and by node:http with the gateway: one listener with the
// lane in front of node:http and one without, each over its own fake backend made to fail
// the same way, compared byte for byte.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { rawExchange } from "../helpers/raw-http.ts";
import { FastLane } from "../../src/server/http/fast-lane.ts";
import { v3FastKv } from "../../src/server/http/v3-fast-kv.ts";
import { handleV3, v3Route } from "../../src/server/http/v3-routes.ts";
import { writeError } from "../../src/server/http/respond.ts";
import { V3Error, V3Errors } from "../../src/api/v3-errors.ts";
import { FakeV3Backend } from "../../src/server/http/v3-fake-backend.test-helper.ts";
import type { V3GatewayContext } from "../../src/server/http/v3-backend.ts";

interface Side {
  url: string;
  backend: FakeV3Backend;
  server: Server;
  /** Requests the lane answered. */
  taken: number;
}

/** A gateway over a fake backend on node:http, with the lane in front of it or not. */
async function side(withLane: boolean): Promise<Side> {
  const backend = new FakeV3Backend();
  const gw: V3GatewayContext = { backend, maxRequestBytes: 1572864, maxTxnOps: 128 };
  const ctx = { clusterId: "cdf818194e3a8c32", v3Gateway: gw };
  const server = new Server({ keepAliveTimeout: 30_000 }, (req, res) => {
    const route = v3Route((req.url ?? "/").split("?")[0]!);
    const run = route === undefined ? Promise.reject(new Error("not a v3 path")) : handleV3(req, res, route, ctx);
    run.catch((err: unknown) => writeError(req, res, err, ctx));
  });
  const out: Side = { url: "", backend, server, taken: 0 };
  if (withLane) {
    const httpConnection = server.listeners("connection") as ((s: Socket) => void)[];
    server.removeAllListeners("connection");
    const host = { config: { enableGrpcGateway: true, cors: ["*"], hostWhitelist: [] }, v3auth: { enabled: false }, noteClientRequest: () => undefined };
    const fast = v3FastKv({ server: host, v3Gateway: gw });
    const lane = new FastLane({
      handler: (h) => {
        const r = fast(h);
        if (r !== undefined) out.taken++;
        return r;
      },
      toHttp: (s) => httpConnection.forEach((l) => l.call(server, s)),
      keepAliveMs: 30_000,
      maxHeadBytes: 16 * 1024,
      headersTimeoutMs: 60_000,
    });
    server.on("connection", (s: Socket) => lane.accept(s));
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  out.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return out;
}

let lane: Side;
let http: Side;
before(async () => {
  [lane, http] = await Promise.all([side(true), side(false)]);
});
after(() => {
  for (const s of [lane, http]) {
    s.server.closeAllConnections();
    s.server.close();
  }
});

const put = (body: string): string => `POST /v3/kv/put HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const range = (body: string): string => `POST /v3/kv/range HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const chunked = (req: string): string => {
  const [head, body] = req.split("\r\n\r\n") as [string, string];
  return `${head.replace(/Content-Length: \d+/, "Transfer-Encoding: chunked")}\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
};

const failures: Array<[string, () => V3Error]> = [
  ["no leader", V3Errors.noLeader],
  ["leader changed", V3Errors.leaderChanged],
  ["timeout", V3Errors.timeout],
  ["timeout, leader failure", V3Errors.timeoutDueToLeaderFail],
  ["stopped", V3Errors.stopped],
  ["no space", V3Errors.noSpace],
  ["compacted", V3Errors.compacted],
  ["not a V3Error", () => new Error("disk on fire") as V3Error],
];

test("a put or range failing in the backend is answered alike by the lane and by node:http (trailer, status, body)", async () => {
  for (const [what, make] of failures) {
    for (const req of [put('{"key":"YQ==","value":"Yg=="}'), range('{"key":"YQ=="}')]) {
      lane.backend.failNext = make();
      http.backend.failNext = make();
      const before = lane.taken;
      const [a] = await rawExchange(lane.url, [req]);
      const [b] = await rawExchange(http.url, [chunked(req)]);
      assert.equal(a, b, what);
      assert.match(a ?? "", /Trailer: Grpc-Trailer-Content-Type/, what);
      assert.equal(lane.taken - before, 1, `the lane answered (${what})`);
    }
  }
});

test("answers that succeed match too, and a pipelined put then range see each other in order", async () => {
  const before = lane.taken;
  const reqs = [put('{"key":"YQ==","value":"MQ=="}'), range('{"key":"YQ=="}'), put('{"key":"YQ==","value":"Mg==","prev_kv":true}'), range('{"key":"YQ=="}')];
  const a = await rawExchange(lane.url, reqs);
  const b = await rawExchange(http.url, reqs.map(chunked));
  assert.deepEqual(a, b);
  assert.match(a[3]!, /"value":"Mg=="/);
  assert.equal(lane.taken - before, 4);
});
