// kvctl backup: etcdctl v2's backup of a stopped member's data dir (offline: files only,
// no server), for a new one-member cluster started from it with `kvctl serve
// --force-new-cluster --data-dir <backup-dir>`. The work is src/server/backup/data-dir.ts
// (it reads the WAL and snapshot formats the server writes). As etcdctl: its notes and its
// failure go to stderr as Go's log lines, a failure exits 1, nothing is printed on stdout,
// and flags left empty mean paths relative to the working directory (`member/...`).
import type { Io } from "../io.ts";
import type { Invocation } from "../invocation.ts";
import { ExitCode } from "../exit-codes.ts";

/** Go's log.Printf prefix as etcdctl's capnslog formats it: `2006-01-02 15:04:05.000000 I | `. */
export function goLogLine(msg: string, now = new Date()): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, "0");
  const micros = now.getMilliseconds() * 1000;
  const stamp = `${now.getFullYear()}-${p(now.getMonth() + 1)}-${p(now.getDate())} ${p(now.getHours())}:${p(now.getMinutes())}:${p(now.getSeconds())}.${p(micros, 6)}`;
  return `${stamp} I | ${msg}\n`;
}

function str(inv: Invocation, name: string): string {
  const v = inv.flags[name];
  return typeof v === "string" ? v : "";
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  // Loaded here only: the server's WAL and snapshot code is no part of the other commands.
  const { backupDataDir, DataDirBackupError } = await import("../../server/backup/data-dir.ts");
  try {
    await backupDataDir({
      dataDir: str(inv, "data-dir"),
      backupDir: str(inv, "backup-dir"),
      walDir: str(inv, "wal-dir"),
      backupWalDir: str(inv, "backup-wal-dir"),
      withV3: inv.flags["with-v3"] === true,
      log: (line) => io.stderr(goLogLine(line)),
    });
    return ExitCode.Success;
  } catch (err) {
    const msg = err instanceof DataDirBackupError ? err.message : errnoText(err);
    io.stderr(goLogLine(msg));
    return ExitCode.BadArgs;
  }
}

/** A Node fs error as Go's *PathError prints: `open <path>: no such file or directory`. */
function errnoText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const texts: Record<string, string> = { ENOENT: "no such file or directory", EACCES: "permission denied", ENOTDIR: "not a directory", EEXIST: "file exists" };
  if (typeof e?.code === "string" && typeof e.path === "string" && texts[e.code] !== undefined) return `${e.syscall === "mkdir" ? "mkdir" : "open"} ${e.path}: ${texts[e.code]}`;
  return err instanceof Error ? err.message : String(err);
}
