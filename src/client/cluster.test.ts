import { test } from "node:test";
import assert from "node:assert/strict";
import { ClusterClient } from "./cluster.ts";
import { ClusterError, DeadlineExceededError, NetworkError, isConnectionError } from "./errors.ts";
import { createV2KeysApi } from "./v2-keys.ts";
import { syncEndpoints } from "./members.ts";
import { V2Error } from "../api/v2-errors.ts";
import type { HttpRequest, HttpResponse, Transport } from "./transport.ts";

type Answer = HttpResponse | Error;

/** A scripted transport: answers by origin, records every request. */
function fakeTransport(answers: Record<string, Answer | Answer[]>): Transport & { sent: HttpRequest[] } {
  const sent: HttpRequest[] = [];
  return {
    sent,
    async request(req) {
      sent.push(req);
      const a = answers[req.origin];
      const next = Array.isArray(a) ? a.shift() : a;
      if (next === undefined) throw new Error(`no answer for ${req.origin}`);
      if (next instanceof Error) throw next;
      return next;
    },
    close() {},
  };
}

const ok = (body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status: 200,
  statusText: "OK",
  headers,
  body: JSON.stringify(body),
});
const refused = (host: string): NetworkError =>
  new NetworkError(`dial tcp ${host}: connect: connection refused`, { code: "ECONNREFUSED", sent: false, connection: true });
const reset = (): NetworkError =>
  new NetworkError("read tcp b:2: read: connection reset by peer", { code: "ECONNRESET", sent: true, connection: true });
const getFoo = { action: "get", node: { key: "/foo", value: "bar", modifiedIndex: 3, createdIndex: 3 } };

test("ClusterClient tries endpoints in order and pins the one that answered", async () => {
  const t = fakeTransport({ "http://a:1": refused("a:1"), "http://b:2": [ok(getFoo), ok(getFoo)] });
  const c = new ClusterClient({ endpoints: ["http://a:1", "http://b:2"], transport: t });
  const keys = createV2KeysApi(c);
  await keys.get("foo");
  await keys.get("foo");
  assert.deepEqual(t.sent.map((r) => r.origin), ["http://a:1", "http://b:2", "http://b:2"]);
});

test("ClusterClient reports every failure in one ClusterError", async () => {
  const t = fakeTransport({
    "http://a:1": refused("a:1"),
    "http://b:2": { status: 503, statusText: "Service Unavailable", headers: {}, body: "" },
  });
  const c = new ClusterClient({ endpoints: ["http://a:1", "http://b:2"], transport: t });
  await assert.rejects(createV2KeysApi(c).get("foo"), (err: unknown) => {
    assert.ok(err instanceof ClusterError);
    assert.equal(
      err.message,
      "client: etcd cluster is unavailable or misconfigured; error #0: dial tcp a:1: connect: connection refused; error #1: client: etcd member http://b:2 has no leader",
    );
    assert.equal(isConnectionError(err), false, "a 5xx is not a connection error");
    return true;
  });
});

test("a one-shot request moves on only when it was surely never sent", async () => {
  const t = fakeTransport({ "http://a:1": [refused("a:1"), reset()], "http://b:2": ok({ ...getFoo, action: "delete" }) });
  const c = new ClusterClient({ endpoints: ["http://a:1", "http://b:2"], transport: t });
  const keys = createV2KeysApi(c);
  await keys.delete("foo"); // refused on a: safe to send to b
  c.setEndpoints(["http://a:1", "http://b:2"]);
  await assert.rejects(keys.delete("foo"), (err: unknown) => err instanceof NetworkError && err.code === "ECONNRESET");
  assert.deepEqual(t.sent.map((r) => r.origin), ["http://a:1", "http://b:2", "http://a:1"]);
});

test("a one-shot request that reached no endpoint fails with the first endpoint's error, not a ClusterError (Go's client)", async () => {
  const t = fakeTransport({ "http://a:1": refused("a:1"), "http://b:2": refused("b:2") });
  const c = new ClusterClient({ endpoints: ["http://a:1", "http://b:2"], transport: t });
  await assert.rejects(createV2KeysApi(c).delete("foo"), (err: unknown) => err instanceof NetworkError && err.message === "dial tcp a:1: connect: connection refused");
  assert.deepEqual(t.sent.map((r) => r.origin), ["http://a:1", "http://b:2"]);
});

test("an auth change that reached no endpoint fails with a ClusterError (Go's client does not mark it one-shot)", async () => {
  const t = fakeTransport({ "http://a:1": refused("a:1") });
  const c = new ClusterClient({ endpoints: ["http://a:1"], transport: t });
  await assert.rejects(c.do({ method: "PUT", path: () => "/v2/auth/users/u1", body: "{}" }, { oneShot: true }), ClusterError);
});

test("a deadline stops the attempts at once", async () => {
  const t = fakeTransport({ "http://a:1": new DeadlineExceededError(), "http://b:2": ok(getFoo) });
  const c = new ClusterClient({ endpoints: ["http://a:1", "http://b:2"], transport: t });
  await assert.rejects(createV2KeysApi(c).get("foo"), DeadlineExceededError);
  assert.equal(t.sent.length, 1);
});

test("credentials, header timeout and the debug curl line go with each attempt", async () => {
  const t = fakeTransport({ "http://a:1": ok(getFoo) });
  const curls: string[] = [];
  const c = new ClusterClient({
    endpoints: ["http://a:1"],
    transport: t,
    headerTimeoutMs: 2000,
    credentials: { username: "root", password: "pw" },
    onRequest: (line) => curls.push(line),
  });
  await createV2KeysApi(c).set("a b", "x&y", { ttl: 5, prevValue: "old" });
  const req = t.sent[0];
  assert.equal(req?.headers?.["authorization"], `Basic ${Buffer.from("root:pw").toString("base64")}`);
  assert.equal(req?.headerTimeoutMs, 2000);
  assert.deepEqual(curls, ['curl -X PUT http://a:1/v2/keys/a%20b?prevValue=old -d "ttl=5&value=x%26y"']);
});

const requestShapes: { name: string; call: (k: ReturnType<typeof createV2KeysApi>) => Promise<unknown>; method: string; path: string; body?: string }[] = [
  { name: "get", call: (k) => k.get("/d", { recursive: true }), method: "GET", path: "/v2/keys/d?quorum=false&recursive=true&sorted=false" },
  { name: "create", call: (k) => k.create("/k", "v"), method: "PUT", path: "/v2/keys/k?prevExist=false", body: "value=v" },
  { name: "update", call: (k) => k.update("/k", "v", { ttl: 3 }), method: "PUT", path: "/v2/keys/k?prevExist=true", body: "ttl=3&value=v" },
  { name: "set a directory", call: (k) => k.set("/d", "", { dir: true, prevExist: "" }), method: "PUT", path: "/v2/keys/d?dir=true", body: "" },
  { name: "compare-and-swap", call: (k) => k.set("/k", "v", { prevIndex: 7, prevValue: "o" }), method: "PUT", path: "/v2/keys/k?prevIndex=7&prevValue=o", body: "value=v" },
  { name: "in-order create", call: (k) => k.createInOrder("/q", "job", { ttl: 9 }), method: "POST", path: "/v2/keys/q", body: "ttl=9&value=job" },
  { name: "delete", call: (k) => k.delete("/d", { recursive: true, dir: true, prevValue: "x" }), method: "DELETE", path: "/v2/keys/d?dir=true&prevValue=x&recursive=true" },
  { name: "watch", call: (k) => k.watcher("/w", { afterIndex: 4, recursive: true }).next(), method: "GET", path: "/v2/keys/w?recursive=true&wait=true&waitIndex=5" },
];

for (const c of requestShapes) {
  test(`V2KeysApi sends etcd client's request for ${c.name}`, async () => {
    const t = fakeTransport({ "http://a:1": ok(getFoo) });
    await c.call(createV2KeysApi(new ClusterClient({ endpoints: ["http://a:1"], transport: t })));
    assert.equal(t.sent[0]?.method, c.method);
    assert.equal(t.sent[0]?.path, c.path);
    assert.equal(t.sent[0]?.body, c.body);
  });
}

test("a watcher follows on from the last event and skips empty long-poll answers", async () => {
  const empty: HttpResponse = { status: 200, statusText: "OK", headers: {}, body: "" };
  const t = fakeTransport({ "http://a:1": [empty, ok({ action: "set", node: { key: "/w", value: "1", modifiedIndex: 10 } }), ok(getFoo)] });
  const w = createV2KeysApi(new ClusterClient({ endpoints: ["http://a:1"], transport: t })).watcher("/w");
  await w.next();
  await w.next();
  assert.deepEqual(
    t.sent.map((r) => r.path),
    ["/v2/keys/w?recursive=false&wait=true&waitIndex=0", "/v2/keys/w?recursive=false&wait=true&waitIndex=0", "/v2/keys/w?recursive=false&wait=true&waitIndex=11"],
  );
  assert.equal(t.sent[0]?.headerTimeoutMs, 0, "no header timeout on a long poll");
});

test("results read X-Kv-Index, falling back to X-Etcd-Index", async () => {
  const t = fakeTransport({
    "http://a:1": [
      ok(getFoo, { "x-kv-index": "5", "x-etcd-index": "4", "x-kv-cluster-id": "kv" }),
      ok(getFoo, { "x-etcd-index": "4", "x-etcd-cluster-id": "etcd" }),
    ],
  });
  const keys = createV2KeysApi(new ClusterClient({ endpoints: ["http://a:1"], transport: t }));
  const a = await keys.get("foo");
  const b = await keys.get("foo");
  assert.deepEqual([a.index, a.clusterId, b.index, b.clusterId], [5, "kv", 4, "etcd"]);
});

test("error bodies become V2Error; garbage becomes etcd's invalid-json error", async () => {
  const t = fakeTransport({
    "http://a:1": [
      { status: 404, statusText: "Not Found", headers: {}, body: '{"errorCode":100,"message":"Key not found","cause":"/x","index":9}\n' },
      { status: 200, statusText: "OK", headers: {}, body: "<html>" },
    ],
  });
  const keys = createV2KeysApi(new ClusterClient({ endpoints: ["http://a:1"], transport: t }));
  await assert.rejects(keys.get("x"), (err: unknown) => err instanceof V2Error && err.errorCode === 100 && err.cause_ === "/x" && err.index === 9);
  await assert.rejects(keys.get("x"), /client: response is invalid json/);
});

test("syncEndpoints replaces the endpoints with the members' client URLs", async () => {
  const members = { members: [{ id: "1", name: "a", peerURLs: [], clientURLs: ["http://c1:1", "http://c2:2"] }] };
  const t = fakeTransport({ "http://seed:1": ok(members) });
  const c = new ClusterClient({ endpoints: ["http://seed:1"], transport: t });
  await syncEndpoints(c);
  assert.deepEqual(c.endpoints(), ["http://c1:1", "http://c2:2"]);
  assert.equal(t.sent[0]?.path, "/v2/members");
});
