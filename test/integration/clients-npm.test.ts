// Node clients from the npm registry against `kvctl serve`:
// - etcd3 1.1 (Microsoft's, over @grpc/grpc-js): KV builders, txns, leases with
//   keepalives, watch builders, compaction, locks, elections, namespaces, STM isolation
//   levels, users/roles and auth (test/clients/etcd3-node.mjs);
// - node-etcd 7.0 (v2 over HTTP): keys, dirs, in-order keys, CAS/CAD, one-shot watches
//   and watchers (expire, a cleared index's resync), stats, host failover
//   (test/clients/node-etcd.mjs).
// - etcd3 against three members whose leader is killed mid-way: writes, the watch, a kept
//   lease, a lock and an election across the failover (test/clients/etcd3-node-failover.mjs).
// Each scenario prints one normalised line per step; against kvctl the lines must be etcd
// 3.4.23's, recorded in test/clients/<scenario>.expected.txt. The clients are not the
// project's dependencies (npm ci stays light): install them into a folder of their own,
//   npm install --prefix /tmp/rc-npm etcd3 node-etcd
// and name its node_modules in KVCTL_NPM_CLIENTS (default /tmp/rc-npm/node_modules).
// Each test is skipped, with a notice, when its package is not there.
//
// To record the expected files again from etcd (installed as `etcd`):
//   KVCTL_NPM_RECORD=1 node --import tsx --test test/integration/clients-npm.test.ts
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { startGrpcCluster, startGrpcServer } from "../helpers/grpc.ts";
import { runProcess } from "../helpers/run-process.ts";
import { repoRoot } from "../helpers/server.ts";

const modules = process.env["KVCTL_NPM_CLIENTS"] ?? "/tmp/rc-npm/node_modules";
const record = process.env["KVCTL_NPM_RECORD"] === "1";
const kind = record ? "etcd" : "kvctl";

function unavailable(pkg: string): string | false {
  if (existsSync(join(modules, pkg, "package.json"))) return false;
  const why = `${pkg} is not in ${modules} (npm install --prefix <dir> ${pkg}; KVCTL_NPM_CLIENTS=<dir>/node_modules)`;
  process.stderr.write(`clients-npm: ${pkg} skipped: ${why}\n`);
  return why;
}

async function check(name: string): Promise<void> {
  const s = await startGrpcServer(kind, ["--enable-v2=true"]);
  try {
    const port = s.endpoint.split(":")[1]!;
    const script = join(repoRoot, "test", "clients", `${name}.mjs`);
    const r = await runProcess(process.execPath, [script, "--port", port, "--wait", "20", "--modules", modules], { cwd: repoRoot, env: process.env, timeoutMs: 55_000 });
    assert.equal(r.code, 0, `${name} exited ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}\nserver: ${s.logs().slice(-2000)}`);
    const file = join(repoRoot, "test", "clients", `${name}.expected.txt`);
    if (record) {
      writeFileSync(file, r.stdout);
      return;
    }
    // Line by line, so that a failure names the steps that differ.
    assert.deepEqual(r.stdout.split("\n"), readFileSync(file, "utf8").split("\n"), `${name} against kvctl differs from etcd 3.4.23`);
  } finally {
    await s.stop();
  }
}

describe(`npm's etcd clients against ${kind}`, { concurrency: true }, () => {
  test("etcd3 1.1 (gRPC): every step answers as etcd 3.4.23's", { skip: unavailable("etcd3"), timeout: 60_000 }, async () => {
    await check("etcd3-node");
  });

  test("etcd3 1.1, three members, the leader killed: every step answers as etcd 3.4.23's", { skip: unavailable("etcd3"), timeout: 90_000 }, async () => {
    const c = await startGrpcCluster(kind, 3);
    try {
      const script = join(repoRoot, "test", "clients", "etcd3-node-failover.mjs");
      const args = [script, "--hosts", c.members.map((m) => m.endpoint).join(","), "--pids", c.members.map((m) => String(m.proc.child.pid)).join(","), "--modules", modules];
      const r = await runProcess(process.execPath, args, { cwd: repoRoot, env: process.env, timeoutMs: 85_000 });
      assert.equal(r.code, 0, `failover scenario exited ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}\n${c.members.map((m) => m.proc.log().slice(-1500)).join("\n")}`);
      const file = join(repoRoot, "test", "clients", "etcd3-node-failover.expected.txt");
      if (record) writeFileSync(file, r.stdout);
      else assert.deepEqual(r.stdout.split("\n"), readFileSync(file, "utf8").split("\n"), "etcd3 failover against kvctl differs from etcd 3.4.23");
    } finally {
      await c.stop();
    }
  });

  test("node-etcd 7.0 (v2): every step answers as etcd 3.4.23's", { skip: unavailable("node-etcd"), timeout: 60_000 }, async () => {
    await check("node-etcd");
  });
});
