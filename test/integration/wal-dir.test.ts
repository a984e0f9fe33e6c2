// --wal-dir: the WAL in a directory of its own (etcd's layout: the WAL files directly in
// it), created on the first start and used on every restart; the data dir keeps the
// snapshots and the v3 database.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, runKvctl, freePort } from "../helpers/server.ts";
import { agent, http, json } from "../helpers/http.ts";

after(() => agent.destroy());

const root = mkdtempSync(join(tmpdir(), "kvctl-wal-dir-"));
after(() => rmSync(root, { recursive: true, force: true }));

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");

async function v3Get(url: string, key: string): Promise<string | undefined> {
  const r = await fetch(`${url}/v3/kv/range`, { method: "POST", body: JSON.stringify({ key: b64(key) }) });
  const body = (await r.json()) as { kvs?: Array<{ value?: string }> };
  const v = body.kvs?.[0]?.value;
  return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
}

test("--wal-dir holds the WAL files, the data dir the snapshots and the database; a restart uses both", async () => {
  const walDir = join(root, "a", "wal");
  const srv = await startServer({ flags: ["--wal-dir", walDir, "--snapshot-count", "10"] });
  try {
    for (let i = 0; i < 30; i++) {
      assert.equal((await http("PUT", `${srv.url}/v2/keys/w/k${i}`, { value: `v${i}` })).status, 201);
      const p = await fetch(`${srv.url}/v3/kv/put`, { method: "POST", body: JSON.stringify({ key: b64(`w3/k${i}`), value: b64(`v${i}`) }) });
      assert.equal(p.status, 200);
      await p.arrayBuffer();
    }
    const wals = readdirSync(walDir).filter((f) => f.endsWith(".wal"));
    assert.ok(wals.includes("0000000000000000-0000000000000000.wal"), `WAL files directly in --wal-dir: ${readdirSync(walDir).join(",")}`);
    assert.equal(existsSync(join(srv.dataDir, "member", "wal")), false, "no WAL in the data dir");
    const snap = readdirSync(join(srv.dataDir, "member", "snap"));
    assert.ok(snap.includes("db"), snap.join(","));
    assert.ok(snap.some((f) => f.endsWith(".snap")), `snapshots in the data dir: ${snap.join(",")}`);

    await srv.restart();
    assert.match(srv.logs(), /restarted member/);
    assert.equal((await json<{ node: { value: string } }>("GET", `${srv.url}/v2/keys/w/k29`)).body.node.value, "v29");
    assert.equal((await json<{ node: { value: string } }>("GET", `${srv.url}/v2/keys/w/k0`)).body.node.value, "v0");
    assert.equal(await v3Get(srv.url, "w3/k29"), "v29");
    assert.equal((await http("PUT", `${srv.url}/v2/keys/w/after`, { value: "a" })).status, 201);
    assert.equal(existsSync(join(srv.dataDir, "member", "wal")), false);
  } finally {
    await srv.stop();
  }
});

test("a member whose WAL is in its data dir refuses to start with an empty --wal-dir elsewhere, instead of starting empty", async () => {
  const srv = await startServer();
  try {
    assert.equal((await http("PUT", `${srv.url}/v2/keys/keep`, { value: "me" })).status, 201);
    await srv.kill("SIGTERM");
    const other = join(root, "b", "wal");
    const port = await freePort();
    const r = await runKvctl([
      "serve", "--name", "test", "--data-dir", srv.dataDir, "--wal-dir", other,
      "--listen-client-urls", `http://127.0.0.1:${port}`, "--advertise-client-urls", `http://127.0.0.1:${port}`,
      "--listen-peer-urls", srv.peerUrl, "--initial-advertise-peer-urls", srv.peerUrl, "--initial-cluster", `test=${srv.peerUrl}`,
    ], { timeoutMs: 20_000 });
    assert.notEqual(r.code, 0);
    assert.match(r.stdout + r.stderr, /holds no WAL but .*member\/wal does/);
    assert.equal(existsSync(join(other, "0000000000000000-0000000000000000.wal")), false);
    assert.ok(existsSync(join(srv.dataDir, "member", "snap", "db")), "the database was left alone");
    await srv.restart();
    assert.equal((await json<{ node: { value: string } }>("GET", `${srv.url}/v2/keys/keep`)).body.node.value, "me");
  } finally {
    await srv.stop();
  }
});
