// Which plain GETs the fast lane answers itself once access control or a host whitelist is
// on. Every request it declines goes through the router, which answers it (refusals
// included); the byte-for-byte comparison with the router is test/integration/fast-lane.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PasswordVerifier, V2AuthState } from "../../auth/index.ts";
import { hashPassword } from "../../auth/index.ts";
import { V2Store } from "../../store/v2/index.ts";
import type { FastHandler, FastResponse, RequestHead } from "./fast-lane.ts";
import { keysFastGet, type KeysFastGetHost } from "./keys-fast-get.ts";
import { V2HttpMetrics } from "../metrics/v2-http-metrics.ts";

const basic = (s: string): string => "Basic " + Buffer.from(s).toString("base64");

/** The status of an answer given at once (not a promise). */
const status = (r: ReturnType<FastHandler>): number | undefined => (r instanceof Promise ? assert.fail("a promise") : r?.status);

async function fakeServer(opts: { hostWhitelist?: string[]; auth?: boolean; clientCertAuth?: boolean; enableV2?: boolean; cors?: string[] } = {}) {
  const store = new V2Store();
  for (const k of ["/pub/a", "/pub/sub/b", "/team/x", "/secret"]) store.set(k, { value: "v" }, Date.now());
  const hash = await hashPassword("pw");
  const auth = V2AuthState.recover({
    version: 1,
    enabled: opts.auth ?? false,
    initialized: true,
    users: [
      { user: "root", password: hash, roles: ["root"] },
      { user: "alice", password: hash, roles: ["team"] },
    ],
    roles: [
      { role: "guest", permissions: { read: ["/pub/*"], write: [] } },
      { role: "team", permissions: { read: ["/team/x"], write: [] } },
    ],
  });
  const counted = { requests: 0 };
  const v2Http = new V2HttpMetrics();
  const server: KeysFastGetHost = {
    metrics: { v2Http },
    noteClientRequest: () => void counted.requests++,
    store,
    auth,
    passwordVerifier: new PasswordVerifier({ capacity: 1024 }),
    appliedIndex: 5,
    term: 2,
    config: { hostWhitelist: opts.hostWhitelist ?? [], clientTls: { clientCertAuth: opts.clientCertAuth ?? false }, enableV2: opts.enableV2 ?? true, cors: opts.cors ?? ["*"] },
    doV2: () => assert.fail("the lane never writes"),
    linearizableRead: () => assert.fail("the lane never makes quorum reads"),
  };
  const lane = keysFastGet({ server, clusterId: "c1", watches: new Set() });
  const get = (target: string, headers: { host?: string; authorization?: string } = {}) => {
    const head: RequestHead = { method: "GET", target, host: headers.host ?? "127.0.0.1:2379", authorization: headers.authorization, length: 40 };
    return lane(head);
  };
  return { get, counted, v2Http };
}

test("--enable-v2=false and a restricted --cors leave every request to the router", async () => {
  assert.equal((await fakeServer({ enableV2: false })).get("/v2/keys/secret"), undefined);
  assert.equal((await fakeServer({ cors: ["http://a.example:80"] })).get("/v2/keys/secret"), undefined);
});

test("without access control or whitelist the lane answers plain GETs, found or not", async () => {
  const { get, counted, v2Http } = await fakeServer();
  assert.equal(status(get("/v2/keys/secret")), 200);
  assert.equal(status(get("/v2/keys/missing")), 404);
  assert.equal(counted.requests, 2, "every answered request is counted (disk-wait.ts needs it)");
  assert.equal(get("/v2/keys/secret?quorum=true"), undefined);
  assert.equal(counted.requests, 2, "a declined one is counted by the router");
  // etcd_http_*: both received, the 404 failed, the 200 timed; the declined one is the router's.
  assert.equal(v2Http.receivedTotal.value({ method: "GET" }), 2);
  assert.equal(v2Http.failedTotal.value({ method: "GET", code: "404" }), 1);
  assert.equal(v2Http.successfulDuration.count({ method: "GET" }), 1);
  assert.equal(v2Http.receivedTotal.value({ method: "QGET" }), 0);
});

test("with a host whitelist the lane answers listed hosts only", async () => {
  const { get } = await fakeServer({ hostWhitelist: ["127.0.0.1", "kv.example"] });
  assert.equal(status(get("/v2/keys/secret", { host: "kv.example:2379" })), 200);
  assert.equal(status(get("/v2/keys/secret", { host: "127.0.0.1" })), 200);
  // The router answers 421 to these.
  assert.equal(get("/v2/keys/secret", { host: "evil.example:2379" }), undefined);
  assert.equal(get("/v2/keys/secret", { host: "" }), undefined);
});

test("with access control on the lane answers as the router would: the guest, users, refusals", async () => {
  const { get, v2Http } = await fakeServer({ auth: true });
  // The guest reads /pub/*, not the rest; a recursive read needs a pattern that covers it.
  assert.equal(status(get("/v2/keys/pub/a")), 200);
  assert.equal(status(get("/v2/keys/pub/missing")), 404);
  assert.equal(status(get("/v2/keys/secret")), 401);
  assert.match(String((get("/v2/keys/secret") as FastResponse).body), /"errorCode":110/);
  assert.equal(status(get("/v2/keys/pub?recursive=true")), 401);
  // Bare /v2/keys is checked as "" by the router: never answered here.
  assert.equal(get("/v2/keys"), undefined);
  assert.equal(get("/v2/keys/"), undefined);
  // A credential not verified yet: the answer waits for the KDF, then it is cached.
  const root = { authorization: basic("root:pw") };
  const first = get("/v2/keys/secret", root);
  assert.ok(first instanceof Promise);
  assert.equal((await first)?.status, 200);
  assert.equal(status(get("/v2/keys/secret?recursive=true", root)), 200);
  // A wrong password is checked every time (failures are not cached) and refused.
  for (let i = 0; i < 2; i++) {
    const wrong = get("/v2/keys/team/x", { authorization: basic("alice:wrong") });
    assert.ok(wrong instanceof Promise);
    assert.equal((await wrong)?.status, 401);
  }
  const alice = { authorization: basic("alice:pw") };
  assert.equal((await get("/v2/keys/team/x", alice))?.status, 200);
  assert.equal(status(get("/v2/keys/team/x", alice)), 200);
  assert.equal(status(get("/v2/keys/secret", alice)), 401);
  // A malformed header is refused.
  assert.equal((await get("/v2/keys/pub/a", { authorization: "Bearer x" }))?.status, 401);
  // etcd counts a request once authorized: the refusals (401) are neither received nor failed.
  assert.equal(v2Http.receivedTotal.value({ method: "GET" }), 6);
  assert.equal(v2Http.failedTotal.value({ method: "GET", code: "404" }), 1);
  assert.equal(v2Http.failedTotal.value({ method: "GET", code: "401" }), 0);
  assert.equal(v2Http.successfulDuration.count({ method: "GET" }), 5);
});

test("with client certificate authentication and no header the lane leaves the request to the router", async () => {
  const { get } = await fakeServer({ auth: true, clientCertAuth: true });
  assert.equal(get("/v2/keys/pub/a"), undefined);
});
