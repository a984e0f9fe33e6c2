// What every networked command needs, built the way etcdctl's mustNewClient builds it:
// endpoints, Basic credentials (prompting when needed), --debug traces, the cluster
// sync (unless --no-sync) with its exit codes, and the --total-timeout deadline.

import { ClusterClient, type Credentials } from "../client/cluster.ts";
import { createNodeTransport, type TlsFiles } from "../client/transport.ts";
import { ClientError, ClusterError, DeadlineExceededError, formatV2Error, isConnectionError } from "../client/errors.ts";
import { syncEndpoints } from "../client/members.ts";
import { V2Error } from "../api/v2-errors.ts";
import { CliExit, ExitCode } from "./exit-codes.ts";
import type { GlobalOptions, Invocation } from "./invocation.ts";
import { promptPassword, startSpinner } from "./tty.ts";
import type { Io } from "./io.ts";

export type { Io } from "./io.ts";

/** The text after etcdctl's `Error: ` for any failure. */
export function errorText(err: unknown): string {
  if (err instanceof V2Error) return formatV2Error(err);
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * The text etcdctl prints for an error it passes to Println: errorText, except that Go's
 * ClusterError.Error() ends each endpoint's error with a newline (so the line after the
 * last one is empty).
 */
export function goErrorText(err: unknown): string {
  if (!(err instanceof ClusterError)) return errorText(err);
  return "client: etcd cluster is unavailable or misconfigured" + err.errors.map((e, i) => `; error #${i}: ${errorText(e)}\n`).join("");
}

/**
 * etcdctl's handleError: `Error:  <err>` on stderr and the exit code; after a
 * ClusterError, its Detail (each endpoint's error on a line of its own) and an empty line.
 */
export function fail(code: number, err: unknown): CliExit {
  const detail = err instanceof ClusterError ? err.errors.map((e, i) => `error #${i}: ${errorText(e)}\n`).join("") + "\n" : "";
  return new CliExit(code, `Error:  ${goErrorText(err)}\n${detail}`);
}

/**
 * A signal that aborts with DeadlineExceededError after `ms` (etcdctl's
 * contextWithTotalTimeout). 0 or less: no deadline.
 */
export function deadline(ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  if (ms <= 0) return { signal: controller.signal, clear() {} };
  const timer = setTimeout(() => controller.abort(new DeadlineExceededError()), ms);
  timer.unref();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

export async function credentials(g: GlobalOptions): Promise<Credentials | undefined> {
  if (g.username === undefined) return undefined;
  const colon = g.username.indexOf(":");
  // Go's client sends Basic credentials only for a non-empty user name: `-u :pw` is anonymous.
  if (colon === 0) return undefined;
  if (colon !== -1) return { username: g.username.slice(0, colon), password: g.username.slice(colon + 1) };
  const password = g.password ?? (await promptPassword("Password: "));
  return { username: g.username, password };
}

export interface CommandContext {
  inv: Invocation;
  io: Io;
  cluster: ClusterClient;
  /** Runs one request under --total-timeout, with a spinner if it is slow on a terminal. */
  timed<T>(what: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
  close(): void;
}

/** The TLS files checked up front, as etcd's client builds its transport (only when some are given). */
async function checkTls(tls: TlsFiles, exit: (err: unknown) => CliExit): Promise<void> {
  if (tls.caFile === undefined && tls.certFile === undefined && tls.keyFile === undefined) return;
  const { checkTlsFiles } = await import("../client/tls-files.ts");
  try {
    await checkTlsFiles(tls);
  } catch (err) {
    throw exit(err);
  }
}

/**
 * -D / --discovery-srv, first as in etcdctl's newClient: the domain's endpoints replace
 * --endpoints (kept when none is usable). A failed lookup is etcdctl's bare
 * `dns lookup errors: …` line (no `Error:`), exit 1, before any TLS file is read.
 */
async function discover(g: GlobalOptions, io: Io): Promise<void> {
  const { discoverEndpoints } = await import("../client/srv.ts");
  try {
    g.endpoints = await discoverEndpoints(g.discoverySrv ?? "", g.endpoints, {
      insecure: g.insecureDiscovery,
      ...(g.discoverySrvName !== undefined ? { serviceName: g.discoverySrvName } : {}),
      onIgnored: (ep) => io.stderr(`ignoring discovered insecure endpoint ${JSON.stringify(ep)}\n`),
    });
  } catch (err) {
    throw new CliExit(ExitCode.BadArgs, `${errorText(err)}\n`);
  }
}

/** Builds the client; `sync` false is etcdctl's mustNewClientNoSync (cluster-health). */
export async function createContext(inv: Invocation, io: Io, opts: { sync: boolean }): Promise<CommandContext> {
  const g = inv.globals;
  const tls: TlsFiles = {
    ...(g.caFile !== undefined ? { caFile: g.caFile } : {}),
    ...(g.certFile !== undefined ? { certFile: g.certFile } : {}),
    ...(g.keyFile !== undefined ? { keyFile: g.keyFile } : {}),
    insecureSkipVerify: g.insecureSkipVerify,
    insecureTransport: g.insecureTransport,
    ...(g.discoverySrv !== undefined && !g.insecureDiscovery ? { serverName: g.discoverySrv } : {}),
  };
  // etcdctl's cluster-health builds its transport before the client (and its endpoints),
  // and reports a bad TLS file as a server error; every other command after the endpoints,
  // as newClient's bare error line.
  const healthCheck = inv.command === "cluster-health";
  if (healthCheck) await checkTls(tls, (err) => fail(ExitCode.ServerError, err));
  if (g.discoverySrv !== undefined) await discover(g, io);
  if (!healthCheck) await checkTls(tls, (err) => new CliExit(ExitCode.BadArgs, `${errorText(err)}\n`));
  const transport = await createNodeTransport(tls);
  let cluster: ClusterClient;
  try {
    const creds = await credentials(g);
    cluster = new ClusterClient({
      endpoints: g.endpoints,
      transport,
      headerTimeoutMs: g.timeoutMs,
      ...(creds !== undefined ? { credentials: creds } : {}),
      ...(g.debug ? { onRequest: (curl: string) => io.stderr(`cURL Command: ${curl}\n`) } : {}),
    });
  } catch (err) {
    transport.close();
    throw new CliExit(ExitCode.BadArgs, `${goErrorText(err)}\n`);
  }

  const ctx: CommandContext = {
    inv,
    io,
    cluster,
    async timed(what, fn) {
      const d = deadline(g.totalTimeoutMs);
      // Never a spinner around watch output, even for the sync before it.
      const spinner = startSpinner({ text: what, enabled: inv.command !== "watch" && inv.command !== "exec-watch" });
      try {
        return await fn(d.signal);
      } finally {
        spinner.stop();
        d.clear();
      }
    },
    close: () => cluster.close(),
  };

  if (opts.sync && !g.noSync) {
    if (g.debug) io.stderr(`start to sync cluster using endpoints(${cluster.endpoints().join(",")})\n`);
    try {
      await ctx.timed("Synchronising with the cluster", (signal) => syncEndpoints(cluster, { signal }));
    } catch (err) {
      if (err instanceof ClientError && err.code === "NO_ENDPOINTS") {
        ctx.close();
        io.stderr("etcd cluster has no published client endpoints.\n");
        io.stderr(`Try '--no-sync' if you want to access non-published client endpoints(${cluster.endpoints().join(",")}).\n`);
        throw fail(ExitCode.ServerError, err);
      }
      if (isConnectionError(err)) {
        ctx.close();
        throw fail(ExitCode.BadConnection, err);
      }
      // Anything else (an old server without /v2/members, …): carry on unsynchronised.
    }
    if (g.debug) io.stderr(`got endpoints(${cluster.endpoints().join(",")}) after sync\n`);
  }
  if (g.debug) io.stderr(`Cluster-Endpoints: ${cluster.endpoints().join(", ")}\n`);
  return ctx;
}

/** Runs a command body with a context, always closing connections afterwards. */
export async function withContext(
  inv: Invocation,
  io: Io,
  opts: { sync: boolean },
  body: (ctx: CommandContext) => Promise<number>,
): Promise<number> {
  const ctx = await createContext(inv, io, opts);
  try {
    return await body(ctx);
  } finally {
    ctx.close();
  }
}
