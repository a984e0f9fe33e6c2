// kvctl endpoint status, and member add's start-up settings used for real: the member
// is added, started with exactly the KV_* variables kvctl printed (ETCD_* for etcd,
// KVCTL_TEST_SERVER=etcd), and must join; then endpoint status --cluster shows both.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, kvctlBin, repoRoot, runKvctl, startServer, type TestServer } from "../helpers/server.ts";
import { until } from "../helpers/http.ts";

let srv: TestServer;
let dead: string;
const cleanups: (() => Promise<void> | void)[] = [];
before(async () => {
  srv = await startServer();
  dead = `http://127.0.0.1:${await freePort()}`;
});
after(async () => {
  for (const c of cleanups.reverse()) await c();
  await srv?.stop();
});

interface Row {
  endpoint: string;
  id: string;
  isLeader: string;
  term: number;
  index: number;
}

/** Parses the table, checking its frame line by line. */
function parseTable(text: string): Row[] {
  const lines = text.split("\n");
  assert.equal(lines.at(-1), "", "ends with a newline");
  const rule = lines[0] ?? "";
  assert.match(rule, /^\+(-+\+){5}$/);
  assert.equal(lines[2], rule);
  assert.equal(lines.at(-2), rule);
  assert.match(lines[1] ?? "", /^\| +ENDPOINT +\| +ID +\| IS LEADER \| RAFT TERM \| RAFT INDEX \|$/);
  return lines.slice(3, -2).map((l) => {
    assert.equal(l.length, rule.length, `row width: ${l}`);
    const cells = l.split("|").slice(1, -1).map((c) => c.trim());
    const [endpoint = "", id = "", isLeader = "", term = "", index = ""] = cells;
    return { endpoint, id, isLeader, term: Number(term), index: Number(index) };
  });
}

async function memberId(url: string): Promise<string> {
  const r = await runKvctl(["--endpoints", url, "member", "list"]);
  assert.equal(r.code, 0, r.stderr);
  return /^([0-9a-f]+):/.exec(r.stdout)?.[1] ?? "";
}

test("endpoint status prints one table row for the endpoint, as etcdctl v3", async () => {
  const r = await runKvctl(["--endpoints", srv.url, "endpoint", "status"]);
  assert.equal(r.stderr, "");
  assert.equal(r.code, 0);
  const rows = parseTable(r.stdout);
  assert.equal(rows.length, 1);
  assert.equal(rows[0]?.endpoint, srv.url);
  assert.equal(rows[0]?.id, await memberId(srv.url));
  assert.equal(rows[0]?.isLeader, "true");
  assert.ok((rows[0]?.term ?? 0) >= 1);
  assert.ok((rows[0]?.index ?? 0) >= 1);
});

test("endpoint status -o json prints one JSON line and the raft index follows writes", async () => {
  const status = async (): Promise<{ Endpoint: string; Status: Record<string, unknown> }> => {
    const r = await runKvctl(["--endpoints", srv.url, "-o", "json", "endpoint", "status"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\[.*\]\n$/);
    const list = JSON.parse(r.stdout) as { Endpoint: string; Status: Record<string, unknown> }[];
    assert.equal(list.length, 1);
    return list[0]!;
  };
  const before = await status();
  assert.equal(before.Endpoint, srv.url);
  assert.deepEqual(Object.keys(before.Status), ["id", "name", "leader", "isLeader", "raftTerm", "raftIndex"]);
  assert.equal(before.Status["name"], "test");
  assert.equal(before.Status["isLeader"], true);
  assert.equal(before.Status["leader"], before.Status["id"]);
  const w = await runKvctl(["--endpoints", srv.url, "set", "/ep/k", "v"]);
  assert.equal(w.code, 0, w.stderr);
  const after = await status();
  assert.ok((after.Status["raftIndex"] as number) > (before.Status["raftIndex"] as number), JSON.stringify([before, after]));
});

test("endpoint status reports a dead endpoint on stderr, prints the rest and exits 1", async () => {
  const r = await runKvctl(["--endpoints", `${dead},${srv.url}`, "endpoint", "status"]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `Failed to get the status of endpoint ${dead} (dial tcp ${dead.slice(7)}: connect: connection refused)\n`);
  assert.deepEqual(parseTable(r.stdout).map((row) => row.endpoint), [srv.url]);
});

const refusals: { name: string; args: string[]; stderr: string }[] = [
  { name: "takes no argument", args: ["endpoint", "status", "x"], stderr: "No arguments accepted\n" },
  { name: "refuses an unknown output format", args: ["-o", "yaml", "endpoint", "status"], stderr: "Unsupported output format: yaml\n" },
];
for (const c of refusals) {
  test(`endpoint status ${c.name} (exit 1)`, async () => {
    const r = await runKvctl(["--endpoints", srv.url, ...c.args]);
    assert.deepEqual([r.stdout, r.stderr, r.code], ["", c.stderr, 1]);
  });
}

/** Starts a member configured by environment variables only (plus its own URLs). */
async function startJoiner(vars: Record<string, string>, peerUrl: string): Promise<{ url: string; child: ChildProcess }> {
  const clientPort = await freePort();
  const url = `http://127.0.0.1:${clientPort}`;
  const dataDir = mkdtempSync(join(tmpdir(), "kvctl-join-"));
  const flags = [
    "--data-dir", dataDir,
    "--listen-client-urls", url,
    "--advertise-client-urls", url,
    "--listen-peer-urls", peerUrl,
    "--initial-advertise-peer-urls", peerUrl,
  ];
  const etcd = process.env["KVCTL_TEST_SERVER"] === "etcd";
  // etcd reads the same settings as ETCD_* (what etcdctl prints).
  const env = Object.fromEntries(Object.entries(vars).map(([k, v]) => [etcd ? k.replace(/^KV_/, "ETCD_") : k, v]));
  const child = etcd
    ? spawn("etcd", ["--enable-v2=true", ...flags], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: "ignore" })
    : spawn(process.execPath, [kvctlBin, "serve", ...flags], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: "ignore" });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await gone;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { url, child };
}

test("member add prints the KV_* settings, and a member started with them joins", async () => {
  const peerUrl = `http://127.0.0.1:${await freePort()}`;
  const r = await runKvctl(["--endpoints", srv.url, "member", "add", "m2", peerUrl]);
  assert.equal(r.stderr, "");
  assert.equal(r.code, 0);
  const m = /^Added member named m2 with ID ([0-9a-f]+) to cluster\n\nKV_NAME="m2"\nKV_INITIAL_CLUSTER="(\S+)"\nKV_INITIAL_CLUSTER_STATE="existing"\n$/.exec(r.stdout);
  assert.ok(m, r.stdout);
  // Members come in the server's order (etcd sorts them by id).
  assert.deepEqual((m[2] ?? "").split(",").sort(), [`m2=${peerUrl}`, `test=${srv.peerUrl}`].sort());

  const vars: Record<string, string> = {};
  for (const line of r.stdout.split("\n")) {
    const kv = /^(KV_[A-Z_]+)=(".*")$/.exec(line);
    if (kv) vars[kv[1] ?? ""] = JSON.parse(kv[2] ?? '""') as string;
  }
  const joiner = await startJoiner(vars, peerUrl);
  await until(async () => {
    const h = await fetch(`${joiner.url}/health`, { signal: AbortSignal.timeout(1000) }).catch(() => undefined);
    return h?.status === 200;
  }, 20_000, "the new member is healthy");

  const list = await runKvctl(["--endpoints", srv.url, "member", "list"]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, new RegExp(`^${m[1]}: name=m2 peerURLs=${peerUrl} clientURLs=${joiner.url} isLeader=(true|false)$`, "m"));

  let rows: Row[] = [];
  await until(async () => {
    const st = await runKvctl(["--endpoints", srv.url, "endpoint", "status", "--cluster"]);
    if (st.code !== 0) return false;
    rows = parseTable(st.stdout);
    return rows.length === 2 && rows[0]?.term === rows[1]?.term;
  }, 20_000, "both members report the same term");
  assert.deepEqual(rows.map((row) => row.endpoint).sort(), [srv.url, joiner.url].sort());
  assert.equal(rows.filter((row) => row.isLeader === "true").length, 1, JSON.stringify(rows));
  assert.ok(rows.some((row) => row.id === m[1]));
});
