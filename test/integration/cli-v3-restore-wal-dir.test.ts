// `kvctl v3 snapshot restore --wal-dir` (etcdctl's flag): a backup of a real `kvctl serve`
// restored with its WAL in a directory of its own, then served with `serve --wal-dir`;
// restoring into an existing WAL directory is refused with etcdctl's words
// (`Error: wal-dir "<dir>" exists`, exit 1) and leaves no data dir behind.

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gateway, gatewayPut, rangePort, runKvctlV3, startV3Server, type V3Server } from "../helpers/etcd.ts";
import { spawnServer, type Spawned } from "../helpers/spawned.ts";
import { kvctlBin, repoRoot } from "../helpers/server.ts";
import { eventually } from "../../src/until.test-helper.ts";

const tmp = mkdtempSync(join(tmpdir(), "kvctl-v3-waldir-"));
let source: V3Server | undefined;
let restored: Spawned | undefined;
after(async () => {
  await restored?.stop();
  await source?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

test("snapshot restore --wal-dir, served with serve --wal-dir; an existing wal-dir refused", { timeout: 60_000 }, async () => {
  source = await startV3Server("kvctl");
  for (let i = 0; i < 5; i++) await gatewayPut(source.url, `k${i}`, `v${i}`);
  const file = join(tmp, "backup.db");
  const saved = await runKvctlV3(source.url, ["snapshot", "save", file]);
  assert.equal(saved.code, 0, saved.stderr);

  const dataDir = join(tmp, "r1");
  const walDir = join(tmp, "r1-wal");
  const peer = `http://127.0.0.1:${await rangePort()}`;
  const client = `http://127.0.0.1:${await rangePort()}`;
  const r = await runKvctlV3(source.url, ["snapshot", "restore", file, "--name", "r1", "--data-dir", dataDir, "--wal-dir", walDir, "--initial-cluster", `r1=${peer}`, "--initial-advertise-peer-urls", peer]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(readdirSync(walDir).some((f) => f.endsWith(".wal")), "the WAL is in --wal-dir");
  assert.ok(!existsSync(join(dataDir, "member", "wal")), "and not in the data dir");

  restored = spawnServer(
    process.execPath,
    [kvctlBin, "serve", "--name", "r1", "--data-dir", dataDir, "--wal-dir", walDir, "--listen-client-urls", client, "--advertise-client-urls", client,
      "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", `r1=${peer}`],
    repoRoot,
  );
  const value = async (): Promise<string | undefined> => {
    try {
      const g = await gateway<{ kvs?: { value: string }[] }>(client, "/v3/kv/range", { key: Buffer.from("k3").toString("base64") });
      return Buffer.from(g.kvs?.[0]?.value ?? "", "base64").toString() || undefined;
    } catch {
      return undefined;
    }
  };
  assert.equal(await eventually(value, "the restored member serving k3", 20_000, { intervalMs: 100, detail: restored.log }), "v3");

  const again = await runKvctlV3(source.url, ["snapshot", "restore", file, "--name", "r2", "--data-dir", join(tmp, "r2"), "--wal-dir", walDir, "--initial-cluster", `r2=${peer}`, "--initial-advertise-peer-urls", peer]);
  assert.equal(again.code, 1);
  assert.equal(again.stderr, `Error: wal-dir "${walDir}" exists\n`);
  assert.ok(!existsSync(join(tmp, "r2")));
});
