// The process collector client_golang registers by default (process_*), plus etcd's own
// os_fd_used / os_fd_limit. Linux values come from /proc like Go's procfs; elsewhere the
// families Node cannot measure are left out rather than reported as 0.
import { readFileSync, readdirSync } from "node:fs";
import { GaugeFunc, counterFunc, type Registry } from "./registry.ts";

/** Soft limit of a row of /proc/self/limits ("Max open files"), Infinity for "unlimited". */
export function parseLimit(limits: string, row: string): number | undefined {
  const line = limits.split("\n").find((l) => l.startsWith(row));
  const soft = line?.slice(row.length).trim().split(/\s+/)[0];
  if (soft === undefined) return undefined;
  // Go's procfs reports "unlimited" as the largest uint64, as a float.
  return soft === "unlimited" ? 18446744073709552000 : Number(soft);
}

/** Fields of /proc/self/stat after the command name (which may hold spaces and parens). */
export function parseStat(stat: string): { vsize: number } | undefined {
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // After ")": state is field 3; vsize is field 23 of the line.
  const vsize = Number(rest[23 - 3]);
  return Number.isFinite(vsize) ? { vsize } : undefined;
}

function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function openFds(): number | undefined {
  try {
    // The directory handle readdirSync opens is itself one of the entries.
    return readdirSync("/proc/self/fd").length - 1;
  } catch {
    return undefined;
  }
}

export function maxFds(): number | undefined {
  const limits = readProc("/proc/self/limits");
  return limits === undefined ? undefined : parseLimit(limits, "Max open files");
}

/** Registers the process_* families (and os_fd_*); values are read at each scrape. */
export function registerProcessMetrics(r: Registry): void {
  const startSeconds = performance.timeOrigin / 1000;
  const onlyIf = (v: number | undefined): number | [] => (v === undefined ? [] : v);
  r.register(
    counterFunc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    }),
  );
  r.register(new GaugeFunc("process_resident_memory_bytes", "Resident memory size in bytes.", () => process.memoryUsage.rss()));
  r.register(new GaugeFunc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", () => startSeconds));
  r.register(new GaugeFunc("process_open_fds", "Number of open file descriptors.", () => onlyIf(openFds())));
  r.register(new GaugeFunc("process_max_fds", "Maximum number of open file descriptors.", () => onlyIf(maxFds())));
  r.register(
    new GaugeFunc("process_virtual_memory_bytes", "Virtual memory size in bytes.", () => {
      const stat = readProc("/proc/self/stat");
      return onlyIf(stat === undefined ? undefined : parseStat(stat)?.vsize);
    }),
  );
  r.register(
    new GaugeFunc("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", () => {
      const limits = readProc("/proc/self/limits");
      return onlyIf(limits === undefined ? undefined : parseLimit(limits, "Max address space"));
    }),
  );
  r.register(new GaugeFunc("os_fd_used", "The number of used file descriptors.", () => onlyIf(openFds())));
  r.register(new GaugeFunc("os_fd_limit", "The file descriptor limit.", () => onlyIf(maxFds())));
}
