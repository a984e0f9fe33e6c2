// --auth-token jwt,... end to end: kvctl started with RS256 keys issues etcd's JWTs on
// Authenticate, and accepts them on the JSON gateway and over gRPC (etcdctl --user). When
// etcd 3.4 is installed, the real etcd given the same public key accepts kvctl's token too,
// and kvctl accepts etcd's: the bytes are the same scheme, not just a look-alike.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { etcdctl, installed, startGrpcServer, waitGrpcReady, type GrpcTestServer } from "../helpers/grpc.ts";

const haveEtcdctl = installed("etcdctl");
const haveEtcd = haveEtcdctl && installed("etcd");
const b64 = (s: string): string => Buffer.from(s).toString("base64");

async function gw(s: GrpcTestServer, path: string, body: unknown, token?: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${s.url}/v3/${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: token }) } });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function enableAuth(s: GrpcTestServer): Promise<void> {
  for (const [path, body] of [["auth/user/add", { name: "root", password: "pw" }], ["auth/user/grant", { user: "root", role: "root" }], ["auth/enable", {}]] as const) {
    const r = await gw(s, path, body);
    assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.json)}`);
  }
}

async function login(s: GrpcTestServer): Promise<string> {
  const r = await gw(s, "auth/authenticate", { name: "root", password: "pw" });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json["token"] as string;
}

describe("--auth-token jwt (RS256)", { skip: haveEtcdctl ? false : "etcdctl not installed" }, () => {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-jwt-"));
  const pair = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const priv = join(dir, "priv.pem");
  const pub = join(dir, "pub.pem");
  writeFileSync(priv, pair.privateKey.export({ format: "pem", type: "pkcs8" }));
  writeFileSync(pub, pair.publicKey.export({ format: "pem", type: "spki" }));
  const flag = `--auth-token=jwt,pub-key=${pub},priv-key=${priv},sign-method=RS256,ttl=10m`;
  let kv: GrpcTestServer;
  let ref: GrpcTestServer | undefined;

  before(async () => {
    kv = await startGrpcServer("kvctl", [flag]);
    if (haveEtcd) ref = await startGrpcServer("etcd", [flag]);
    await Promise.all([waitGrpcReady(kv), ref === undefined ? undefined : waitGrpcReady(ref)]);
    await Promise.all([enableAuth(kv), ref === undefined ? undefined : enableAuth(ref)]);
  });
  after(async () => {
    await Promise.all([kv?.stop(), ref?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  test("Authenticate answers a three-part JWT with etcd's header and claims", async () => {
    const token = await login(kv);
    const parts = token.split(".");
    assert.equal(parts.length, 3, token);
    assert.deepEqual(JSON.parse(Buffer.from(parts[0]!, "base64url").toString()), { alg: "RS256", typ: "JWT" });
    const claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(claims), ["exp", "revision", "username"]);
    assert.equal(claims["username"], "root");
    assert.equal(typeof claims["revision"], "number");
    const exp = claims["exp"] as number;
    assert.ok(Math.abs(exp - (Date.now() / 1000 + 600)) < 30, `exp ${exp} is about ten minutes ahead`);
  });

  test("the token works on the gateway; a tampered one is 401", async () => {
    const token = await login(kv);
    assert.equal((await gw(kv, "kv/put", { key: b64("jwt/a"), value: b64("1") }, token)).status, 200);
    const got = await gw(kv, "kv/range", { key: b64("jwt/a") }, token);
    assert.equal(got.status, 200);
    assert.equal((got.json["kvs"] as Array<{ value: string }>)[0]!.value, b64("1"));
    const [h, , s] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ exp: 4_000_000_000, revision: 99, username: "root" })).toString("base64url");
    const bad = await gw(kv, "kv/range", { key: b64("jwt/a") }, `${h}.${forged}.${s}`);
    assert.equal(bad.status, 401, JSON.stringify(bad.json));
    assert.match(JSON.stringify(bad.json), /invalid auth token/);
    assert.equal((await gw(kv, "kv/range", { key: b64("jwt/a") })).status, 400, "no token: user name is empty");
  });

  test("etcdctl --user authenticates and reads over gRPC", async () => {
    const put = await etcdctl(kv.endpoint, ["--user", "root:pw", "put", "jwt/b", "2"]);
    assert.equal(put.code, 0, put.stderr);
    const get = await etcdctl(kv.endpoint, ["--user", "root:pw", "get", "jwt/b"]);
    assert.equal(get.code, 0, get.stderr);
    assert.equal(get.stdout, "jwt/b\n2\n");
    const wrong = await etcdctl(kv.endpoint, ["--user", "root:nope", "get", "jwt/b"]);
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /authentication failed/);
  });

  test("a token issued before an auth change is refused (revision of auth store is old)", async () => {
    const token = await login(kv);
    assert.equal((await gw(kv, "auth/role/add", { name: "reader" }, token)).status, 200);
    const old = await gw(kv, "kv/range", { key: b64("jwt/a") }, token);
    assert.match(JSON.stringify(old.json), /revision of auth store is old/);
    assert.equal((await gw(kv, "kv/range", { key: b64("jwt/a") }, await login(kv))).status, 200);
  });

  test("etcd 3.4 with the same keys accepts kvctl's token, and kvctl accepts etcd's", { skip: haveEtcd ? false : "etcd not installed" }, async () => {
    // Both auth states went through the same steps except the role added above on kvctl.
    await gw(ref!, "auth/role/add", { name: "reader" }, await login(ref!));
    const fromKv = await login(kv);
    const fromEtcd = await login(ref!);
    const onEtcd = await gw(ref!, "kv/range", { key: b64("jwt/a") }, fromKv);
    assert.equal(onEtcd.status, 200, JSON.stringify(onEtcd.json));
    const onKv = await gw(kv, "kv/range", { key: b64("jwt/a") }, fromEtcd);
    assert.equal(onKv.status, 200, JSON.stringify(onKv.json));
  });
});
