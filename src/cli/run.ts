// Dispatch: parse argv (fast parser), hand help to yargs, load the one command module the
// invocation names, and turn every failure into etcdctl's stderr text and exit code.

import { parseArgv } from "./argv.ts";
import { findCommand, globalFlags, v3Flags } from "./spec.ts";
import { buildInvocation, type Invocation } from "./invocation.ts";
import { CliExit, ExitCode, UsageError } from "./exit-codes.ts";
import type { Io } from "./io.ts";

type CommandModule = { run(inv: Invocation, io: Io): Promise<number> };

/** Which module implements each command; imported on demand only. */
const loaders: Readonly<Record<string, () => Promise<CommandModule>>> = {
  backup: () => import("./commands/backup.ts"),
  get: () => import("./commands/keys.ts"),
  set: () => import("./commands/keys.ts"),
  mk: () => import("./commands/keys.ts"),
  mkdir: () => import("./commands/keys.ts"),
  setdir: () => import("./commands/keys.ts"),
  update: () => import("./commands/keys.ts"),
  updatedir: () => import("./commands/keys.ts"),
  rm: () => import("./commands/keys.ts"),
  rmdir: () => import("./commands/keys.ts"),
  ls: () => import("./commands/ls.ts"),
  watch: () => import("./commands/watch.ts"),
  "exec-watch": () => import("./commands/watch.ts"),
  "cluster-health": () => import("./commands/cluster.ts"),
  member: () => import("./commands/cluster.ts"),
  stats: () => import("./commands/stats.ts"),
  version: () => import("./commands/version.ts"),
  completion: () => import("./commands/completion.ts"),
  user: () => import("./commands/user.ts"),
  role: () => import("./commands/role.ts"),
  auth: () => import("./commands/auth.ts"),
  endpoint: () => import("./commands/endpoint.ts"),
  migrate: () => import("./commands/migrate.ts"),
};

/** Runs kvctl with argv (no node/script), returns the exit code. */
export async function runCli(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  // ---- v3: `kvctl [v3 flags] v3 …` has a grammar of its own (cobra/pflag) ----
  const v3At = v3Position(argv);
  if (v3At !== -1) {
    const { runV3 } = await import("./commands/v3/run.ts");
    return runV3([...argv.slice(0, v3At), ...argv.slice(v3At + 1)], io, env);
  }
  // ---- end v3 ----
  try {
    const outcome = parseArgv(argv);
    if (outcome.kind === "delegate") {
      if (outcome.reason === "unknown-command") {
        // urfave/cli's wording and exit code for an unknown command.
        io.stderr(`No help topic for '${outcome.name ?? ""}'\n`);
        return ExitCode.BadAuth;
      }
      const path = helpPath(argv);
      if (typeof path === "string") {
        // urfave/cli's `help <topic>` for a topic it does not know.
        io.stderr(`No help topic for '${path}'\n`);
        return ExitCode.BadAuth;
      }
      const { helpText } = await import("./yargs-app.ts");
      io.stdout(await helpText(path));
      return ExitCode.Success;
    }
    const inv = buildInvocation(outcome.raw, env);
    const load = outcome.raw.globals["version"] === true ? loaders["version"] : loaders[inv.command];
    if (load === undefined) throw new CliExit(ExitCode.BadAuth, `No help topic for '${inv.command}'\n`);
    const mod = await load();
    return await mod.run(inv, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`Incorrect Usage: ${err.message}\n`);
      return ExitCode.BadArgs;
    }
    if (err instanceof CliExit) {
      io.stderr(err.stderr);
      return err.exitCode;
    }
    io.stderr(`Error:  ${err instanceof Error ? err.message : String(err)}\n`);
    return ExitCode.BadArgs;
  }
}

/**
 * The command words of argv (`member list`, `user grant`), for command-specific help; a
 * string when argv asks `help` about a topic that does not exist.
 */
function helpPath(argv: readonly string[]): string[] | string {
  // A global flag's value (`--endpoints http://x member`) is not a command word.
  const valued = new Set(globalFlags.filter((f) => f.type !== "bool").flatMap((f) => [f.name, ...(f.aliases ?? [])]));
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? "";
    if (!a.startsWith("-")) words.push(a);
    else if (!a.includes("=") && valued.has(a.replace(/^--?/, ""))) i++;
  }
  const isHelp = (w: string | undefined): boolean => w === "help" || w === "h";
  if (isHelp(words[0])) {
    // `help <command> [<subcommand>]`: an unknown command is an error, an unknown subcommand
    // shows the group (urfave/cli).
    const cmd = words[1];
    if (cmd === undefined) return [];
    const spec = findCommand(cmd);
    if (spec === undefined) return cmd;
    const sub = words[2];
    return spec.subcommands?.some((s) => s.name === sub) === true && sub !== undefined ? [cmd, sub] : [cmd];
  }
  const spec = findCommand(words[0] ?? "");
  if (spec?.subcommands === undefined) return words.slice(0, 1);
  // `<group> help [<subcommand>]`: the group's own help command, strict about its topic.
  if (isHelp(words[1])) {
    const sub = words[2];
    if (sub === undefined) return [spec.name];
    return spec.subcommands.some((s) => s.name === sub) ? [spec.name, sub] : sub;
  }
  return words.slice(0, 2);
}

// ---- v3 ----
/**
 * Where the command word `v3` is: the first token that is neither a flag nor a value of a
 * flag that takes one (v2 or v3 global flags); -1 when the command is not v3.
 */
export function v3Position(argv: readonly string[]): number {
  const valued = new Set<string>();
  for (const f of [...globalFlags, ...v3Flags]) {
    if (f.type !== "bool") for (const n of [f.name, ...(f.aliases ?? [])]) valued.add(n);
  }
  for (let i = 0; i < argv.length; i++) {
    const t = argv[i] ?? "";
    if (t === "--") return -1;
    if (t.startsWith("-") && t.length > 1) {
      if (!t.includes("=") && valued.has(t.replace(/^--?/, ""))) i++;
      continue;
    }
    return t === "v3" ? i : -1;
  }
  return -1;
}
// ---- end v3 ----
