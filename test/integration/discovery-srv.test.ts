// --discovery-srv: three `kvctl serve` members bootstrap from SRV records served by the test
// DNS server (KV_DNS_SERVER points them at it), over http (_etcd-server._tcp) and https
// (_etcd-server-ssl._tcp, peer certificates listing the domain), and a member whose peer
// certificate does not list the domain is refused by the others, with Go's error in their log.
// SRV targets are "localhost": peers dial the URLs built from the records, through the system
// resolver, and /etc/hosts knows that name.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kvctlBin, repoRoot } from "../helpers/server.ts";
import { reservedPort } from "../helpers/tls-server.ts";
import { startDnsServer, type TestDnsServer } from "../helpers/dns-server.ts";
import { CertDir, type CertFiles } from "../helpers/certs.ts";
import { srvResolver } from "../../src/server/discovery-srv.ts";
import { eventually } from "../../src/until.test-helper.ts";

// This file's ports: 23410-23429.
process.env["KVCTL_TEST_PORTS"] = "23410-23429";
const DOMAIN = "example.test";

interface Member {
  name: string;
  clientUrl: string;
  peerPort: number;
  child: ChildProcess;
  log: () => string;
}

let dns: TestDnsServer;
let root: string;
let certs: CertDir;
const children: ChildProcess[] = [];

before(async () => {
  dns = await startDnsServer({ port: await reservedPort() });
  root = mkdtempSync(join(tmpdir(), "kvctl-srv-"));
  certs = new CertDir();
});
after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await dns.close();
  rmSync(root, { recursive: true, force: true });
  certs.remove();
});

/** Three members that know each other only through the SRV records of `scheme`. */
async function startSrvMembers(o: { scheme: "http" | "https"; tag: string; certFor?: (i: number) => CertFiles }): Promise<Member[]> {
  const ports = [];
  for (let i = 0; i < 3; i++) ports.push({ client: await reservedPort(), peer: await reservedPort() });
  const service = o.scheme === "https" ? "_etcd-server-ssl._tcp" : "_etcd-server._tcp";
  dns.setTable({ srv: { [`${service}.${DOMAIN}`]: ports.map((p) => ({ target: "localhost.", port: p.peer })) }, addresses: { localhost: ["127.0.0.1"] } });
  return ports.map((p, i) => {
    const name = `${o.tag}${i}`;
    const clientUrl = `http://127.0.0.1:${p.client}`;
    const peerUrl = `${o.scheme}://127.0.0.1:${p.peer}`;
    const cert = o.certFor?.(i);
    const tls = cert === undefined ? [] : ["--peer-cert-file", cert.cert, "--peer-key-file", cert.key, "--peer-trusted-ca-file", certs.ca.cert, "--peer-client-cert-auth"];
    const child = spawn(
      process.execPath,
      [
        kvctlBin, "serve", "--name", name, "--data-dir", join(root, name),
        "--listen-client-urls", clientUrl, "--advertise-client-urls", clientUrl,
        "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl,
        "--discovery-srv", DOMAIN, "--heartbeat-interval", "50", "--election-timeout", "500", ...tls,
      ],
      { cwd: repoRoot, env: { ...process.env, KV_DNS_SERVER: dns.address }, stdio: ["ignore", "pipe", "pipe"] },
    );
    children.push(child);
    let out = "";
    const keep = (c: Buffer): void => {
      out = (out + c.toString("utf8")).slice(-200_000);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    return { name, clientUrl, peerPort: p.peer, child, log: () => out };
  });
}

/** The shared polling wait, with the members' logs in its timeout message. */
function until<T>(what: string, f: () => Promise<T | undefined>, members: Member[], ms = 20_000): Promise<T> {
  return eventually(f, what, ms, { intervalMs: 100, ignoreErrors: true, detail: () => members.map((m) => `--- ${m.name}\n${m.log().slice(-3000)}`).join("\n") });
}

const healthy = async (m: Member): Promise<true | undefined> => {
  const r = await fetch(`${m.clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
  await r.arrayBuffer();
  return r.status === 200 ? true : undefined;
};

async function stopAll(members: Member[]): Promise<void> {
  await Promise.all(members.map((m) => new Promise<void>((resolve) => {
    if (m.child.exitCode !== null || m.child.signalCode !== null) return resolve();
    m.child.once("exit", () => resolve());
    m.child.kill("SIGKILL");
  })));
}

/** A write on the first member is read on the last; the member list has the SRV URLs. */
async function assertOneCluster(members: Member[], scheme: string): Promise<void> {
  for (const m of members) await until(`${m.name} healthy`, () => healthy(m), members);
  const put = await fetch(`${members[0]!.clientUrl}/v2/keys/srv`, { method: "PUT", body: new URLSearchParams({ value: scheme }) });
  assert.equal(put.status, 201, await put.text());
  await until("the write on the last member", async () => {
    const r = await fetch(`${members[2]!.clientUrl}/v2/keys/srv`);
    const j = (await r.json()) as { node?: { value?: string } };
    return j.node?.value === scheme ? true : undefined;
  }, members);
  const list = (await (await fetch(`${members[0]!.clientUrl}/v2/members`)).json()) as { members: { name: string; peerURLs: string[] }[] };
  assert.deepEqual(
    list.members.map((x) => x.peerURLs).flat().sort(),
    members.map((m) => `${scheme}://localhost:${m.peerPort}`).sort(),
  );
  // Each member named itself (the others were "0" and "1" until they published).
  await until("published names", async () => {
    const l = (await (await fetch(`${members[0]!.clientUrl}/v2/members`)).json()) as { members: { name: string }[] };
    return l.members.map((x) => x.name).sort().join() === members.map((m) => m.name).sort().join() ? true : undefined;
  }, members);
  for (const m of members) assert.match(m.log(), /got bootstrap from DNS for etcd-server/);
}

test("three members bootstrap over http from _etcd-server._tcp records", async () => {
  const members = await startSrvMembers({ scheme: "http", tag: "h" });
  try {
    await assertOneCluster(members, "http");
    assert.ok(dns.questions.includes(`SRV _etcd-server._tcp.${DOMAIN}`), dns.questions.join("; "));
    assert.ok(dns.questions.includes(`SRV _etcd-server-ssl._tcp.${DOMAIN}`), "both services are asked, as etcd asks them");
    // A proxy finds the same cluster through the records (it need not be in them).
    const proxyUrl = `http://127.0.0.1:${await reservedPort()}`;
    const proxy = spawn(process.execPath, [kvctlBin, "serve", "--proxy", "readonly", "--data-dir", join(root, "srv-proxy"), "--listen-client-urls", proxyUrl, "--discovery-srv", DOMAIN, "--proxy-refresh-interval", "300"], {
      cwd: repoRoot, env: { ...process.env, KV_DNS_SERVER: dns.address }, stdio: "ignore",
    });
    children.push(proxy);
    const value = await until("a read through the SRV proxy", async () => {
      const r = await fetch(`${proxyUrl}/v2/keys/srv`, { signal: AbortSignal.timeout(1000) });
      return r.status === 200 ? ((await r.json()) as { node: { value: string } }).node.value : undefined;
    }, members);
    assert.equal(value, "http");
    proxy.kill("SIGKILL");
  } finally {
    await stopAll(members);
  }
});

test("three members bootstrap over https from _etcd-server-ssl._tcp records when their certificates list the domain", async () => {
  const cert = certs.leaf("peer", { commonName: "peer", hosts: [DOMAIN, "localhost", "127.0.0.1"], extKeyUsage: ["serverAuth", "clientAuth"] });
  const members = await startSrvMembers({ scheme: "https", tag: "s", certFor: () => cert });
  try {
    await assertOneCluster(members, "https");
  } finally {
    await stopAll(members);
  }
});

test("members refuse a peer whose certificate does not list the SRV domain, and log why", async () => {
  const good = certs.leaf("peer-good", { commonName: "peer", hosts: [DOMAIN, "localhost", "127.0.0.1"], extKeyUsage: ["serverAuth", "clientAuth"] });
  const bad = certs.leaf("peer-bad", { commonName: "peer", hosts: ["localhost", "127.0.0.1"], extKeyUsage: ["serverAuth", "clientAuth"] });
  const members = await startSrvMembers({ scheme: "https", tag: "b", certFor: (i) => (i === 2 ? bad : good) });
  try {
    const [m0, m1, m2] = members as [Member, Member, Member];
    // The two good members are a quorum; the third never hears from them.
    await until("the good members healthy", async () => ((await healthy(m0)) && (await healthy(m1)) ? true : undefined), members);
    const want = `x509: certificate is valid for localhost, not ${DOMAIN}`;
    await until("the refusal in the good members' logs", async () => (m0.log().includes(want) && m1.log().includes(want) ? true : undefined), members);
    const put = await fetch(`${m0.clientUrl}/v2/keys/only-good`, { method: "PUT", body: new URLSearchParams({ value: "1" }) });
    assert.equal(put.status, 201);
    // The refused member never published itself, so, as etcd's (ReadyNotify), it serves no client.
    const r = await fetch(`${m2.clientUrl}/v2/keys/only-good`, { signal: AbortSignal.timeout(1000) }).then((res) => res.status, (err: unknown) => err);
    assert.ok(r instanceof Error, `the refused member answered ${String(r)}`);
    assert.doesNotMatch(m2.log(), /not example\.test/, "the refused member accepts the others' certificates");
  } finally {
    await stopAll(members);
  }
});

test("srvResolver asks the KV_DNS_SERVER servers for SRV and address records, then the system", async () => {
  dns.setTable({
    srv: { "_etcd-server._tcp.example.test": [{ target: "m1.example.test", port: 2380, priority: 1, weight: 5 }] },
    addresses: { "m1.example.test": ["10.1.2.3", "fd00::1"], "v6only.example.test": ["fd00::2"] },
  });
  const r = srvResolver({ KV_DNS_SERVER: dns.address });
  assert.deepEqual(await r.resolveSrv("_etcd-server._tcp.example.test"), [{ name: "m1.example.test", port: 2380, priority: 1, weight: 5 }]);
  await assert.rejects(r.resolveSrv("_etcd-server-ssl._tcp.example.test"), { code: "ENOTFOUND" });
  assert.equal(await r.lookupHost("m1.example.test"), "10.1.2.3");
  assert.equal(await r.lookupHost("v6only.example.test"), "fd00::2");
  // Not in the table: /etc/hosts still answers (as Go's resolver reads it).
  assert.equal(await r.lookupHost("localhost"), "127.0.0.1");
  assert.equal(await r.lookupHost("10.9.9.9"), "10.9.9.9");
  assert.ok(dns.questions.includes("SRV _etcd-server._tcp.example.test"), dns.questions.join("; "));
  assert.ok(dns.questions.includes("A m1.example.test"), dns.questions.join("; "));
});
