// Run it where etcd runs: real `kvctl serve` processes started as etcd 3.4 is
// started — with every flag of `etcd --help`, from an etcd environment file (ETCD_*), from
// etcd's YAML configuration file — and --enable-v2=false / --cors answering as etcd does.
// The flags are read from the installed etcd's --help at test time; without etcd those
// tests skip with a notice (.ci/run installs etcd-server).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, repoRoot } from "../helpers/server.ts";
import { kvctlCommand } from "../helpers/etcd.ts";
import { waitHealthy } from "../helpers/http.ts";
import { stopProcess } from "../helpers/run-process.ts";

const root = mkdtempSync(join(tmpdir(), "kvctl-etcd-config-"));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

const etcdHelp = (() => {
  const r = spawnSync("etcd", ["--help"], { encoding: "utf8" });
  return r.error === undefined ? `${r.stdout}${r.stderr}` : undefined;
})();
const noEtcd = etcdHelp === undefined ? "etcd is not installed (apt-get install etcd-server): comparison with etcd 3.4 skipped" : false;

/** The environment without the caller's KV_* and ETCD_* settings. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("KV_") && !k.startsWith("ETCD_")));
  return { ...base, ...extra };
}

interface Proc {
  url: string;
  child: ChildProcess;
  log: () => string;
}

function launch(file: string, args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; log: () => string } {
  const child = spawn(file, args, { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let out = "";
  const keep = (c: Buffer): void => {
    out = (out + c.toString("utf8")).slice(-200_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return { child, log: () => out };
}

/** Ports and the flags that place one member on them. */
async function placement(name: string): Promise<{ url: string; peer: string; dir: string; flags: string[]; env: Record<string, string> }> {
  const url = `http://127.0.0.1:${await freePort()}`;
  const peer = `http://127.0.0.1:${await freePort()}`;
  const dir = mkdtempSync(join(root, `${name}-`));
  const settings: [string, string][] = [
    ["name", name], ["data-dir", dir], ["listen-client-urls", url], ["advertise-client-urls", url],
    ["listen-peer-urls", peer], ["initial-advertise-peer-urls", peer], ["initial-cluster", `${name}=${peer}`],
  ];
  return {
    url, peer, dir,
    flags: settings.flatMap(([k, v]) => [`--${k}`, v]),
    env: Object.fromEntries(settings.map(([k, v]) => [`ETCD_${k.toUpperCase().replace(/-/g, "_")}`, v])),
  };
}

async function startKvctl(name: string, args: (p: Awaited<ReturnType<typeof placement>>) => string[], env: (p: Awaited<ReturnType<typeof placement>>) => Record<string, string> = () => ({})): Promise<Proc> {
  const p = await placement(name);
  const proc = launch(process.execPath, [...kvctlCommand(), "serve", ...args(p)], cleanEnv(env(p)));
  await waitHealthy(p.url, proc);
  return { url: p.url, ...proc };
}

async function startEtcd(name: string, extra: string[]): Promise<Proc> {
  const p = await placement(name);
  const proc = launch("etcd", [...p.flags, ...extra], cleanEnv());
  await waitHealthy(p.url, proc);
  return { url: p.url, ...proc };
}

function stop(p: Proc): Promise<void> {
  return stopProcess(p.child);
}

/** KEY=value lines as systemd's EnvironmentFile reads them (comments, optional double quotes). */
function readEnvFile(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^([A-Z0-9_]+)=(?:"(.*)"|(.*))$/.exec(line.trim());
    if (m !== null) out[m[1]!] = m[2] ?? m[3] ?? "";
  }
  return out;
}

/** `--flag 'default'` lines of etcd's --help: flag name -> default as printed. */
function helpFlags(help: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of help.matchAll(/^ {2}--([a-z0-9-]+)(?: '([^']*)'| (\S+))?$/gm)) out.set(m[1]!, m[2] ?? m[3] ?? "");
  return out;
}

test("every flag of etcd 3.4's --help is accepted by kvctl serve, and the member starts", { skip: noEtcd }, async () => {
  const flags = helpFlags(etcdHelp!);
  assert.ok(flags.size >= 80, `read ${flags.size} flags from etcd --help`);
  // Placement flags are the test's own; --config-file would replace all the others.
  const own = new Set(["name", "data-dir", "listen-client-urls", "advertise-client-urls", "listen-peer-urls", "initial-advertise-peer-urls", "initial-cluster", "config-file"]);
  // etcd's help prints a Go expression or nothing for these defaults.
  const values: Record<string, string> = { "max-concurrent-streams": "4294967295", "backend-batch-interval": "0s", "wal-dir": "" };
  const args = [...flags].filter(([n]) => !own.has(n)).map(([n, v]) => `--${n}=${values[n] ?? v}`);
  const metricsUrl = `http://127.0.0.1:${await freePort()}`;
  const kv = await startKvctl("every-flag", (p) => [...p.flags, ...args, "--listen-metrics-urls", metricsUrl]);
  try {
    assert.doesNotMatch(kv.log(), /not defined/);
    // The metrics listener answers /metrics and /health.
    assert.equal((await fetch(`${metricsUrl}/health`)).status, 200);
    assert.match(await (await fetch(`${metricsUrl}/metrics`)).text(), /^etcd_server_has_leader 1$/m);
    // etcd's defaults include --enable-v2=false: the member answers as etcd 3.4 does.
    assert.equal((await fetch(`${kv.url}/v2/keys`)).status, 404);
    assert.equal((await fetch(`${kv.url}/version`)).status, 200);
  } finally {
    await stop(kv);
  }
});

test("kvctl starts from an etcd environment file (ETCD_* variables)", async () => {
  const kv = await startKvctl("envfile", () => [], (p) => {
    // As a systemd EnvironmentFile would give them.
    const file = join(p.dir, "..", "etcd.env");
    writeFileSync(file, ["# /etc/default/etcd", ...Object.entries(p.env).map(([k, v]) => `${k}="${v}"`), "ETCD_INITIAL_CLUSTER_STATE=new", "ETCD_ENABLE_V2=true", "ETCD_QUOTA_BACKEND_BYTES=8589934592", "ETCD_AUTO_COMPACTION_RETENTION=1h", ""].join("\n"));
    return readEnvFile(file);
  });
  try {
    const put = await fetch(`${kv.url}/v2/keys/from-env`, { method: "PUT", body: new URLSearchParams({ value: "ok" }) });
    assert.equal(put.status, 201);
    const members = (await (await fetch(`${kv.url}/v2/members`)).json()) as { members: { name: string }[] };
    assert.deepEqual(members.members.map((m) => m.name), ["envfile"]);
    assert.match(kv.log(), /recognized and used environment variable.*ETCD_NAME=envfile/);
    // The quota from the environment file is the member's (etcd_server_quota_backend_bytes).
    assert.match(await (await fetch(`${kv.url}/metrics`)).text(), /^etcd_server_quota_backend_bytes 8\.589934592e\+09$/m);
  } finally {
    await stop(kv);
  }
});

test("kvctl starts from etcd's YAML configuration file and ignores other flags", async () => {
  const kv = await startKvctl("yaml", (p) => {
    const file = join(p.dir, "..", "yaml.conf.yml");
    writeFileSync(file, [
      "# etcd.conf.yml as etcd 3.4 documents it",
      "name: 'yaml'",
      `data-dir: ${p.dir}`,
      `listen-client-urls: ${p.url}`,
      `advertise-client-urls: ${p.url}`,
      `listen-peer-urls: ${p.peer}`,
      `initial-advertise-peer-urls: ${p.peer}`,
      `initial-cluster: yaml=${p.peer}`,
      "initial-cluster-state: 'new'",
      "enable-v2: false",
      "quota-backend-bytes: 4294967296",
      "auto-compaction-mode: periodic",
      "auto-compaction-retention: '30m'",
      "client-transport-security:",
      "  client-cert-auth: false",
      "  auto-tls: false",
      "",
    ].join("\n"));
    return ["--config-file", file, "--name", "ignored", "--snapshot-count", "not-even-a-number"];
  });
  try {
    const keys = await fetch(`${kv.url}/v2/keys`);
    assert.equal(keys.status, 404, "enable-v2: false from the file");
    assert.equal(await keys.text(), "404 page not found\n");
    const range = await fetch(`${kv.url}/v3/kv/range`, { method: "POST", body: JSON.stringify({ key: Buffer.from("a").toString("base64") }) });
    assert.equal(range.status, 200, "the v3 gateway stays");
    assert.match(kv.log(), /loaded server configuration, other configuration command line flags and environment variables will be ignored/);
  } finally {
    await stop(kv);
  }
});

test("--enable-v2=false and --cors answer as etcd 3.4's", { skip: noEtcd }, async () => {
  const extra = ["--enable-v2=false", "--cors=http://a.example:80,https://b.example:8443"];
  const [etcd, kv] = await Promise.all([startEtcd("etcd-ref", extra), startKvctl("kv-cors", (p) => [...p.flags, ...extra])]);
  try {
    const cases: { method: string; path: string; origin?: string }[] = [];
    for (const path of ["/v2/keys", "/v2/keys/a", "/v2/keys/a?recursive=true", "/v2/members", "/v2/machines", "/v2/stats/self", "/v2/auth/users", "/v2/auth/enable", "/health", "/nope"]) {
      for (const origin of [undefined, "http://a.example:80", "https://b.example:8443", "http://a.example", "http://c.example:80"]) cases.push({ method: "GET", path, ...(origin === undefined ? {} : { origin }) });
    }
    cases.push({ method: "PUT", path: "/v2/keys/a", origin: "http://a.example:80" }, { method: "OPTIONS", path: "/v2/keys", origin: "http://c.example:80" }, { method: "OPTIONS", path: "/v2/keys", origin: "http://a.example:80" });
    const cors = ["access-control-allow-origin", "access-control-allow-methods", "access-control-allow-headers"];
    for (const c of cases) {
      const ask = async (url: string): Promise<unknown> => {
        const res = await fetch(`${url}${c.path}`, { method: c.method, headers: c.origin === undefined ? {} : { Origin: c.origin } });
        return { status: res.status, body: await res.text(), cors: cors.map((h) => res.headers.get(h)), type: res.headers.get("content-type") };
      };
      assert.deepEqual(await ask(kv.url), await ask(etcd.url), `${c.method} ${c.path} Origin ${c.origin ?? "none"}`);
    }
  } finally {
    await Promise.all([stop(etcd), stop(kv)]);
  }
});
