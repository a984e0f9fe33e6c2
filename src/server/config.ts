// Server configuration: one typed object built from flags and KV_* environment variables.
// Flag names, defaults and validation messages follow etcd 3.4, so scripts and test
// harnesses written for etcd start kvctl unchanged. Like Go's flag package, `-flag value`,
// `-flag=value` and `--flag value` all work, and a repeated flag takes its last value.
import { isLogLevel, type LogLevelName } from "./logger.ts";

export interface ServerConfig {
  name: string;
  dataDir: string;
  listenClientUrls: URL[];
  advertiseClientUrls: string[];
  listenPeerUrls: URL[];
  initialAdvertisePeerUrls: string[];
  /** name -> peer URLs, in the order given. */
  initialCluster: Map<string, string[]>;
  initialClusterState: "new" | "existing";
  initialClusterToken: string;
  snapshotCount: number;
  /** Milliseconds. */
  heartbeatInterval: number;
  /** Milliseconds. */
  electionTimeout: number;
  maxRequestBytes: number;
  logLevel: LogLevelName;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

export interface FlagSpec {
  name: string;
  type: "string" | "number";
  default: string | number;
  describe: string;
}

/** Every serve flag; --help, the man page and completions are checked against this list. */
export const serveFlags: readonly FlagSpec[] = [
  { name: "name", type: "string", default: "default", describe: "Human-readable name for this member" },
  { name: "data-dir", type: "string", default: "${name}.kvctl", describe: "Path to the data directory (WAL and snapshots)" },
  { name: "listen-client-urls", type: "string", default: "http://127.0.0.1:2379", describe: "Comma-separated URLs to listen on for client traffic" },
  { name: "advertise-client-urls", type: "string", default: "http://127.0.0.1:2379", describe: "Comma-separated client URLs to advertise to the rest of the cluster" },
  { name: "listen-peer-urls", type: "string", default: "http://127.0.0.1:2380", describe: "Comma-separated URLs to listen on for peer traffic" },
  { name: "initial-advertise-peer-urls", type: "string", default: "http://127.0.0.1:2380", describe: "Comma-separated peer URLs of this member to advertise to the rest of the cluster" },
  { name: "initial-cluster", type: "string", default: "${name}=${initial-advertise-peer-urls}", describe: "Initial cluster configuration for bootstrapping: name=peerURL,..." },
  { name: "initial-cluster-state", type: "string", default: "new", describe: "Initial cluster state: 'new' or 'existing'" },
  { name: "initial-cluster-token", type: "string", default: "etcd-cluster", describe: "Initial cluster token; members of different clusters refuse to talk" },
  { name: "snapshot-count", type: "number", default: 100000, describe: "Number of committed transactions to trigger a snapshot to disk" },
  { name: "heartbeat-interval", type: "number", default: 100, describe: "Time (in milliseconds) of a heartbeat interval" },
  { name: "election-timeout", type: "number", default: 1000, describe: "Time (in milliseconds) for an election to timeout" },
  { name: "max-request-bytes", type: "number", default: 1572864, describe: "Maximum client request size in bytes the server will accept" },
  { name: "log-level", type: "string", default: "info", describe: "Log level: debug, info, warn or error" },
];


function splitUrls(flag: string, raw: string): string[] {
  const list = raw.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (list.length === 0) throw new ConfigError(`--${flag} must not be empty`);
  for (const u of list) parseUrl(flag, u);
  return list;
}

function parseUrl(flag: string, raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`Cannot parse --${flag}: invalid URL ${JSON.stringify(raw)}`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new ConfigError(`Cannot parse --${flag}: URL scheme must be http or https: ${JSON.stringify(raw)}`);
  }
  if (u.pathname !== "/" && u.pathname !== "") {
    throw new ConfigError(`Cannot parse --${flag}: URL must not have a path: ${JSON.stringify(raw)}`);
  }
  if (u.port === "") {
    throw new ConfigError(`Cannot parse --${flag}: URL must have a port: ${JSON.stringify(raw)}`);
  }
  return u;
}

/** Parses `a=http://x:1,a=http://y:2,b=...` into name -> URLs (several URLs per name allowed). */
export function parseInitialCluster(raw: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const item of raw.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new ConfigError(`Cannot parse --initial-cluster: ${JSON.stringify(item)} is not name=URL`);
    const name = item.slice(0, eq);
    const url = item.slice(eq + 1);
    parseUrl("initial-cluster", url);
    const list = out.get(name) ?? [];
    list.push(url);
    out.set(name, list);
  }
  return out;
}

function positiveInt(flag: string, v: unknown): number {
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new ConfigError(`invalid value ${JSON.stringify(String(v))} for flag -${flag}: must be a positive integer`);
  }
  return n;
}

/** The env prefix: KV_DATA_DIR sets --data-dir. */
export const ENV_PREFIX = "KV";

export function envName(flag: string): string {
  return `${ENV_PREFIX}_${flag.toUpperCase().replace(/-/g, "_")}`;
}

/** The --help text of `kvctl serve`, rendered from the flag table. */
export function serveHelp(): string {
  const lines = [
    "Usage: kvctl serve [flags]",
    "",
    "Start a kvctl member: etcd's v2 key space over HTTP, durable through its Raft log.",
    "Flags follow Go's syntax as etcd's do (-flag value, -flag=value, --flag value; the last",
    "of a repeated flag wins). Every flag can also be set as KV_<FLAG> (e.g. KV_DATA_DIR);",
    "a flag on the command line wins over the variable.",
    "",
    "Flags:",
  ];
  for (const f of serveFlags) {
    lines.push(`  --${f.name} ${f.type === "number" ? "<number>" : "<string>"}`);
    lines.push(`      ${f.describe} (default ${JSON.stringify(String(f.default))}; env ${envName(f.name)})`);
  }
  lines.push("  -h, --help", "      Show this help");
  return lines.join("\n") + "\n";
}

/**
 * Parses arguments exactly as Go's flag package does for etcd: one or two dashes, `=value`
 * or the next argument as the value, the last of a repeated flag wins, parsing stops at
 * `--` or the first non-flag, and an unknown flag is an error. yargs is not used here: its
 * GNU conventions differ in corner cases, and it doubled `kvctl serve`'s start-up time.
 */
export function parseGoFlags(args: readonly string[]): { values: Map<string, string>; help: boolean; rest: string[] } {
  const known = new Map(serveFlags.map((f) => [f.name, f]));
  const values = new Map<string, string>();
  let help = false;
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      i++;
      break;
    }
    if (!a.startsWith("-") || a === "-") break;
    const body = a.startsWith("--") ? a.slice(2) : a.slice(1);
    if (body === "" || body.startsWith("-") || body.startsWith("=")) throw new ConfigError(`bad flag syntax: ${a}`);
    const eq = body.indexOf("=");
    const name = eq < 0 ? body : body.slice(0, eq);
    if (name === "h" || name === "help") {
      help = true;
      continue;
    }
    if (!known.has(name)) throw new ConfigError(`flag provided but not defined: -${name}`);
    let value: string;
    if (eq >= 0) value = body.slice(eq + 1);
    else {
      if (i + 1 >= args.length) throw new ConfigError(`flag needs an argument: -${name}`);
      value = args[++i]!;
    }
    values.set(name, value);
  }
  return { values, help, rest: args.slice(i) };
}

/** Turns parsed values into a validated ServerConfig, applying etcd's cross-flag rules. */
export function buildConfig(v: Record<string, unknown>, explicit: ReadonlySet<string>): ServerConfig {
  const str = (k: string): string => String(v[k]);
  const name = str("name");
  if (name === "") throw new ConfigError("--name must not be empty");
  const dataDir = explicit.has("data-dir") ? str("data-dir") : `${name}.kvctl`;
  const listenClientUrls = splitUrls("listen-client-urls", str("listen-client-urls")).map((u) => parseUrl("listen-client-urls", u));
  if (explicit.has("listen-client-urls") && !explicit.has("advertise-client-urls")) {
    throw new ConfigError("--advertise-client-urls is required when --listen-client-urls is set explicitly");
  }
  const advertiseClientUrls = splitUrls("advertise-client-urls", str("advertise-client-urls"));
  const listenPeerUrls = splitUrls("listen-peer-urls", str("listen-peer-urls")).map((u) => parseUrl("listen-peer-urls", u));
  const initialAdvertisePeerUrls = splitUrls("initial-advertise-peer-urls", str("initial-advertise-peer-urls"));
  const initialCluster = explicit.has("initial-cluster")
    ? parseInitialCluster(str("initial-cluster"))
    : new Map([[name, initialAdvertisePeerUrls]]);
  const state = str("initial-cluster-state");
  if (state !== "new" && state !== "existing") {
    throw new ConfigError(`invalid value ${JSON.stringify(state)} for flag -initial-cluster-state: valid values are "new", "existing"`);
  }
  const mine = initialCluster.get(name);
  if (!mine) {
    throw new ConfigError(`couldn't find local name ${JSON.stringify(name)} in the initial cluster configuration`);
  }
  const sortedEq = (a: string[], b: string[]): boolean =>
    a.length === b.length && [...a].sort().every((x, i) => new URL(x).href === new URL([...b].sort()[i]!).href);
  if (!sortedEq(mine, initialAdvertisePeerUrls)) {
    throw new ConfigError(
      `--initial-cluster has ${name}=${mine.join(",")} but missing from --initial-advertise-peer-urls=${initialAdvertisePeerUrls.join(",")}`,
    );
  }
  const heartbeatInterval = positiveInt("heartbeat-interval", v["heartbeat-interval"]);
  const electionTimeout = positiveInt("election-timeout", v["election-timeout"]);
  if (electionTimeout < 5 * heartbeatInterval) {
    throw new ConfigError(
      `--election-timeout[${electionTimeout}ms] should be at least as 5 times as --heartbeat-interval[${heartbeatInterval}ms]`,
    );
  }
  if (electionTimeout > 50000) {
    throw new ConfigError(`--election-timeout[${electionTimeout}ms] is too long, and should be set less than 50000ms`);
  }
  const logLevel = str("log-level");
  if (!isLogLevel(logLevel)) {
    throw new ConfigError(`invalid value ${JSON.stringify(logLevel)} for flag -log-level: valid values are debug, info, warn, error`);
  }
  return {
    name,
    dataDir,
    listenClientUrls,
    advertiseClientUrls,
    listenPeerUrls,
    initialAdvertisePeerUrls,
    initialCluster,
    initialClusterState: state,
    initialClusterToken: str("initial-cluster-token"),
    snapshotCount: positiveInt("snapshot-count", v["snapshot-count"]),
    heartbeatInterval,
    electionTimeout,
    maxRequestBytes: positiveInt("max-request-bytes", v["max-request-bytes"]),
    logLevel,
  };
}

/** Parses `kvctl serve` arguments and KV_* variables. Returns null when --help was printed. */
export async function parseServeArgs(args: readonly string[], env: NodeJS.ProcessEnv = process.env, out: (text: string) => void = (t) => process.stdout.write(t)): Promise<ServerConfig | null> {
  const { values, help, rest } = parseGoFlags(args);
  if (help) {
    out(serveHelp());
    return null;
  }
  if (rest.length > 0) throw new ConfigError(`'${rest[0]}' is not a valid flag`);
  const explicit = new Set(values.keys());
  const v: Record<string, unknown> = {};
  for (const f of serveFlags) {
    // KV_<FLAG> fills every flag not given on the command line.
    const e = env[envName(f.name)];
    if (e !== undefined) explicit.add(f.name);
    v[f.name] = values.get(f.name) ?? e ?? f.default;
  }
  return buildConfig(v, explicit);
}
