// A 3-member cluster fully on TLS — https client URLs, https peer URLs,
// peer client-certificate authentication against the cluster's CA with an allowed Common
// Name — replicates writes, serves quorum reads on every member and elects a new leader
// after the leader is killed. A member whose peer certificate has another CN is refused
// by its peers and never joins a quorum. Certificates are generated at run time.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kvctlBin, repoRoot } from "../helpers/server.ts";
import { CertDir } from "../helpers/certs.ts";
import { request, reservedPort } from "../helpers/tls-server.ts";
import { until } from "../helpers/http.ts";
import { until as untilShared } from "../../src/until.test-helper.ts";

const certs = new CertDir();
const root = mkdtempSync(join(tmpdir(), "kvctl-tls-cluster-"));
const procs: ChildProcess[] = [];
after(async () => {
  const live = procs.filter((p) => p.exitCode === null && p.signalCode === null);
  const exited = live.map((p) => new Promise((r) => p.once("exit", r)));
  for (const p of live) p.kill("SIGKILL");
  await Promise.all(exited);
  rmSync(root, { recursive: true, force: true });
  certs.remove();
});

interface Member {
  name: string;
  clientUrl: string;
  peerUrl: string;
  proc?: ChildProcess;
  log: string[];
}

const tls = { ca: certs.ca.pem.certPem };

async function get(m: Member, path: string): Promise<{ status: number; body: string }> {
  return request(m.clientUrl, { path, tls });
}

/** Until `m` answers /health with 200 over TLS (a refused connection: not up yet). */
function healthy(m: Member, ms: number): Promise<void> {
  return untilShared(async () => (await get(m, "/health")).status === 200, `${m.name} healthy over TLS`, ms, { intervalMs: 100, ignoreErrors: true, detail: () => m.log.join("").slice(-2000) });
}

test("a 3-member cluster on TLS with peer client-certificate auth replicates, reads with quorum and survives its leader", { timeout: 90_000 }, async () => {
  const members: Member[] = [];
  for (let i = 0; i < 3; i++) {
    members.push({ name: `m${i}`, clientUrl: `https://127.0.0.1:${await reservedPort()}`, peerUrl: `https://127.0.0.1:${await reservedPort()}`, log: [] });
  }
  const initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(",");
  // One certificate per member, all with the CN the peers allow, SAN 127.0.0.1.
  const start = (m: Member, cn: string): void => {
    const cert = certs.leaf(`${m.name}-${cn}`, { commonName: cn, hosts: ["127.0.0.1", "localhost"], extKeyUsage: ["serverAuth", "clientAuth"] });
    const args = [
      kvctlBin, "serve", "--name", m.name, "--data-dir", join(root, m.name),
      "--listen-client-urls", m.clientUrl, "--advertise-client-urls", m.clientUrl,
      "--listen-peer-urls", m.peerUrl, "--initial-advertise-peer-urls", m.peerUrl,
      "--initial-cluster", initialCluster,
      "--cert-file", cert.cert, "--key-file", cert.key,
      "--peer-cert-file", cert.cert, "--peer-key-file", cert.key,
      "--peer-client-cert-auth", "--peer-trusted-ca-file", certs.ca.cert, "--peer-cert-allowed-cn", "member",
      "--heartbeat-interval", "50", "--election-timeout", "500",
    ];
    const p = spawn(process.execPath, args, { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    p.stdout!.on("data", (c: Buffer) => m.log.push(c.toString()));
    p.stderr!.on("data", (c: Buffer) => m.log.push(c.toString()));
    m.proc = p;
    procs.push(p);
  };
  for (const m of members) start(m, "member");
  for (const m of members) await healthy(m, 20_000);

  const put = await request(members[0]!.clientUrl, { method: "PUT", path: "/v2/keys/tls/a", body: "value=1", headers: { "Content-Type": "application/x-www-form-urlencoded" }, tls });
  assert.equal(put.status, 201, put.body);
  for (const m of members) {
    const r = await get(m, "/v2/keys/tls/a?quorum=true");
    assert.equal(r.status, 200, `${m.name}: ${r.body}`);
    assert.equal((JSON.parse(r.body) as { node: { value: string } }).node.value, "1");
  }

  let leader: Member | undefined;
  for (const m of members) {
    const s = JSON.parse((await get(m, "/v2/stats/self")).body) as { state: string };
    if (s.state === "StateLeader") leader = m;
  }
  assert.ok(leader);

  // A keepalive on a follower is forwarded to the leader's peer port (/leases), over peer TLS.
  const follower = members.find((m) => m !== leader)!;
  const v3 = (path: string, body: unknown): Promise<{ status: number; body: string }> => request(follower.clientUrl, { method: "POST", path, body: JSON.stringify(body), tls });
  const granted = await v3("/v3/lease/grant", { TTL: 5 });
  assert.equal(granted.status, 200, granted.body);
  const leaseId = (JSON.parse(granted.body) as { ID: string }).ID;
  const kept = await v3("/v3/lease/keepalive", { ID: leaseId });
  assert.match(kept.body, /"TTL":"5"/, `keepalive through a follower over peer TLS: ${kept.body}`);
  const ttl = await v3("/v3/lease/timetolive", { ID: leaseId });
  assert.match(ttl.body, /"grantedTTL":"5"/, ttl.body);

  // The leader dies; the two others (still on TLS with each other) elect a new one.
  leader.proc!.kill("SIGKILL");
  const rest = members.filter((m) => m !== leader);
  // Refused or failed while they elect; 200 or 201 once they have (a retry may find it written).
  const written = async (): Promise<boolean> => [200, 201].includes((await request(rest[0]!.clientUrl, { method: "PUT", path: "/v2/keys/tls/b", body: "value=2", headers: { "Content-Type": "application/x-www-form-urlencoded" }, tls })).status);
  await untilShared(written, "a write after the leader's death", 10_000, { intervalMs: 200, ignoreErrors: true });
  const b = await get(rest[1]!, "/v2/keys/tls/b?quorum=true");
  assert.equal((JSON.parse(b.body) as { node: { value: string } }).node.value, "2");

  // The old leader comes back with a certificate of another CN: its peers refuse it.
  start(leader, "intruder");
  const refusedBy = (): boolean => rest.some((m) => m.log.join("").includes("CommonName authentication failed"));
  await until(refusedBy, 10_000, "a peer logging the CN refusal", () => rest.map((m) => m.log.join("").slice(-1500)).join("\n"));
});
