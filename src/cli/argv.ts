// The fast command-line parser. etcdctl is Go's flag package under urfave/cli, and
// scripts written for it depend on that grammar, so this parser follows it:
//   - `-name` and `--name` are the same flag; values as `-name value` or `-name=value`;
//     a repeated flag keeps its last value; no bundling (`-rp` is an unknown flag);
//   - global flags come before the command; a command's flags may also come after its
//     arguments (urfave/cli moves known flags forward), unknown `-x` after the first
//     argument is an argument (`kvctl set key -5`), `--` ends the flags;
//   - kvctl also accepts global flags after the command (yargs users expect it).
// It never loads yargs: a `kvctl get` must start fast. What it does not handle (help,
// no or unknown command) it hands to the yargs app, which prints help and errors.

import { findCommand, globalFlags, envName, type CommandSpec, type FlagSpec } from "./spec.ts";
import { UsageError } from "./exit-codes.ts";

/** A flag's raw value; a `strings` flag collects every occurrence, in order. */
export type RawValue = string | boolean | string[];

/** What the command line said, before defaults and type conversion. */
export interface RawInvocation {
  command: string;
  subcommand?: string;
  /** Global flags given on the command line, by long name. */
  globals: Record<string, RawValue>;
  /** Command flags given, by long name. */
  flags: Record<string, RawValue>;
  args: string[];
}

export type ParseOutcome =
  | { kind: "ok"; raw: RawInvocation }
  /** Help requested, no command, unknown command: the yargs app takes over. */
  | { kind: "delegate"; reason: "help" | "no-command" | "unknown-command"; name?: string };

interface FlagIndex {
  byName: Map<string, FlagSpec>;
}

function index(specs: readonly FlagSpec[]): FlagIndex {
  const byName = new Map<string, FlagSpec>();
  for (const f of specs) {
    byName.set(f.name, f);
    for (const a of f.aliases ?? []) byName.set(a, f);
  }
  return { byName };
}

const globalIndex = index(globalFlags);

/** `--name=v` -> { name, value }; undefined when the token is not flag-shaped. */
function splitFlag(token: string): { name: string; value: string | undefined } | undefined {
  if (token.length < 2 || token[0] !== "-" || token === "--") return undefined;
  const body = token.startsWith("--") ? token.slice(2) : token.slice(1);
  if (body === "" || body.startsWith("-") || body.startsWith("=")) throw new UsageError(`bad flag syntax: ${token}`);
  const eq = body.indexOf("=");
  return eq === -1 ? { name: body, value: undefined } : { name: body.slice(0, eq), value: body.slice(eq + 1) };
}

function splitFlagLenient(token: string, strict: boolean): ReturnType<typeof splitFlag> {
  try {
    return splitFlag(token);
  } catch (err) {
    if (strict) throw err;
    return undefined;
  }
}

/**
 * Reads one flag token (and its value token) into `out`; returns how many tokens it
 * used. Go's flag package takes the next token as the value whatever it looks like.
 */
function takeFlag(
  spec: FlagSpec,
  name: string,
  value: string | undefined,
  next: string | undefined,
  out: Record<string, RawValue>,
): number {
  if (spec.type === "bool") {
    out[spec.name] = value === undefined ? true : parseGoBool(value, `-${name}`);
    return 1;
  }
  const set = (v: string): void => {
    const prev = out[spec.name];
    out[spec.name] = spec.type === "strings" ? [...(Array.isArray(prev) ? prev : []), v] : v;
  };
  if (value !== undefined) {
    set(value);
    return 1;
  }
  if (next === undefined) throw new UsageError(`flag needs an argument: -${name}`);
  set(next);
  return 2;
}

export function parseGoBool(value: string, what: string): boolean {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(value)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(value)) return false;
  throw new UsageError(`invalid boolean value "${value}" for ${what}: parse error`);
}

/** Parses argv (without node and script). Throws UsageError for bad flags. */
export function parseArgv(argv: readonly string[]): ParseOutcome {
  const globals: Record<string, RawValue> = {};
  let i = 0;
  // Global flags, Go style: up to the first non-flag token.
  while (i < argv.length) {
    const token = argv[i] ?? "";
    if (token === "--") {
      i++;
      break;
    }
    const f = splitFlag(token);
    if (f === undefined) break;
    const spec = globalIndex.byName.get(f.name);
    if (spec === undefined) throw new UsageError(`flag provided but not defined: -${f.name}`);
    i += takeFlag(spec, f.name, f.value, argv[i + 1], globals);
  }
  if (globals["help"] === true) return { kind: "delegate", reason: "help" };
  const name = argv[i];
  if (name === undefined) {
    return globals["version"] === true ? ok("version", undefined, globals, {}, []) : { kind: "delegate", reason: "no-command" };
  }
  if (name === "help" || name === "h") return { kind: "delegate", reason: "help" };
  let spec = findCommand(name);
  if (spec === undefined) return { kind: "delegate", reason: "unknown-command", name };
  i++;
  let subcommand: string | undefined;
  if (spec.subcommands !== undefined) {
    const sub = argv[i];
    const subSpec = sub === undefined ? undefined : spec.subcommands.find((s) => s.name === sub);
    if (sub === undefined || sub === "--help" || sub === "-h" || sub === "help") return { kind: "delegate", reason: "help" };
    if (subSpec === undefined) return { kind: "delegate", reason: "unknown-command", name: sub };
    subcommand = sub;
    spec = subSpec;
    i++;
  }
  const flags: Record<string, RawValue> = {};
  const args = parseCommandTokens(spec, argv.slice(i), flags, globals);
  // parseCommandTokens may have set a global --help after the command.
  if (flags["help"] === true || wantsHelp(globals)) return { kind: "delegate", reason: "help" };
  return ok(name, subcommand, globals, flags, args);
}

function ok(
  command: string,
  subcommand: string | undefined,
  globals: Record<string, RawValue>,
  flags: Record<string, RawValue>,
  args: string[],
): ParseOutcome {
  const raw: RawInvocation = { command, globals, flags, args };
  if (subcommand !== undefined) raw.subcommand = subcommand;
  return { kind: "ok", raw };
}

const helpFlag: FlagSpec = { name: "help", aliases: ["h"], type: "bool", description: "show help" };

/**
 * A command's tokens, urfave/cli style: known flags anywhere before `--` are flags, the
 * rest are arguments. exec-watch stops reading flags at its command (`exec-watch key ls -r`
 * runs `ls -r`).
 */
function parseCommandTokens(
  spec: CommandSpec,
  tokens: readonly string[],
  flags: Record<string, RawValue>,
  globals: Record<string, RawValue>,
): string[] {
  const own = index([...spec.flags, helpFlag]);
  const args: string[] = [];
  const maxFlagArgs = spec.name === "exec-watch" ? 1 : Number.POSITIVE_INFINITY;
  for (let i = 0; i < tokens.length; ) {
    const token = tokens[i] ?? "";
    if (token === "--") {
      args.push(...tokens.slice(i + 1));
      break;
    }
    if (args.length >= maxFlagArgs && !looksLikeKnownFlag(token, own)) {
      args.push(...tokens.slice(i));
      break;
    }
    // After the first argument a malformed `-…` token is just an argument (`set key ---`).
    const f = token.length > 1 && token.startsWith("-") ? splitFlagLenient(token, args.length === 0) : undefined;
    const ownSpec = f && own.byName.get(f.name);
    const globalSpec = f && globalIndex.byName.get(f.name);
    if (f !== undefined && ownSpec) {
      i += takeFlag(ownSpec, f.name, f.value, tokens[i + 1], flags);
    } else if (f !== undefined && globalSpec) {
      i += takeFlag(globalSpec, f.name, f.value, tokens[i + 1], globals);
    } else if (f !== undefined && args.length === 0) {
      // Go's flag package sees an unknown flag before the first argument.
      throw new UsageError(`flag provided but not defined: -${f.name}`);
    } else {
      args.push(token);
      i++;
    }
  }
  return args;
}

function looksLikeKnownFlag(token: string, own: FlagIndex): boolean {
  if (token.length < 2 || !token.startsWith("-") || token === "--") return false;
  const name = token.replace(/^--?/, "").split("=")[0] ?? "";
  return own.byName.has(name) || globalIndex.byName.has(name);
}

/** KV_<FLAG> values for the global flags not given on the command line (yargs .env("KV")). */
export function globalsFromEnv(given: Readonly<Record<string, RawValue>>, env: NodeJS.ProcessEnv): Record<string, RawValue> {
  const out: Record<string, RawValue> = { ...given };
  for (const f of globalFlags) {
    if (out[f.name] !== undefined) continue;
    const v = env[envName(f.name)];
    if (v === undefined || v === "") continue;
    out[f.name] = f.type === "bool" ? parseGoBool(v, envName(f.name)) : v;
  }
  return out;
}

function wantsHelp(globals: Readonly<Record<string, RawValue>>): boolean {
  return globals["help"] === true;
}
