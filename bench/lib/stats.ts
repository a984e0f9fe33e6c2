// Small numeric and /proc helpers shared by the bench phases.
// Pure functions first; the /proc and du readers are the only I/O here.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** Median of the finite numbers in xs (mean of the two middle ones for an even count); null when none. */
export function median(xs: readonly (number | null | undefined)[]): number | null {
  const s = xs.filter((x): x is number => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const h = s.length >> 1;
  return s.length % 2 === 1 ? (s[h] as number) : ((s[h - 1] as number) + (s[h] as number)) / 2;
}

/** Nearest-rank style percentile of an ascending array, the same rule as the shared fill.js / watch.js. */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length));
  return sorted[i] ?? null;
}

/** Round to `digits` decimals (keeps JSON results readable). */
export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export interface CpuTicks {
  readonly total: number;
  readonly steal: number;
}

/** Jiffies of all CPUs from /proc/stat; steal = time the hypervisor ran someone else while this VM wanted the CPU. */
export function readCpuTicks(): CpuTicks | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n").find((l) => l.startsWith("cpu "));
    if (line === undefined) return null;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    return { total: f.reduce((a, b) => a + b, 0), steal: f[7] ?? 0 };
  } catch {
    return null;
  }
}

/** Share (%) of all CPU time stolen between two samples; null when /proc/stat is unavailable. */
export function stealPct(a: CpuTicks | null, b: CpuTicks | null): number | null {
  if (a === null || b === null) return null;
  const t = b.total - a.total;
  return t > 0 ? round((100 * (b.steal - a.steal)) / t, 2) : 0;
}

function vmRssKb(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m?.[1] === undefined ? null : Number(m[1]);
  } catch {
    return null;
  }
}

/**
 * The fields of a /proc/<pid>/stat text after the command name, state first: the name
 * (in parentheses) may hold spaces and parentheses, so the text is cut at its last ')'.
 * null when there is none.
 */
export function statFields(stat: string): string[] | null {
  const at = stat.lastIndexOf(")");
  return at < 0 ? null : stat.slice(at + 2).split(" ");
}

/** utime + stime of a /proc/<pid>/stat text in ms (`ticksPerSecond`: the kernel's USER_HZ); null when unreadable. */
export function cpuMsFromStat(stat: string, ticksPerSecond = 100): number | null {
  const f = statFields(stat);
  // utime and stime are the stat file's fields 14 and 15: 11 and 12 after the state (field 3).
  const utime = Number(f?.[11]);
  const stime = Number(f?.[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return ((utime + stime) * 1000) / ticksPerSecond;
}

/** CPU time (user + system, every thread) a process has spent, in ms; null when it is gone or pid is unknown. */
export function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    return cpuMsFromStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return null;
  }
}

/**
 * VmRSS (kB) of a server: the process itself plus any other process of its process group
 * (servers are spawned as group leaders, so a server that forks helpers is counted whole,
 * as the shared harness does). null when the process is gone.
 */
export function groupRssKb(pid: number): number | null {
  const own = vmRssKb(pid);
  if (own === null) return null;
  let total = own;
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc").filter((e) => /^\d+$/.test(e) && Number(e) !== pid);
  } catch {
    return own;
  }
  for (const e of entries) {
    try {
      // After the command name: state, ppid, ...
      const fields = statFields(readFileSync(`/proc/${e}/stat`, "utf8"));
      if (Number(fields?.[1]) === pid) total += vmRssKb(Number(e)) ?? 0;
    } catch {
      // the process went away between readdir and read
    }
  }
  return total;
}

/** Apparent size in bytes of a directory tree, as `du -sb` prints it (the shared harness's figure). */
export function dirBytes(dir: string): number {
  try {
    const out = execFileSync("du", ["-sb", dir], { encoding: "utf8", timeout: 30_000 });
    const n = Number(out.trim().split(/\s+/)[0]);
    if (Number.isFinite(n)) return n;
  } catch {
    // no du: fall through to our own walk
  }
  return walkBytes(dir);
}

function walkBytes(path: string): number {
  const st = statSync(path, { throwIfNoEntry: false });
  if (st === undefined) return 0;
  if (!st.isDirectory()) return st.size;
  let total = st.size;
  for (const e of readdirSync(path)) total += walkBytes(join(path, e));
  return total;
}
