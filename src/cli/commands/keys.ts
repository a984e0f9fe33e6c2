// get, set, mk, mkdir, setdir, update, updatedir, rm, rmdir: one request each, printed
// like etcdctl v2 (ctlv2/command/*_command.go), with its argument errors and exit codes.

import { createV2KeysApi, type V2KeysApi, type V2Result } from "../../client/v2-keys.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import { fail, withContext, type CommandContext, type Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";
import { formatResponse } from "../output.ts";
import { readAllStdin } from "../tty.ts";

const num = (inv: Invocation, name: string): number => {
  const v = inv.flags[name];
  return typeof v === "number" ? v : 0;
};
const bool = (inv: Invocation, name: string): boolean => inv.flags[name] === true;
const str = (inv: Invocation, name: string): string => {
  const v = inv.flags[name];
  return typeof v === "string" ? v : "";
};

/** Key from args[0]: etcdctl's "key required" (exit 1) when missing. */
export function requireKey(inv: Invocation): string {
  const key = inv.args[0];
  if (key === undefined) throw fail(ExitCode.BadArgs, new Error("key required"));
  return key;
}

/** etcdctl's argOrStdin: args[1], else all of stdin, else "value required". */
async function valueArg(inv: Invocation): Promise<string> {
  const v = inv.args[1];
  if (v !== undefined) return v;
  const fromStdin = await readAllStdin().catch(() => "");
  if (fromStdin === "") throw fail(ExitCode.BadArgs, new Error("value required"));
  return fromStdin;
}

function print(io: Io, result: V2Result, format: string): void {
  const out = formatResponse(result, format);
  if (out.stdout !== "") io.stdout(out.stdout);
  if (out.stderr !== "") io.stderr(out.stderr);
}

type Body = (ctx: CommandContext, keys: V2KeysApi, key: string) => Promise<number>;

/**
 * Connects (and syncs) before checking the key, as etcdctl's mustNewKeyAPI runs first: with
 * no endpoint answering, a missing key is a connection error, and --debug prints the sync
 * either way. Reads a value from stdin only after a password prompt may have read its line.
 */
async function keyCommand(inv: Invocation, io: Io, needsValue: boolean, body: (value: string) => Body): Promise<number> {
  return withContext(inv, io, { sync: true }, async (ctx) => {
    const key = requireKey(inv);
    const value = needsValue ? await valueArg(inv) : "";
    return body(value)(ctx, createV2KeysApi(ctx.cluster), key);
  });
}

/** Runs one request under the total timeout; a failure is etcdctl's ExitServerError. */
async function request(ctx: CommandContext, what: string, fn: (signal: AbortSignal) => Promise<V2Result>): Promise<V2Result> {
  try {
    return await ctx.timed(what, fn);
  } catch (err) {
    if (err instanceof CliExit) throw err;
    throw fail(ExitCode.ServerError, err);
  }
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  const output = inv.globals.output;
  const ttl = num(inv, "ttl");
  switch (inv.command) {
    case "get":
      return keyCommand(inv, io, false, () => async (ctx, keys, key) => {
        const r = await request(ctx, `Reading ${key}`, (signal) =>
          keys.get(key, { sorted: bool(inv, "sort"), quorum: bool(inv, "quorum"), signal }),
        );
        if (r.response.node.dir === true) {
          io.stderr(`${r.response.node.key ?? ""}: is a directory\n`);
          return ExitCode.BadArgs;
        }
        print(io, r, output);
        return ExitCode.Success;
      });
    case "set":
      return keyCommand(inv, io, true, (value) => async (ctx, keys, key) => {
        const r = await request(ctx, `Writing ${key}`, (signal) =>
          keys.set(key, value, {
            ttl,
            prevIndex: num(inv, "swap-with-index"),
            prevValue: str(inv, "swap-with-value"),
            signal,
          }),
        );
        print(io, r, output);
        return ExitCode.Success;
      });
    case "mk":
      return keyCommand(inv, io, true, (value) => async (ctx, keys, key) => {
        // Without --in-order: create only if absent (prevExist=false) so mk never overwrites.
        const r = await request(ctx, `Creating ${key}`, (signal) =>
          bool(inv, "in-order")
            ? keys.createInOrder(key, value, { ttl, signal })
            : keys.set(key, value, { ttl, prevExist: "false", signal }),
        );
        print(io, r, output);
        return ExitCode.Success;
      });
    case "mkdir":
    case "setdir":
    case "updatedir": {
      const prevExist = inv.command === "mkdir" ? "false" : inv.command === "updatedir" ? "true" : "";
      return keyCommand(inv, io, false, () => async (ctx, keys, key) => {
        const r = await request(ctx, `Writing ${key}`, (signal) =>
          keys.set(key, "", { ttl, dir: true, prevExist, signal }),
        );
        // Directory commands are silent in simple output.
        if (output !== "simple") print(io, r, output);
        return ExitCode.Success;
      });
    }
    case "update":
      return keyCommand(inv, io, true, (value) => async (ctx, keys, key) => {
        const r = await request(ctx, `Updating ${key}`, (signal) =>
          keys.set(key, value, { ttl, prevExist: "true", signal }),
        );
        print(io, r, output);
        return ExitCode.Success;
      });
    case "rm":
    case "rmdir": {
      const rmdir = inv.command === "rmdir";
      return keyCommand(inv, io, false, () => async (ctx, keys, key) => {
        const r = await request(ctx, `Removing ${key}`, (signal) =>
          keys.delete(
            key,
            rmdir
              ? { dir: true, signal }
              : {
                  dir: bool(inv, "dir"),
                  recursive: bool(inv, "recursive"),
                  prevValue: str(inv, "with-value"),
                  prevIndex: num(inv, "with-index"),
                  signal,
                },
          ),
        );
        if (r.response.node.dir !== true || output !== "simple") print(io, r, output);
        return ExitCode.Success;
      });
    }
    default:
      throw new CliExit(ExitCode.BadArgs, `kvctl: ${inv.command} is not a key command\n`);
  }
}
