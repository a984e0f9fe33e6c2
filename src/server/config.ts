// Server configuration: one typed object built from flags and KV_* environment variables.
// Flag names, defaults and validation messages follow etcd 3.4, so scripts and test
// harnesses written for etcd start kvctl unchanged. Like Go's flag package, `-flag value`,
// `-flag=value` and `--flag value` all work, and a repeated flag takes its last value.
import { isLogLevel, type LogLevelName } from "./logger.ts";
import { goCipherSuiteNames, isGoCipherSuite } from "./tls/cipher-suites.ts";

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
  /** Operations allowed in one v3 txn (etcd's --max-txn-ops). */
  maxTxnOps: number;
  logLevel: LogLevelName;
  /** TLS of the client port (--cert-file, --key-file, --trusted-ca-file, --client-cert-auth, --auto-tls). */
  clientTls: TlsFlags;
  /** TLS of the peer port (--peer-*). */
  peerTls: TlsFlags;
  /** --cipher-suites as Go names, validated; empty: the platform default. */
  cipherSuites: string[];
  /** --host-whitelist; empty (or "*" listed) allows every Host. */
  hostWhitelist: string[];
  /** --discovery-srv: the domain whose SRV records list the initial cluster ("" = off); see discovery-srv.ts. */
  discoverySrv: string;
  /** --discovery-srv-name: suffix of the SRV service names (_etcd-server-ssl-<name>._tcp). */
  discoverySrvName: string;
  /** --proxy and --proxy-*: the v2 proxy (src/server/proxy/); times in milliseconds, 0 = none. */
  proxy: ProxyFlags;
}

export const proxyModes = ["off", "readonly", "on"] as const;
export type ProxyMode = (typeof proxyModes)[number];

/** etcd's configProxy. */
export interface ProxyFlags {
  mode: ProxyMode;
  failureWaitMs: number;
  refreshIntervalMs: number;
  dialTimeoutMs: number;
  writeTimeoutMs: number;
  readTimeoutMs: number;
}

/** One side's TLS flags, as etcd's TLSInfo: "" means not set. */
export interface TlsFlags {
  certFile: string;
  keyFile: string;
  trustedCaFile: string;
  clientCertAuth: boolean;
  autoTls: boolean;
  crlFile: string;
  /** Peer side only (--peer-cert-allowed-cn); always "" for the client side. */
  allowedCn: string;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

export interface FlagSpec {
  name: string;
  /** Go's bool flags: `-flag` alone means true; a value needs `=` (`-flag=false`). */
  type: "string" | "number" | "boolean";
  default: string | number | boolean;
  describe: string;
  /** Older names accepted on the command line and as KV_<ALIAS> (etcd's --ca-file). */
  aliases?: readonly string[];
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
  { name: "max-txn-ops", type: "number", default: 128, describe: "Maximum number of operations permitted in a transaction" },
  { name: "log-level", type: "string", default: "info", describe: "Log level: debug, info, warn or error" },
  // Transport security (issue 6), with etcd's names; see src/server/tls/README.md.
  { name: "cert-file", type: "string", default: "", describe: "Path to the client server TLS cert file" },
  { name: "key-file", type: "string", default: "", describe: "Path to the client server TLS key file (unencrypted)" },
  { name: "client-cert-auth", type: "boolean", default: false, describe: "Enable client cert authentication (the CN names the v2 user when auth is on)" },
  { name: "trusted-ca-file", aliases: ["ca-file"], type: "string", default: "", describe: "Path to the client server TLS trusted CA cert file (--ca-file is the older name)" },
  { name: "auto-tls", type: "boolean", default: false, describe: "Client TLS using generated certificates (kept in <data-dir>/fixtures/client)" },
  { name: "peer-cert-file", type: "string", default: "", describe: "Path to the peer server TLS cert file" },
  { name: "peer-key-file", type: "string", default: "", describe: "Path to the peer server TLS key file (unencrypted)" },
  { name: "peer-client-cert-auth", type: "boolean", default: false, describe: "Enable peer client cert authentication" },
  { name: "peer-trusted-ca-file", aliases: ["peer-ca-file"], type: "string", default: "", describe: "Path to the peer server TLS trusted CA file (--peer-ca-file is the older name)" },
  { name: "peer-auto-tls", type: "boolean", default: false, describe: "Peer TLS using generated certificates (kept in <data-dir>/fixtures/peer)" },
  { name: "peer-cert-allowed-cn", type: "string", default: "", describe: "Allowed CN for inter peer authentication" },
  { name: "peer-crl-file", type: "string", default: "", describe: "Path to the peer certificate revocation list file" },
  { name: "cipher-suites", type: "string", default: "", describe: "Comma-separated list of supported TLS 1.2 cipher suites (Go names) between client/server and peers (empty: platform default)" },
  { name: "host-whitelist", type: "string", default: "", describe: "Comma-separated acceptable hostnames from HTTP client requests, if server is not secure (empty means allow all)" },
  // DNS SRV bootstrapping and the v2 proxy (issue 6); see discovery-srv.ts and proxy/README.md.
  { name: "discovery-srv", type: "string", default: "", describe: "DNS domain used to bootstrap the initial cluster from SRV records (peer certificates must list it in their SAN)" },
  { name: "discovery-srv-name", type: "string", default: "", describe: "Service name suffix to query when using DNS discovery" },
  { name: "proxy", type: "string", default: "off", describe: "Run as a v2 proxy: 'off', 'readonly' or 'on'" },
  { name: "proxy-failure-wait", type: "number", default: 5000, describe: "Time (in milliseconds) an endpoint will be held in a failed state" },
  { name: "proxy-refresh-interval", type: "number", default: 30000, describe: "Time (in milliseconds) of the endpoints refresh interval" },
  { name: "proxy-dial-timeout", type: "number", default: 1000, describe: "Time (in milliseconds) for a dial to timeout (0: no timeout)" },
  { name: "proxy-write-timeout", type: "number", default: 5000, describe: "Time (in milliseconds) for a write to timeout (0: no timeout)" },
  { name: "proxy-read-timeout", type: "number", default: 0, describe: "Time (in milliseconds) for a read to timeout (0: no timeout; keep it 0 or above the longest watch)" },
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

/** Go's uint flags (the --proxy-* times): 0 is allowed. */
function nonNegativeInt(flag: string, v: unknown): number {
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isSafeInteger(n) || n < 0 || String(v).trim() === "") {
    throw new ConfigError(`invalid value ${JSON.stringify(String(v))} for flag -${flag}: must be a non-negative integer`);
  }
  return n;
}

/** --proxy and --proxy-*. */
function proxyFlags(v: Record<string, unknown>): ProxyFlags {
  const mode = String(v["proxy"] ?? "off");
  if (!(proxyModes as readonly string[]).includes(mode)) {
    throw new ConfigError(`invalid value ${JSON.stringify(mode)} for flag -proxy: valid values are "off", "readonly", "on"`);
  }
  const ms = (flag: string, dflt: number): number => nonNegativeInt(flag, v[flag] ?? dflt);
  return {
    mode: mode as ProxyMode,
    failureWaitMs: ms("proxy-failure-wait", 5000),
    refreshIntervalMs: ms("proxy-refresh-interval", 30000),
    dialTimeoutMs: ms("proxy-dial-timeout", 1000),
    writeTimeoutMs: ms("proxy-write-timeout", 5000),
    readTimeoutMs: ms("proxy-read-timeout", 0),
  };
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
    const value = f.type === "number" ? " <number>" : f.type === "boolean" ? "" : " <string>";
    lines.push(`  --${f.name}${value}${(f.aliases ?? []).map((a) => `, --${a}`).join("")}`);
    const envs = [f.name, ...(f.aliases ?? [])].map(envName).join(" or ");
    lines.push(`      ${f.describe} (default ${JSON.stringify(String(f.default))}; env ${envs})`);
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
  const known = new Map<string, FlagSpec>();
  for (const f of serveFlags) for (const n of [f.name, ...(f.aliases ?? [])]) known.set(n, f);
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
    const spec = known.get(name);
    if (spec === undefined) throw new ConfigError(`flag provided but not defined: -${name}`);
    let value: string;
    if (eq >= 0) value = body.slice(eq + 1);
    else if (spec.type === "boolean") value = "true";
    else {
      if (i + 1 >= args.length) throw new ConfigError(`flag needs an argument: -${name}`);
      value = args[++i]!;
    }
    if (spec.type === "boolean") parseBool(name, value);
    // An alias sets its flag: the last of `--ca-file` and `--trusted-ca-file` wins.
    values.set(spec.name, value);
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
  const proxy = proxyFlags(v);
  const discoverySrv = String(v["discovery-srv"] ?? "");
  const discoverySrvName = String(v["discovery-srv-name"] ?? "");
  // etcd: discovery replaces --initial-cluster; both given is a conflict.
  if ((discoverySrv !== "" || discoverySrvName !== "") && explicit.has("initial-cluster")) {
    throw new ConfigError('multiple discovery or bootstrap flags are set. Choose one of "initial-cluster", "discovery" or "discovery-srv"');
  }
  if (discoverySrvName !== "" && discoverySrv === "") throw new ConfigError("--discovery-srv-name needs --discovery-srv");
  // A proxy advertises nothing and is no member: etcd skips these checks for it.
  const member = proxy.mode === "off";
  if (member && explicit.has("listen-client-urls") && !explicit.has("advertise-client-urls")) {
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
  if (!mine && member) {
    throw new ConfigError(`couldn't find local name ${JSON.stringify(name)} in the initial cluster configuration`);
  }
  const sortedEq = (a: string[], b: string[]): boolean =>
    a.length === b.length && [...a].sort().every((x, i) => new URL(x).href === new URL([...b].sort()[i]!).href);
  if (mine && member && !sortedEq(mine, initialAdvertisePeerUrls)) {
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
    maxTxnOps: positiveInt("max-txn-ops", v["max-txn-ops"]),
    logLevel,
    ...tlsConfig(v, { client: listenClientUrls, peer: listenPeerUrls }),
    discoverySrv,
    discoverySrvName,
    proxy,
  };
}

/** Go's strconv.ParseBool, as the flag package uses it for bool flags. */
function parseBool(flag: string, v: unknown): boolean {
  if (typeof v === "boolean") return v;
  const s = String(v);
  if (["1", "t", "T", "TRUE", "true", "True"].includes(s)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(s)) return false;
  throw new ConfigError(`invalid boolean value ${JSON.stringify(s)} for -${flag}: parse error`);
}

/**
 * The TLS flags and their cross-flag rules. etcd reports most of these only when a
 * listener starts; kvctl refuses them before opening the data directory.
 */
function tlsConfig(v: Record<string, unknown>, listen: { client: readonly URL[]; peer: readonly URL[] }): Pick<ServerConfig, "clientTls" | "peerTls" | "cipherSuites" | "hostWhitelist"> {
  const str = (k: string): string => String(v[k] ?? "");
  const side = (prefix: "" | "peer-"): TlsFlags => {
    const certFile = str(`${prefix}cert-file`);
    const keyFile = str(`${prefix}key-file`);
    if ((certFile === "") !== (keyFile === "")) {
      const missing = certFile === "" ? `--${prefix}cert-file` : `--${prefix}key-file`;
      throw new ConfigError(`${missing} is required: KeyFile and CertFile must both be present[key: ${keyFile}, cert: ${certFile}]`);
    }
    return {
      certFile,
      keyFile,
      trustedCaFile: str(`${prefix}trusted-ca-file`),
      clientCertAuth: parseBool(`${prefix}client-cert-auth`, v[`${prefix}client-cert-auth`] ?? false),
      autoTls: parseBool(`${prefix}auto-tls`, v[`${prefix}auto-tls`] ?? false),
      crlFile: prefix === "peer-" ? str("peer-crl-file") : "",
      allowedCn: prefix === "peer-" ? str("peer-cert-allowed-cn") : "",
    };
  };
  const clientTls = side("");
  const peerTls = side("peer-");
  for (const [kind, urls, tls, flags] of [
    ["client", listen.client, clientTls, "--cert-file, --key-file"],
    ["peer", listen.peer, peerTls, "--peer-cert-file, --peer-key-file"],
  ] as const) {
    for (const u of urls) {
      if (u.protocol === "https:" && tls.certFile === "" && !tls.autoTls) {
        throw new ConfigError(`TLS key/cert (${flags}) must be provided for ${kind} url ${u.origin} with HTTPS scheme`);
      }
    }
  }
  const cipherSuites = str("cipher-suites").split(",").map((s) => s.trim()).filter((s) => s !== "");
  const unknown = cipherSuites.find((s) => !isGoCipherSuite(s));
  if (unknown !== undefined) {
    throw new ConfigError(`unexpected TLS cipher suite ${JSON.stringify(unknown)} (valid: ${goCipherSuiteNames().join(", ")})`);
  }
  const hostWhitelist = [...new Set(str("host-whitelist").split(",").map((s) => s.trim()).filter((s) => s !== ""))];
  return { clientTls, peerTls, cipherSuites, hostWhitelist };
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
    // KV_<FLAG> fills every flag not given on the command line (then KV_<ALIAS>: KV_CA_FILE).
    const e = [f.name, ...(f.aliases ?? [])].map((n) => env[envName(n)]).find((x) => x !== undefined);
    if (e !== undefined) explicit.add(f.name);
    v[f.name] = values.get(f.name) ?? e ?? f.default;
  }
  return buildConfig(v, explicit);
}
