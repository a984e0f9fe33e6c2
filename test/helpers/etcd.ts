// Servers and runners for the v3 CLI tests, which compare `kvctl v3 …` with
// `ETCDCTL_API=3 etcdctl …` command by command.
//
// Two servers run side by side and receive the same operations in the same order, so
// their revisions agree:
// - the reference: always the real etcd 3.4, which etcdctl talks to (gRPC);
// - the server under test, which kvctl talks to (v3 JSON gateway): `kvctl serve` by
//   default, or etcd when KVCTL_V3_TEST_SERVER=etcd.
// Their cluster and member IDs differ; sameIds() rewrites the tested server's IDs to the
// reference's so outputs compare byte for byte.
//
// kvctl runs as bin/kvctl (dist/ when built, else the TypeScript through tsx), or as the
// file in KVCTL_TEST_BIN, or from source through tsx when KVCTL_TEST_FROM_SOURCE=1.
// Ports: KVCTL_V3_TEST_PORTS="lo-hi" (default 23310-23349), free ones (ports.ts).

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kvctlBin, repoRoot } from "./server.ts";
import { runProcess, whenOutput, type ProcessResult } from "./run-process.ts";
import { portIn, portRange } from "./ports.ts";
import { singleMemberFlags, spawnServer } from "./spawned.ts";
import { eventually } from "../../src/until.test-helper.ts";

export interface V3Server {
  url: string;
  kind: "etcd" | "kvctl";
  pid: number;
  /** The header's cluster_id and member_id, as decimal strings. */
  clusterId: string;
  memberId: string;
  stop(): Promise<void>;
}

const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});

/** The next free port of KVCTL_V3_TEST_PORTS (never handed out twice by this process). */
export function rangePort(): Promise<number> {
  return portIn(portRange("KVCTL_V3_TEST_PORTS", [23310, 23349])!);
}

/** POSTs JSON to a gateway path; resolves with the parsed answer (throws on non-2xx). */
export async function gateway<T = Record<string, unknown>>(url: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");

/** Puts a key through the gateway (setup steps, same on both servers). */
export async function gatewayPut(url: string, key: string, value: string): Promise<void> {
  await gateway(url, "/v3/kv/put", { key: b64(key), value: b64(value) });
}

async function waitReady(url: string, child: ChildProcess, log: () => string): Promise<{ cluster_id?: string; member_id?: string }> {
  const range = async (): Promise<{ cluster_id?: string; member_id?: string } | undefined> => {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}:\n${log()}`);
    try {
      const r = await gateway<{ header?: { cluster_id?: string; member_id?: string } }>(url, "/v3/kv/range", { key: b64("/") });
      return r.header ?? {};
    } catch {
      return undefined; // not serving yet
    }
  };
  return eventually(range, `the server at ${url} ready`, 20_000, { intervalMs: 50, detail: log });
}

/** Starts one single-member server on two ports of the range. */
export async function startV3Server(kind: "etcd" | "kvctl"): Promise<V3Server> {
  const client = await rangePort();
  const peer = await rangePort();
  const url = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const dataDir = mkdtempSync(join(tmpdir(), "kvctl-v3-"));
  const flags = singleMemberFlags(dataDir, url, peerUrl);
  const [file, args] = kind === "etcd" ? ["/usr/bin/etcd", flags] : [process.execPath, [kvctlBin, "serve", ...flags]];
  const proc = spawnServer(file, args, repoRoot);
  const child = proc.child;
  const stop = async (): Promise<void> => {
    await proc.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const h = await waitReady(url, child, proc.log);
    return { url, kind, pid: child.pid ?? 0, clusterId: String(h.cluster_id ?? "0"), memberId: String(h.member_id ?? "0"), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export type RunResult = ProcessResult;

export interface RunOptions {
  input?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
}

function cleanEnv(extra: Record<string, string> | undefined): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("KV_") && !k.startsWith("ETCDCTL_") && k !== "NO_COLOR"),
  );
  return { ...base, ...extra };
}

function run(file: string, args: readonly string[], opts: Omit<RunOptions, "env"> & { env: NodeJS.ProcessEnv }): Promise<RunResult> {
  return runProcess(file, args, { cwd: repoRoot, env: opts.env, ...(opts.input === undefined ? {} : { input: opts.input }), ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }) });
}

/** The node arguments that start kvctl (see the header). */
export function kvctlCommand(): string[] {
  if (process.env["KVCTL_TEST_FROM_SOURCE"] === "1") return ["--import", "tsx", join(repoRoot, "src", "cli", "main.ts")];
  return [process.env["KVCTL_TEST_BIN"] ?? kvctlBin];
}

/** `kvctl v3 --endpoints <url> <args>`. */
export function runKvctlV3(url: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  return run(process.execPath, [...kvctlCommand(), "v3", "--endpoints", url, ...args], { ...opts, env: cleanEnv(opts.env) });
}

/** `ETCDCTL_API=3 etcdctl --endpoints <url> <args>`, without clientv3's JSON warning lines. */
export async function runEtcdctl(url: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const r = await run("/usr/bin/etcdctl", ["--endpoints", url, ...args], { ...opts, env: cleanEnv({ ETCDCTL_API: "3", ...opts.env }) });
  return { ...r, stderr: r.stderr.split("\n").filter((l) => !l.startsWith('{"level":')).join("\n") };
}

/** Starts `kvctl v3 <args>` and returns at once (watch, keep-alive). */
export function spawnKvctlV3(url: string, args: readonly string[], opts: { env?: Record<string, string> } = {}): ChildProcess {
  const child = spawn(process.execPath, [...kvctlCommand(), "v3", "--endpoints", url, ...args], {
    cwd: repoRoot,
    env: cleanEnv(opts.env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

export function spawnEtcdctl(url: string, args: readonly string[]): ChildProcess {
  const child = spawn("/usr/bin/etcdctl", ["--endpoints", url, ...args], { env: cleanEnv({ ETCDCTL_API: "3" }), stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** Collects a child's stdout; `until` resolves once `done(stdout)` holds, tried at each chunk (10 s deadline). */
export function collect(child: ChildProcess): { text(): string; until(done: (s: string) => boolean): Promise<void> } {
  let text = "";
  child.stdout?.on("data", (c: Buffer) => (text += c.toString("utf8")));
  return {
    text: () => text,
    until: (done) => whenOutput(child, () => done(text), 10_000, () => `output so far: ${JSON.stringify(text)}`),
  };
}

/** Rewrites the tested server's cluster/member IDs (decimal) into the reference's. */
export function sameIds(text: string, tested: V3Server, reference: V3Server): string {
  return text.split(tested.clusterId).join(reference.clusterId).split(tested.memberId).join(reference.memberId);
}

/** Replaces lease IDs (16 hex digits; "ID"/"id" decimal fields) with placeholders. */
export function maskLeases(text: string): string {
  return text
    .replace(/\b[0-9a-f]{16}\b/g, "<lease>")
    .replace(/("ID"|"id") ?: ?\d+/g, "$1:<id>")
    .replace(/"(ID|id)":\d+/g, '"$1":<id>')
    // Remaining TTLs tick while the two servers are asked one after the other.
    .replace(/remaining\(\d+s\)/g, "remaining(<ttl>s)")
    .replace(/"ttl":\d+/g, '"ttl":<ttl>');
}
