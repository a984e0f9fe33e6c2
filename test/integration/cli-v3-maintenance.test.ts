// `kvctl v3 alarm|defrag|snapshot` against real `kvctl serve` processes:
// (a) a member with a tiny --quota-backend-bytes: puts until NOSPACE, the alarm listed,
//     space freed by delete + compaction + defrag, puts accepted again after disarm;
// (b) a backup of v2 keys (a directory, a TTL key) and v3 keys (one with a lease) saved,
//     inspected, restored into a new data dir under a new name and ports, and served;
//     a corrupted copy refused unless --skip-hash-check;
// (c) `ETCDCTL_API=3 etcdctl snapshot save` against kvctl writes a file kvctl reads.
// etcdctl's texts for the same situations were taken from etcd 3.4.23 by hand (see the
// expected strings); printers-maintenance.test.ts holds the format details.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, kvctlBin, repoRoot, runKvctl, startServer, type TestServer } from "../helpers/server.ts";
import { spawnServer, type Spawned } from "../helpers/spawned.ts";
import { waitHealthy } from "../helpers/http.ts";
import { spawn } from "node:child_process";

const tmp = mkdtempSync(join(tmpdir(), "kvctl-v3-maint-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

const b64 = (s: string): string => Buffer.from(s).toString("base64");

async function post<T = Record<string, unknown>>(url: string, path: string, body: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: JSON.parse(await res.text()) as T };
}

interface Status {
  dbSize?: string;
  dbSizeInUse?: string;
  errors?: string[];
  header?: { revision?: string; member_id?: string };
}
const status = async (url: string): Promise<Status> => (await post<Status>(url, "/v3/maintenance/status", {})).body;

const v3 = (url: string, args: string[], input?: string) =>
  runKvctl(["v3", "--endpoints", url, ...args], input === undefined ? { timeoutMs: 30_000 } : { input, timeoutMs: 30_000 });
const v2 = (url: string, args: string[]) => runKvctl(["--endpoints", url, ...args], { timeoutMs: 30_000 });

describe("quota, alarms and defragment", () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ flags: ["--quota-backend-bytes=400000"] });
  });
  after(() => s?.stop());

  test("NOSPACE: put refused, alarm listed, space freed by delete + compaction + defrag, disarm", async () => {
    assert.equal((await v3(s.url, ["alarm", "list"])).stdout, "");
    // Fill through the gateway (one process per put would take minutes), 10 kB values.
    const big = b64("x".repeat(10_000));
    let refused: { status: number; body: Record<string, unknown> } | undefined;
    for (let i = 0; i < 200 && refused === undefined; i++) {
      const r = await post(s.url, "/v3/kv/put", { key: b64(`fill/${String(i).padStart(4, "0")}`), value: big });
      if (r.status !== 200) refused = r;
    }
    assert.ok(refused !== undefined, "the quota was never reached");
    assert.equal(refused.status, 429);
    assert.deepEqual(refused.body, { error: "etcdserver: mvcc: database space exceeded", message: "etcdserver: mvcc: database space exceeded", code: 8 });

    const put = await v3(s.url, ["put", "small", "v"]);
    assert.equal(put.code, 1);
    assert.equal(put.stdout, "");
    assert.equal(put.stderr, "Error: etcdserver: mvcc: database space exceeded\n");

    const memberId = (await status(s.url)).header?.member_id ?? "";
    assert.match(memberId, /^\d+$/);
    const listed = await v3(s.url, ["alarm", "list"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(listed.stdout, `memberID:${memberId} alarm:NOSPACE \n`);
    assert.equal((await v3(s.url, ["alarm", "list", "-w", "json"])).stdout, `{"alarms":[{"memberID":${memberId},"alarm":1}]}\n`);
    assert.deepEqual((await status(s.url)).errors, [`memberID:${memberId} alarm:NOSPACE `]);
    const hexId = BigInt(memberId).toString(16);
    assert.match(s.logs(), new RegExp(`"msg":"alarm raised","alarm":"NOSPACE","from":"${hexId}"`), "etcd's log line when the alarm is raised");

    // Free the space: reads and deletes still work under the alarm.
    const del = await v3(s.url, ["del", "--prefix", "fill/"]);
    assert.equal(del.code, 0, del.stderr);
    assert.match(del.stdout, /^\d+\n$/);
    const rev = (await status(s.url)).header?.revision ?? "0";
    assert.equal((await v3(s.url, ["compaction", rev])).stdout, `compacted revision ${rev}\n`);
    const before = Number((await status(s.url)).dbSize);
    const defrag = await v3(s.url, ["defrag"]);
    assert.equal(defrag.code, 0, defrag.stderr);
    assert.equal(defrag.stdout, `Finished defragmenting etcd member[${s.url}]\n`);
    const after = Number((await status(s.url)).dbSize);
    assert.ok(after < before / 4, `dbSize ${before} -> ${after}`);

    // Space alone does not lift the alarm.
    assert.equal((await v3(s.url, ["put", "small", "v"])).code, 1);
    const disarm = await v3(s.url, ["alarm", "disarm"]);
    assert.equal(disarm.code, 0, disarm.stderr);
    assert.equal(disarm.stdout, `memberID:${memberId} alarm:NOSPACE \n`);
    assert.match(s.logs(), new RegExp(`"msg":"alarm disarmed","alarm":"NOSPACE","from":"${hexId}"`));
    assert.equal((await v3(s.url, ["alarm", "list"])).stdout, "");
    assert.equal((await v3(s.url, ["alarm", "disarm", "-w", "json"])).stdout, "{}\n");
    const again = await v3(s.url, ["put", "small", "v"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, "OK\n");
  });

  test("defrag: one line per endpoint, failures on stderr and exit 1; --cluster", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const r = await runKvctl(["v3", "--endpoints", `${s.url},${dead}`, "defrag"], { timeoutMs: 30_000 });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, `Finished defragmenting etcd member[${s.url}]\n`);
    assert.equal(r.stderr, `Failed to defragment etcd member[${dead}] (context deadline exceeded)\n`);
    const c = await v3(s.url, ["defrag", "--cluster"]);
    assert.equal(c.code, 0, c.stderr);
    assert.equal(c.stdout, `Finished defragmenting etcd member[${s.url}]\n`);
  });

  test("alarm: arguments refused as etcdctl (exit 128)", async () => {
    const r = await v3(s.url, ["alarm", "list", "extra"]);
    assert.equal(r.code, 128);
    assert.equal(r.stderr, "Error: alarm list command accepts no arguments\n");
  });
});

/** `kvctl serve` on a data dir of our own (startServer makes its own dir and name). */
async function serveDir(flags: string[], url: string): Promise<Spawned> {
  const proc = spawnServer(process.execPath, [kvctlBin, "serve", ...flags], repoRoot);
  const { child, stop, log } = proc;
  try {
    await waitHealthy(url, { child, log, what: "the restored member healthy" });
  } catch (err) {
    await stop();
    throw err;
  }
  return proc;
}

describe("snapshot save, status and restore", () => {
  let s: TestServer;
  const file = join(tmp, "backup.db");
  let leaseHex = "";
  let revision = 0;
  before(async () => {
    s = await startServer();
  });
  after(() => s?.stop());

  test("save: v2 and v3 state to a file with the sha256 trailer", async () => {
    for (const args of [["set", "/v2/a", "alpha"], ["mkdir", "/v2/dir"], ["set", "/v2/dir/child", "c"], ["set", "/v2/ttl", "t", "--ttl", "3600"]]) {
      const r = await v2(s.url, args);
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    }
    const grant = await v3(s.url, ["lease", "grant", "3600"]);
    assert.equal(grant.code, 0, grant.stderr);
    leaseHex = /^lease ([0-9a-f]+) granted with TTL\(3600s\)\n$/.exec(grant.stdout)?.[1] ?? "";
    assert.notEqual(leaseHex, "");
    for (const args of [["put", "k1", "v1"], ["put", "k2", "corruptible-value-0001"], ["put", "leased", "lv", "--lease", leaseHex]]) {
      const r = await v3(s.url, args);
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    }
    revision = Number((await status(s.url)).header?.revision);

    const multi = await runKvctl(["v3", "--endpoints", `${s.url},${s.url}`, "snapshot", "save", file]);
    assert.equal(multi.code, 5);
    assert.equal(multi.stderr, `Error: snapshot must be requested to one selected node, not multiple [${s.url} ${s.url}]\n`);

    const r = await v3(s.url, ["snapshot", "save", file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `Snapshot saved at ${file}\n`);
    assert.equal(existsSync(`${file}.part`), false);
    const bytes = readFileSync(file);
    assert.equal((bytes.length - 32) % 512, 0);
    // etcd's format: a bbolt database (meta magic after the first page header), which etcdctl reads.
    assert.equal(bytes.readUInt32LE(16), 0xed0cdaed);
  });

  test("status: revision and key count in every format", async () => {
    const json = await v3(s.url, ["snapshot", "status", file, "-w", "json"]);
    assert.equal(json.code, 0, json.stderr);
    const st = JSON.parse(json.stdout) as { hash: number; revision: number; totalKey: number; totalSize: number };
    assert.deepEqual(Object.keys(st), ["hash", "revision", "totalKey", "totalSize"]);
    assert.equal(st.revision, revision);
    // etcdctl's count: every key of every bucket (3 revisions, meta 1, auth 1, members 1,
    // cluster 1, lease 1, and kvctl's own bucket 4).
    assert.equal(st.totalKey, 12);
    assert.equal(st.totalSize, readFileSync(file).length - 32);
    const simple = await v3(s.url, ["snapshot", "status", file]);
    assert.match(simple.stdout, new RegExp(`^${st.hash.toString(16)}, ${revision}, 12, [\\d.]+ k?B\\n$`));
    const table = await v3(s.url, ["snapshot", "status", file, "-w", "table"]);
    assert.match(table.stdout, /^\+-+\+-+\+-+\+-+\+\n\| +HASH +\| REVISION \| TOTAL KEYS \| TOTAL SIZE \|\n/);
    const missing = await v3(s.url, ["snapshot", "status", join(tmp, "nope.db")]);
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, `Error: stat ${join(tmp, "nope.db")}: no such file or directory\n`);
    const junk = join(tmp, "junk.db");
    writeFileSync(junk, "hello\n");
    assert.equal((await v3(s.url, ["snapshot", "status", junk])).stderr, `Error: ${junk} is not a kvctl snapshot file\n`);
  });

  test("restore: a new member under a new name, token and ports serves the v2 and v3 state", async () => {
    const [client, peer] = [await freePort(), await freePort()];
    const url = `http://127.0.0.1:${client}`;
    const peerUrl = `http://127.0.0.1:${peer}`;
    const dataDir = join(tmp, "restored.kvctl");
    const cluster = `restored=${peerUrl}`;
    const restoreArgs = ["snapshot", "restore", file, "--name", "restored", "--data-dir", dataDir, "--initial-cluster", cluster,
      "--initial-cluster-token", "tok-restore", "--initial-advertise-peer-urls", peerUrl];
    const r = await v3(s.url, restoreArgs);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "");
    assert.equal((await v3(s.url, restoreArgs)).stderr, `Error: data-dir "${dataDir}" exists\n`);

    const m = await serveDir(["--name", "restored", "--data-dir", dataDir, "--listen-client-urls", url, "--advertise-client-urls", url,
      "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl, "--initial-cluster", cluster, "--initial-cluster-token", "tok-restore"], url);
    try {
      // v2: a key, a directory, a key with its TTL.
      assert.equal((await v2(url, ["get", "/v2/a"])).stdout, "alpha\n");
      assert.equal((await v2(url, ["ls", "/v2/dir"])).stdout, "/v2/dir/child\n");
      const ttl = (await (await fetch(`${url}/v2/keys/v2/ttl`)).json()) as { node?: { value?: string; ttl?: number } };
      assert.equal(ttl.node?.value, "t");
      assert.ok((ttl.node?.ttl ?? 0) > 3000, JSON.stringify(ttl));
      // v3: the keys, the revision, the lease with its key.
      assert.equal((await v3(url, ["get", "k1"])).stdout, "k1\nv1\n");
      const got = (await v3(url, ["get", "leased", "-w", "json"])).stdout;
      assert.equal((JSON.parse(got) as { header: { revision: number } }).header.revision, revision);
      // A 64-bit lease ID does not survive JSON.parse: read its digits.
      assert.equal(BigInt(/"lease":(\d+)/.exec(got)?.[1] ?? "0"), BigInt(`0x${leaseHex}`));
      assert.match((await v3(url, ["lease", "timetolive", leaseHex, "--keys"])).stdout, new RegExp(`^lease ${leaseHex} granted with TTL\\(3600s\\), remaining\\(\\d+s\\), attached keys\\(\\[leased\\]\\)\\n$`));
      // The new cluster's membership, and writes.
      assert.match((await v2(url, ["member", "list"])).stdout, new RegExp(`name=restored peerURLs=${peerUrl}`));
      assert.equal((await v3(url, ["put", "after", "restore"])).stdout, "OK\n");
      assert.equal((await v3(url, ["get", "after", "--print-value-only"])).stdout, "restore\n");
      assert.equal((await v2(url, ["set", "/v2/after", "x"])).stdout, "x\n");
    } finally {
      await m.stop();
    }
  });

  test("restore: a corrupted file is refused unless --skip-hash-check", async () => {
    const bytes = readFileSync(file);
    const at = bytes.indexOf("corruptible-value-0001");
    assert.ok(at > 0);
    bytes[at + 11] = "V".charCodeAt(0);
    const bad = join(tmp, "bad.db");
    writeFileSync(bad, bytes);
    const dir = join(tmp, "bad.kvctl");
    const refused = await v3(s.url, ["snapshot", "restore", bad, "--data-dir", dir]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^Error: expected sha256 [0-9a-f]{64}, got [0-9a-f]{64}\n$/);
    assert.equal(existsSync(dir), false);
    assert.match((await v3(s.url, ["snapshot", "status", bad])).stderr, /^Error: snapshot file integrity check failed/);
    const skipped = await v3(s.url, ["snapshot", "restore", bad, "--data-dir", dir, "--skip-hash-check"]);
    assert.equal(skipped.code, 0, skipped.stderr);
    assert.equal(existsSync(join(dir, "member", "wal")), true);
  });

  test("etcdctl snapshot save against kvctl writes a file kvctl reads", async () => {
    const etcdFile = join(tmp, "by-etcdctl.db");
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ETCDCTL_")));
    const code = await new Promise<number | null>((resolve, reject) => {
      const c = spawn("etcdctl", ["--endpoints", s.url, "snapshot", "save", etcdFile], { env: { ...env, ETCDCTL_API: "3" }, stdio: "ignore" });
      c.on("error", reject);
      c.on("close", resolve);
    });
    assert.equal(code, 0);
    const st = await v3(s.url, ["snapshot", "status", etcdFile, "-w", "json"]);
    assert.equal(st.code, 0, st.stderr);
    const parsed = JSON.parse(st.stdout) as { revision: number; totalKey: number };
    assert.equal(parsed.revision, revision);
    assert.equal(parsed.totalKey, 12);
  });
});
