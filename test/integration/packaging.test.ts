// The example systemd units and environment file (packaging/) start a working member when
// run as systemd would run them (ExecStart with the EnvironmentFile's variables, $VAR
// expanded, %H the host name), here without systemd: the binary and paths are pointed at
// the checkout and a temp dir, the rest of the unit is used as written.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, kvctlBin, repoRoot } from "../helpers/server.ts";
import { until } from "../helpers/http.ts";
import { notifySocket, withinMs } from "../helpers/notify-socket.ts";

/** The [Service] settings of a unit: Environment= lines, EnvironmentFile, ExecStart. */
export function parseUnit(text: string): { env: Record<string, string>; envFile: string | undefined; execStart: string; type: string } {
  const env: Record<string, string> = {};
  let envFile: string | undefined;
  let execStart = "";
  let type = "simple";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const m = /^(\w+)=(.*)$/.exec(line);
    if (m === null) continue;
    const [, key, value] = m as unknown as [string, string, string];
    if (key === "Environment") {
      const eq = value.indexOf("=");
      env[value.slice(0, eq)] = value.slice(eq + 1).replace(/%H/g, hostname());
    } else if (key === "EnvironmentFile") envFile = value.replace(/^-/, "");
    else if (key === "ExecStart") execStart = value;
    else if (key === "Type") type = value;
  }
  return { env, envFile, execStart, type };
}

/** systemd's EnvironmentFile syntax: VAR=value lines, # comments. */
export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    env[line.slice(0, eq)] = line.slice(eq + 1).replace(/^"(.*)"$/, "$1");
  }
  return env;
}

/** ExecStart's words with $VAR expanded as systemd does (an empty $VAR word vanishes). */
function execWords(execStart: string, env: Record<string, string>): string[] {
  return execStart.split(/\s+/).flatMap((w) => {
    const m = /^\$(\w+)$/.exec(w);
    if (m === null) return [w];
    return (env[m[1]!] ?? "").split(/\s+/).filter((x) => x !== "");
  });
}

async function startAsUnit(unitFile: string, envText: (ports: { client: number; peer: number; dir: string }) => string): Promise<void> {
  const unit = parseUnit(readFileSync(join(repoRoot, "packaging", unitFile), "utf8"));
  const dir = mkdtempSync(join(tmpdir(), "kvctl-unit-"));
  const client = await freePort();
  const peer = await freePort();
  const env = { ...unit.env, ...parseEnvFile(envText({ client, peer, dir })) };
  const words = execWords(unit.execStart, env);
  assert.match(words[0]!, /\/kvctl$/, "ExecStart runs kvctl");
  assert.equal(words[1], "serve");
  const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("KV_") && !k.startsWith("ETCD_") && k !== "NOTIFY_SOCKET"));
  // Type=notify: systemd starts the binary itself with NOTIFY_SOCKET and waits for READY=1.
  const notify = unit.type === "notify" ? notifySocket(join(dir, "notify")) : undefined;
  if (notify !== undefined) await notify.bound;
  const notifyEnv = notify === undefined ? {} : { NOTIFY_SOCKET: join(dir, "notify") };
  const child = spawn(kvctlBin, words.slice(1), { env: { ...baseEnv, ...env, ...notifyEnv }, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (b: Buffer) => (log += b.toString()));
  child.stderr.on("data", (b: Buffer) => (log += b.toString()));
  try {
    await until(async () => {
      const r = await fetch(`http://127.0.0.1:${client}/health`).catch(() => undefined);
      return r?.status === 200;
    }, 20_000, `member started by ${unitFile}: ${log}`);
    if (notify !== undefined) assert.equal(await withinMs(notify.message, 20_000, () => `no READY=1 from ${unitFile}: ${log}`), `READY=1\nMAINPID=${child.pid}\n`);
    const put = await fetch(`http://127.0.0.1:${client}/v2/keys/unit`, { method: "PUT", body: new URLSearchParams({ value: "ok" }) });
    assert.equal(put.status, 201);
    const members = (await (await fetch(`http://127.0.0.1:${client}/v2/members`)).json()) as { members: { name: string }[] };
    assert.equal(members.members.length, 1);
  } finally {
    const gone = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await gone;
    notify?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test("packaging/kvctl.service with packaging/kvctl.env starts a member", async () => {
  const example = readFileSync(join(repoRoot, "packaging", "kvctl.env"), "utf8");
  await startAsUnit("kvctl.service", ({ client, peer, dir }) =>
    example
      .replace(/127\.0\.0\.1:2379/g, `127.0.0.1:${client}`)
      .replace(/127\.0\.0\.1:2380/g, `127.0.0.1:${peer}`)
      .replace(/^KV_DATA_DIR=.*$/m, `KV_DATA_DIR=${join(dir, "data")}`));
});

test("Debian's etcd unit with only the binary changed starts a member from an etcd environment file", async () => {
  await startAsUnit("etcd.service", ({ client, peer, dir }) => [
    "# /etc/default/etcd as an etcd user writes it",
    `ETCD_DATA_DIR=${join(dir, "etcd")}`,
    `ETCD_LISTEN_CLIENT_URLS=http://127.0.0.1:${client}`,
    `ETCD_ADVERTISE_CLIENT_URLS=http://127.0.0.1:${client}`,
    `ETCD_LISTEN_PEER_URLS=http://127.0.0.1:${peer}`,
    `ETCD_INITIAL_ADVERTISE_PEER_URLS=http://127.0.0.1:${peer}`,
    `ETCD_INITIAL_CLUSTER=${hostname()}=http://127.0.0.1:${peer}`,
    "DAEMON_ARGS=--log-level warn",
  ].join("\n"));
});

test("npm pack + npm install -g gives a working kvctl and its man page", { skip: process.env["KVCTL_TEST_OFFLINE"] === "1" && "offline" }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-pack-"));
  const run = (cmd: string, args: string[], cwd: string): Promise<{ code: number | null; out: string }> =>
    new Promise((resolve) => {
      const c = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, npm_config_ignore_scripts: "true" } });
      let out = "";
      c.stdout.on("data", (b: Buffer) => (out += b.toString()));
      c.stderr.on("data", (b: Buffer) => (out += b.toString()));
      c.on("exit", (code) => resolve({ code, out }));
    });
  try {
    const pack = await run("npm", ["pack", "--pack-destination", dir, "--ignore-scripts"], repoRoot);
    assert.equal(pack.code, 0, pack.out);
    const tarball = join(dir, pack.out.trim().split("\n").pop()!);
    const prefix = join(dir, "prefix");
    const install = await run("npm", ["install", "-g", tarball, "--prefix", prefix, "--no-audit", "--no-fund"], dir);
    if (install.code !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|network/i.test(install.out)) {
      test.skip?.("offline");
      return;
    }
    assert.equal(install.code, 0, install.out);
    const version = await run(join(prefix, "bin", "kvctl"), ["--version"], dir);
    assert.equal(version.code, 0, version.out);
    assert.match(version.out, /\d+\.\d+\.\d+/);
    assert.ok(readFileSync(join(prefix, "share", "man", "man1", "kvctl.1"), "utf8").includes(".TH"), "man page installed");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
