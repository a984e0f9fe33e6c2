// What every phase needs: the options, the run folder under bench/tmp/, the two server
// specs, a logger (stderr: stdout carries only the table), and fresh-server helpers.
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { BenchOptions } from "./options.ts";
import { ServerProcess, type ServerKind, type ServerSpec } from "./server.ts";

/** Port plan inside the bench's range 24600-24699 (one member per kind; both may run at once). */
export const PORTS: Readonly<Record<ServerKind, { client: number; peer: number }>> = {
  etcd: { client: 24600, peer: 24601 },
  kvctl: { client: 24610, peer: 24611 },
};

export interface BenchContext {
  readonly options: BenchOptions;
  readonly root: string;
  readonly runDir: string;
  readonly specs: ReadonlyMap<ServerKind, ServerSpec>;
  readonly log: (msg: string) => void;
  /** Failures collected for the report (a failed row never aborts the run). */
  readonly errors: string[];
}

let dirSeq = 0;

export interface FreshServerOptions {
  readonly phase: string;
  /** Health deadline; long for restarts with many keys. */
  readonly deadlineMs?: number;
  /** Reuse this data dir instead of a fresh one (restarts). */
  readonly dataDir?: string;
}

export function specOf(ctx: BenchContext, kind: ServerKind): ServerSpec {
  const s = ctx.specs.get(kind);
  if (s === undefined) throw new Error(`No server spec for ${kind}`);
  return s;
}

/** Start `kind` on a fresh data dir under the run folder (or on options.dataDir). */
export function startServer(ctx: BenchContext, kind: ServerKind, o: FreshServerOptions): Promise<ServerProcess> {
  const dataDir = o.dataDir ?? join(ctx.runDir, "data", `${o.phase}-${kind}-${++dirSeq}`);
  return ServerProcess.start({
    spec: specOf(ctx, kind),
    dataDir,
    logFile: join(ctx.runDir, "logs", `${o.phase}-${kind}.log`),
    deadlineMs: o.deadlineMs ?? 60_000,
  });
}

/** Stop the server and delete its data dir (the bench keeps no data between rows). */
export async function stopAndClean(s: ServerProcess): Promise<void> {
  await s.stop();
  rmSync(s.dataDir, { recursive: true, force: true });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Order of the servers for the i-th row: alternating (ABBA...), so neither always goes first. */
export function orderFor<T>(kinds: readonly T[], i: number): T[] {
  return i % 2 === 0 ? [...kinds] : [...kinds].reverse();
}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
