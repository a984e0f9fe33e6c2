// The fast command-line parser. etcdctl is Go's flag package under urfave/cli, and
// scripts written for it depend on that grammar, so this parser follows it:
//   - `-name` and `--name` are the same flag; values as `-name value` or `-name=value`;
//     a repeated flag keeps its last value; no bundling (`-rp` is an unknown flag);
//   - global flags come before the command; a command's tokens go through urfave/cli's
//     reorderArgs (known flags, each with the token after it, moved before the rest; a
//     `--` not taken as a value ends the moving) and then Go's flag parse, which stops
//     at the first argument: `rm --dir /a -r` leaves `-r` an argument (the token after a
//     bool flag moves with it), `mk --in-order k --` gives the value `--`;
//   - each value of an int or duration flag is checked where it is read, as Go's
//     flag.Set, so `--ttl x --ttl 5` is a usage error;
//   - kvctl also accepts global flags after the command (yargs users expect it): they
//     move as the command's own flags do.
// It never loads yargs: a `kvctl get` must start fast. What it does not handle (help,
// no or unknown command) it hands to the yargs app, which prints help and errors.

import { findCommand, globalFlags, envName, type CommandSpec, type FlagSpec } from "./spec.ts";
import { UsageError } from "./exit-codes.ts";
// invocation.ts imports this module too; these are called only at parse time, after both loaded.
import { parseGoDuration, parseGoInt } from "./invocation.ts";

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
    check(spec, name, value);
    set(value);
    return 1;
  }
  if (next === undefined) throw new UsageError(`flag needs an argument: -${name}`);
  check(spec, name, next);
  set(next);
  return 2;
}

/** Go's flag.Set of an int or duration value: a bad one fails the parse even if a later one is good. */
function check(spec: FlagSpec, name: string, value: string): void {
  if (spec.type === "int") parseGoInt(value, `-${name}`);
  else if (spec.type === "duration") parseGoDuration(value, `-${name}`);
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
    // The group reads its own flags (only --help) before the subcommand, as Go's flag package.
    const groupFlag = splitFlag(sub);
    if (groupFlag !== undefined && groupFlag.name !== "help" && groupFlag.name !== "h") throw new UsageError(`flag provided but not defined: -${groupFlag.name}`);
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
 * A command's tokens as etcdctl reads them: urfave/cli's reorderArgs, then Go's flag parse
 * up to the first argument. exec-watch keeps kvctl's own reading: flags up to its command
 * (`exec-watch key ls -r` runs `ls -r`).
 */
function parseCommandTokens(
  spec: CommandSpec,
  tokens: readonly string[],
  flags: Record<string, RawValue>,
  globals: Record<string, RawValue>,
): string[] {
  const own = index([...spec.flags, helpFlag]);
  if (spec.name === "exec-watch") return parseExecWatchTokens(own, tokens, flags, globals);
  const ordered = reorderArgs(own, tokens);
  let i = 0;
  while (i < ordered.length) {
    const token = ordered[i] ?? "";
    if (token === "--") {
      i++;
      break;
    }
    const f = splitFlag(token);
    if (f === undefined) break;
    const ownSpec = own.byName.get(f.name);
    const globalSpec = globalIndex.byName.get(f.name);
    if (ownSpec) i += takeFlag(ownSpec, f.name, f.value, ordered[i + 1], flags);
    else if (globalSpec) i += takeFlag(globalSpec, f.name, f.value, ordered[i + 1], globals);
    else throw new UsageError(`flag provided but not defined: -${f.name}`);
  }
  return ordered.slice(i);
}

/**
 * urfave/cli 1.22's reorderArgs: each known flag, and the token after a flag written
 * without `=` (a bool flag's too) unless that token is a known flag, moves ahead of the
 * other tokens; a `--` met anywhere else stops the moving and is put before the rest.
 */
function reorderArgs(own: FlagIndex, tokens: readonly string[]): string[] {
  const moved: string[] = [];
  let rest: string[] = [];
  let valueMayFollow = false;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] ?? "";
    if (valueMayFollow && !looksLikeKnownFlag(token, own)) {
      valueMayFollow = false;
      moved.push(token);
    } else if (token === "--") {
      rest = ["--", ...rest, ...tokens.slice(i + 1)];
      break;
    } else if (looksLikeKnownFlag(token, own)) {
      moved.push(token);
      valueMayFollow = !token.includes("=");
    } else {
      rest.push(token);
    }
  }
  return [...moved, ...rest];
}

function parseExecWatchTokens(own: FlagIndex, tokens: readonly string[], flags: Record<string, RawValue>, globals: Record<string, RawValue>): string[] {
  const args: string[] = [];
  for (let i = 0; i < tokens.length; ) {
    const token = tokens[i] ?? "";
    if (token === "--") {
      args.push(...tokens.slice(i + 1));
      break;
    }
    if (args.length >= 1 && !looksLikeKnownFlag(token, own)) {
      args.push(...tokens.slice(i));
      break;
    }
    const f = token.length > 1 && token.startsWith("-") ? splitFlagLenient(token, args.length === 0) : undefined;
    const ownSpec = f && own.byName.get(f.name);
    const globalSpec = f && globalIndex.byName.get(f.name);
    if (f !== undefined && ownSpec) {
      i += takeFlag(ownSpec, f.name, f.value, tokens[i + 1], flags);
    } else if (f !== undefined && globalSpec) {
      i += takeFlag(globalSpec, f.name, f.value, tokens[i + 1], globals);
    } else if (f !== undefined && args.length === 0) {
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
