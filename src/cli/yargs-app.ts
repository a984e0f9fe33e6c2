// The yargs description of kvctl, built from spec.ts: it renders `--help` (global and per
// command) and is a second, independent parser of the same grammar (`.env("KV")`,
// `.strict()`). main.ts loads it only for help and for a missing command, because
// importing yargs costs ~100 ms of start-up and a `kvctl get` must be fast; the fast
// parser (argv.ts) handles everything else, and argv.test.ts checks that both parsers
// give the same Invocation.

import type { Argv, Options } from "yargs";
import { commands, envName, globalFlags, v3Command, type CommandSpec, type FlagSpec } from "./spec.ts";
import { parseGoBool, type RawInvocation, type RawValue } from "./argv.ts";
import { buildInvocation, type Invocation } from "./invocation.ts";

const parserConfiguration = {
  // `--no-sync` and `--no-color` are flags of their own, not negations.
  "boolean-negation": false,
  // A repeated flag keeps its last value (Go's flag package).
  "duplicate-arguments-array": false,
  // Values are strings: `set k 007` stores "007"; ints and durations are parsed by Go rules.
  "parse-numbers": false,
  "parse-positional-numbers": false,
  "dot-notation": false,
  // `-rp` is not `-r -p` in etcdctl.
  "short-option-groups": false,
} as const;

function option(f: FlagSpec): Options {
  const o: Options = {
    type: f.type === "bool" ? "boolean" : "string",
    describe: f.description,
  };
  // One value per occurrence (nargs 1: never the following arguments). Unlike argv.ts,
  // yargs keeps only the last of a repeated `strings` flag (duplicate-arguments-array is
  // off for all flags); help is what this parser is for.
  if (f.type === "strings") Object.assign(o, { array: true, nargs: 1 });
  if (f.aliases !== undefined) o.alias = [...f.aliases];
  if (f.default !== undefined && f.default !== "" && f.default !== "0") o.defaultDescription = f.default;
  return o;
}

/** etcdctl's usage text to a yargs command string: `exec-watch <key> [--] …` -> yargs syntax. */
export function yargsCommand(spec: CommandSpec): string {
  const args = spec.args
    .replace("[--] ", "")
    .replace("[args...]", "[args..]")
    .replace("[flags]", "[flags..]");
  return args === "" ? spec.name : `${spec.name} ${args}`;
}

function positionalNames(spec: CommandSpec): string[] {
  return [...yargsCommand(spec).matchAll(/[<[]([^\]>|.]+)/g)].map((m) => m[1] ?? "");
}

type Handler = (raw: RawInvocation) => void;

function addCommand(y: Argv, spec: CommandSpec, parents: string[], onRun: Handler): Argv {
  return y.command(
    yargsCommand(spec),
    spec.description,
    (cy: Argv) => {
      for (const f of spec.flags) cy.option(f.name, option(f));
      // `kvctl v3 …` has etcdctl v3's persistent flags: the v2-only globals stay out of its help.
      if (parents.length === 0 && spec.name === "v3") {
        const own = new Set(spec.flags.flatMap((f) => [f.name, ...(f.aliases ?? [])]));
        for (const g of globalFlags) if (!own.has(g.name) && g.name !== "help") cy.hide(g.name);
      }
      for (const sub of spec.subcommands ?? []) addCommand(cy, sub, [...parents, spec.name], onRun);
      if (spec.subcommands !== undefined) cy.demandCommand(1, "");
      return cy;
    },
    (argv) => {
      const a = argv as Record<string, unknown> & { _: (string | number)[] };
      const depth = parents.length + 1;
      const args: string[] = [];
      for (const name of positionalNames(spec)) {
        const v = a[name];
        if (Array.isArray(v)) args.push(...v.map(String));
        else if (v !== undefined) args.push(String(v));
      }
      args.push(...a._.slice(depth).map(String));
      const positionals = positionalNames(spec);
      const pick = (flags: readonly FlagSpec[]): Record<string, RawValue> => {
        const out: Record<string, RawValue> = {};
        for (const f of flags) {
          // The global --key shares its name with the <key> argument, which yargs stores
          // in the same slot; this parser only serves help and usage errors, so the flag
          // is read by argv.ts alone.
          if (flags === globalFlags && positionals.includes(f.name)) continue;
          const v = a[f.name];
          if (typeof v === "string" || v === true) out[f.name] = v;
          else if (Array.isArray(v)) out[f.name] = v.map(String);
        }
        return out;
      };
      const raw: RawInvocation = {
        command: parents[0] ?? spec.name,
        globals: pick(globalFlags),
        flags: pick(spec.flags),
        args,
      };
      if (parents.length > 0) raw.subcommand = spec.name;
      onRun(raw);
    },
  );
}

async function build(argv: readonly string[], onRun: Handler): Promise<Argv> {
  const { default: yargs } = await import("yargs");
  let y = yargs([...argv])
    .scriptName("kvctl")
    .usage("kvctl - an etcd-compatible key-value server (kvctl serve) and its client: etcdctl v2's commands, and etcdctl v3's under kvctl v3\n\nUsage: $0 [global options] command [command options] [arguments...]")
    .parserConfiguration(parserConfiguration)
    .env("KV")
    .strict()
    .version(false)
    .help(false)
    .wrap(null)
    .epilog("Every global flag is also read from KV_<FLAG> (e.g. KV_ENDPOINTS, KV_USERNAME, KV_PASSWORD).\nSee kvctl(1).");
  // etcdctl v3 has --cert, --key and --cacert but not etcdctl v2's aliases (--cert-file …),
  // which kvctl v3 refuses: its help must not offer them.
  const v3Names = new Set(v3Command.flags.map((f) => f.name));
  for (const f of globalFlags) {
    const shared = argv[0] === "v3" && v3Names.has(f.name);
    y = y.option(f.name, { ...option(shared ? { ...f, aliases: [] } : f), global: true });
  }
  for (const spec of commands) y = addCommand(y, spec, [], onRun);
  return y;
}

/**
 * Runs `fn` with only the KV_ variables of global flags in process.env (yargs' .env()
 * would otherwise turn a server's KV_DATA_DIR into an unknown-option error), booleans
 * spelled the way yargs reads them.
 */
async function withGlobalEnv<T>(env: NodeJS.ProcessEnv, fn: () => Promise<T>): Promise<T> {
  // yargs' .env("KV") reads every variable that begins with KV, underscore or not
  // (KVCTL_TEST_PORTS would be an unknown --ctl-test-ports): all are set aside.
  const saved = Object.entries(process.env).filter(([k]) => k.startsWith("KV"));
  for (const [k] of saved) delete process.env[k];
  for (const f of globalFlags) {
    const v = env[envName(f.name)];
    if (v === undefined || v === "") continue;
    process.env[envName(f.name)] = f.type === "bool" ? String(parseGoBool(v, envName(f.name))) : v;
  }
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(process.env)) if (k.startsWith("KV")) delete process.env[k];
    for (const [k, v] of saved) process.env[k] = v;
  }
}

/** The Invocation yargs makes of argv (tests compare it with the fast parser's). */
export async function yargsInvocation(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<Invocation> {
  let raw: RawInvocation | undefined;
  await withGlobalEnv(env, async () => {
    const y = await build(argv, (r) => {
      raw = r;
    });
    await y
      .fail((msg, err) => {
        throw err ?? new Error(msg);
      })
      .parseAsync();
  });
  if (raw === undefined) throw new Error("no command");
  // The env was applied by yargs already; pass an env without KV_ globals to avoid doubling.
  const rest = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith("KV_")));
  return buildInvocation(raw, rest);
}

/** Help for the whole program, or for the command path given (`member list`). */
export async function helpText(commandPath: readonly string[]): Promise<string> {
  return withGlobalEnv({}, async () => {
    const y = await build([...commandPath, "--help"], () => {});
    return new Promise<string>((resolve) => {
      void y
        .help(true)
        .exitProcess(false)
        .parseAsync([...commandPath, "--help"], {}, (_err, _argv, output) => resolve(`${output.trimEnd()}\n`));
    });
  });
}
