// A small structured logger: one JSON object per line on stderr, like etcd's zap output,
// so operators can grep and parse it. Library layers receive it; they never write to stdio.
import type { RaftLogger } from "../raft/index.ts";

export const LogLevel = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevelName = keyof typeof LogLevel;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function isLogLevel(s: string): s is LogLevelName {
  return Object.hasOwn(LogLevel, s);
}

/** "json": zap's production encoding, kvctl's default; "capnslog": etcd 3.4's default text lines (--logger). */
export type LogFormat = "json" | "capnslog";

const capnsLetter: Record<LogLevelName, string> = { debug: "D", info: "I", warn: "W", error: "E" };

/** capnslog's `2006-01-02 15:04:05.000000 I | pkg: message` in local time; fields follow as JSON. */
function capnslogLine(lvl: LogLevelName, msg: string, fields: Record<string, unknown> | undefined): string {
  const d = new Date();
  const p = (n: number, w = 2): string => String(n).padStart(w, "0");
  const ts = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}000`;
  const { component, ...rest } = fields ?? {};
  const pkg = typeof component === "string" ? component : "kvctl";
  const tail = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : "";
  return `${ts} ${capnsLetter[lvl]} | ${pkg}: ${msg}${tail}\n`;
}

export function createLogger(level: LogLevelName, sink: (line: string) => void = (l) => process.stderr.write(l), format: LogFormat = "json"): Logger {
  const min = LogLevel[level];
  const emit = (lvl: LogLevelName, msg: string, fields?: Record<string, unknown>): void => {
    if (LogLevel[lvl] < min) return;
    sink(format === "capnslog" ? capnslogLine(lvl, msg, fields) : JSON.stringify({ level: lvl, ts: new Date().toISOString(), msg, ...fields }) + "\n");
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * Raft's own lines (became candidate, cast vote, lease not expired, ...) in the member's
 * log, as etcd prints them: without them an election that took too long cannot be traced.
 */
export function raftLogger(log: Logger): RaftLogger {
  return {
    debug: (m) => log.debug(m, { component: "raft" }),
    info: (m) => log.info(m, { component: "raft" }),
    warn: (m) => log.warn(m, { component: "raft" }),
    error: (m) => log.error(m, { component: "raft" }),
  };
}
