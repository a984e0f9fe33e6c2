// Wall time of one short client command (e.g. `kvctl get <key>`), median of N runs after
// warm-up runs. hyperfine when installed (it corrects for its own spawn overhead with
// --shell=none), otherwise our own loop around spawnSync. Both time the whole process:
// interpreter/runtime start, module loading, one HTTP request, exit.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { median, round } from "./stats.ts";

export interface TimedCommand {
  /** argv[0] and the rest; no shell. */
  readonly argv: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** When set, stdout (trimmed) must equal it, checked on a probe run before timing. */
  readonly expectStdout?: string;
}

export interface TimingOptions {
  readonly runs: number;
  readonly warmup: number;
  /** Use hyperfine when it is on PATH (default true). */
  readonly hyperfine?: boolean;
}

export interface TimingResult {
  readonly command: string;
  readonly tool: "hyperfine" | "spawnSync loop";
  readonly runs: number;
  readonly median_ms: number | null;
  readonly min_ms: number | null;
  readonly max_ms: number | null;
  /** Set when the probe run failed (non-zero exit or wrong output); nothing was timed then. */
  readonly error?: string;
}

/** Quote one argument for hyperfine's --shell=none word splitting (POSIX-shell rules). */
export function shellQuote(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`;
}

export function hasHyperfine(): boolean {
  const r = spawnSync("hyperfine", ["--version"], { encoding: "utf8", timeout: 5000 });
  return r.status === 0;
}

function probe(c: TimedCommand): string | undefined {
  const [cmd, ...args] = c.argv;
  if (cmd === undefined) return "empty command";
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 30_000, env: { ...process.env, ...c.env } });
  if (r.error !== undefined) return `cannot run: ${r.error.message}`;
  if (r.status !== 0) return `exit ${r.status}: ${(r.stderr || r.stdout).trim().slice(0, 200)}`;
  if (c.expectStdout !== undefined && r.stdout.trim() !== c.expectStdout) {
    return `unexpected output: ${JSON.stringify(r.stdout.trim().slice(0, 120))}`;
  }
  return undefined;
}

function summarize(command: string, tool: TimingResult["tool"], ms: readonly number[]): TimingResult {
  const m = median(ms);
  return {
    command, tool, runs: ms.length,
    median_ms: m === null ? null : round(m, 2),
    min_ms: ms.length ? round(Math.min(...ms), 2) : null,
    max_ms: ms.length ? round(Math.max(...ms), 2) : null,
  };
}

function withHyperfine(c: TimedCommand, o: TimingOptions, command: string): number[] | null {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-bench-hf-"));
  try {
    const out = join(dir, "hf.json");
    const r = spawnSync(
      "hyperfine",
      ["-N", "--style", "none", "--runs", String(o.runs), "--warmup", String(o.warmup), "--export-json", out, command],
      { encoding: "utf8", timeout: 300_000, env: { ...process.env, ...c.env } },
    );
    if (r.status !== 0) return null;
    const j = JSON.parse(readFileSync(out, "utf8")) as { results?: { times?: number[] }[] };
    const times = j.results?.[0]?.times;
    return Array.isArray(times) ? times.map((s) => s * 1000) : null;
  } catch {
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function withLoop(c: TimedCommand, o: TimingOptions): number[] {
  const [cmd, ...args] = c.argv;
  const env = { ...process.env, ...c.env };
  const ms: number[] = [];
  for (let i = 0; i < o.warmup + o.runs; i++) {
    const t0 = performance.now();
    const r = spawnSync(cmd as string, args, { stdio: "ignore", timeout: 30_000, env });
    const dt = performance.now() - t0;
    if (r.status !== 0) throw new Error(`Cannot time ${c.argv.join(" ")}: exit ${r.status} on run ${i + 1}`);
    if (i >= o.warmup) ms.push(dt);
  }
  return ms;
}

/** Time a command; never throws for a failing command (the result carries `error`). */
export function timeCommand(c: TimedCommand, o: TimingOptions): TimingResult {
  const command = c.argv.map(shellQuote).join(" ");
  const err = probe(c);
  if (err !== undefined) {
    return { command, tool: "spawnSync loop", runs: 0, median_ms: null, min_ms: null, max_ms: null, error: err };
  }
  if (o.hyperfine !== false && hasHyperfine()) {
    const ms = withHyperfine(c, o, command);
    if (ms !== null) return summarize(command, "hyperfine", ms);
  }
  try {
    return summarize(command, "spawnSync loop", withLoop(c, o));
  } catch (e) {
    return { command, tool: "spawnSync loop", runs: 0, median_ms: null, min_ms: null, max_ms: null, error: (e as Error).message };
  }
}
