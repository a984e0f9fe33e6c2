// What every v3 command needs, built the way etcdctl v3's mustClientFromCmd builds it:
// the gateway client over --endpoints, --user/--password (prompting when a password is
// missing), --debug request lines, --command-timeout per request, and etcdctl's error
// lines (`Error: <message>`) and exit codes.

import { V3Error } from "../../../api/v3-errors.ts";
import { ClientError, ClusterError, DeadlineExceededError, NetworkError } from "../../../client/errors.ts";
import { createNodeTransport, type TlsFiles } from "../../../client/transport.ts";
import { V3AuthError, V3Client } from "../../../client/v3-gateway.ts";
import { CliExit } from "../../exit-codes.ts";
import { deadline } from "../../context.ts";
import type { Io } from "../../io.ts";
import { promptPassword } from "../../tty.ts";
import type { V3Invocation } from "./argv.ts";
import { UnsupportedFormatError, type PrintOptions, type Printed } from "./printers.ts";

/** etcdctl v3's exit codes (ctlv3/command/error.go). */
export const V3Exit = {
  Success: 0,
  Error: 1,
  BadConnection: 2,
  InvalidInput: 3,
  BadFeature: 4,
  Interrupted: 5,
  IO: 6,
  BadArgs: 128,
} as const;

/** etcdctl's ExitWithError: `Error: <message>` on stderr and the exit code. */
export function v3Fail(code: number, message: string): CliExit {
  return new CliExit(code, `Error: ${message}\n`);
}

/** Prints a command's output; a format the command does not support is etcdctl's exit 4. */
export function printOut(io: Io, text: () => Printed): void {
  try {
    const out = text();
    if (typeof out === "string") io.stdout(out);
    else if (io.stdoutBytes !== undefined) io.stdoutBytes(out);
    else io.stdout(out.toString("latin1"));
  } catch (err) {
    if (err instanceof UnsupportedFormatError) throw v3Fail(err.exitCode, err.message);
    throw err;
  }
}

/**
 * The message etcdctl shows for a failed request. Unreachable endpoints: clientv3 keeps
 * retrying until the command deadline, so etcdctl says "context deadline exceeded"; kvctl
 * fails as soon as every endpoint refused, with the same words.
 */
export function v3ErrorText(err: unknown): string {
  if (err instanceof V3AuthError) return err.message;
  if (err instanceof V3Error) return err.message;
  if (err instanceof DeadlineExceededError) return "context deadline exceeded";
  if (err instanceof ClusterError && err.errors.every((e) => e instanceof NetworkError || e instanceof ClientError)) {
    return "context deadline exceeded";
  }
  if (err instanceof NetworkError) return "context deadline exceeded";
  return err instanceof Error ? err.message : String(err);
}

export interface V3Context {
  inv: V3Invocation;
  io: Io;
  client: V3Client;
  print: PrintOptions;
  /** Runs one request under --command-timeout; failures exit `code` with `wrap(message)`. */
  request<T>(fn: (signal: AbortSignal) => Promise<T>, opts?: { code?: number; wrap?: (m: string) => string }): Promise<T>;
  /** Debug lines for an ended cluster error (each endpoint's failure). */
  close(): void;
}

/** --user/--password as etcdctl reads them: `name:password`, or a prompt. */
async function credentials(inv: V3Invocation): Promise<{ username: string; password: string } | undefined> {
  const { user, password } = inv.globals;
  if (user === undefined) return undefined;
  if (password !== undefined) return { username: user, password };
  const colon = user.indexOf(":");
  if (colon !== -1) return { username: user.slice(0, colon), password: user.slice(colon + 1) };
  return { username: user, password: await promptPassword("Password: ") };
}

/** The TLS files and switches of the global flags (--cacert, --cert, --key, --insecure-*), for every connection the command opens. */
export function tlsOf(g: V3Invocation["globals"]): TlsFiles {
  return {
    ...(g.cacert !== undefined ? { caFile: g.cacert } : {}),
    ...(g.cert !== undefined ? { certFile: g.cert } : {}),
    ...(g.key !== undefined ? { keyFile: g.key } : {}),
    insecureSkipVerify: g.insecureSkipTlsVerify,
    insecureTransport: g.insecureTransport,
    // etcdctl v3's secureCfgFromCmd: with --insecure-discovery=false, certificates must be
    // valid for the --discovery-srv domain.
    ...(g.discoverySrv !== undefined && !g.insecureDiscovery ? { serverName: g.discoverySrv } : {}),
  };
}

export async function createV3Context(inv: V3Invocation, io: Io): Promise<V3Context> {
  const g = inv.globals;
  const tls = tlsOf(g);
  const creds = await credentials(inv);
  const transport = await createNodeTransport(tls);
  let client: V3Client;
  try {
    client = new V3Client({
      endpoints: g.endpoints,
      transport,
      dialTimeoutMs: g.dialTimeoutMs,
      tls,
      ...(creds !== undefined ? { credentials: creds } : {}),
      ...(g.debug ? { onRequest: (line: string) => io.stderr(`${line}\n`) } : {}),
    });
  } catch (err) {
    transport.close();
    throw v3Fail(V3Exit.BadArgs, v3ErrorText(err));
  }
  return {
    inv,
    io,
    client,
    print: { format: g.writeOut, hex: g.hex },
    async request(fn, opts = {}) {
      const d = deadline(g.commandTimeoutMs);
      try {
        return await fn(d.signal);
      } catch (err) {
        if (err instanceof CliExit) throw err;
        if (g.debug && err instanceof ClusterError) for (const e of err.errors) io.stderr(`${e.message}\n`);
        // A failed authentication is a failed connection for etcdctl (clientv3.New).
        const code = err instanceof V3AuthError ? V3Exit.BadConnection : (opts.code ?? V3Exit.Error);
        const text = v3ErrorText(err);
        throw v3Fail(code, err instanceof V3AuthError || opts.wrap === undefined ? text : opts.wrap(text));
      } finally {
        d.clear();
      }
    },
    close: () => client.close(),
  };
}

/** Runs a command body with a context, always closing connections afterwards. */
export async function withV3Context(inv: V3Invocation, io: Io, body: (ctx: V3Context) => Promise<number>): Promise<number> {
  const ctx = await createV3Context(inv, io);
  try {
    return await body(ctx);
  } finally {
    ctx.close();
  }
}
