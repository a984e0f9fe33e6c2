// kvctl migrate --from <etcd URLs>: copies a running etcd's v2 and v3 key spaces into the
// kvctl members of --endpoints (client/migrate.ts does the work), prints a summary, and
// with --follow applies etcd's later changes until interrupted, for a cut-over without
// lost writes. Exit codes: 2 when a side cannot be reached, 4 when a request fails or a
// watch fell out of etcd's history (run it again), 0 after an interrupt of --follow.

import { ClusterClient, type Credentials } from "../../client/cluster.ts";
import { ClusterError, isConnectionError } from "../../client/errors.ts";
import {
  HistoryLostError,
  LeaseMap,
  copyV2,
  copyV3,
  followV2,
  followV3,
  keepAliveOnce,
  type FollowCounts,
  type MigrateSide,
  type V2CopySummary,
  type V3CopySummary,
} from "../../client/migrate.ts";
import { createNodeTransport, type TlsFiles } from "../../client/transport.ts";
import { V3Client } from "../../client/v3-gateway.ts";
import { errorText, type Io } from "../context.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import type { Invocation } from "../invocation.ts";
import { promptPassword } from "../tty.ts";

/** How often the leases copied are checked against their source while following. */
const LEASE_TEND_MS = 1000;

interface Progress {
  update(text: string): void;
  stop(): void;
}

/** An ora spinner on stderr when both streams are terminals; nothing otherwise. */
async function progress(io: Io): Promise<Progress> {
  const tty = process.stdout.isTTY === true && process.stderr.isTTY === true && (process.stderr.columns ?? 0) > 0;
  if (!tty) return { update() {}, stop() {} };
  const { default: ora } = await import("ora");
  const spinner = ora({ text: "connecting", stream: process.stderr, discardStdin: false }).start();
  void io;
  return {
    update(text) {
      spinner.text = text;
    },
    stop() {
      spinner.stop();
    },
  };
}

async function userOf(spec: string | undefined, password: string | undefined, prompt: string): Promise<Credentials | undefined> {
  if (spec === undefined || spec === "") return undefined;
  const colon = spec.indexOf(":");
  if (colon !== -1) return { username: spec.slice(0, colon), password: spec.slice(colon + 1) };
  return { username: spec, password: password ?? (await promptPassword(prompt)) };
}

async function side(endpoints: string[], tls: TlsFiles, creds: Credentials | undefined, timeoutMs: number): Promise<MigrateSide> {
  const transport = await createNodeTransport(tls);
  const auth = creds === undefined ? {} : { credentials: creds };
  return {
    cluster: new ClusterClient({ endpoints, transport, headerTimeoutMs: timeoutMs, ...auth }),
    v3: new V3Client({ endpoints, transport, dialTimeoutMs: timeoutMs, tls, ...auth }),
  };
}

function str(inv: Invocation, name: string): string | undefined {
  const v = inv.flags[name];
  return typeof v === "string" && v !== "" ? v : undefined;
}

export function formatV2Summary(s: V2CopySummary): string {
  if (!s.enabled) return "v2: the source does not serve the v2 API (etcd --enable-v2=false): nothing copied\n";
  const dirs = `${s.dirs} ${s.dirs === 1 ? "directory" : "directories"} (${s.emptyDirs} empty)`;
  return `v2: ${dirs}, ${s.keys} ${s.keys === 1 ? "key" : "keys"}; ${s.hidden} hidden, ${s.withTtl} with a TTL; copied at index ${s.index}\n`;
}

export function formatV3Summary(s: V3CopySummary): string {
  const expired = s.expired > 0 ? `, ${s.expired} left out (lease expired)` : "";
  return `v3: ${s.keys} ${s.keys === 1 ? "key" : "keys"} (${s.leasedKeys} on ${s.leases} ${s.leases === 1 ? "lease" : "leases"}${expired}); copied at revision ${s.revision}\n`;
}

function failure(err: unknown, where: string): CliExit {
  if (err instanceof CliExit) return err;
  if (err instanceof HistoryLostError) return new CliExit(ExitCode.ServerError, `Error:  ${err.message}\n`);
  if (isConnectionError(err) || err instanceof ClusterError) return new CliExit(ExitCode.BadConnection, `Error:  ${where}: ${errorText(err)}\n`);
  return new CliExit(ExitCode.ServerError, `Error:  ${where}: ${errorText(err)}\n`);
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  const from = (str(inv, "from") ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (from.length === 0) throw new CliExit(ExitCode.BadArgs, "Error:  --from is required: the client URLs of the etcd to copy from\n");
  const prefix = str(inv, "prefix") ?? "";
  const follow = inv.flags["follow"] === true;
  const g = inv.globals;

  const fromTls: TlsFiles = {
    ...(str(inv, "from-cacert") !== undefined ? { caFile: str(inv, "from-cacert")! } : {}),
    ...(str(inv, "from-cert") !== undefined ? { certFile: str(inv, "from-cert")! } : {}),
    ...(str(inv, "from-key") !== undefined ? { keyFile: str(inv, "from-key")! } : {}),
    insecureSkipVerify: inv.flags["from-insecure-skip-tls-verify"] === true,
  };
  const toTls: TlsFiles = {
    ...(g.caFile !== undefined ? { caFile: g.caFile } : {}),
    ...(g.certFile !== undefined ? { certFile: g.certFile } : {}),
    ...(g.keyFile !== undefined ? { keyFile: g.keyFile } : {}),
    insecureSkipVerify: g.insecureSkipVerify,
    insecureTransport: g.insecureTransport,
  };
  const fromCreds = await userOf(str(inv, "from-user"), undefined, "etcd password: ");
  const toCreds = await userOf(g.username, g.password, "Password: ");
  let src: MigrateSide;
  let dst: MigrateSide;
  try {
    src = await side(from, fromTls, fromCreds, g.timeoutMs);
    dst = await side(g.endpoints, toTls, toCreds, g.timeoutMs);
  } catch (err) {
    throw new CliExit(ExitCode.BadArgs, `Error:  ${errorText(err)}\n`);
  }
  const srcName = `etcd at ${from.join(",")}`;
  const dstName = `kvctl at ${g.endpoints.join(",")}`;
  const p = await progress(io);
  const interrupted = new AbortController();
  try {
    // Both sides answer (TLS included; /version needs no credentials) before anything is written.
    for (const [s, name] of [[src, srcName], [dst, dstName]] as const) {
      await s.cluster.do({ method: "GET", path: (base) => `${base}/version` }).catch((err: unknown) => {
        throw failure(err, `cannot reach ${name}`);
      });
    }
    const leases = new LeaseMap(src.v3, dst.v3);
    const v2 = await copyV2(src, dst, { prefix, progress: (t) => p.update(t) }).catch((err: unknown) => {
      throw failure(err, "copying the v2 key space");
    });
    p.update("v3: copying keys");
    const v3 = await copyV3(src, dst, leases, { prefix, progress: (t) => p.update(t) }).catch((err: unknown) => {
      throw failure(err, "copying the v3 key space");
    });
    p.stop();
    io.stdout(formatV2Summary(v2) + formatV3Summary(v3));
    if (!follow) return ExitCode.Success;

    const counts: FollowCounts = { v2Events: 0, v2Index: v2.index, v3Events: 0, v3Revision: v3.revision };
    const onSignal = (): void => interrupted.abort();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    const what = v2.enabled ? `v2 after index ${v2.index}, v3 after revision ${v3.revision}` : `v3 after revision ${v3.revision}`;
    io.stderr(`following etcd's changes (${what}); interrupt (Ctrl+C) to stop\n`);
    const followP = await progress(io);
    const ticker = setInterval(() => {
      followP.update(`following: ${counts.v2Events} v2 events (index ${counts.v2Index}), ${counts.v3Events} v3 events (revision ${counts.v3Revision})`);
    }, 200);
    // A first failure stops the other follower too.
    const stopAll = new AbortController();
    const signal = AbortSignal.any([interrupted.signal, stopAll.signal]);
    const tend = setInterval(() => {
      leases.tend(keepAliveOnce, signal).catch(() => undefined);
    }, LEASE_TEND_MS);
    try {
      const jobs: Array<Promise<void>> = [followV3(src, dst, leases, { prefix, revision: v3.revision, signal, counts })];
      if (v2.enabled) jobs.unshift(followV2(src, dst, { prefix, index: v2.index, signal, counts }));
      await Promise.all(
        jobs.map((j) =>
          j.catch((err: unknown) => {
            stopAll.abort();
            throw err;
          }),
        ),
      );
    } catch (err) {
      throw failure(err, `following ${srcName}`);
    } finally {
      clearInterval(ticker);
      clearInterval(tend);
      followP.stop();
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      io.stdout(`followed: ${counts.v2Events} v2 events (to index ${counts.v2Index}), ${counts.v3Events} v3 events (to revision ${counts.v3Revision})\n`);
    }
    return ExitCode.Success;
  } finally {
    p.stop();
    src.cluster.close();
    dst.cluster.close();
  }
}
