// `kvctl serve --proxy on|readonly` in front of real members: v2 reads, writes and watches
// through the proxy, failover when a member dies, etcd's 501 for writes to a readonly
// proxy, and a proxy that ends https from its clients and dials members that require client
// certificates with its own peer certificate (spec 5.2 rule 5).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kvctlBin, repoRoot } from "../helpers/server.ts";
import { startCluster, type TestCluster } from "../helpers/cluster.ts";
import { request, reservedPort, type ClientTls } from "../helpers/tls-server.ts";
import { CertDir } from "../helpers/certs.ts";
import { eventually } from "../../src/until.test-helper.ts";

// This file's ports (proxies and the https members): 23430-23449.
process.env["KVCTL_TEST_PORTS"] = "23430-23449";

interface Proc {
  url: string;
  child: ChildProcess;
  log: () => string;
}

let root: string;
let certs: CertDir;
let cluster: TestCluster;
const children: ChildProcess[] = [];

before(async () => {
  root = mkdtempSync(join(tmpdir(), "kvctl-proxy-"));
  certs = new CertDir();
  cluster = await startCluster(3);
});
after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await cluster.stop();
  rmSync(root, { recursive: true, force: true });
  certs.remove();
});

function spawnServe(flags: string[]): { child: ChildProcess; log: () => string } {
  const child = spawn(process.execPath, [kvctlBin, "serve", ...flags], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let out = "";
  const keep = (c: Buffer): void => {
    out = (out + c.toString("utf8")).slice(-100_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return { child, log: () => out };
}

/** The shared polling wait, with a proxy's or member's log in its timeout message. */
function until<T>(what: string, f: () => Promise<T | undefined>, log: () => string, ms = 20_000): Promise<T> {
  return eventually(f, what, ms, { intervalMs: 100, ignoreErrors: true, detail: () => log().slice(-4000) });
}

/** A proxy on a port of this file's range, ready once it knows `endpoints` members. */
async function startProxy(o: { flags: string[]; initialCluster: string; scheme?: "http" | "https"; tls?: ClientTls; endpoints: number }): Promise<Proc> {
  const scheme = o.scheme ?? "http";
  const url = `${scheme}://127.0.0.1:${await reservedPort()}`;
  const dir = mkdtempSync(join(root, "p-"));
  const { child, log } = spawnServe([
    "--data-dir", dir, "--listen-client-urls", url, "--initial-cluster", o.initialCluster,
    "--proxy-refresh-interval", "300", "--proxy-failure-wait", "3000", ...o.flags,
  ]);
  await until(`proxy with ${o.endpoints} endpoints`, async () => {
    const r = await request(url, { path: "/v2/config/local/proxy", tls: o.tls ?? {} });
    return (JSON.parse(r.body) as { endpoints: string[] }).endpoints.length === o.endpoints ? true : undefined;
  }, log);
  return { url, child, log };
}

const form = (v: Record<string, string>): { body: string; headers: Record<string, string> } => ({
  body: new URLSearchParams(v).toString(),
  headers: { "Content-Type": "application/x-www-form-urlencoded" },
});

test("a readonly proxy serves GET and refuses writes with etcd's 501 and empty body", async () => {
  const p = await startProxy({ flags: ["--proxy", "readonly"], initialCluster: cluster.initialCluster(), endpoints: 3 });
  const seed = await fetch(`${cluster.members[0]!.clientUrl}/v2/keys/ro`, { method: "PUT", body: new URLSearchParams({ value: "seed" }) });
  assert.equal(seed.status, 201);
  for (const method of ["PUT", "POST", "DELETE"]) {
    const r = await request(p.url, { method, path: "/v2/keys/ro", ...form({ value: "x" }) });
    assert.equal(r.status, 501, method);
    assert.equal(r.body, "", method);
    assert.equal(r.headers["content-length"], "0", method);
  }
  const g = await until("the seeded key through the proxy", async () => {
    const r = await request(p.url, { path: "/v2/keys/ro" });
    return r.status === 200 ? r : undefined;
  }, p.log);
  assert.equal((JSON.parse(g.body) as { node: { value: string } }).node.value, "seed");
});

test("a proxy forwards v2 writes, reads and watches to the members and fails over when one dies", async () => {
  // A long refresh interval keeps the proxy's order of endpoints fixed during the test.
  const p = await startProxy({ flags: ["--proxy", "on", "--proxy-refresh-interval", "60000"], initialCluster: cluster.initialCluster(), endpoints: 3 });
  const put = await request(p.url, { method: "PUT", path: "/v2/keys/px", ...form({ value: "1" }) });
  assert.equal(put.status, 201, put.body);
  assert.ok(put.headers["x-etcd-index"] !== undefined, "the member's headers come through");
  const got = await request(p.url, { path: "/v2/keys/px?quorum=true" });
  assert.equal((JSON.parse(got.body) as { node: { value: string } }).node.value, "1");

  // A long-poll watch through the proxy sees a write made on a member directly (waitIndex:
  // the write may land before the watch reaches a member).
  const next = Number(put.headers["x-etcd-index"]) + 1;
  const watch = request(p.url, { path: `/v2/keys/px?wait=true&waitIndex=${next}` });
  const direct = await fetch(`${cluster.members[1]!.clientUrl}/v2/keys/px`, { method: "PUT", body: new URLSearchParams({ value: "2" }) });
  assert.equal(direct.status, 200);
  const w = JSON.parse((await watch).body) as { action: string; node: { value: string } };
  assert.deepEqual([w.action, w.node.value], ["set", "2"]);

  // A long poll that has not fired yet already has its head (200, X-Etcd-Index) through the
  // proxy, as from a member: clients wait on the status before the body.
  const head = await new Promise<number>((resolve, reject) => {
    const u = new URL(`${p.url}/v2/keys/px-idle?wait=true`);
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, agent: false }, (res) => {
      resolve(res.statusCode ?? 0);
      req.destroy();
    });
    req.on("error", reject);
    req.setTimeout(5000, () => req.destroy(new Error("no head within 5 s")));
    req.end();
  });
  assert.equal(head, 200);

  // Kill the member the proxy tries first: every request still gets an answer from the others.
  const order = (JSON.parse((await request(p.url, { path: "/v2/config/local/proxy" })).body) as { endpoints: string[] }).endpoints;
  const first = cluster.members.find((m) => m.clientUrl === order[0]);
  assert.ok(first, `${order[0]} is a member`);
  await cluster.kill(first);
  for (let i = 0; i < 8; i++) {
    const r = await request(p.url, { path: "/v2/keys/px" });
    assert.equal(r.status, 200, `read ${i}: ${r.body}`);
  }
  const w2 = await until("a write after the kill", async () => {
    const r = await request(p.url, { method: "PUT", path: "/v2/keys/px", ...form({ value: "3" }) });
    return r.status === 200 ? r : undefined;
  }, p.log);
  assert.equal((JSON.parse(w2.body) as { node: { value: string } }).node.value, "3");
  assert.match(p.log(), /marked endpoint unavailable/);
  const now = (JSON.parse((await request(p.url, { path: "/v2/config/local/proxy" })).body) as { endpoints: string[] }).endpoints;
  assert.deepEqual(now, order.slice(1), "the dead member is skipped for --proxy-failure-wait");
});

test("an https proxy ends its clients' TLS and dials client-cert members with its own peer certificate", async () => {
  const server = certs.server("member");
  const ports = [];
  for (let i = 0; i < 3; i++) ports.push({ client: await reservedPort(), peer: await reservedPort() });
  const initial = ports.map((p, i) => `t${i}=http://127.0.0.1:${p.peer}`).join(",");
  const memberTls: ClientTls = { ca: certs.ca.pem.certPem, ...(() => { const c = certs.client("root"); return { cert: c.pem.certPem, key: c.pem.keyPem }; })() };
  const members = ports.map((p, i) => {
    const url = `https://127.0.0.1:${p.client}`;
    return { url, ...spawnServe([
      "--name", `t${i}`, "--data-dir", join(root, `t${i}`),
      "--listen-client-urls", url, "--advertise-client-urls", url,
      "--listen-peer-urls", `http://127.0.0.1:${p.peer}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${p.peer}`,
      "--initial-cluster", initial, "--heartbeat-interval", "50", "--election-timeout", "500",
      "--cert-file", server.cert, "--key-file", server.key, "--trusted-ca-file", certs.ca.cert, "--client-cert-auth",
    ]) };
  });
  const allLogs = (): string => members.map((m) => m.log().slice(-2000)).join("\n---\n");
  for (const m of members) await until("https member healthy", async () => ((await request(m.url, { tls: memberTls })).status === 200 ? true : undefined), allLogs);

  const proxyServer = certs.server("proxy-server");
  const proxyPeer = certs.leaf("proxy-peer", { commonName: "proxy", extKeyUsage: ["clientAuth"] });
  const clientSide = { ca: certs.ca.pem.certPem };
  const proxyFlags = (peer: { cert: string; key: string }): string[] => [
    "--proxy", "on", "--cert-file", proxyServer.cert, "--key-file", proxyServer.key,
    "--peer-cert-file", peer.cert, "--peer-key-file", peer.key, "--peer-trusted-ca-file", certs.ca.cert,
  ];
  const p = await startProxy({ flags: proxyFlags(proxyPeer), initialCluster: initial, scheme: "https", tls: clientSide, endpoints: 3 });
  // The proxy's clients need no certificate; the members see the proxy's.
  const put = await request(p.url, { method: "PUT", path: "/v2/keys/tls", ...form({ value: "via-proxy" }), tls: clientSide });
  assert.equal(put.status, 201, put.body);
  const got = await request(p.url, { path: "/v2/keys/tls?quorum=true", tls: clientSide });
  assert.equal((JSON.parse(got.body) as { node: { value: string } }).node.value, "via-proxy");
  const direct = await request(members[2]!.url, { path: "/v2/keys/tls?quorum=true", tls: memberTls });
  assert.equal((JSON.parse(direct.body) as { node: { value: string } }).node.value, "via-proxy");

  // A peer certificate without the clientAuth usage is refused by every member.
  const serverOnly = certs.leaf("proxy-peer-server-only", { commonName: "proxy", extKeyUsage: ["serverAuth"] });
  const bad = await startProxy({ flags: proxyFlags(serverOnly), initialCluster: initial, scheme: "https", tls: clientSide, endpoints: 3 });
  const refused = await request(bad.url, { path: "/v2/keys/tls", tls: clientSide });
  assert.equal(refused.status, 502);
  assert.equal(refused.body, '{"message":"httpproxy: unable to get response from 3 endpoint(s)"}');
  assert.match(bad.log(), /failed to direct request/);
});
