// auth enable|disable|status, and the plumbing the user and role commands share, with
// etcdctl v2's output and exits (ctlv2/command/auth_commands.go). `auth status` is
// kvctl's own (etcdctl v2 has none): `Authentication Status: true|false` from
// GET /v2/auth/enable.
//
// etcdctl's auth commands print a failed request's bare error text (the server's
// `message`, or the client's error) on stderr and exit 1; argument errors too, before
// connecting. A failed cluster sync keeps the exits of every other command (2 or 4).

import { getAuthEnabled, setAuthEnabled } from "../../client/v2-auth.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import { errorText, goErrorText, withContext, type CommandContext, type Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";
import { promptPassword } from "../tty.ts";

/** A line on stderr and exit 1: etcdctl's `fmt.Fprintln(os.Stderr, …); os.Exit(1)`. */
export function exit1(text: string): CliExit {
  return new CliExit(ExitCode.BadArgs, `${text}\n`);
}

/** A failure as etcdctl's auth commands print it: the error text alone. */
export function bare(err: unknown): CliExit {
  return err instanceof CliExit ? err : exit1(goErrorText(err));
}

export function requireNoArgs(inv: Invocation): void {
  if (inv.args.length !== 0) throw exit1("No arguments accepted");
}

/**
 * Connects (cluster sync, -u password prompt) like etcdctl's mustNewAuth*API, which
 * prints `Cluster-Endpoints:` a second time under --debug, then runs `body`.
 */
export function withAuthApi(inv: Invocation, io: Io, body: (ctx: CommandContext) => Promise<number>): Promise<number> {
  return withContext(inv, io, { sync: true }, async (ctx) => {
    if (inv.globals.debug) io.stderr(`Cluster-Endpoints: ${ctx.cluster.endpoints().join(", ")}\n`);
    return body(ctx);
  });
}

/**
 * Runs the requests of one command under one --total-timeout deadline (etcdctl shares
 * one context between them), with a spinner on a terminal if they are slow.
 */
export async function requests<T>(ctx: CommandContext, what: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  try {
    return await ctx.timed(what, fn);
  } catch (err) {
    throw bare(err);
  }
}

/**
 * A new password: asked on the terminal without echo (prompt on stderr), or the first
 * line of stdin when stdin is not a terminal (etcdctl's speakeasy reads that line too).
 * Asked once, as etcdctl does: no confirmation.
 */
export async function askNewPassword(): Promise<string> {
  try {
    return await promptPassword("New password: ");
  } catch (err) {
    throw exit1(`Error reading password: ${errorText(err)}`);
  }
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  const sub = inv.subcommand;
  if (sub !== "enable" && sub !== "disable" && sub !== "status") {
    throw new CliExit(ExitCode.BadAuth, `No help topic for '${sub ?? ""}'\n`);
  }
  requireNoArgs(inv);
  return withAuthApi(inv, io, async (ctx) => {
    if (sub === "status") {
      const enabled = await requests(ctx, "Reading the auth status", (signal) => getAuthEnabled(ctx.cluster, { signal }));
      io.stdout(`Authentication Status: ${enabled}\n`);
      return ExitCode.Success;
    }
    const enable = sub === "enable";
    await requests(ctx, enable ? "Enabling auth" : "Disabling auth", (signal) =>
      setAuthEnabled(ctx.cluster, enable, { signal }),
    );
    io.stdout(enable ? "Authentication Enabled\n" : "Authentication Disabled\n");
    return ExitCode.Success;
  });
}
