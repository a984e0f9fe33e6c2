// The snapshot file a kvctl member streams is etcd's (a bbolt database in etcd 3.4's
// schema, server/backup/etcd-bolt-writer.ts): `etcdctl snapshot save` of a kvctl member
// (revisions, a compaction, a delete, a lease with a key, users and roles with auth on, v2
// keys), then
//   - `etcdctl snapshot status` of the file gives the revision and key count kvctl's does;
//   - `etcdctl snapshot restore` + etcd 3.4.23 answer get (now and at an older revision),
//     lease list / timetolive, user list, role get as the kvctl member did;
//   - `kvctl v3 snapshot restore` + `kvctl serve` answer the same, and the v2 keys;
//   - the restored etcd takes the users' passwords: kvctl hashes v3 passwords with bcrypt
//     as etcd does (one set by user add, one by user passwd), and refuses a wrong one;
//   - a snapshot etcd then saves, after a write, restores into kvctl with etcd's state.
// The data questions go to the restored etcd as root by a client certificate with CN=root
// (etcd's --client-cert-auth), so that they do not depend on the passwords.

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CertDir } from "../helpers/certs.ts";
import { rangePort, runEtcdctl, runKvctlV3, startV3Server, type RunResult, type V3Server } from "../helpers/etcd.ts";
import { installed } from "../helpers/grpc.ts";
import { kvctlBin, repoRoot } from "../helpers/server.ts";
import { spawnServer, type Spawned } from "../helpers/spawned.ts";
import { eventually } from "../../src/until.test-helper.ts";

const skip = !installed("etcd") || !installed("etcdctl") ? "etcd or etcdctl not installed" : false;
const tmp = mkdtempSync(join(tmpdir(), "kvctl-snapshot-interop-"));
let kv: V3Server | undefined;
const spawned: Spawned[] = [];
let certs: CertDir | undefined;
after(async () => {
  for (const s of spawned) await s.stop();
  await kv?.stop();
  certs?.remove();
  rmSync(tmp, { recursive: true, force: true });
});

const ok = (r: RunResult, what: string): string => {
  assert.equal(r.code, 0, `${what}: ${r.stderr}`);
  return r.stdout;
};

interface Answers {
  now: unknown;
  rev5: unknown;
  leases: string;
  ttl: unknown;
  users: string;
  role: string;
  alice: string;
}

/** What the data questions answer at a server (`ask` runs one etcdctl/kvctl command as root). */
async function answers(ask: (args: string[]) => Promise<RunResult>, lease: string): Promise<Answers> {
  const [now, rev5, leases, ttl, users, role, alice] = await Promise.all([
    ask(["get", "", "--prefix", "-w", "json"]),
    ask(["get", "", "--prefix", "-w", "json", "--rev", "5"]),
    ask(["lease", "list"]),
    ask(["lease", "timetolive", lease, "--keys", "-w", "json"]),
    ask(["user", "list"]),
    ask(["role", "get", "r1"]),
    ask(["user", "get", "alice"]),
  ]);
  const kvs = (r: RunResult, what: string): unknown => (JSON.parse(ok(r, what)) as { kvs?: unknown }).kvs;
  const t = JSON.parse(ok(ttl, "timetolive")) as { "granted-ttl": number; keys: string[]; ttl: number };
  assert.ok(t.ttl > 500 && t.ttl <= 600, `remaining ttl ${t.ttl}`);
  return {
    now: kvs(now, "get"),
    rev5: kvs(rev5, "get --rev 5"),
    leases: ok(leases, "lease list"),
    ttl: { granted: t["granted-ttl"], keys: t.keys },
    users: ok(users, "user list"),
    role: ok(role, "role get"),
    alice: ok(alice, "user get"),
  };
}

test("etcdctl snapshot save of a kvctl member: etcdctl status, etcd and kvctl restores answer as the member did", { skip, timeout: 60_000 }, async () => {
  kv = await startV3Server("kvctl");
  const url = kv.url;
  const ctl = (args: string[]): Promise<RunResult> => runEtcdctl(url, args);
  for (const args of [["put", "a", "1"], ["put", "a", "2"], ["put", "b", "1"], ["put", "c", "1"], ["del", "c"], ["put", "a", "3"], ["compact", "4"]]) ok(await ctl(args), args.join(" "));
  const lease = /^lease ([0-9a-f]+) granted/.exec(ok(await ctl(["lease", "grant", "600"]), "lease grant"))?.[1] ?? "";
  ok(await ctl(["put", "lk", "lv", "--lease", lease]), "put --lease");
  ok(await ctl(["put", "d", "1"]), "put d");
  for (const [k, v] of [["v2a", "hello"], ["dir/x", "y"]] as const) {
    const res = await fetch(`${url}/v2/keys/${k}`, { method: "PUT", body: new URLSearchParams({ value: v }) });
    assert.equal(res.status, 201);
  }
  for (const args of [["user", "add", "root:rootpw"], ["role", "add", "r1"], ["role", "grant-permission", "r1", "readwrite", "a", "z"], ["user", "add", "alice:old"], ["user", "grant-role", "alice", "r1"], ["auth", "enable"]]) {
    ok(await ctl(args), args.join(" "));
  }
  ok(await runEtcdctl(url, ["--user", "root:rootpw", "user", "passwd", "alice", "--interactive=false"], { input: "apw\n" }), "user passwd alice");
  const root = (args: string[]): Promise<RunResult> => runEtcdctl(url, ["--user", "root:rootpw", ...args]);
  const held = await answers(root, lease);
  assert.equal((held.now as unknown[]).length, 4);

  // etcdctl saves the member's stream and checks its sha256; status reads it as a database.
  const file = join(tmp, "snap.db");
  ok(await root(["snapshot", "save", file]), "etcdctl snapshot save");
  const etcdStatus = JSON.parse(ok(await runEtcdctl(url, ["snapshot", "status", file, "-w", "json"]), "etcdctl snapshot status")) as { revision: number; totalKey: number };
  const kvStatus = JSON.parse(ok(await runKvctlV3(url, ["snapshot", "status", file, "-w", "json"]), "kvctl snapshot status")) as { revision: number; totalKey: number };
  assert.equal(etcdStatus.revision, 9);
  assert.deepEqual(etcdStatus, kvStatus);
  assert.match(ok(await runEtcdctl(url, ["snapshot", "status", file, "-w", "table"]), "status -w table"), new RegExp(`\\| +9 \\| +${etcdStatus.totalKey} \\|`));

  // etcd 3.4.23 restored from it, reached as root by a CN=root client certificate.
  certs = new CertDir("kvctl-snapshot-interop-certs-");
  const server = certs.server();
  const client = certs.client("root");
  const [ec, ep] = [await rangePort(), await rangePort()];
  const eUrl = `https://127.0.0.1:${ec}`;
  const ePeer = `http://127.0.0.1:${ep}`;
  const eDir = join(tmp, "etcd");
  ok(await runEtcdctl(url, ["snapshot", "restore", file, "--name", "e1", "--data-dir", eDir, "--initial-cluster", `e1=${ePeer}`, "--initial-advertise-peer-urls", ePeer]), "etcdctl snapshot restore");
  const etcd = spawnServer("/usr/bin/etcd", ["--name", "e1", "--data-dir", eDir, "--listen-client-urls", eUrl, "--advertise-client-urls", eUrl,
    "--listen-peer-urls", ePeer, "--initial-advertise-peer-urls", ePeer, "--initial-cluster", `e1=${ePeer}`,
    "--cert-file", server.cert, "--key-file", server.key, "--trusted-ca-file", certs.ca.cert, "--client-cert-auth"], repoRoot);
  spawned.push(etcd);
  const tls = ["--cacert", certs.ca.cert, "--cert", client.cert, "--key", client.key];
  const asRoot = (args: string[]): Promise<RunResult> => runEtcdctl(eUrl, [...tls, ...args]);
  await eventually(async () => ((await asRoot(["get", "a"])).code === 0 ? true : undefined), "the restored etcd serving", 20_000, { intervalMs: 200, detail: etcd.log });
  assert.deepEqual(await answers(asRoot, lease), held);
  const compacted = await asRoot(["get", "a", "--rev", "3"]);
  assert.match(compacted.stderr, /required revision has been compacted/);
  // Auth came along enabled, with the passwords: etcd checks kvctl's bcrypt hashes. alice's
  // token, not the certificate's CN, decides: her role reads [a, z) only.
  const asUser = (user: string, args: string[]): Promise<RunResult> => runEtcdctl(eUrl, [...tls, "--user", user, ...args]);
  assert.match(ok(await asUser("root:rootpw", ["get", "a"]), "get a as root by password"), /^a\n3\n$/);
  assert.match(ok(await asUser("alice:apw", ["get", "b"]), "get b as alice by password"), /^b\n1\n$/);
  assert.match((await asUser("alice:apw", ["get", "zz"])).stderr, /permission denied/);
  assert.match((await asUser("alice:old", ["get", "b"])).stderr, /authentication failed/);
  assert.match((await asUser("root:rootpW", ["get", "a"])).stderr, /authentication failed/);
  // Back again: etcd's snapshot after a write still carries kvctl's bucket, now stale; kvctl's
  // restore takes etcd's state from it (revision 10), not the bucket's (9).
  ok(await asRoot(["put", "e", "1"]), "put on etcd");
  const back = join(tmp, "back.db");
  ok(await asRoot(["snapshot", "save", back]), "etcdctl snapshot save from etcd");
  const backRestore = await runKvctlV3(url, ["snapshot", "restore", back, "--name", "b1", "--data-dir", join(tmp, "back"), "--initial-cluster", "b1=http://127.0.0.1:9", "--initial-advertise-peer-urls", "http://127.0.0.1:9"]);
  assert.equal(backRestore.code, 0, backRestore.stderr);
  assert.match(backRestore.stderr, /revision 10, /);

  // kvctl restored from the same file: the same answers, root's password, and the v2 keys.
  const [kc, kp] = [await rangePort(), await rangePort()];
  const kUrl = `http://127.0.0.1:${kc}`;
  const kPeer = `http://127.0.0.1:${kp}`;
  const kDir = join(tmp, "kvctl");
  const restored = await runKvctlV3(url, ["snapshot", "restore", file, "--name", "k1", "--data-dir", kDir, "--initial-cluster", `k1=${kPeer}`, "--initial-advertise-peer-urls", kPeer]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stderr, /revision 9/);
  const k = spawnServer(process.execPath, [kvctlBin, "serve", "--name", "k1", "--data-dir", kDir, "--listen-client-urls", kUrl, "--advertise-client-urls", kUrl,
    "--listen-peer-urls", kPeer, "--initial-advertise-peer-urls", kPeer, "--initial-cluster", `k1=${kPeer}`], repoRoot);
  spawned.push(k);
  const kRoot = (args: string[]): Promise<RunResult> => runEtcdctl(kUrl, ["--user", "root:rootpw", ...args]);
  await eventually(async () => ((await kRoot(["get", "a"])).code === 0 ? true : undefined), "the restored kvctl serving", 20_000, { intervalMs: 200, detail: k.log });
  assert.deepEqual(await answers(kRoot, lease), held);
  const v2 = (await (await fetch(`${kUrl}/v2/keys/?recursive=true`)).json()) as { node: { nodes: { key: string; value?: string; nodes?: { key: string; value: string }[] }[] } };
  const flat = v2.node.nodes.flatMap((n) => (n.nodes ?? [n]).map((x) => `${x.key}=${x.value ?? ""}`)).sort();
  assert.deepEqual(flat, ["/dir/x=y", "/v2a=hello"]);
});
