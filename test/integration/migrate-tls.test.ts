// kvctl migrate from an etcd 3.4 that speaks only TLS, asks for a client certificate and
// has v2 and v3 auth on: --from-cacert/--from-cert/--from-key carry the TLS side,
// --from-user the Basic credentials (v2) and the token login (v3). Skipped with a notice
// when etcd is not installed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, runKvctl, startServer, type TestServer } from "../helpers/server.ts";
import { agent, http, until } from "../helpers/http.ts";
import { CertDir } from "../helpers/certs.ts";

const noEtcd = existsSync("/usr/bin/etcd") && existsSync("/usr/bin/etcdctl") ? false : "etcd/etcdctl 3.4 not installed: migrate TLS test skipped";
if (noEtcd !== false) console.log(`# notice: ${noEtcd}`);

let certs: CertDir;
let etcd: ChildProcess | undefined;
let etcdDir = "";
let url = "";
let kv: TestServer;

function etcdctl(api: "2" | "3", args: string[]): string {
  const tls = api === "2"
    ? ["--ca-file", certs.ca.cert, "--cert-file", client.cert, "--key-file", client.key, "--endpoints", url]
    : ["--cacert", certs.ca.cert, "--cert", client.cert, "--key", client.key, "--endpoints", url];
  const r = spawnSync("/usr/bin/etcdctl", [...tls, ...args], { env: { PATH: process.env["PATH"] ?? "", ETCDCTL_API: api }, encoding: "utf8" });
  assert.equal(r.status, 0, `etcdctl ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

let client: { cert: string; key: string };

before(async () => {
  if (noEtcd !== false) return;
  certs = new CertDir();
  // etcd 3.4's gateway dials its own gRPC port with the server certificate: it needs clientAuth too.
  const server = certs.leaf("etcd", { commonName: "etcd", hosts: ["127.0.0.1", "localhost"], extKeyUsage: ["serverAuth", "clientAuth"] });
  // No Common Name: etcd's gateway answers 400 to a certificate with one while auth is on.
  client = certs.leaf("client", { extKeyUsage: ["clientAuth"] });
  const port = await freePort();
  const peer = await freePort();
  url = `https://127.0.0.1:${port}`;
  etcdDir = mkdtempSync(join(tmpdir(), "kvctl-migrate-tls-"));
  etcd = spawn("/usr/bin/etcd", [
    "--name", "tls", "--data-dir", etcdDir, "--enable-v2=true",
    "--listen-client-urls", url, "--advertise-client-urls", url,
    "--listen-peer-urls", `http://127.0.0.1:${peer}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${peer}`,
    "--initial-cluster", `tls=http://127.0.0.1:${peer}`,
    "--cert-file", server.cert, "--key-file", server.key, "--client-cert-auth", "--trusted-ca-file", certs.ca.cert,
  ], { stdio: "ignore" });
  await until(() => spawnSync("/usr/bin/etcdctl", ["--cacert", certs.ca.cert, "--cert", client.cert, "--key", client.key, "--endpoints", url, "endpoint", "health"], { env: { PATH: process.env["PATH"] ?? "", ETCDCTL_API: "3" } }).status === 0, 20_000, "etcd with TLS up");
  // Data, then access control on both APIs (root:pw).
  etcdctl("2", ["mkdir", "/v2dir"]);
  etcdctl("2", ["set", "/v2dir/k", "v2 value"]);
  etcdctl("2", ["set", "/v2dir/_hidden", "h"]);
  etcdctl("3", ["put", "/v3/k", "v3 value"]);
  etcdctl("2", ["user", "add", "root:pw"]);
  etcdctl("2", ["auth", "enable"]);
  etcdctl("3", ["user", "add", "root:pw"]);
  etcdctl("3", ["role", "add", "root"]);
  etcdctl("3", ["user", "grant-role", "root", "root"]);
  etcdctl("3", ["auth", "enable"]);
  kv = await startServer();
});

after(async () => {
  if (noEtcd !== false) return;
  agent.destroy();
  await kv?.stop();
  if (etcd !== undefined && etcd.exitCode === null) {
    const done = new Promise((r) => etcd!.once("exit", r));
    etcd.kill("SIGTERM");
    await done;
  }
  rmSync(etcdDir, { recursive: true, force: true });
  certs?.remove();
});

test("migrate from a TLS etcd with client certificates and v2/v3 auth", { skip: noEtcd }, async () => {
  const tls = ["--from-cacert", certs.ca.cert, "--from-cert", client.cert, "--from-key", client.key];
  // Without the CA the TLS handshake fails: the source cannot be reached.
  const untrusted = await runKvctl(["--endpoints", kv.url, "migrate", "--from", url, "--from-user", "root:pw"], { timeoutMs: 30_000 });
  assert.equal(untrusted.code, 2, untrusted.stderr);
  assert.match(untrusted.stderr, /^Error:  cannot reach etcd at https:/);

  const r = await runKvctl(["--endpoints", kv.url, "migrate", "--from", url, ...tls, "--from-user", "root:pw"], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^v2: 1 directory \(0 empty\), 2 keys; 1 hidden, 0 with a TTL; copied at index \d+$/m);
  assert.match(r.stdout, /^v3: 1 key \(0 on 0 leases\); copied at revision \d+$/m);
  assert.equal(JSON.parse((await http("GET", `${kv.url}/v2/keys/v2dir/k`)).body).node.value, "v2 value");
  assert.equal(JSON.parse((await http("GET", `${kv.url}/v2/keys/v2dir/_hidden`)).body).node.value, "h");
  const got = await fetch(`${kv.url}/v3/kv/range`, { method: "POST", body: JSON.stringify({ key: Buffer.from("/v3/k").toString("base64") }) });
  const kvs = ((await got.json()) as { kvs: Array<{ value: string }> }).kvs;
  assert.equal(Buffer.from(kvs[0]!.value, "base64").toString(), "v3 value");
});
