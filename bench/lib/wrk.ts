// Run wrk with one of the Lua scripts in lib/wrk/ (copies of the shared harness's scripts,
// so the request definitions are the same) and parse the "WRKJSON {...}" line of done().
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { round } from "./stats.ts";

export const WRK_DIR = fileURLToPath(new URL("./wrk/", import.meta.url));

const running = new Set<ChildProcess>();

/** SIGKILL the wrk processes this process started that are still running (for interrupts). */
export function killRunningWrkSync(): void {
  for (const c of running) c.kill("SIGKILL");
}

/** What lib/wrk/common.lua's done() prints. Times in microseconds. */
export interface WrkJson {
  readonly duration_us: number;
  readonly requests: number;
  readonly bytes: number;
  readonly errors: { connect: number; read: number; write: number; status: number; timeout: number };
  readonly latency_us: { min: number; mean: number; stdev: number; max: number; p50: number; p90: number; p99: number; p999: number };
}

export interface WrkSummary {
  readonly rps: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
  /** connect + read + write + timeout */
  readonly socket_errors: number;
  /** wrk's count of responses with status >= 400 */
  readonly non2xx: number;
  readonly raw: WrkJson;
}

function isWrkJson(x: unknown): x is WrkJson {
  const o = x as Partial<WrkJson> | null;
  return typeof o === "object" && o !== null && typeof o.requests === "number" && typeof o.duration_us === "number" &&
    typeof o.errors === "object" && typeof o.latency_us === "object";
}

/** Parse wrk's stdout; null when the WRKJSON line is missing or malformed. */
export function parseWrkOutput(stdout: string): WrkSummary | null {
  const line = stdout.split("\n").find((l) => l.startsWith("WRKJSON "));
  if (line === undefined) return null;
  let j: unknown;
  try {
    j = JSON.parse(line.slice("WRKJSON ".length));
  } catch {
    return null;
  }
  if (!isWrkJson(j)) return null;
  const e = j.errors;
  return {
    rps: j.duration_us > 0 ? round(j.requests / (j.duration_us / 1e6), 1) : 0,
    p50_ms: j.latency_us.p50 / 1000,
    p99_ms: j.latency_us.p99 / 1000,
    max_ms: j.latency_us.max / 1000,
    socket_errors: e.connect + e.read + e.write + e.timeout,
    non2xx: e.status,
    raw: j,
  };
}

export interface WrkRunOptions {
  /** Script file name in lib/wrk/, e.g. "v2-put-unique.lua". */
  readonly script: string;
  readonly url: string;
  readonly connections: number;
  readonly durationS: number;
  /** Passed after `--`; v2-put-unique.lua uses it as the key prefix. */
  readonly prefix: string;
  /** More script arguments after the prefix (the auth scripts take `user:password`). */
  readonly scriptArgs?: readonly string[];
}

/** Threads = min(2, connections), timeout 5 s: as the shared run.sh. Resolves with wrk's stdout+stderr. */
export function runWrkRaw(o: WrkRunOptions): Promise<{ code: number | null; output: string }> {
  const threads = Math.min(2, o.connections);
  const args = [`-t${threads}`, `-c${o.connections}`, `-d${o.durationS}s`, "--timeout", "5s", "-s", WRK_DIR + o.script, o.url, "--", o.prefix, ...(o.scriptArgs ?? [])];
  return new Promise((resolve, reject) => {
    const child = spawn("wrk", args, { stdio: ["ignore", "pipe", "pipe"] });
    running.add(child);
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
    // bound: wrk stops by itself after the duration; kill it if it hangs well past that
    const killer = setTimeout(() => child.kill("SIGKILL"), (o.durationS + 30) * 1000);
    child.on("error", (e) => {
      clearTimeout(killer);
      running.delete(child);
      reject(new Error(`Cannot run wrk: ${e.message}`, { cause: e }));
    });
    child.on("close", (code) => {
      clearTimeout(killer);
      running.delete(child);
      resolve({ code, output: out });
    });
  });
}
