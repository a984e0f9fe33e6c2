// The `kvctl v3` command line: etcdctl v3's grammar, which is cobra + pflag, not Go's
// flag package (argv.ts): `--name value`, `--name=value`, `-w json`, `-wjson`, bundled
// bool shorthands, flags anywhere (before or after the command words and arguments), `--`
// ends the flags, unique command prefixes select a command (cobra's prefix matching).
// Persistent flags not given come from KV_<FLAG>, then ETCDCTL_<FLAG>.
// Pure: no I/O; errors are V3UsageError with pflag's/cobra's wording.

import { parseDurationMs } from "../../invocation.ts";
import { v3Commands, v3Flags, v3DefaultEndpoints, type FlagSpec, type V3CommandSpec } from "../../spec.ts";

export type V3FlagValue = string | number | boolean;

export interface V3Globals {
  endpoints: string[];
  debug: boolean;
  writeOut: string;
  hex: boolean;
  dialTimeoutMs: number;
  commandTimeoutMs: number;
  user: string | undefined;
  password: string | undefined;
  cacert: string | undefined;
  cert: string | undefined;
  key: string | undefined;
  insecureSkipTlsVerify: boolean;
  insecureTransport: boolean;
  /** --discovery-srv: the endpoints come from this domain's SRV records (run.ts resolves them). */
  discoverySrv: string | undefined;
  discoverySrvName: string | undefined;
  insecureDiscovery: boolean;
}

export interface V3Invocation {
  /** Canonical command words after `v3`: ["get"], ["lease", "grant"]; [] for bare `v3`. */
  path: string[];
  globals: V3Globals;
  /** The command's own flags, defaulted and converted (int/duration -> number). */
  flags: Readonly<Record<string, V3FlagValue>>;
  /** Which command flags were given on the command line (cobra's Changed). */
  changed: ReadonlySet<string>;
  args: string[];
  /** Arguments after `--` (watch's exec command), undefined without `--`. */
  afterDash: string[] | undefined;
  help: boolean;
}

/** A command-line mistake: `Error: <message>`, exit 1 (cobra's flag errors). */
export class V3UsageError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = "V3UsageError";
    this.exitCode = exitCode;
  }
}

function allFlagTypes(): Map<string, FlagSpec> {
  const m = new Map<string, FlagSpec>();
  const add = (specs: readonly FlagSpec[]): void => {
    for (const f of specs) for (const n of [f.name, ...(f.aliases ?? [])]) m.set(n, f);
  };
  add(v3Flags);
  const walk = (cs: readonly V3CommandSpec[]): void => {
    for (const c of cs) {
      add(c.flags);
      walk(c.subcommands ?? []);
    }
  };
  walk(v3Commands);
  return m;
}

/** Exact name or alias, else a unique prefix (cobra.EnablePrefixMatching). */
export function findV3Command(list: readonly V3CommandSpec[], word: string): V3CommandSpec | undefined {
  const exact = list.find((c) => c.name === word || (c.aliases ?? []).includes(word));
  if (exact !== undefined) return exact;
  const matches = list.filter((c) => [c.name, ...(c.aliases ?? [])].some((n) => n.startsWith(word)));
  return matches.length === 1 ? matches[0] : undefined;
}

const helpSpec: FlagSpec = { name: "help", aliases: ["h"], type: "bool", description: "help" };

/** Pass 1: the command words (cobra's Find, which skips flags and their values). */
function findPath(argv: readonly string[]): { specs: V3CommandSpec[]; positions: number[] } {
  const types = allFlagTypes();
  const specs: V3CommandSpec[] = [];
  const positions: number[] = [];
  let level: readonly V3CommandSpec[] = v3Commands;
  for (let i = 0; i < argv.length; i++) {
    const t = argv[i] ?? "";
    if (t === "--") break;
    if (t.startsWith("-") && t.length > 1) {
      if (t.includes("=")) continue;
      const name = t.startsWith("--") ? t.slice(2) : t.slice(-1);
      const f = types.get(name);
      if (f !== undefined && f.type !== "bool" && (t.startsWith("--") || t.length === 2)) i++;
      continue;
    }
    const spec = findV3Command(level, t);
    if (spec === undefined) {
      // cobra: an unknown word where a top-level command is expected. (Under a group,
      // `lease bogus`, cobra prints the group's help instead.)
      if (specs.length === 0) throw new V3UsageError(`unknown command "${t}" for "kvctl v3"`);
      break;
    }
    specs.push(spec);
    positions.push(i);
    if (spec.subcommands === undefined) break;
    level = spec.subcommands;
  }
  return { specs, positions };
}

interface Parsed {
  globals: Record<string, string | boolean>;
  flags: Record<string, string | boolean>;
  args: string[];
  afterDash: string[] | undefined;
  help: boolean;
}

/** Pass 2: pflag over every token but the command words. */
function parseFlags(tokens: readonly string[], own: readonly FlagSpec[], withGlobals: boolean): Parsed {
  const globals = new Map<string, FlagSpec>();
  for (const f of withGlobals ? v3Flags : []) for (const n of [f.name, ...(f.aliases ?? [])]) globals.set(n, f);
  const local = new Map<string, FlagSpec>();
  for (const f of [...own, helpSpec]) for (const n of [f.name, ...(f.aliases ?? [])]) local.set(n, f);
  const out: Parsed = { globals: {}, flags: {}, args: [], afterDash: undefined, help: false };
  const set = (f: FlagSpec, v: string | boolean): void => {
    if (f === helpSpec) out.help = v === true || v === "true";
    else if (local.get(f.name) === f) out.flags[f.name] = v;
    else out.globals[f.name] = v;
  };
  const lookup = (n: string): FlagSpec | undefined => local.get(n) ?? globals.get(n);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] ?? "";
    if (t === "--") {
      out.afterDash = tokens.slice(i + 1);
      out.args.push(...out.afterDash);
      break;
    }
    if (t.startsWith("--")) {
      const eq = t.indexOf("=");
      const name = eq === -1 ? t.slice(2) : t.slice(2, eq);
      const f = name.length > 1 || eq !== -1 ? lookup(name) : undefined;
      if (f === undefined) throw new V3UsageError(`unknown flag: --${name}`);
      if (eq !== -1) set(f, t.slice(eq + 1));
      else if (f.type === "bool") set(f, true);
      else {
        const v = tokens[i + 1];
        if (v === undefined) throw new V3UsageError(`flag needs an argument: --${name}`);
        set(f, v);
        i++;
      }
      continue;
    }
    if (t.startsWith("-") && t.length > 1) {
      // Shorthands: -w json, -wjson, -w=json, -ih (bools bundled).
      for (let j = 1; j < t.length; j++) {
        const c = t[j] ?? "";
        const f = lookup(c);
        if (f === undefined || (f.aliases ?? []).every((a) => a !== c)) {
          throw new V3UsageError(`unknown shorthand flag: '${c}' in ${t}`);
        }
        const rest = t.slice(j + 1);
        if (f.type === "bool") {
          if (rest.startsWith("=")) {
            set(f, rest.slice(1));
            break;
          }
          set(f, true);
          continue;
        }
        if (rest !== "") set(f, rest.startsWith("=") ? rest.slice(1) : rest);
        else {
          const v = tokens[i + 1];
          if (v === undefined) throw new V3UsageError(`flag needs an argument: '${c}' in -${c}`);
          set(f, v);
          i++;
        }
        break;
      }
      continue;
    }
    out.args.push(t);
  }
  return out;
}

const boolWords: Readonly<Record<string, boolean>> = {
  "1": true, t: true, T: true, TRUE: true, true: true, True: true,
  "0": false, f: false, F: false, FALSE: false, false: false, False: false,
};

function convert(f: FlagSpec, raw: string | boolean | undefined, shown: string): V3FlagValue {
  const bad = (detail: string): V3UsageError => new V3UsageError(`invalid argument "${String(raw)}" for "${shown}" flag: ${detail}`);
  const text = raw === undefined ? f.default : raw;
  switch (f.type) {
    case "bool": {
      if (typeof text === "boolean") return text;
      if (text === undefined || text === "") return false;
      const b = boolWords[text];
      if (b === undefined) throw bad(`strconv.ParseBool: parsing "${text}": invalid syntax`);
      return b;
    }
    case "int": {
      const n = parseInt64(String(text ?? "0"));
      if (n === undefined) throw bad(`strconv.ParseInt: parsing "${String(text)}": invalid syntax`);
      return n;
    }
    case "duration": {
      const ms = parseDurationMs(String(text ?? "0"));
      if (ms === undefined) throw bad(`time: invalid duration "${String(text)}"`);
      return ms;
    }
    default:
      return typeof text === "string" ? text : "";
  }
}

/** strconv.ParseInt(s, 0, 64) within the safe integer range. */
export function parseInt64(s: string): number | undefined {
  const m = /^([+-]?)(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO]?[0-7_]*|[1-9][0-9_]*)$/.exec(s);
  if (m === null) return undefined;
  const body = (m[2] ?? "0").replace(/_/g, "");
  let n: number;
  if (/^0[xXbBoO]/.test(body)) n = Number(body.toLowerCase());
  else if (body.length > 1 && body.startsWith("0")) n = Number.parseInt(body, 8);
  else n = Number(body);
  if (!Number.isSafeInteger(n)) return undefined;
  return m[1] === "-" ? -n : n;
}

function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const key = name.toUpperCase().replace(/-/g, "_");
  const v = env[`KV_${key}`] ?? env[`ETCDCTL_${key}`];
  return v === undefined || v === "" ? undefined : v;
}

/** Parses the arguments after `v3`. */
export function parseV3Argv(argv: readonly string[], env: NodeJS.ProcessEnv, opts: { commandFlagsOnly?: boolean } = {}): V3Invocation {
  const { specs, positions } = findPath(argv);
  const tokens = argv.filter((_t, i) => !positions.includes(i));
  // A group's flags are cobra persistent flags of its subcommands (endpoint --cluster).
  const own = specs.flatMap((s) => s.flags);
  const parsed = parseFlags(tokens, own, opts.commandFlagsOnly !== true);
  const g: Record<string, V3FlagValue> = {};
  for (const f of v3Flags) {
    const given = parsed.globals[f.name];
    const fromEnv = given === undefined ? envValue(env, f.name) : undefined;
    g[f.name] = convert(f, given ?? fromEnv, `--${f.name}`);
  }
  const flags: Record<string, V3FlagValue> = {};
  for (const f of own) flags[f.name] = convert(f, parsed.flags[f.name], `--${f.name}`);
  const str = (n: string): string | undefined => {
    const v = g[n];
    return typeof v === "string" && v !== "" ? v : undefined;
  };
  const globals: V3Globals = {
    endpoints: (str("endpoints") ?? v3DefaultEndpoints)
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e !== ""),
    debug: g["debug"] === true,
    writeOut: str("write-out") ?? "simple",
    hex: g["hex"] === true,
    dialTimeoutMs: Number(g["dial-timeout"]),
    commandTimeoutMs: Number(g["command-timeout"]),
    user: str("user"),
    password: str("password"),
    cacert: str("cacert"),
    cert: str("cert"),
    key: str("key"),
    insecureSkipTlsVerify: g["insecure-skip-tls-verify"] === true,
    insecureTransport: g["insecure-transport"] === true,
    discoverySrv: str("discovery-srv"),
    discoverySrvName: str("discovery-srv-name"),
    insecureDiscovery: g["insecure-discovery"] === true,
  };
  return {
    path: specs.map((s) => s.name),
    globals,
    flags,
    changed: new Set(Object.keys(parsed.flags)),
    args: parsed.args,
    afterDash: parsed.afterDash,
    help: parsed.help,
  };
}
