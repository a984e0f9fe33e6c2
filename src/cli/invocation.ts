// From "what the command line said" to typed options: defaults, KV_ variables, etcdctl's
// ETCDCTL_* fallbacks, Go's int and duration syntax. Both parsers (argv.ts and the
// yargs app) end here, so a command sees the same Invocation whichever parsed it.

import { findCommand, globalFlags, defaultEndpoints, type CommandSpec, type FlagSpec } from "./spec.ts";
import { UsageError } from "./exit-codes.ts";
import { globalsFromEnv, parseGoBool, type RawInvocation, type RawValue } from "./argv.ts";

export interface GlobalOptions {
  endpoints: string[];
  noSync: boolean;
  /** simple | extended | json; anything else is reported when printing, like etcdctl. */
  output: string;
  debug: boolean;
  /** `user` or `user:password` as given (-u, KV_USERNAME, ETCDCTL_USERNAME). */
  username: string | undefined;
  password: string | undefined;
  timeoutMs: number;
  totalTimeoutMs: number;
  noColor: boolean;
  caFile: string | undefined;
  certFile: string | undefined;
  keyFile: string | undefined;
  /** --insecure-skip-tls-verify. */
  insecureSkipVerify: boolean;
  /** --insecure-transport (default true). */
  insecureTransport: boolean;
  /** -D, --discovery-srv: the endpoints come from this domain's SRV records (context.ts resolves them). */
  discoverySrv: string | undefined;
  /** etcdctl v2 has no flag for it: ETCDCTL_DISCOVERY_SRV_NAME (or KV_DISCOVERY_SRV_NAME) only. */
  discoverySrvName: string | undefined;
  /** --insecure-discovery: keep discovered http:// endpoints (default false in v2, unlike v3). */
  insecureDiscovery: boolean;
}

export type FlagValue = string | number | boolean | readonly string[];

export interface Invocation {
  command: string;
  subcommand: string | undefined;
  globals: GlobalOptions;
  /** Every flag of the command, defaulted and converted (int -> number, bool -> boolean). */
  flags: Readonly<Record<string, FlagValue>>;
  args: string[];
}

export function buildInvocation(raw: RawInvocation, env: NodeJS.ProcessEnv): Invocation {
  const g = globalsFromEnv(raw.globals, env);
  const str = (name: string): string | undefined => {
    const v = g[name];
    return typeof v === "string" && v !== "" ? v : undefined;
  };
  const bool = (name: string): boolean => g[name] === true;
  const durationOf = (name: string): number => {
    const spec = globalFlags.find((f) => f.name === name);
    const text = str(name) ?? spec?.default ?? "0s";
    return parseGoDuration(text, `-${name}`);
  };
  // etcdctl's precedence: --endpoints, ETCDCTL_ENDPOINTS, --endpoint, ETCDCTL_ENDPOINT,
  // --peers, ETCDCTL_PEERS; kvctl reads KV_<FLAG> together with each flag.
  const endpointsText =
    str("endpoints") ??
    nonEmpty(env["ETCDCTL_ENDPOINTS"]) ??
    str("endpoint") ??
    nonEmpty(env["ETCDCTL_ENDPOINT"]) ??
    str("peers") ??
    nonEmpty(env["ETCDCTL_PEERS"]) ??
    defaultEndpoints;
  const globals: GlobalOptions = {
    endpoints: endpointsText
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e !== ""),
    noSync: bool("no-sync"),
    // An explicit empty -o is a format of its own to etcdctl (Unsupported output format: ).
    output: typeof g["output"] === "string" ? g["output"] : "simple",
    debug: bool("debug"),
    username: str("username") ?? nonEmpty(env["ETCDCTL_USERNAME"]),
    password: str("password"),
    timeoutMs: durationOf("timeout"),
    totalTimeoutMs: durationOf("total-timeout"),
    noColor: bool("no-color") || nonEmpty(env["NO_COLOR"]) !== undefined,
    // --cacert/--cert/--key (KV_CACERT …), then the etcdctl v2 names' variables.
    caFile: str("cacert") ?? nonEmpty(env["KV_CA_FILE"]) ?? nonEmpty(env["ETCDCTL_CA_FILE"]) ?? nonEmpty(env["ETCDCTL_CACERT"]),
    certFile: str("cert") ?? nonEmpty(env["KV_CERT_FILE"]) ?? nonEmpty(env["ETCDCTL_CERT_FILE"]) ?? nonEmpty(env["ETCDCTL_CERT"]),
    keyFile: str("key") ?? nonEmpty(env["KV_KEY_FILE"]) ?? nonEmpty(env["ETCDCTL_KEY_FILE"]) ?? nonEmpty(env["ETCDCTL_KEY"]),
    insecureSkipVerify: bool("insecure-skip-tls-verify"),
    insecureTransport: g["insecure-transport"] !== false,
    discoverySrv: str("discovery-srv") ?? nonEmpty(env["ETCDCTL_DISCOVERY_SRV"]),
    discoverySrvName: nonEmpty(env["KV_DISCOVERY_SRV_NAME"]) ?? nonEmpty(env["ETCDCTL_DISCOVERY_SRV_NAME"]),
    // etcdctl: the flag, or ETCDCTL_INSECURE_DISCOVERY set to anything at all (even "false").
    insecureDiscovery: bool("insecure-discovery") || nonEmpty(env["ETCDCTL_INSECURE_DISCOVERY"]) !== undefined,
  };
  const spec = commandSpec(raw.command, raw.subcommand);
  return {
    command: raw.command,
    subcommand: raw.subcommand,
    globals,
    flags: convertFlags(spec?.flags ?? [], raw.flags),
    args: raw.args,
  };
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === "" ? undefined : v;
}

function commandSpec(command: string, subcommand: string | undefined): CommandSpec | undefined {
  const spec = findCommand(command);
  return subcommand === undefined ? spec : spec?.subcommands?.find((s) => s.name === subcommand);
}

function convertFlags(specs: readonly FlagSpec[], given: Readonly<Record<string, RawValue>>): Record<string, FlagValue> {
  const out: Record<string, FlagValue> = {};
  for (const f of specs) {
    const v = given[f.name];
    switch (f.type) {
      case "bool":
        out[f.name] = typeof v === "string" ? parseGoBool(v, `-${f.name}`) : v === true;
        break;
      case "int":
        out[f.name] = parseGoInt(typeof v === "string" ? v : (f.default ?? "0"), `-${f.name}`);
        break;
      case "duration":
        out[f.name] = parseGoDuration(typeof v === "string" ? v : (f.default ?? "0s"), `-${f.name}`);
        break;
      case "string":
        out[f.name] = typeof v === "string" ? v : (f.default ?? "");
        break;
      case "strings":
        out[f.name] = Array.isArray(v) ? v : typeof v === "string" ? [v] : [];
        break;
    }
  }
  return out;
}

/** Go's strconv.ParseInt(s, 0, 64): decimal, 0x hex, 0o / leading-0 octal, 0b binary. */
export function parseGoInt(text: string, flag: string): number {
  const m = /^([+-]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)$/.exec(text);
  const bad = (): UsageError => new UsageError(`invalid value "${text}" for flag ${flag}: parse error`);
  if (m === null) throw bad();
  const digits = m[2] ?? "0";
  let n: number;
  if (/^0[xXbBoO]/.test(digits)) n = Number(digits.toLowerCase());
  else if (digits.length > 1 && digits.startsWith("0")) n = Number.parseInt(digits, 8);
  else n = Number(digits);
  if (!Number.isSafeInteger(n)) throw bad();
  return m[1] === "-" ? -n : n;
}

const durationUnits: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  "μs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go's time.ParseDuration, in milliseconds (`2s`, `1m30s`, `300ms`, `1.5h`, `0`); undefined when malformed. */
export function parseDurationMs(text: string): number | undefined {
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    sign = s.startsWith("-") ? -1 : 1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return undefined;
  let total = 0;
  const part = /^([0-9]*(?:\.[0-9]*)?)([a-zµμ]+)/;
  while (s !== "") {
    const m = part.exec(s);
    if (m === null || m[1] === "" || m[1] === ".") return undefined;
    const unit = durationUnits[m[2] ?? ""];
    if (unit === undefined) return undefined;
    total += Number(m[1]) * unit;
    s = s.slice(m[0].length);
  }
  return sign * total;
}

/** parseDurationMs for a flag value: a malformed one is urfave/cli's usage error. */
export function parseGoDuration(text: string, flag: string): number {
  const ms = parseDurationMs(text);
  if (ms === undefined) throw new UsageError(`invalid value "${text}" for flag ${flag}: parse error`);
  return ms;
}
