// v3 auth judged where etcd 3.4.23 judges it, on three real members over the JSON gateway:
// an auth change goes through the leader (m1) and a call follows at once through a
// follower (m3), which may not have applied the change yet. etcd judges a write, a lease
// revocation and an auth change when it applies them, so what the follower has applied
// does not matter for those. Each case ran against etcd 3.4.23 (3 members) with
// AUTH_APPLY_ENDPOINTS=<leader>,<follower>,<follower> and gave the answers asserted here.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startCluster, type TestCluster } from "../helpers/cluster.ts";
import { until } from "../helpers/http.ts";
import { errorLine, etcdctl, installed } from "../helpers/grpc.ts";

let cluster: TestCluster | undefined;
after(async () => {
  await cluster?.stop();
});

const ROUNDS = 10;
const b64 = (s: string): string => Buffer.from(s).toString("base64");

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function call(url: string, path: string, body: unknown, token?: string): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== undefined) headers["authorization"] = token;
  const r = await fetch(url + path, { method: "POST", headers, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

async function ok(url: string, path: string, body: unknown, token?: string): Promise<Record<string, unknown>> {
  const r = await call(url, path, body, token);
  assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** "<status> <error>" of a refusal, "ok" for a success: what a round tallies. */
function outcome(r: Answer): string {
  return r.status === 200 ? "ok" : `${r.status} ${String(r.body["error"])} (${String(r.body["code"])})`;
}

function tally(outcomes: string[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const o of outcomes) t[o] = (t[o] ?? 0) + 1;
  return t;
}

const USER_EMPTY = "400 etcdserver: user name is empty (3)";
const DENIED = "403 etcdserver: permission denied (7)";
const OLD_REVISION = "400 etcdserver: revision of auth store is old (3)";

/** The leader's client URL first: AUTH_APPLY_ENDPOINTS (etcd, say) or a new kvctl cluster. */
async function endpoints(): Promise<string[]> {
  const given = process.env["AUTH_APPLY_ENDPOINTS"];
  const urls = given !== undefined ? given.split(",").map((u) => (u.startsWith("http") ? u : `http://${u}`)) : await (async () => {
    cluster = await startCluster(3);
    return cluster.members.map((m) => m.clientUrl);
  })();
  const status = await Promise.all(urls.map(async (u) => ({ u, s: await ok(u, "/v3/maintenance/status", {}) })));
  const leader = status.find(({ s }) => s["leader"] === (s["header"] as Record<string, unknown>)["member_id"]);
  assert.ok(leader, "a leader");
  return [leader.u, ...urls.filter((u) => u !== leader.u)];
}

test("three members: a write, a lease revocation and an auth change are judged at apply; reads at the member", { timeout: 60_000 }, async (t) => {
  const [m1, , m3] = await endpoints();
  assert.ok(m1 !== undefined && m3 !== undefined);
  await ok(m1, "/v3/auth/user/add", { name: "root", password: "rootpw" });
  await ok(m1, "/v3/auth/user/grant", { user: "root", role: "root" });
  await ok(m1, "/v3/auth/user/add", { name: "u1", password: "u1pw" });
  await ok(m1, "/v3/auth/role/add", { name: "r1" });
  await ok(m1, "/v3/auth/user/grant", { user: "u1", role: "r1" });
  await ok(m1, "/v3/auth/enable", {});
  const root = String((await ok(m1, "/v3/auth/authenticate", { name: "root", password: "rootpw" }))["token"]);
  const u1 = String((await ok(m3, "/v3/auth/authenticate", { name: "u1", password: "u1pw" }))["token"]);
  const perm = { name: "r1", perm: { permType: "READWRITE", key: b64("a/"), range_end: b64("a0") } };

  try {
    await t.test("a permission revoked through m1, then u1's LeaseRevoke through m3: refused, the lease and its key live on", async (s) => {
      const outcomes: string[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const id = String((await ok(m1, "/v3/lease/grant", { TTL: 60 }, root))["ID"]);
        await ok(m1, "/v3/kv/put", { key: b64(`a/held${i}`), value: b64("1"), lease: id }, root);
        await ok(m1, "/v3/auth/role/grant", perm, root);
        await ok(m1, "/v3/auth/role/revoke", { role: "r1", key: b64("a/"), range_end: b64("a0") }, root);
        const r = await call(m3, "/v3/kv/lease/revoke", { ID: id }, u1);
        outcomes.push(outcome(r));
        if (r.status !== 200) {
          const ttl = await ok(m1, "/v3/kv/lease/timetolive", { ID: id, keys: true }, root);
          assert.deepEqual(ttl["keys"], [b64(`a/held${i}`)], "the refused revocation left the lease its key");
          await ok(m1, "/v3/kv/lease/revoke", { ID: id }, root);
        }
      }
      // etcd 3.4.23: {"403 etcdserver: permission denied (7)": 10}, or some old revision.
      const counts = tally(outcomes);
      s.diagnostic(JSON.stringify(counts));
      assert.deepEqual(Object.keys(counts).filter((o) => o !== DENIED && o !== OLD_REVISION), [], JSON.stringify(counts));
    });

    await t.test("a LeaseRevoke refused at apply keeps the lease's deadline: it expires", async () => {
      const id = String((await ok(m1, "/v3/lease/grant", { TTL: 2 }, root))["ID"]);
      await ok(m1, "/v3/kv/put", { key: b64("b/held"), value: b64("1"), lease: id }, root);
      assert.equal(outcome(await call(m3, "/v3/kv/lease/revoke", { ID: id }, u1)), DENIED);
      assert.equal(outcome(await call(m3, "/v3/kv/lease/revoke", { ID: id })), USER_EMPTY);
      if (installed("etcdctl")) {
        // Over gRPC, as etcdctl prints the status.
        const hex = BigInt(id).toString(16);
        assert.equal(errorLine((await etcdctl(m3, ["--user", "u1:u1pw", "lease", "revoke", hex])).stderr), "Error: failed to revoke lease (etcdserver: permission denied)");
        assert.equal(errorLine((await etcdctl(m3, ["lease", "revoke", hex])).stderr), "Error: failed to revoke lease (etcdserver: user name is empty)");
      }
      await until(async () => Number((await ok(m3, "/v3/kv/range", { key: b64("b/held") }, root))["count"] ?? 0) === 0, 8000, "the lease expired");
      // A key-less lease: revoked for a caller without a token.
      const bare = String((await ok(m1, "/v3/lease/grant", { TTL: 60 }, root))["ID"]);
      assert.equal(outcome(await call(m3, "/v3/kv/lease/revoke", { ID: bare })), "ok");
    });

    await t.test("AuthEnable through m1, then a put without a token through m3: refused at apply, 'user name is empty'", async (s) => {
      const outcomes: string[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const token = String((await ok(m1, "/v3/auth/authenticate", { name: "root", password: "rootpw" }))["token"]);
        await ok(m1, "/v3/auth/disable", {}, token);
        await ok(m1, "/v3/auth/enable", {});
        outcomes.push(outcome(await call(m3, "/v3/kv/put", { key: b64("a/anon"), value: b64(String(i)) })));
      }
      // etcd 3.4.23: 30 of 30 'user name is empty'.
      s.diagnostic(JSON.stringify(tally(outcomes)));
      assert.deepEqual(tally(outcomes), { [USER_EMPTY]: ROUNDS });
    });

    await t.test("with auth on, reads without a token are refused; a grant through m1 is never refused by m3's older state", async (s) => {
      const fresh = String((await ok(m1, "/v3/auth/authenticate", { name: "root", password: "rootpw" }))["token"]);
      assert.equal(outcome(await call(m3, "/v3/kv/range", { key: b64("a/x"), serializable: true })), USER_EMPTY);
      assert.equal(outcome(await call(m3, "/v3/kv/range", { key: b64("a/x") })), USER_EMPTY);
      const outcomes: string[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const token = String((await ok(m3, "/v3/auth/authenticate", { name: "u1", password: "u1pw" }))["token"]);
        await ok(m1, "/v3/auth/role/grant", { name: "r1", perm: { permType: "READWRITE", key: b64(`g${i}`) } }, fresh);
        outcomes.push(outcome(await call(m3, "/v3/kv/put", { key: b64(`g${i}`), value: b64("1") }, token)));
      }
      // etcd 3.4.23: 29 of 30 served, 1 'revision of auth store is old'; never 'permission denied'.
      const counts = tally(outcomes);
      s.diagnostic(JSON.stringify(counts));
      assert.deepEqual(Object.keys(counts).filter((o) => o !== "ok" && o !== OLD_REVISION), [], JSON.stringify(counts));
    });
  } finally {
    // Left as found for a cluster given from outside (etcd).
    const token = String((await ok(m1, "/v3/auth/authenticate", { name: "root", password: "rootpw" }))["token"]);
    await call(m1, "/v3/auth/disable", {}, token);
    for (const [path, body] of [
      ["/v3/auth/user/delete", { name: "u1" }],
      ["/v3/auth/role/delete", { role: "r1" }],
      ["/v3/auth/user/delete", { name: "root" }],
      ["/v3/kv/deleterange", { key: b64("\0"), range_end: b64("\0") }],
    ] as const) {
      await call(m1, path, body);
    }
  }
});
