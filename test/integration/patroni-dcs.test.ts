// patroni 3.0.2 (Debian's patroni) keeps a PostgreSQL cluster's leader key, members, config,
// failover, sync and history keys in etcd through its DCS classes: patroni.dcs.etcd3 (its
// own client of the v3 JSON gateway: txns on create/mod revisions, leases, a watch stream
// feeding its key cache) and patroni.dcs.etcd (v2 keys API over python-etcd).
// test/clients/patroni-dcs.py makes the calls patroni's HA loop makes, without PostgreSQL,
// and prints one normalized line per step; against kvctl they must be etcd 3.4.23's,
// recorded in test/clients/patroni-dcs.*.expected.txt. Four runs at once: each DCS against
// one member (etcd3: then with auth on, as a user confined to its namespace, and again
// after auth was turned off and on, which drops the tokens), and against three members
// where the member patroni talks to is killed mid-way (it must carry on through another). Skipped, with a notice, when /usr/bin/python3
// cannot import patroni.
//
// To record the expected files again from etcd (installed as `etcd`):
//   KVCTL_PATRONI_RECORD=1 node --import tsx --test test/integration/patroni-dcs.test.ts
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { startGrpcCluster, startGrpcServer, type GrpcTestCluster } from "../helpers/grpc.ts";
import { repoRoot } from "../helpers/server.ts";
import { until } from "../../src/until.test-helper.ts";

const PYTHON = "/usr/bin/python3";
const script = join(repoRoot, "test", "clients", "patroni-dcs.py");
const expectedFile = (name: string): string => join(repoRoot, "test", "clients", `patroni-dcs.${name}.expected.txt`);
const record = process.env["KVCTL_PATRONI_RECORD"] === "1";
const kind = record ? "etcd" : "kvctl";
const V2 = ["--enable-v2=true"];

function unavailable(): string | false {
  const r = spawnSync(PYTHON, ["-c", "import patroni.dcs.etcd3, patroni.dcs.etcd"], { encoding: "utf8" });
  if (r.error === undefined && r.status === 0) return false;
  const why = `${PYTHON} cannot import patroni.dcs.etcd3 (apt-get install patroni)`;
  process.stderr.write(`patroni-dcs test skipped: ${why}\n`);
  return why;
}

/** Until a linearizable range answers on every member (a cluster has a leader). */
async function ready(urls: readonly string[]): Promise<void> {
  for (const url of urls) {
    await until(async () => {
      const res = await fetch(`${url}/v3/kv/range`, { method: "POST", body: '{"key":"AA=="}', signal: AbortSignal.timeout(2000) }).catch(() => undefined);
      return res?.ok === true;
    }, `${url} serving`, 20_000, { intervalMs: 100 });
  }
}

/**
 * Runs the scenario; on its "# KILL host:port" line calls `kill` with that endpoint and then
 * tells it to go on. Resolves with its lines, without the comment lines.
 */
function scenario(args: string[], kill: (endpoint: string) => Promise<void>, logs: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [script, ...args], { cwd: repoRoot, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 55_000);
    let killed = false;
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString("utf8");
      // The whole line: a chunk may end inside it.
      const m = /^# KILL (\S+)\n/m.exec(stdout);
      if (m !== null && !killed) {
        killed = true;
        kill(m[1]!).then(() => child.stdin.write("killed\n"), reject);
      }
    });
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.stdin.on("error", () => {});
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`scenario exited ${code ?? signal}: ${stderr.slice(-3000)}\nserver: ${logs().slice(-2000)}`));
      else resolve(stdout.split("\n").filter((l) => !l.startsWith("# ")).join("\n"));
    });
  });
}

function compare(name: string, actual: string): void {
  if (record) {
    writeFileSync(expectedFile(name), actual);
    return;
  }
  const expected = readFileSync(expectedFile(name), "utf8");
  // Line by line, so that a failure names the steps that differ.
  assert.deepEqual(actual.split("\n"), expected.split("\n"), `patroni against kvctl differs from etcd 3.4.23 (${name})`);
}

describe(`patroni's etcd DCS against ${kind}`, { skip: unavailable(), concurrency: true }, () => {
  const stops: Array<() => Promise<void>> = [];
  after(async () => {
    await Promise.all(stops.map((s) => s()));
  });

  for (const dcs of ["etcd3", "etcd"] as const) {
    test(`${dcs}, one member: the HA loop's calls answer as etcd 3.4.23's`, { timeout: 60_000 }, async () => {
      const s = await startGrpcServer(kind, V2);
      stops.push(s.stop);
      await ready([s.url]);
      const nothingToKill = async (): Promise<void> => assert.fail("no failover in this run");
      compare(dcs, await scenario(["--dcs", dcs, "--hosts", s.endpoint, ...(dcs === "etcd3" ? ["--auth"] : [])], nothingToKill, s.logs));
    });

    test(`${dcs}, three members: the member patroni talks to is killed and it moves on`, { timeout: 60_000 }, async () => {
      const c: GrpcTestCluster = await startGrpcCluster(kind, 3, V2);
      stops.push(c.stop);
      await ready(c.members.map((m) => m.url));
      const kill = async (endpoint: string): Promise<void> => {
        const m = c.members.find((x) => x.endpoint === endpoint);
        assert.ok(m !== undefined, `the scenario talks to ${endpoint}, not a member`);
        await m.proc.stop();
      };
      const logs = (): string => c.members.map((m) => m.proc.log()).join("\n");
      compare(`${dcs}-cluster`, await scenario(["--dcs", dcs, "--hosts", c.members.map((m) => m.endpoint).join(","), "--failover"], kill, logs));
    });
  }
});
