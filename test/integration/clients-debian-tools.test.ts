// Debian's etcd tools (programs, not libraries) against `kvctl serve`:
// - crypt (golang-github-xordataexchange-crypt: viper's encrypted remote config; etcd
//   3.4.23's v2 client): set/get/list, plaintext and OpenPGP, error paths
//   (test/clients/crypt.sh);
// - the discovery service (etcd-discovery: discovery.etcd.io) with a store behind it and a
//   three-member cluster bootstrapped through it with --discovery, then a full token (exit,
//   proxy), unknown and malformed tokens, a bad size, a duplicate id and a duplicate name
//   (test/clients/discovery.sh). Run for store/cluster = kvctl/kvctl, kvctl/etcd and
//   etcd/kvctl (the last two when etcd is installed);
// - ctdb_etcd_lock (ctdb: CTDB's cluster lock through python-etcd's v2 Lock) run as CTDB
//   runs its mutex helpers: acquire and hold, contention, release when its parent goes, a
//   killed holder's TTL expiry, refusals (test/clients/ctdb-etcd-lock.sh). The helper is
//   taken from KVCTL_CTDB_ETCD_LOCK, else /usr/libexec/ctdb/ctdb_etcd_lock: ctdb need not be
//   installed (`apt-get download ctdb && dpkg -x ctdb_*.deb <dir>` gives the script).
// Each script prints one normalised line per step; the lines must be those recorded from
// etcd 3.4.23 (test/clients/crypt.expected.txt, discovery.expected.txt,
// ctdb-etcd-lock.expected.txt). Each test is
// skipped, with a notice, when its tool is not installed.
//
// To record the expected files again from etcd (installed as `etcd`):
//   KVCTL_DEBIAN_TOOLS_RECORD=1 node --import tsx --test test/integration/clients-debian-tools.test.ts
// Ports: the discovery scenarios take 30 each from KVCTL_DISCOVERY_PORTS (default 25600).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { until } from "../../src/until.test-helper.ts";
import { installed, startGrpcServer } from "../helpers/grpc.ts";
import { kvctlCommand } from "../helpers/etcd.ts";
import { runProcess } from "../helpers/run-process.ts";
import { repoRoot } from "../helpers/server.ts";

const record = process.env["KVCTL_DEBIAN_TOOLS_RECORD"] === "1";
const kind = record ? "etcd" : "kvctl";
const clients = join(repoRoot, "test", "clients");
const discoveryBase = Number(process.env["KVCTL_DISCOVERY_PORTS"] ?? 25600);
const ctdbHelper = process.env["KVCTL_CTDB_ETCD_LOCK"] ?? "/usr/libexec/ctdb/ctdb_etcd_lock";

function missing(file: string, pkg: string): string | false {
  if (existsSync(file)) return false;
  const why = `${file} is not installed (apt-get install ${pkg})`;
  process.stderr.write(`clients-debian-tools: skipped: ${why}\n`);
  return why;
}

function compare(name: string, stdout: string): void {
  const file = join(clients, `${name}.expected.txt`);
  if (record) {
    writeFileSync(file, stdout);
    return;
  }
  // Line by line, so that a failure names the steps that differ.
  assert.deepEqual(stdout.split("\n"), readFileSync(file, "utf8").split("\n"), `${name} against kvctl differs from etcd 3.4.23`);
}

describe(`Debian's etcd tools against ${kind}`, { concurrency: true }, () => {
  test("crypt: every step answers as etcd 3.4.23's", { skip: missing("/usr/bin/crypt-xordataexchange", "golang-github-xordataexchange-crypt") || missing("/usr/bin/gpg", "gpg"), timeout: 60_000 }, async () => {
    const s = await startGrpcServer(kind, ["--enable-v2=true"]);
    try {
      await waitV2(s.url);
      const r = await runProcess(join(clients, "crypt.sh"), [s.url], { cwd: repoRoot, env: process.env, timeoutMs: 50_000 });
      assert.equal(r.code, 0, `crypt.sh exited ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}`);
      compare("crypt", r.stdout);
    } finally {
      await s.stop();
    }
  });

  const noPythonEtcd = ((): string | false => {
    const r = spawnSync("/usr/bin/python3", ["-c", "import etcd"], { encoding: "utf8" });
    if (r.error === undefined && r.status === 0) return false;
    process.stderr.write("clients-debian-tools: ctdb_etcd_lock skipped: /usr/bin/python3 cannot import etcd (apt-get install python3-etcd)\n");
    return "no python3-etcd";
  })();
  test("ctdb_etcd_lock: every step answers as etcd 3.4.23's", { skip: missing(ctdbHelper, "ctdb, or KVCTL_CTDB_ETCD_LOCK=<the extracted script>") || noPythonEtcd, timeout: 60_000 }, async () => {
    const s = await startGrpcServer(kind, ["--enable-v2=true"]);
    try {
      await waitV2(s.url);
      const r = await runProcess(join(clients, "ctdb-etcd-lock.sh"), [s.endpoint.split(":")[1]!, ctdbHelper], { cwd: repoRoot, env: process.env, timeoutMs: 55_000 });
      assert.equal(r.code, 0, `ctdb-etcd-lock.sh exited ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}`);
      compare("ctdb-etcd-lock", r.stdout);
    } finally {
      await s.stop();
    }
  });

  const pairings: Array<[string, string]> = record ? [["etcd", "etcd"]] : [["kvctl", "kvctl"], ...(installed("etcd") ? ([["kvctl", "etcd"], ["etcd", "kvctl"]] as Array<[string, string]>) : [])];
  pairings.forEach(([store, cluster], i) => {
    test(`discovery service: store ${store}, cluster of ${cluster}: every step as etcd 3.4.23's`, { skip: missing("/usr/bin/discovery.etcd.io", "etcd-discovery"), timeout: 90_000 }, async () => {
      const env = { ...process.env, KVCTL_CMD: [process.execPath, ...kvctlCommand()].join(" ") };
      const r = await runProcess(join(clients, "discovery.sh"), [store, cluster, String(discoveryBase + 30 * i)], { cwd: repoRoot, env, timeoutMs: 85_000 });
      assert.equal(r.code, 0, `discovery.sh exited ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}`);
      compare("discovery", r.stdout);
    });
  });
});

/** Until the v2 API answers (crypt has no retry of its own). */
async function waitV2(url: string): Promise<void> {
  // A refused connection is "not serving yet".
  await until(async () => (await fetch(`${url}/v2/keys/`, { signal: AbortSignal.timeout(1000) })).ok, `${url}/v2/keys/ to answer`, 20_000, { intervalMs: 100, ignoreErrors: true });
}
