// `kvctl v3 snapshot restore` of a snapshot etcd 3.4.23 made (a bbolt file: the fixture
// src/server/backup/testdata/etcd-3.4.23.snapshot.db, see its README), served with
// `kvctl serve`: the v3 state answers what etcd answered for the same data (recorded below
// from etcdctl against the etcd that made the file; headers aside, as the restored cluster
// has new IDs). Needs no etcd.

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rangePort, runKvctlV3 } from "../helpers/etcd.ts";
import { spawnServer, type Spawned } from "../helpers/spawned.ts";
import { kvctlBin, repoRoot } from "../helpers/server.ts";
import { eventually } from "../../src/until.test-helper.ts";

const fixture = join(repoRoot, "src/server/backup/testdata/etcd-3.4.23.snapshot.db");
const LEASE = "2a12a21b27269c0c";

// etcdctl --user root:rootpw get "" --prefix -w json (the kvs), against etcd at revision 16.
const ETCD_CURRENT = [
  { key: "Yw==", create_revision: 7, mod_revision: 14, version: 2, value: "MzM=" },
  { key: "ZA==", create_revision: 15, mod_revision: 16, version: 2, value: "NA==" },
  { key: "Zm9v", create_revision: 2, mod_revision: 12, version: 5, value: "YmFyNQ==" },
  { key: "bGsx", create_revision: 9, mod_revision: 9, version: 1, value: "djE=", lease: 3031663736678423564 },
  { key: "bGsy", create_revision: 10, mod_revision: 10, version: 1, value: "djI=", lease: 3031663736678423564 },
  { key: "dDE=", create_revision: 8, mod_revision: 8, version: 1, value: "eA==" },
];
// The same with --rev=8.
const ETCD_REV8 = [
  { key: "Yg==", create_revision: 5, mod_revision: 5, version: 1, value: "Mg==" },
  { key: "Yw==", create_revision: 7, mod_revision: 7, version: 1, value: "Mw==" },
  { key: "Zm9v", create_revision: 2, mod_revision: 8, version: 3, value: "YmFyMw==" },
  { key: "dDE=", create_revision: 8, mod_revision: 8, version: 1, value: "eA==" },
];

const tmp = mkdtempSync(join(tmpdir(), "kvctl-v3-etcd-restore-"));
let restored: Spawned | undefined;
after(async () => {
  await restored?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

interface Range {
  header: { revision: number };
  kvs?: unknown[];
}

test("an etcd 3.4.23 snapshot restored and served answers as etcd did", { timeout: 60_000 }, async () => {
  const dataDir = join(tmp, "r1");
  const peer = `http://127.0.0.1:${await rangePort()}`;
  const client = `http://127.0.0.1:${await rangePort()}`;
  const r = await runKvctlV3(client, ["snapshot", "restore", fixture, "--name", "r1", "--data-dir", dataDir, "--initial-cluster", `r1=${peer}`, "--initial-advertise-peer-urls", peer]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /revision 16/);

  restored = spawnServer(
    process.execPath,
    [kvctlBin, "serve", "--name", "r1", "--data-dir", dataDir, "--listen-client-urls", client, "--advertise-client-urls", client,
      "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", `r1=${peer}`],
    repoRoot,
  );
  // Auth came along enabled: root's etcd (bcrypt) password opens it.
  const root = ["--user", "root:rootpw"];
  const get = async (...extra: string[]): Promise<Range> => {
    const g = await runKvctlV3(client, [...root, "get", "", "--prefix", "-w", "json", ...extra]);
    if (g.code !== 0) throw new Error(g.stderr);
    return JSON.parse(g.stdout) as Range;
  };
  const current = await eventually(async () => get().catch(() => undefined), "the restored member serving", 20_000, { intervalMs: 200, detail: restored.log });
  assert.equal(current.header.revision, 16);
  assert.deepEqual(current.kvs, ETCD_CURRENT);
  assert.deepEqual((await get("--rev", "8")).kvs, ETCD_REV8);
  const old = await runKvctlV3(client, [...root, "get", "foo", "--rev", "4"]);
  assert.equal(old.code, 1);
  assert.match(old.stderr, /required revision has been compacted/);

  const noAuth = await runKvctlV3(client, ["get", "foo"]);
  assert.notEqual(noAuth.code, 0, "auth is enabled");
  const wrong = await runKvctlV3(client, ["--user", "root:nope", "get", "foo"]);
  assert.match(wrong.stderr, /authentication failed/);
  const alice = await runKvctlV3(client, ["--user", "alice:apw", "get", "foo"]);
  assert.match(alice.stderr, /permission denied/, "alice authenticates, and r1 grants /x only");

  const leases = await runKvctlV3(client, [...root, "lease", "list"]);
  assert.equal(leases.stdout, `found 1 leases\n${LEASE}\n`);
  const ttl = await runKvctlV3(client, [...root, "lease", "timetolive", LEASE, "--keys", "-w", "json"]);
  const t = JSON.parse(ttl.stdout) as { id: number; ttl: number; "granted-ttl": number; keys: string[] };
  // etcd: {"id":3031663736678423564,"ttl":596,"granted-ttl":600,"keys":["bGsx","bGsy"]}
  assert.deepEqual([t.id, t["granted-ttl"], t.keys], [3031663736678423564, 600, ["bGsx", "bGsy"]]);
  assert.ok(t.ttl > 500 && t.ttl <= 600, `ttl ${t.ttl}`);

  const users = await runKvctlV3(client, [...root, "user", "list"]);
  assert.equal(users.stdout, "alice\nroot\n");
  const role = await runKvctlV3(client, [...root, "role", "get", "r1"]);
  assert.equal(role.stdout, "Role r1\nKV Read:\n\t[/x, /y) (prefix /x)\nKV Write:\n\t[/x, /y) (prefix /x)\n");
});
