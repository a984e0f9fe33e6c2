// `--config-file`: etcd 3.4's YAML configuration file (embed.ConfigFromFile plus etcdmain's
// configProxy), read into the same flag -> string values the command line gives, so one
// validation path (config.ts) serves both. Keys are etcd's; the transport security
// sections are flattened onto their flags. Like etcd (sigs.k8s.io/yaml over go-yaml v2),
// the file is YAML 1.1 (`yes`/`no` are booleans), a value of the wrong type is an error in
// Go's words, key case is ignored, and keys etcd does not know are skipped (kvctl warns).
// One kvctl extension: a duration key also takes a Go duration string ("10m"), not only
// etcd's integer nanoseconds.
import { createRequire } from "node:module";
import { readFile } from "node:fs/promises";
import { ConfigError, type ConfigNotice } from "./config-types.ts";

// yaml is required when a file is parsed, not imported: compiling it cost every member's
// start-up 14-20 ms, with or without a configuration file.
const requireCjs = createRequire(import.meta.url);

type GoType = "string" | "bool" | "uint" | "uint32" | "uint64" | "int" | "int64" | "time.Duration" | "[]string";

/** etcd's JSON tags and Go types; the value is the serve flag it sets (the same name unless noted). */
const keys: ReadonlyMap<string, GoType> = new Map<string, GoType>([
  ["name", "string"], ["data-dir", "string"], ["wal-dir", "string"], ["snapshot-count", "uint64"],
  ["max-snapshots", "uint"], ["max-wals", "uint"], ["heartbeat-interval", "uint"], ["election-timeout", "uint"],
  ["initial-election-tick-advance", "bool"], ["backend-batch-interval", "time.Duration"], ["backend-batch-limit", "int"],
  ["quota-backend-bytes", "int64"], ["max-txn-ops", "uint"], ["max-request-bytes", "uint"],
  ["max-concurrent-streams", "uint32"], ["cipher-suites", "[]string"], ["initial-cluster-state", "string"],
  ["discovery-srv", "string"], ["discovery-srv-name", "string"], ["discovery-proxy", "string"], ["discovery", "string"],
  ["initial-cluster", "string"], ["initial-cluster-token", "string"], ["strict-reconfig-check", "bool"],
  ["enable-v2", "bool"], ["auto-compaction-mode", "string"], ["auto-compaction-retention", "string"],
  ["grpc-keepalive-min-time", "time.Duration"], ["grpc-keepalive-interval", "time.Duration"],
  ["grpc-keepalive-timeout", "time.Duration"], ["pre-vote", "bool"], ["auth-token", "string"], ["bcrypt-cost", "uint"],
  ["auth-token-ttl", "uint"], ["experimental-initial-corrupt-check", "bool"], ["experimental-corrupt-check-time", "time.Duration"],
  ["experimental-enable-v2v3", "string"], ["experimental-backend-bbolt-freelist-type", "string"],
  ["experimental-enable-lease-checkpoint", "bool"], ["experimental-enable-lease-checkpoint-persist", "bool"],
  ["experimental-compaction-batch-limit", "int"], ["experimental-watch-progress-notify-interval", "time.Duration"],
  ["experimental-warning-apply-duration", "time.Duration"], ["force-new-cluster", "bool"], ["enable-pprof", "bool"],
  ["metrics", "string"], ["listen-metrics-urls", "string"], ["logger", "string"], ["log-level", "string"],
  ["log-outputs", "[]string"], ["enable-grpc-gateway", "bool"], ["log-output", "[]string"], ["debug", "bool"],
  ["log-package-levels", "string"], ["unsafe-no-fsync", "bool"], ["listen-peer-urls", "string"],
  ["listen-client-urls", "string"], ["initial-advertise-peer-urls", "string"], ["advertise-client-urls", "string"],
  ["cors", "string"], ["host-whitelist", "string"],
  // etcdmain's configProxy, read from the same file.
  ["proxy", "string"], ["discovery-fallback", "string"], ["proxy-failure-wait", "uint"], ["proxy-refresh-interval", "uint"],
  ["proxy-dial-timeout", "uint"], ["proxy-write-timeout", "uint"], ["proxy-read-timeout", "uint"],
]);

/** embed.securityConfig: the keys of client-transport-security and peer-transport-security. */
const securityKeys: ReadonlyMap<string, GoType> = new Map<string, GoType>([
  ["cert-file", "string"], ["key-file", "string"], ["client-cert-auth", "bool"], ["trusted-ca-file", "string"], ["auto-tls", "bool"],
]);

const proxyKeys = new Set(["proxy", "discovery-fallback", "proxy-failure-wait", "proxy-refresh-interval", "proxy-dial-timeout", "proxy-write-timeout", "proxy-read-timeout"]);

export interface ConfigFileValues {
  /** Serve flag name -> value as the command line would give it. */
  values: Map<string, string>;
  notices: ConfigNotice[];
}

const uintMax: Record<string, bigint> = { uint: (1n << 64n) - 1n, uint64: (1n << 64n) - 1n, uint32: (1n << 32n) - 1n };
const intRange: Record<string, [bigint, bigint]> = { int: [-(1n << 63n), (1n << 63n) - 1n], int64: [-(1n << 63n), (1n << 63n) - 1n] };

function jsonKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "object") return "object";
  return typeof v === "bigint" ? "number" : typeof v;
}

/** One value as the flag string, or Go's json error for its type. */
function convert(v: unknown, type: GoType, field: string): string | undefined {
  const mismatch = (): ConfigError => {
    const what = typeof v === "number" || typeof v === "bigint" ? `number ${String(v)}` : jsonKind(v);
    return new ConfigError(`error unmarshaling JSON: while decoding JSON: json: cannot unmarshal ${what} into Go struct field ${field} of type ${type}`);
  };
  if (v === null || v === undefined) return undefined; // JSON null leaves the default
  switch (type) {
    case "string":
      if (typeof v !== "string") throw mismatch();
      return v;
    case "bool":
      if (typeof v !== "boolean") throw mismatch();
      return String(v);
    case "uint":
    case "uint32":
    case "uint64":
    case "int":
    case "int64": {
      if ((typeof v !== "number" || !Number.isInteger(v)) && typeof v !== "bigint") throw mismatch();
      const n = BigInt(v);
      const [lo, hi] = intRange[type] ?? [0n, uintMax[type] ?? 0n];
      if (n < lo || n > hi) throw mismatch();
      return n.toString();
    }
    case "time.Duration":
      if (typeof v === "number" && Number.isInteger(v)) return `${v}ns`;
      if (typeof v === "bigint") return `${v}ns`;
      if (typeof v === "string") return v; // kvctl extension; validated as a Go duration by config.ts
      throw mismatch();
    case "[]string":
      if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) throw mismatch();
      return (v as string[]).join(",");
  }
}

/** Go's encoding/json matches keys exactly first, then case-insensitively. */
function lookup<T>(table: ReadonlyMap<string, T>, key: string): [string, T] | undefined {
  const exact = table.get(key);
  if (exact !== undefined) return [key, exact];
  for (const [k, t] of table) if (k.toLowerCase() === key.toLowerCase()) return [k, t];
  return undefined;
}

/** Parses the text of a configuration file (exported for tests; readConfigFile reads the file). */
export function parseConfigYaml(text: string): ConfigFileValues {
  let doc: unknown;
  try {
    doc = (requireCjs("yaml") as typeof import("yaml")).parse(text, { version: "1.1", intAsBigInt: true });
  } catch (err) {
    throw new ConfigError(`error converting YAML to JSON: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`);
  }
  const values = new Map<string, string>();
  const notices: ConfigNotice[] = [];
  if (doc === null || doc === undefined) return { values, notices };
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new ConfigError(`error unmarshaling JSON: while decoding JSON: json: cannot unmarshal ${jsonKind(doc)} into Go value of type embed.configYAML`);
  }
  for (const [rawKey, v] of Object.entries(doc as Record<string, unknown>)) {
    if (rawKey.toLowerCase() === "client-transport-security" || rawKey.toLowerCase() === "peer-transport-security") {
      const prefix = rawKey.toLowerCase().startsWith("peer") ? "peer-" : "";
      if (v === null) continue;
      if (typeof v !== "object" || Array.isArray(v)) {
        throw new ConfigError(`error unmarshaling JSON: while decoding JSON: json: cannot unmarshal ${jsonKind(v)} into Go struct field configYAML.${rawKey.toLowerCase()} of type embed.securityConfig`);
      }
      for (const [k, sv] of Object.entries(v as Record<string, unknown>)) {
        const hit = lookup(securityKeys, k);
        if (hit === undefined) {
          notices.push({ level: "warn", msg: "unknown key in the configuration file ignored (etcd 3.4 ignores it too)", fields: { key: `${rawKey}.${k}` } });
          continue;
        }
        const s = convert(sv, hit[1], `configYAML.${rawKey.toLowerCase()}.${hit[0]}`);
        if (s !== undefined) values.set(`${prefix}${hit[0]}`, s);
      }
      continue;
    }
    const hit = lookup(keys, rawKey);
    if (hit === undefined) {
      notices.push({ level: "warn", msg: "unknown key in the configuration file ignored (etcd 3.4 ignores it too)", fields: { key: rawKey } });
      continue;
    }
    const [key, type] = hit;
    const s = convert(v, type, `${proxyKeys.has(key) ? "configProxy" : "configYAML"}.${key}`);
    // etcd reads the comma-separated strings only when not empty.
    if (s === undefined || (s === "" && type === "string" && /urls$|^cors$|^host-whitelist$/.test(key))) continue;
    values.set(key, s);
  }
  return { values, notices };
}

export async function readConfigFile(path: string): Promise<ConfigFileValues> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file or directory" : code === "EACCES" ? "permission denied" : code === "EISDIR" ? "is a directory" : String(err);
    throw new ConfigError(`open ${path}: ${reason}`);
  }
  return parseConfigYaml(text);
}
