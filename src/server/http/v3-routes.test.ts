// The unary gateway over real HTTP (node:http on 127.0.0.1, port 0) with a fake backend.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { V3Error, V3Errors } from "../../api/v3-errors.ts";
import { StreamClient, call, startV3Server, until, type V3TestServer } from "./v3-test-server.test-helper.ts";
import { binHeaderError } from "./v3-routes.ts";

let s: V3TestServer;
before(async () => {
  s = await startV3Server({ maxRequestBytes: 4096 });
});
after(() => s.close());

const CORS = {
  "access-control-allow-headers": "accept, content-type, authorization",
  "access-control-allow-methods": "POST, GET, OPTIONS, PUT, DELETE",
  "access-control-allow-origin": "*",
};

function pickHeaders(h: Record<string, unknown>): Record<string, unknown> {
  const { date: _d, connection: _c, "keep-alive": _k, "content-length": _l, "transfer-encoding": _t, ...rest } = h;
  return rest;
}

test("a success answers 200 with etcd's headers and a Content-Length", async () => {
  const r = await call(s.port, "/v3/kv/put", { key: "c3VjY2Vzcw==", value: "eA==" });
  assert.equal(r.status, 200);
  assert.deepEqual(pickHeaders(r.headers), { ...CORS, "content-type": "application/json", "grpc-metadata-content-type": "application/grpc" });
  assert.ok(r.headers["content-length"] !== undefined);
  const body = JSON.parse(r.text) as { header: { revision: string; cluster_id: string } };
  assert.equal(body.header.cluster_id, "14841639068965178418");
});

test("a server error answers the gRPC status with the trailer; a decode error without it", async () => {
  const server = await call(s.port, "/v3/kv/put", "");
  assert.equal(server.status, 400);
  assert.deepEqual(pickHeaders(server.headers), { ...CORS, "content-type": "application/json", trailer: "Grpc-Trailer-Content-Type" });
  assert.deepEqual(server.trailers, { "grpc-trailer-content-type": "application/grpc" });
  assert.equal(server.text, '{"error":"etcdserver: key is not provided","message":"etcdserver: key is not provided","code":3}');
  const decode = await call(s.port, "/v3/kv/put", '{"key":"not base64!"}');
  assert.equal(decode.status, 400);
  assert.deepEqual(pickHeaders(decode.headers), { ...CORS, "content-type": "application/json" });
  assert.equal(decode.text, '{"error":"illegal base64 data at input byte 3","message":"illegal base64 data at input byte 3","code":3}');
});

const statusCases: Array<{ what: string; err: V3Error; status: number }> = [
  { what: "NotFound", err: V3Errors.leaseNotFound(), status: 404 },
  { what: "PermissionDenied", err: V3Errors.permissionDenied(), status: 403 },
  { what: "FailedPrecondition", err: V3Errors.rootUserNotExist(), status: 412 },
  { what: "OutOfRange", err: V3Errors.compacted(), status: 400 },
  { what: "Unauthenticated", err: V3Errors.invalidAuthToken(), status: 401 },
  { what: "Unavailable", err: V3Errors.noLeader(), status: 503 },
];
for (const c of statusCases) {
  test(`a backend ${c.what} error answers HTTP ${c.status} with etcd's body`, async () => {
    s.backend.failNext = c.err;
    const r = await call(s.port, "/v3/kv/range", { key: "YQ==" });
    assert.equal(r.status, c.status);
    assert.deepEqual(JSON.parse(r.text), { error: c.err.message, message: c.err.message, code: c.err.code });
  });
}

test("an unexpected backend failure answers code 2 (500)", async () => {
  const original = s.backend.range.bind(s.backend);
  s.backend.range = async () => {
    throw new TypeError("boom");
  };
  try {
    const r = await call(s.port, "/v3/kv/range", { key: "YQ==" });
    assert.equal(r.status, 500);
    assert.deepEqual(JSON.parse(r.text), { error: "boom", message: "boom", code: 2 });
  } finally {
    s.backend.range = original;
  }
});

const routingCases: Array<{ method: string; path: string; status: number; text: string }> = [
  { method: "GET", path: "/v3/kv/range", status: 405, text: "Method Not Allowed\n" },
  { method: "PUT", path: "/v3/kv/range", status: 405, text: "Method Not Allowed\n" },
  { method: "POST", path: "/v3/kv/range/", status: 404, text: "Not Found\n" },
  { method: "POST", path: "/v3/KV/range", status: 404, text: "Not Found\n" },
  { method: "POST", path: "/v3/maintenance/hashkv", status: 404, text: "Not Found\n" },
  { method: "POST", path: "/v3/auth/status", status: 404, text: "Not Found\n" },
  { method: "GET", path: "/v3/nothing", status: 404, text: "Not Found\n" },
];
for (const c of routingCases) {
  test(`${c.method} ${c.path} answers ${c.status} ${JSON.stringify(c.text)}`, async () => {
    const r = await call(s.port, c.path, "{}", { method: c.method });
    assert.equal(r.status, c.status);
    assert.equal(r.text, c.text);
    assert.equal(r.headers["content-type"], "text/plain; charset=utf-8");
    assert.equal(r.headers["x-content-type-options"], "nosniff");
  });
}

test("/v3beta/ is an alias and the query string is ignored", async () => {
  await call(s.port, "/v3/kv/put", { key: "YmV0YQ==", value: "MQ==" });
  const r = await call(s.port, "/v3beta/kv/range?key=eA%3D%3D", { key: "YmV0YQ==" });
  assert.equal(r.status, 200);
  assert.equal((JSON.parse(r.text) as { count: string }).count, "1");
  const q = await call(s.port, "/v3/kv/range?key=eA%3D%3D", "");
  assert.equal(q.status, 400);
});

test("the token comes from Grpc-Metadata-Token, else Authorization, verbatim", async () => {
  s.backend.calls.length = 0;
  await call(s.port, "/v3/kv/range", { key: "YQ==" }, { headers: { Authorization: "Bearer abc" } });
  await call(s.port, "/v3/kv/range", { key: "YQ==" }, { headers: { Authorization: "abc", "Grpc-Metadata-Token": "tok" } });
  await call(s.port, "/v3/kv/range", { key: "YQ==" });
  assert.deepEqual(
    s.backend.calls.map((c) => c.token),
    ["Bearer abc", "tok", undefined],
  );
});

test("Grpc-Timeout as grpc-gateway reads it (etcd 3.4.23): unreadable is 400 before the body; negative or under 1 ms is 504 after the body decoded, the call not made", async () => {
  const errorOf = (r: { status: number; text: string; headers: Record<string, unknown> }): [number, string, unknown] => [r.status, (JSON.parse(r.text) as { error: string }).error, r.headers["trailer"]];
  for (const bad of ["junk", "5", "1x", "application/json", "99999999999999999999S", "S"]) {
    const r = await call(s.port, "/v3/kv/put", '{"key":5}', { headers: { "Grpc-Timeout": bad } });
    assert.deepEqual(errorOf(r), [400, `invalid grpc-timeout: ${bad}`, undefined], bad);
  }
  const watch = await call(s.port, "/v3/watch", '{"create_request":{"key":"YQ=="}}', { headers: { "Grpc-Timeout": "junk" } });
  assert.deepEqual(errorOf(watch), [400, "invalid grpc-timeout: junk", undefined]);
  s.backend.calls.length = 0;
  for (const expired of ["-5S", "10n", "999u"]) {
    const r = await call(s.port, "/v3/kv/put", { key: "dA==", value: "eA==" }, { headers: { "Grpc-Timeout": expired } });
    assert.deepEqual(errorOf(r), [504, "context deadline exceeded", undefined], expired);
  }
  assert.deepEqual(s.backend.calls, [], "no call made");
  const decodeFirst = await call(s.port, "/v3/kv/put", '{"key":5}', { headers: { "Grpc-Timeout": "-5S" } });
  assert.equal(decodeFirst.status, 400);
  // etcd's v3rpc checks (a key not provided) run in the server, which the call never reaches.
  const serverCheck = await call(s.port, "/v3/kv/txn", { success: [{ request_put: { key: "" } }] }, { headers: { "Grpc-Timeout": "10n" } });
  assert.deepEqual(errorOf(serverCheck), [504, "context deadline exceeded", undefined]);
  const expiredWatch = await call(s.port, "/v3/watch", '{"create_request":{"key":"YQ=="}}', { headers: { "Grpc-Timeout": "-1S" } });
  assert.deepEqual(errorOf(expiredWatch), [504, "context deadline exceeded", undefined]);
  for (const fine of ["0S", "+3M", "2S"]) {
    assert.equal((await call(s.port, "/v3/kv/put", { key: "dA==", value: "eA==" }, { headers: { "Grpc-Timeout": fine } })).status, 200, fine);
  }
});

test("a positive Grpc-Timeout is the call's deadline (etcd 3.4.23: a range or put on a member without quorum, 500m, is 504 code 4 at 0.50 s); the backend's waits see it", { timeout: 5000 }, async () => {
  const seen: Array<number | undefined> = [];
  const range = s.backend.range;
  s.backend.range = (_req, ctx) => {
    seen.push(ctx.deadline === undefined ? undefined : 1);
    // Never answers, as a linearizable read waiting for a leader that does not come.
    return new Promise(() => {});
  };
  try {
    const t0 = performance.now();
    const r = await call(s.port, "/v3/kv/range", { key: "YQ==" }, { headers: { "Grpc-Timeout": "300m" } });
    const took = performance.now() - t0;
    assert.equal(r.status, 504);
    assert.equal(r.text, '{"error":"context deadline exceeded","message":"context deadline exceeded","code":4}');
    assert.ok(took >= 280 && took < 2000, `answered after ${took} ms`);
    assert.deepEqual(seen, [1]);
  } finally {
    s.backend.range = range;
  }
  // A call that answers within its deadline is answered as without one.
  assert.equal((await call(s.port, "/v3/kv/range", { key: "YQ==" }, { headers: { "Grpc-Timeout": "5S" } })).status, 200);
});

test("a lock still waiting at its Grpc-Timeout is 504 code 4 and its key is removed (etcd 3.4.23: 504 at 0.50 s, the waiter's key gone)", { timeout: 5000 }, async () => {
  const grant = async (id: number): Promise<void> => assert.equal((await call(s.port, "/v3/lease/grant", { ID: String(id), TTL: 60 })).status, 200);
  await grant(4242);
  await grant(4243);
  assert.equal((await call(s.port, "/v3/lock/lock", { name: "aGVsZA==", lease: "4242" })).status, 200);
  const t0 = performance.now();
  const waiting = await call(s.port, "/v3/lock/lock", { name: "aGVsZA==", lease: "4243" }, { headers: { "Grpc-Timeout": "300m" } });
  const took = performance.now() - t0;
  assert.equal(waiting.status, 504);
  assert.equal(waiting.text, '{"error":"context deadline exceeded","message":"context deadline exceeded","code":4}');
  assert.ok(took >= 280 && took < 2000, `answered after ${took} ms`);
  const keysLeft = async (): Promise<number> => Number((JSON.parse((await call(s.port, "/v3/kv/range", { key: "aGVsZC8=", range_end: "aGVsZDA=", count_only: true })).text) as { count?: string }).count ?? 0);
  await until(async () => (await keysLeft()) === 1, "the waiter's key removed");
  // The shared backend as the other cases expect it.
  for (const id of ["4242", "4243"]) await call(s.port, "/v3/lease/revoke", { ID: id });
  await call(s.port, "/v3/kv/deleterange", { key: "aGVsZC8=", range_end: "aGVsZDA=" });
});

test("a stream ends at its Grpc-Timeout as etcd's gateway ends it (etcd 3.4.23, 1S: watch 'created' then the 504 error chunk at 1.0 s; observe with no leader 504 code 4; no keepalive after it)", { timeout: 8000 }, async () => {
  const DEADLINE_CHUNK = '{"error":{"grpc_code":4,"http_code":504,"message":"context deadline exceeded","http_status":"Gateway Timeout"}}';
  const t0 = performance.now();
  const w = await call(s.port, "/v3/watch", { create_request: { key: "dG8=" } }, { headers: { "Grpc-Timeout": "300m" } });
  const took = performance.now() - t0;
  assert.equal(w.status, 200);
  const [created, last, ...rest] = w.text.split("\n");
  assert.deepEqual(Object.keys((JSON.parse(created!) as { result: object }).result), ["header", "created"]);
  assert.equal(last, DEADLINE_CHUNK, "the error chunk, without a newline, ends the response");
  assert.deepEqual(rest, []);
  assert.ok(took >= 280 && took < 2000, `ended after ${took} ms`);
  const o = await call(s.port, "/v3/election/observe", { name: "bm9uZQ==" }, { headers: { "Grpc-Timeout": "300m" } });
  assert.equal(o.status, 504);
  assert.equal(o.text, '{"error":"context deadline exceeded","message":"context deadline exceeded","code":4}');
  assert.equal(o.headers["grpc-metadata-content-type"], undefined);
  // A keepalive stream whose body stays open: answered, then ended at the deadline; a
  // message sent after it renews nothing.
  assert.equal((await call(s.port, "/v3/lease/grant", { ID: "4244", TTL: 60 })).status, 200);
  const k = new StreamClient(s.port, "/v3/lease/keepalive", { headers: { "Grpc-Timeout": "300m" } });
  k.write({ ID: "4244" });
  await until(() => k.ended, "the keepalive stream ended", 3000);
  assert.equal(k.lines.length, 2, k.lines.join(" | "));
  assert.equal((JSON.parse(k.lines[0]!) as { result: { ID: string } }).result.ID, "4244");
  assert.equal(k.lines[1], DEADLINE_CHUNK);
  const renewals = (): number => s.backend.calls.filter((c) => c.method === "leaseKeepAlive").length;
  const before = renewals();
  k.write({ ID: "4244" });
  k.endBody();
  await call(s.port, "/v3/kv/range", { key: "YQ==" });
  assert.equal(renewals(), before);
  await call(s.port, "/v3/lease/revoke", { ID: "4244" });
  // A stream that ends first is not touched by its deadline.
  const snap = await call(s.port, "/v3/maintenance/snapshot", {}, { headers: { "Grpc-Timeout": "5S" } });
  assert.equal(snap.status, 200);
  assert.ok(!snap.text.includes('"error"'));
});

test("Grpc-Metadata-*-Bin headers must be base64 (padded at a multiple of 4, else unpadded), as grpc-gateway's decodeBinHeader: else 400 naming the canonical key", async () => {
  const r = await call(s.port, "/v3/kv/range", { key: "YQ==" }, { headers: { "grpc-metadata-foo-bin": "!!!" } });
  assert.equal(r.status, 400);
  assert.equal((JSON.parse(r.text) as { error: string }).error, "invalid binary header Grpc-Metadata-Foo-Bin: illegal base64 data at input byte 0");
  for (const [v, at] of [["YQ", undefined], ["YQ==", undefined], ["YQ=", 2], ["Y", 0], ["YWJjZ", 4], ["YW=j", 2]] as const) assert.equal(binHeaderError(v), at, v);
  for (const ok of ["YQ", "YWJj", ""]) assert.equal((await call(s.port, "/v3/kv/range", { key: "YQ==" }, { headers: { "Grpc-Metadata-X-Bin": ok } })).status, 200, ok);
});

test("a put whose raft request exceeds --max-request-bytes is too large; past the gRPC limit it is code 8", async () => {
  const big = Buffer.alloc(4096).toString("base64");
  const r = await call(s.port, "/v3/kv/put", { key: "YQ==", value: big });
  assert.equal(r.status, 400);
  assert.equal(JSON.parse(r.text).error, "etcdserver: request is too large");
  const huge = Buffer.alloc(4096 + 512 * 1024).toString("base64");
  const g = await call(s.port, "/v3/kv/put", { key: "YQ==", value: huge });
  assert.equal(g.status, 429);
  assert.match(JSON.parse(g.text).error, /^grpc: received message larger than max \(\d+ vs\. 528384\)$/);
  // A read-only txn does not go through raft: no raft size check.
  const read = await call(s.port, "/v3/kv/txn", { success: [{ request_range: { key: "YQ==", range_end: Buffer.alloc(3000).toString("base64") } }] });
  assert.equal(read.status, 200);
});

test("a body too large to hold any message under the gRPC limit is drained and refused with its whole size", async () => {
  const value = "x".repeat(2 * 528384 + 64 * 1024 + 100);
  const r = await call(s.port, "/v3/kv/put", { key: "YQ==", value });
  const size = Buffer.byteLength(JSON.stringify({ key: "YQ==", value }));
  assert.equal(r.status, 429);
  assert.equal(JSON.parse(r.text).error, `grpc: received message larger than max (${size} vs. 528384)`);
});

test("txn edge checks answer etcd's errors before the backend is called", async () => {
  const ops = Array.from({ length: 129 }, (_, i) => ({ request_put: { key: Buffer.from(`k${i}`).toString("base64") } }));
  const cases: Array<[object, string]> = [
    [{ success: ops }, "etcdserver: too many operations in txn request"],
    [{ compare: [{ target: "VALUE", value: "eA==" }] }, "etcdserver: key is not provided"],
    [{ success: [{}] }, "etcdserver: key not found"],
    [{ success: [{ request_put: { key: "YQ==" } }, { request_put: { key: "YQ==" } }] }, "etcdserver: duplicate key given in txn request"],
    [{ success: [{ request_put: { key: "YQ==", value: "eA==", ignore_value: true } }] }, "etcdserver: value is provided"],
  ];
  for (const [body, error] of cases) {
    const r = await call(s.port, "/v3/kv/txn", body);
    assert.equal(JSON.parse(r.text).error, error);
  }
});

test("leases, cluster, maintenance and auth routes answer etcd's shapes", async () => {
  const grant = JSON.parse((await call(s.port, "/v3/lease/grant", { TTL: 30, ID: "4242" })).text);
  assert.deepEqual([grant.ID, grant.TTL], ["4242", "30"]);
  assert.equal((await call(s.port, "/v3/lease/grant", { TTL: 30, ID: "4242" })).status, 412);
  assert.equal(JSON.parse((await call(s.port, "/v3/kv/lease/timetolive", { ID: "4242" })).text).grantedTTL, "30");
  assert.deepEqual(JSON.parse((await call(s.port, "/v3/lease/leases", {})).text).leases, [{ ID: "4242" }]);
  assert.equal(JSON.parse((await call(s.port, "/v3/lease/timetolive", { ID: "1" })).text).TTL, "-1");
  assert.equal((await call(s.port, "/v3/kv/lease/revoke", { ID: "4242" })).status, 200);
  assert.equal((await call(s.port, "/v3/lease/revoke", { ID: "4242" })).status, 404);

  const list = JSON.parse((await call(s.port, "/v3/cluster/member/list", {})).text);
  assert.equal(list.header.revision, undefined);
  assert.equal(list.members[0].name, "default");
  assert.equal((await call(s.port, "/v3/cluster/member/add", { peerURLs: ["not a url"] })).status, 400);
  const added = JSON.parse((await call(s.port, "/v3/cluster/member/add", { peerURLs: ["http://127.0.0.1:2390"], isLearner: true })).text);
  assert.deepEqual(added.member, { ID: "42", peerURLs: ["http://127.0.0.1:2390"], isLearner: true });
  assert.equal((await call(s.port, "/v3/cluster/member/remove", { ID: "1234" })).status, 404);

  assert.equal(JSON.parse((await call(s.port, "/v3/maintenance/status", {})).text).version, "3.4.23");
  assert.equal((await call(s.port, "/v3/maintenance/defragment", {})).text, "{}");
  assert.equal((await call(s.port, "/v3/maintenance/alarm", {})).text, "{}");
  assert.equal(JSON.parse((await call(s.port, "/v3/maintenance/hash", {})).text).hash, 3347376250);
  assert.equal((await call(s.port, "/v3/maintenance/transfer-leadership", { targetID: "5" })).status, 412);

  assert.equal((await call(s.port, "/v3/auth/enable", {})).status, 412);
  assert.equal((await call(s.port, "/v3/auth/user/add", { name: "root", password: "r" })).status, 200);
  assert.equal((await call(s.port, "/v3/auth/role/add", { name: "root" })).status, 200);
  assert.equal((await call(s.port, "/v3/auth/user/grant", { user: "root", role: "root" })).status, 200);
  assert.deepEqual(JSON.parse((await call(s.port, "/v3/auth/user/get", { name: "root" })).text).roles, ["root"]);
  assert.equal((await call(s.port, "/v3/auth/role/grant", { name: "root", perm: { permType: "READWRITE", key: "YQ==" } })).status, 200);
  assert.deepEqual(JSON.parse((await call(s.port, "/v3/auth/role/get", { role: "root" })).text).perm, [{ permType: "READWRITE", key: "YQ==" }]);
  assert.equal((await call(s.port, "/v3/auth/enable", {})).status, 200);
  const auth = JSON.parse((await call(s.port, "/v3/auth/authenticate", { name: "root", password: "r" })).text);
  assert.equal(auth.token, "root.token");
  assert.equal((await call(s.port, "/v3/auth/authenticate", { name: "root", password: "x" })).status, 400);
  assert.equal((await call(s.port, "/v3/auth/disable", {})).status, 200);
});
