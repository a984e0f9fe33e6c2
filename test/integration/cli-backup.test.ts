// `kvctl backup` (etcdctl v2's backup) of a real member's data dir, then the disaster
// recovery etcd's admin guide describes: a member started from the backup with
// --force-new-cluster is a new one-member cluster (new member and cluster ids) with the
// v2 keys, and with --with-v3 the v3 keys; it takes writes; the original data dir is
// untouched and its member starts from it again. A backup into a non-empty backup dir
// and one of a dir that is no member's fail as etcdctl's (its log line, exit 1).

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gateway, gatewayPut } from "../helpers/etcd.ts";
import { waitHealthy } from "../helpers/http.ts";
import { freePort, kvctlBin, repoRoot, runKvctl, startServer, type TestServer } from "../helpers/server.ts";
import { runProcess } from "../helpers/run-process.ts";
import { spawnServer, type Spawned } from "../helpers/spawned.ts";

const tmp = mkdtempSync(join(tmpdir(), "kvctl-backup-"));
let source: TestServer | undefined;
let renamed: TestServer | undefined;
const started: Spawned[] = [];
after(async () => {
  for (const s of started) await s.stop();
  await source?.stop();
  await renamed?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const LOG_LINE = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} I \| /;

async function serveFrom(dataDir: string, extra: string[]): Promise<{ url: string; s: Spawned }> {
  const url = `http://127.0.0.1:${await freePort()}`;
  const peer = `http://127.0.0.1:${await freePort()}`;
  const s = spawnServer(process.execPath, [kvctlBin, "serve", "--name", "restored", "--data-dir", dataDir, "--listen-client-urls", url, "--advertise-client-urls", url,
    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", `restored=${peer}`, ...extra], repoRoot);
  started.push(s);
  await waitHealthy(url, { child: s.child, log: s.log, what: "the member started from the backup" });
  return { url, s };
}

/** Every file of the member's WAL and snapshot dirs (the database's lock file aside) and its sha256. */
function digest(dataDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const sub of ["wal", "snap"]) {
    const dir = join(dataDir, "member", sub);
    for (const f of readdirSync(dir).filter((n) => n !== "db-lock")) out[`${sub}/${f}`] = createHash("sha256").update(readFileSync(join(dir, f))).digest("hex");
  }
  return out;
}

async function v3Value(url: string, key: string): Promise<string | undefined> {
  const g = await gateway<{ kvs?: { value: string }[] }>(url, "/v3/kv/range", { key: Buffer.from(key).toString("base64") });
  const v = g.kvs?.[0]?.value;
  return v === undefined ? undefined : Buffer.from(v, "base64").toString();
}

async function v3Users(url: string): Promise<string[]> {
  return (await gateway<{ users?: string[] }>(url, "/v3/auth/user/list", {})).users ?? [];
}

async function v2Json(url: string, path: string): Promise<{ status: number; clusterId: string | null; body: { node?: { value?: string } } }> {
  const r = await fetch(`${url}/v2/keys${path}`);
  return { status: r.status, clusterId: r.headers.get("x-etcd-cluster-id"), body: (await r.json()) as { node?: { value?: string } } };
}

test("kvctl backup: --force-new-cluster from the backup serves the data as a new cluster; the source is unchanged", { timeout: 60_000 }, async () => {
  // A snapshot every 5 entries: the backup copies a snapshot and the WAL after it.
  source = await startServer({ flags: ["--snapshot-count", "5"] });
  const before = await v2Json(source.url, "/");
  for (let i = 0; i < 8; i++) {
    const r = await fetch(`${source.url}/v2/keys/k${i}`, { method: "PUT", body: new URLSearchParams({ value: `v${i}` }) });
    assert.equal(r.status, 201);
  }
  await gatewayPut(source.url, "v3key", "v3value");
  await gateway(source.url, "/v3/auth/user/add", { name: "v3user", password: "pw" });
  const members = (await (await fetch(`${source.url}/v2/members`)).json()) as { members: { id: string }[] };
  const oldMember = members.members[0]!.id;
  await source.kill("SIGTERM");
  const snapFiles = readdirSync(join(source.dataDir, "member", "snap")).filter((f) => f.endsWith(".snap"));
  assert.ok(snapFiles.length > 0, "the source has a snapshot");

  const untouched = digest(source.dataDir);
  const b1 = join(tmp, "b1");
  const r1 = await runKvctl(["backup", "--data-dir", source.dataDir, "--backup-dir", b1, "--with-v3"]);
  assert.equal(r1.code, 0, r1.stderr);
  assert.equal(r1.stdout, "");
  for (const line of r1.stderr.split("\n").filter((l) => l !== "")) assert.match(line, LOG_LINE);
  assert.deepEqual(readdirSync(join(b1, "member", "snap")).filter((f) => f.endsWith(".snap")).length, 1);
  const b2 = join(tmp, "b2");
  const r2 = await runKvctl(["backup", "--data-dir", source.dataDir, "--backup-dir", b2]);
  assert.equal(r2.code, 0, r2.stderr);
  assert.match(r2.stderr, /ignoring v3 raft entry/);

  // --wal-dir names the source's WAL, --backup-wal-dir where the backup's goes.
  const b4 = join(tmp, "b4");
  const r4 = await runKvctl(["backup", "--data-dir", source.dataDir, "--wal-dir", join(source.dataDir, "member", "wal"), "--backup-dir", b4, "--backup-wal-dir", join(tmp, "b4-wal")]);
  assert.equal(r4.code, 0, r4.stderr);
  assert.ok(readdirSync(join(tmp, "b4-wal")).some((f) => f.endsWith(".wal")));
  assert.deepEqual(readdirSync(join(b4, "member")), ["snap"]);
  assert.ok(!readdirSync(b4).some((f) => f.startsWith(".kvctl-backup-wal-")), "the scratch copy of the WAL is gone");

  assert.deepEqual(digest(source.dataDir), untouched, "the backups changed no file of the source");

  // Refusals, as etcdctl words them.
  const full = join(tmp, "full");
  mkdirSync(join(full, "member", "snap"), { recursive: true });
  writeFileSync(join(full, "member", "snap", "db"), "x");
  const refused = await runKvctl(["backup", "--data-dir", source.dataDir, "--backup-dir", full]);
  assert.equal(refused.code, 1);
  const destSnap = join(full, "member", "snap");
  assert.match(refused.stderr, LOG_LINE);
  assert.ok(refused.stderr.endsWith(`failed creating backup snapshot dir ${destSnap}: expected "${destSnap}" to be empty, got ["db"]\n`), refused.stderr);
  const notMember = join(tmp, "not-a-member");
  mkdirSync(notMember);
  const none = await runKvctl(["backup", "--data-dir", notMember, "--backup-dir", join(tmp, "b3")]);
  assert.equal(none.code, 1);
  assert.ok(none.stderr.endsWith(`open ${join(notMember, "member", "snap")}: no such file or directory\n`), none.stderr);

  const emptyWal = join(tmp, "empty-wal");
  mkdirSync(join(emptyWal, "member", "snap"), { recursive: true });
  mkdirSync(join(emptyWal, "member", "wal"));
  const noSegments = await runKvctl(["backup", "--data-dir", emptyWal, "--backup-dir", join(tmp, "b5")]);
  assert.equal(noSegments.code, 1);
  assert.ok(noSegments.stderr.endsWith(" I | wal: file not found\n"), noSegments.stderr);

  // The backup with --with-v3: all the data, a new member and cluster.
  const restored = await serveFrom(b1, ["--force-new-cluster"]);
  const a = await v2Json(restored.url, "/k7");
  assert.equal(a.status, 200);
  assert.equal(a.body.node?.value, "v7");
  assert.notEqual(a.clusterId, before.clusterId, "a new cluster id");
  assert.equal(await v3Value(restored.url, "v3key"), "v3value");
  assert.deepEqual(await v3Users(restored.url), ["v3user"]);
  const list = (await (await fetch(`${restored.url}/v2/members`)).json()) as { members: { id: string }[] };
  assert.equal(list.members.length, 1);
  assert.notEqual(list.members[0]!.id, oldMember, "a new member id");
  const w = await fetch(`${restored.url}/v2/keys/after`, { method: "PUT", body: new URLSearchParams({ value: "1" }) });
  assert.equal(w.status, 201);
  await gatewayPut(restored.url, "v3after", "2");
  assert.equal(await v3Value(restored.url, "v3after"), "2");
  await restored.s.stop();

  // Without --with-v3: the v2 keys only.
  const v2only = await serveFrom(b2, ["--force-new-cluster"]);
  assert.equal((await v2Json(v2only.url, "/k3")).body.node?.value, "v3");
  assert.equal(await v3Value(v2only.url, "v3key"), undefined);
  assert.deepEqual(await v3Users(v2only.url), [], "v3 auth goes with the v3 data, as etcd's with its database");
  await v2only.s.stop();

  // The source starts again from its own data dir, as it was.
  await source.restart();
  const again = await v2Json(source.url, "/k7");
  assert.equal(again.body.node?.value, "v7");
  assert.equal(again.clusterId, before.clusterId);
  assert.equal(await v3Value(source.url, "v3key"), "v3value");
});

const etcdctl = spawnSync("etcdctl", ["version"], { stdio: "ignore" }).status === 0;

test("etcdctl backup on a kvctl data dir renames its snapshots .snap.broken: the restart says so, and serves from the WAL", { timeout: 60_000, skip: etcdctl ? false : "etcdctl not installed" }, async () => {
  renamed = await startServer({ flags: ["--snapshot-count", "5"] });
  for (let i = 0; i < 8; i++) assert.equal((await fetch(`${renamed.url}/v2/keys/k${i}`, { method: "PUT", body: new URLSearchParams({ value: `v${i}` }) })).status, 201);
  await renamed.kill("SIGTERM");
  const snapDir = join(renamed.dataDir, "member", "snap");
  const r = await runProcess("etcdctl", ["backup", "--data-dir", renamed.dataDir, "--backup-dir", join(tmp, "by-etcdctl")], { cwd: tmp, env: { ...process.env, ETCDCTL_API: "2" } });
  assert.equal(r.code, 1, "etcdctl cannot read kvctl's WAL");
  const broken = readdirSync(snapDir).filter((f) => f.endsWith(".snap.broken"));
  assert.ok(broken.length > 0 && !readdirSync(snapDir).some((f) => f.endsWith(".snap")), "etcdctl renamed every snapshot");

  await renamed.restart();
  assert.match(renamed.logs(), /intact kvctl snapshot file\(s\) were renamed \.snap\.broken .*restarting from the WAL alone/);
  assert.equal((await v2Json(renamed.url, "/k7")).body.node?.value, "v7");

  // Renamed back, as the warning says: the newest snapshot is used again, and nothing is said.
  await renamed.kill("SIGTERM");
  for (const f of broken) renameSync(join(snapDir, f), join(snapDir, f.slice(0, -".broken".length)));
  await renamed.restart();
  const lastRun = renamed.logs().slice(renamed.logs().lastIndexOf('"stopped"'));
  assert.match(lastRun, /"restarted member"[^\n]*"snapshotIndex":[1-9]/);
  assert.doesNotMatch(lastRun, /snap\.broken/);
  assert.equal((await v2Json(renamed.url, "/k7")).body.node?.value, "v7");
});
