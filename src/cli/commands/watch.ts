// watch and exec-watch (etcdctl ctlv2/command/watch_command.go, exec_watch_command.go).
// Both ignore directory events, exit 0 on Ctrl-C, and never show a spinner: their output
// is the point and may be piped at any moment.

import { spawn } from "node:child_process";
import { createV2KeysApi, type V2Result } from "../../client/v2-keys.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import { fail, withContext, type Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";
import { formatWatchEvent } from "../output.ts";

function onInterrupt(): () => void {
  // etcdctl: os.Exit(0) on SIGINT, whatever is in flight.
  const handler = (): void => process.exit(ExitCode.Success);
  process.on("SIGINT", handler);
  return () => process.off("SIGINT", handler);
}

function watchOptions(inv: Invocation): { afterIndex: number; recursive: boolean } {
  const after = inv.flags["after-index"];
  return { afterIndex: typeof after === "number" ? after : 0, recursive: inv.flags["recursive"] === true };
}

async function nextEvent(next: () => Promise<V2Result>): Promise<V2Result> {
  try {
    return await next();
  } catch (err) {
    if (err instanceof CliExit) throw err;
    throw fail(ExitCode.ServerError, err);
  }
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  return inv.command === "exec-watch" ? execWatch(inv, io) : watch(inv, io);
}

async function watch(inv: Invocation, io: Io): Promise<number> {
  const opts = watchOptions(inv);
  const forever = inv.flags["forever"] === true;
  const off = onInterrupt();
  try {
    // The client first, then the key: etcdctl's order (keys.ts, keyCommand).
    return await withContext(inv, io, { sync: true }, async (ctx) => {
      const key = inv.args[0];
      if (key === undefined) throw fail(ExitCode.BadArgs, new Error("key required"));
      const watcher = createV2KeysApi(ctx.cluster).watcher(key, opts);
      for (;;) {
        const event = await nextEvent(() => watcher.next());
        if (event.response.node.dir === true) continue;
        const out = formatWatchEvent(event, { format: inv.globals.output, recursive: opts.recursive });
        if (out.stdout !== "") io.stdout(out.stdout);
        if (out.stderr !== "") io.stderr(out.stderr);
        if (!forever) return ExitCode.Success;
      }
    });
  } finally {
    off();
  }
}

/**
 * `exec-watch [flags] <key> [--] <command> [args...]`. etcdctl 3.4 mixes up key and
 * command when `--` follows the key without any flag; kvctl always takes the key first.
 */
export function splitExecArgs(args: readonly string[]): { key: string; command: string[] } | undefined {
  const [key, ...rest] = args;
  const command = rest[0] === "--" ? rest.slice(1) : rest;
  if (key === undefined || command.length === 0) return undefined;
  return { key, command };
}

/** The child's environment: etcdctl's ETCD_WATCH_* and kvctl's KV_WATCH_* copies. */
export function watchEnv(event: V2Result, base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const node = event.response.node;
  const vars: Record<string, string> = {
    ACTION: event.response.action,
    MODIFIED_INDEX: String(node.modifiedIndex ?? 0),
    KEY: node.key ?? "",
    VALUE: node.value ?? "",
  };
  const env: NodeJS.ProcessEnv = { ...base };
  for (const [name, value] of Object.entries(vars)) {
    env[`ETCD_WATCH_${name}`] = value;
    env[`KV_WATCH_${name}`] = value;
  }
  return env;
}

async function execWatch(inv: Invocation, io: Io): Promise<number> {
  const off = onInterrupt();
  try {
    return await withContext(inv, io, { sync: true }, async (ctx) => {
      const split = splitExecArgs(inv.args);
      if (split === undefined) throw fail(ExitCode.BadArgs, new Error("key and command to exec required"));
      const { key, command } = split;
      const [file, ...argv] = command as [string, ...string[]];
      const watcher = createV2KeysApi(ctx.cluster).watcher(key, watchOptions(inv));
      for (;;) {
        const event = await nextEvent(() => watcher.next());
        if (event.response.node.dir === true) {
          io.stderr(`Ignored dir ${event.response.node.key ?? ""} change\n`);
          continue;
        }
        // Like etcdctl, children run concurrently: the next event is not held up.
        const child = spawn(file, argv, { env: watchEnv(event, process.env), stdio: ["ignore", "inherit", "inherit"] });
        child.on("error", (err: NodeJS.ErrnoException) => {
          io.stderr(execErrorText(file, err));
          process.exit(ExitCode.BadArgs);
        });
      }
    });
  } finally {
    off();
  }
}

/**
 * Go's exec error for a command that could not start, as etcdctl prints it (Fprintf of
 * err.Error(): no newline). A name without a slash is looked up in PATH first.
 */
export function execErrorText(file: string, err: NodeJS.ErrnoException): string {
  if (!file.includes("/")) return err.code === "ENOENT" || err.code === "EACCES" ? `exec: "${file}": executable file not found in $PATH` : err.message;
  if (err.code === "ENOENT") return `fork/exec ${file}: no such file or directory`;
  if (err.code === "EACCES") return `fork/exec ${file}: permission denied`;
  return err.message;
}
