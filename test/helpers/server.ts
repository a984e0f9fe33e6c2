// Test servers and the kvctl runner for integration tests.
//
// startServer() runs one member on free loopback ports: `bin/kvctl serve` by default, or
// the real etcd 3.4 (v2 enabled) when KVCTL_TEST_SERVER=etcd, with the same flags, so a
// test can be pointed at either and must pass against both. It polls /health until 200
// (20 s deadline). Register `after(() => server.stop())`: stop kills the process by PID
// and removes its data directory; restart() keeps the data and the ports.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runProcess, stopProcess, whenOutput, type ProcessResult } from "./run-process.ts";
import { ephemeralPort, portIn, portRange } from "./ports.ts";
import { waitHealthy } from "./http.ts";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
export const kvctlBin = join(repoRoot, "bin", "kvctl");

export interface StartServerOptions {
  members?: 1;
  /** Extra environment for the server process. */
  env?: Record<string, string>;
  /** Extra `kvctl serve` flags (e.g. ["--snapshot-count", "50"]). */
  flags?: string[];
}

export interface TestServer {
  /** Client URL, e.g. http://127.0.0.1:40123 */
  url: string;
  peerUrl: string;
  dataDir: string;
  pid: number;
  /** Kills the process (default SIGTERM, SIGKILL after 5 s) and removes the data dir. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Kills the process and starts it again on the same ports and data. */
  restart(): Promise<void>;
  /** Kills the process with `signal` and keeps the data dir (crash tests). */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the process again on the same data and expects it to exit; resolves with its exit code. */
  restartExpectingExit(): Promise<number | null>;
  /** The last lines the server printed (stdout and stderr). */
  logs(): string;
}

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** A free TCP port on 127.0.0.1: of KVCTL_TEST_PORTS ("lo-hi") when set, else one the OS finds. */
export async function freePort(): Promise<number> {
  const range = portRange("KVCTL_TEST_PORTS");
  return range === undefined ? ephemeralPort() : portIn(range);
}

function command(flags: string[]): { file: string; args: string[] } {
  if (process.env["KVCTL_TEST_SERVER"] === "etcd") return { file: "etcd", args: ["--enable-v2=true", ...flags] };
  return { file: process.execPath, args: [kvctlBin, "serve", ...flags] };
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  await stopProcess(child, signal);
  running.delete(child);
}

export async function startServer(opts: StartServerOptions = {}): Promise<TestServer> {
  const clientPort = await freePort();
  const peerPort = await freePort();
  const url = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const dataDir = mkdtempSync(join(tmpdir(), "kvctl-test-"));
  const name = "test";
  const flags = [
    "--name", name,
    "--data-dir", dataDir,
    "--listen-client-urls", url,
    "--advertise-client-urls", url,
    "--listen-peer-urls", peerUrl,
    "--initial-advertise-peer-urls", peerUrl,
    "--initial-cluster", `${name}=${peerUrl}`,
    ...(opts.flags ?? []),
  ];
  let lines: string[] = [];
  const log = (): string => lines.join("");

  const launch = async (): Promise<ChildProcess> => {
    const { file, args } = command(flags);
    const child = spawn(file, args, {
      cwd: repoRoot,
      env: { ...process.env, ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    running.add(child);
    // Keep the last lines of output for failure messages; always drain the pipes.
    const keep = (chunk: Buffer): void => {
      lines.push(chunk.toString("utf8"));
      if (lines.length > 200) lines = lines.slice(-100);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    try {
      await waitHealthy(url, { child, log, what: "the test server healthy" });
    } catch (err) {
      await kill(child, "SIGKILL");
      throw err;
    }
    return child;
  };

  let child = await launch().catch((err: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  const server: TestServer = {
    url,
    peerUrl,
    dataDir,
    pid: child.pid ?? 0,
    async stop(signal = "SIGTERM") {
      await kill(child, signal);
      rmSync(dataDir, { recursive: true, force: true });
    },
    async restart() {
      await kill(child, "SIGTERM");
      child = await launch();
      server.pid = child.pid ?? 0;
    },
    async kill(signal = "SIGKILL") {
      await kill(child, signal);
    },
    async restartExpectingExit() {
      await kill(child, "SIGTERM");
      const { file, args } = command(flags);
      const c = spawn(file, args, { cwd: repoRoot, env: { ...process.env, ...opts.env }, stdio: ["ignore", "pipe", "pipe"] });
      running.add(c);
      const keep = (chunk: Buffer): void => {
        lines.push(chunk.toString("utf8"));
      };
      c.stdout?.on("data", keep);
      c.stderr?.on("data", keep);
      const timer = setTimeout(() => c.kill("SIGKILL"), 20_000);
      const code = await new Promise<number | null>((resolve) => c.on("close", (code) => resolve(code)));
      clearTimeout(timer);
      running.delete(c);
      child = c;
      return code;
    },
    logs: log,
  };
  return server;
}

/** Exit code null when killed by a signal. */
export type KvctlResult = ProcessResult;

export interface RunKvctlOptions {
  /** Replaces the environment's KV_* / ETCDCTL_* variables (others are inherited). */
  env?: Record<string, string>;
  /** Written to stdin, then stdin is closed (default: empty stdin). */
  input?: string;
  /** Kill after this long (default 15 s). */
  timeoutMs?: number;
}

/** Runs the real bin/kvctl as a child process and collects its output. */
export function runKvctl(args: readonly string[], opts: RunKvctlOptions = {}): Promise<KvctlResult> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("KV_") && !k.startsWith("ETCDCTL_") && k !== "NO_COLOR"),
  );
  return runProcess(process.execPath, [kvctlBin, ...args], { cwd: repoRoot, env: { ...base, ...opts.env }, ...(opts.input === undefined ? {} : { input: opts.input }), ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }) });
}

export interface RunningKvctl {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once `predicate(stdout)` holds, tried at each chunk printed; rejects after timeoutMs (default 10 s) or at the exit. */
  waitForOutput(predicate: (stdout: string) => boolean, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code (null if killed by a signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts bin/kvctl and returns at once: for watch and exec-watch, which run until stopped. */
export function spawnKvctl(args: readonly string[], opts: Omit<RunKvctlOptions, "input"> = {}): RunningKvctl {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("KV_") && !k.startsWith("ETCDCTL_") && k !== "NO_COLOR"),
  );
  const child = spawn(process.execPath, [kvctlBin, ...args], {
    cwd: repoRoot,
    env: { ...base, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: opts.timeoutMs ?? 30_000,
  });
  running.add(child);
  let out = "";
  let err = "";
  child.stdout?.on("data", (c: Buffer) => (out += c.toString("utf8")));
  child.stderr?.on("data", (c: Buffer) => (err += c.toString("utf8")));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForOutput: (predicate, timeoutMs = 10_000) => whenOutput(child, () => predicate(out), timeoutMs, () => `stdout=${JSON.stringify(out)} stderr=${JSON.stringify(err)}`),
  };
}
