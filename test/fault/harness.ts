// One fault run: start N members, drive clients (v2, v3 or both APIs, see api.ts) while the nemesis injects faults (timing
// each leader-kill's election), heal, read every key, check that all members converged to
// the same state hash, restart all members, check convergence again, then check the
// history for linearizability per key and that no acknowledged write was lost. Every phase has a deadline; the cluster is
// destroyed (processes killed by PID, data removed) whatever happens.

import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { checkOperations, Verdict, type CheckResult } from "../linearizability/checker.ts";
import { Anomaly, injectAnomaly, mulberry32 } from "../linearizability/history-gen.ts";
import { registerModel, type RegisterOperation } from "../linearizability/register-model.ts";
import { Cluster, ClusterNotReadyError, sleep, type ServerKind } from "./cluster.ts";
import { checkConvergence, ConvergenceVerdict, describeConvergence, type ConvergenceResult } from "./convergence.ts";
import { summarizeElections, type ElectionSummary, type ElectionTiming } from "./election.ts";
import { memberLogTails } from "./log-tail.ts";
import { describeStall, readDiskStalls, stallsDuring, withoutPauses, type DiskStall } from "./disk-stalls.ts";
import { findLostWrites, type LostWrite } from "./durability.ts";
import { FaultKind, healAll, runNemesis, type FaultRecord } from "./nemesis.ts";
import type { ProxyStats } from "./proxy.ts";
import type { LoopDelay } from "./proxy-process.ts";
import { Api, ApiChoice, runApiOp, workloadKeys, type WorkloadKey } from "./api.ts";
import { closeClientConnections, Outcome } from "./v2-client.ts";
import { closeGrpcSessions, probeGrpc } from "./grpc-client.ts";
import { ContinuityWatcher, type WatchContinuity } from "./grpc-watch.ts";
import { probeV3 } from "./v3-client.ts";
import { emptyCounts, runWorkload, type WorkloadCounts } from "./workload.ts";
import { clientTimeTable, type BucketRow, type OpSample } from "./client-time.ts";

export const Injection = { staleRead: "stale-read", lostWrite: "lost-write" } as const;
export type Injection = (typeof Injection)[keyof typeof Injection];

export interface FaultTestOptions {
  members: number;
  durationMs: number;
  faults: readonly FaultKind[];
  seed: number;
  server: ServerKind;
  /** First of the 25 ports the run uses (see cluster.ts). */
  portBase: number;
  clients: number;
  /** Keys per API (with api "both": this many v2 keys and as many v3 keys). */
  keys: number;
  /** Which client API the workload drives (default v2). */
  api?: ApiChoice;
  opTimeoutMs: number;
  /** Budget of the checker per key. */
  checkTimeoutMs: number;
  /** --snapshot-count for every member (default: the server's). */
  snapshotCount?: number;
  /** kvctl: --experimental-snapshot-catchup-entries for every member (default: the server's 5000). */
  catchupEntries?: number;
  /** --election-timeout in ms (default 500; heartbeat a tenth). */
  electionTimeoutMs?: number;
  /** Bound on the wait for all members to reach one applied index (default 10 s). */
  convergenceTimeoutMs?: number;
  /** Corrupt the recorded history on purpose, to prove the checks catch it. */
  inject?: Injection;
  /** When the run is not ok: log this many story lines of each member's log (log-tail.ts) before the data root goes. */
  logTailOnFailure?: number;
  /** Keep the data root and member logs. */
  keep?: boolean;
  log: (line: string) => void;
  signal?: AbortSignal;
  /** Receives the cluster as soon as it exists (so a caller's SIGINT handler can kill it). */
  onCluster?: (cluster: Cluster) => void;
}

/** Thrown before the workload when a member does not serve an API the run drives. */
export class ApiNotServedError extends Error {
  readonly code = "API_NOT_SERVED";
}

export const RunVerdict = { ok: "ok", violation: "violation", unknown: "unknown", notRecovered: "not-recovered" } as const;
export type RunVerdict = (typeof RunVerdict)[keyof typeof RunVerdict];

export interface FaultReport {
  verdict: RunVerdict;
  seed: number;
  api: ApiChoice;
  elapsedMs: number;
  workloadMs: number;
  ops: number;
  counts: WorkloadCounts;
  faults: FaultRecord[];
  proxies: ProxyStats[];
  /**
   * Event-loop delay during the workload of the proxies' process and of this one (which runs
   * the clients and the nemesis): a byte between members can wait up to the former per hop.
   */
  loopDelay?: { proxies: LoopDelay | undefined; harness: LoopDelay };
  /** Snapshots the members installed from a leader during the run (kvctl logs each). */
  snapshotsInstalled: number;
  check: CheckResult | undefined;
  lost: LostWrite[];
  /** Values read after all members restarted. */
  finals: Record<string, string | null>;
  /** After healing, and after the full restart. */
  convergence: ConvergenceResult[];
  /** Leader-kill elections, against the limit 3 × election timeout. */
  elections: ElectionSummary | undefined;
  /** fdatasyncs over 1 s the members logged during the workload (disk-stalls.ts). */
  diskStalls: DiskStall[];
  electionTimeoutMs: number;
  problems: string[];
  injected?: string;
  /** gRPC runs: the live watcher's events against a replay from revision 1. */
  watch?: WatchContinuity;
  /** Where the clients' time went, per fault / member / leader state (client-time.ts). */
  clientTime?: BucketRow[];
  /** CPU seconds all member processes used during the workload (Linux /proc; sampled every 250 ms). */
  memberCpuSeconds?: number | undefined;
}

/**
 * Samples the members' CPU time (utime + stime from /proc/<pid>/stat, Linux) every `everyMs`
 * until the signal; a killed process counts with its last sample. undefined without /proc.
 */
async function watchMemberCpu(cluster: Cluster, everyMs: number, signal: AbortSignal): Promise<number | undefined> {
  const ticks = new Map<number, number>();
  let readable = false;
  while (!signal.aborted) {
    for (const pid of cluster.owners().keys()) {
      try {
        const stat = await readFile(`/proc/${pid}/stat`, "latin1");
        // Fields after the command (in parentheses, which may hold spaces): utime is the 14th field, stime the 15th.
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        ticks.set(pid, Number(f[11]) + Number(f[12]));
        readable = true;
      } catch {
        // Gone between the listing and the read: its last sample stands.
      }
    }
    await sleep(everyMs, signal);
  }
  // USER_HZ is 100 on every Linux this runs on.
  return readable ? [...ticks.values()].reduce((a, b) => a + b, 0) / 100 : undefined;
}

/**
 * Polls who leads every `everyMs` until the signal: the times a different member was first
 * seen leading, and every change of what the poll saw (a member or none).
 */
async function watchLeaders(cluster: Cluster, now: () => number, everyMs: number, signal: AbortSignal): Promise<{ changes: number[]; leaders: Array<{ at: number; leader: number | undefined }> }> {
  const changes: number[] = [];
  const leaders: Array<{ at: number; leader: number | undefined }> = [];
  let last: number | undefined;
  let seen: number | undefined | null = null;
  while (!signal.aborted) {
    const round = now();
    const l = await cluster.leader();
    if (l !== seen) leaders.push({ at: round, leader: l });
    seen = l;
    if (l !== undefined && l !== last) {
      if (last !== undefined) changes.push(round);
      last = l;
    }
    await sleep(Math.max(0, everyMs - (now() - round)), signal);
  }
  return { changes, leaders };
}

async function readUntilOk(opts: { cluster: Cluster; key: WorkloadKey; now: () => number; timeoutMs: number; history: RegisterOperation[] }): Promise<RegisterOperation> {
  const deadline = Date.now() + opts.timeoutMs;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const m = opts.cluster.members[attempt % opts.cluster.members.length]!;
    const input = { op: "get" as const, key: opts.key.key };
    const call = opts.now();
    const res = await runApiOp(opts.key.api, m.clientUrl, input, 3000);
    if (res.outcome === Outcome.definite) {
      const op: RegisterOperation = { client: -1, input, call, output: res.output, return: opts.now() };
      opts.history.push(op);
      return op;
    }
    await sleep(200);
  }
  throw new Error(`Cannot read ${opts.key.api} ${opts.key.key}: no quorum read succeeded within ${opts.timeoutMs} ms`);
}

export async function runFaultTest(opts: FaultTestOptions): Promise<FaultReport> {
  const t0 = Date.now();
  // Operation and fault times are milliseconds since the workload started.
  let origin = process.hrtime.bigint();
  const now = (): number => Number(process.hrtime.bigint() - origin) / 1e6;
  const abort = new AbortController();
  const signal = opts.signal === undefined ? abort.signal : AbortSignal.any([abort.signal, opts.signal]);
  const api = opts.api ?? ApiChoice.v2;
  const keys = workloadKeys(api, opts.keys);
  const cluster = new Cluster({
    members: opts.members, server: opts.server, portBase: opts.portBase, log: opts.log, keep: { value: opts.keep ?? false },
    ...(opts.snapshotCount === undefined ? {} : { snapshotCount: opts.snapshotCount }),
    ...(opts.catchupEntries === undefined ? {} : { catchupEntries: opts.catchupEntries }),
    ...(opts.electionTimeoutMs === undefined ? {} : { electionTimeoutMs: opts.electionTimeoutMs }),
  });
  const converge = async (phase: string): Promise<void> => {
    const r = await checkConvergence({ cluster, server: opts.server, phase, timeoutMs: opts.convergenceTimeoutMs ?? 10_000 });
    report.convergence.push(r);
    for (const line of describeConvergence(r)) opts.log(`convergence ${line}`);
  };
  opts.onCluster?.(cluster);
  let watcher: ContinuityWatcher | undefined;
  const report: FaultReport = {
    verdict: RunVerdict.ok, seed: opts.seed, api, elapsedMs: 0, workloadMs: 0, ops: 0, counts: emptyCounts(),
    faults: [], proxies: [], snapshotsInstalled: 0, check: undefined, lost: [], finals: {}, convergence: [], elections: undefined, diskStalls: [], electionTimeoutMs: cluster.electionTimeoutMs, problems: [],
  };
  try {
    opts.log(`starting ${opts.members} ${opts.server} members (data in ${cluster.root})`);
    await cluster.start();
    const leader = await cluster.waitReady(30_000);
    if (keys.some((k) => k.api === Api.v3)) {
      const why = await probeV3(cluster.members[leader]!.clientUrl, 10_000);
      if (why !== undefined) throw new ApiNotServedError(`${opts.server} m${leader} does not serve the v3 gateway: ${why}`);
    }
    if (keys.some((k) => k.api === Api.grpc)) {
      const why = await probeGrpc(cluster.members[leader]!.clientUrl, 10_000);
      if (why !== undefined) throw new ApiNotServedError(`${opts.server} m${leader} does not serve gRPC: ${why}`);
    }
    opts.log(`cluster ready, leader m${leader}; running ${opts.clients} ${api} clients for ${opts.durationMs} ms, faults: ${opts.faults.join(",") || "none"}`);

    // gRPC runs: a watcher on the workload's prefix follows the whole run (grpc-watch.ts).
    watcher = keys.some((k) => k.api === Api.grpc) ? new ContinuityWatcher(cluster.members.map((m) => m.clientUrl), "ling/") : undefined;
    const until = Date.now() + opts.durationMs;
    origin = process.hrtime.bigint();
    const originEpoch = Date.now();
    const w0 = now();
    await cluster.proxyLoopDelay(true);
    const harnessLoop = monitorEventLoopDelay({ resolution: 10 });
    harnessLoop.enable();
    const samples: OpSample[] = [];
    const leaderWatch = new AbortController();
    const leaderChanges = watchLeaders(cluster, now, 200, AbortSignal.any([leaderWatch.signal, signal]));
    const memberCpu = watchMemberCpu(cluster, 250, AbortSignal.any([leaderWatch.signal, signal]));
    const [work, faults] = await Promise.all([
      runWorkload({ clients: opts.clients, keys, urls: cluster.members.map((m) => m.clientUrl), rng: mulberry32(opts.seed), timeoutMs: opts.opTimeoutMs, until, maxOpsPerClient: 100_000, now, signal, samples }),
      runNemesis({ cluster, faults: opts.faults, rng: mulberry32(opts.seed ^ 0x5bd1e995), until, now, signal, log: opts.log }),
    ]);
    report.workloadMs = now() - w0;
    leaderWatch.abort();
    const seenLeaders = await leaderChanges;
    report.memberCpuSeconds = await memberCpu;
    report.clientTime = clientTimeTable({ samples, faults, leaderChanges: seenLeaders.changes, leaders: seenLeaders.leaders, workloadMs: report.workloadMs });
    // Kept runs keep the raw material too, to split it other ways afterwards.
    if (opts.keep === true) await writeFile(join(cluster.root, "client-time.json"), JSON.stringify({ workloadMs: report.workloadMs, faults, leaders: seenLeaders.leaders, leaderChanges: seenLeaders.changes, samples }));
    harnessLoop.disable();
    // The histogram holds whole timer intervals (10 ms when idle): the delay is what exceeds one.
    const ms = (ns: number): number => Math.max(0, Math.round((ns - 10e6) / 1e5) / 10);
    report.loopDelay = {
      proxies: await cluster.proxyLoopDelay(false),
      harness: { p50: ms(harnessLoop.percentile(50)), p90: ms(harnessLoop.percentile(90)), p99: ms(harnessLoop.percentile(99)), max: ms(harnessLoop.max) },
    };
    const fmt = (d: LoopDelay | undefined): string => (d === undefined ? "unknown" : `p50 ${d.p50} ms, p90 ${d.p90}, p99 ${d.p99}, max ${d.max}`);
    opts.log(`event-loop delay during the workload: proxy process ${fmt(report.loopDelay.proxies)}; harness ${fmt(report.loopDelay.harness)}`);
    report.counts = work.counts;
    report.faults = faults;
    const paused = faults.filter((f) => f.kind === FaultKind.pause).map((f) => ({ member: f.target.split(" ")[0] ?? "", fromMs: originEpoch + f.start, toMs: originEpoch + f.end }));
    report.diskStalls = withoutPauses(await readDiskStalls(cluster.root, cluster.members.map((m) => m.name)), paused);
    const stallNote = (f: FaultRecord, timing: ElectionTiming): string[] => {
      const from = originEpoch + f.start;
      const during = stallsDuring(report.diskStalls, from, from + (timing.newLeaderMs ?? timing.capMs));
      return during.length === 0 ? [] : [`during a disk stall: ${during.map(describeStall).join(", ")}`];
    };
    report.elections = summarizeElections(
      faults.flatMap((f) => (f.election === undefined ? [] : [{ target: f.target, timing: f.election, notes: stallNote(f, f.election) }])),
      3 * cluster.electionTimeoutMs,
    );
    const history = work.history;
    report.ops = history.length;

    opts.log("healing all faults");
    healAll(cluster);
    try {
      await cluster.waitReady(30_000);
    } catch (err) {
      if (!(err instanceof ClusterNotReadyError)) throw err;
      report.verdict = RunVerdict.notRecovered;
      report.problems.push(`cluster did not recover after healing: ${err.message}`);
      return report;
    }
    for (const key of keys) await readUntilOk({ cluster, key, now, timeoutMs: 20_000, history });
    // No client runs now: every member must reach one applied index with one state hash.
    await converge("after healing");

    opts.log("restarting all members (SIGTERM)");
    await Promise.all(cluster.members.map((m) => cluster.stopMember(m.index, "SIGTERM")));
    for (const m of cluster.members) cluster.startMember(m.index);
    try {
      await cluster.waitReady(30_000);
    } catch (err) {
      if (!(err instanceof ClusterNotReadyError)) throw err;
      report.verdict = RunVerdict.notRecovered;
      report.problems.push(`cluster did not come back after a full restart: ${err.message}`);
      return report;
    }
    const finals = new Map<string, string | null>();
    const finalOps = new Map<string, RegisterOperation>();
    for (const key of keys) {
      const op = await readUntilOk({ cluster, key, now, timeoutMs: 20_000, history });
      finalOps.set(key.key, op);
      finals.set(key.key, op.output.type === "value" ? op.output.value : null);
    }
    await converge("after full restart");
    report.proxies = await cluster.proxyStats();
    report.snapshotsInstalled = cluster.snapshotsInstalled;
    if (watcher !== undefined) {
      report.watch = await watcher.check(cluster.members[0]!.clientUrl, 15_000);
      opts.log(`watch: ${report.watch.events} events, ${report.watch.reconnects} reconnects${report.watch.problem === undefined ? ", continuous" : `: ${report.watch.problem}`}`);
      if (report.watch.problem !== undefined) report.problems.push(`watch not continuous: ${report.watch.problem}`);
    }

    if (opts.inject !== undefined) report.injected = inject(opts.inject, { history, keys: keys.map((k) => k.key), finals, finalOps, seed: opts.seed });
    report.finals = Object.fromEntries(finals);
    opts.log(`checking ${history.length} operations`);
    report.check = checkOperations(registerModel, history, { timeoutMs: opts.checkTimeoutMs });
    report.lost = findLostWrites(history, finals);
    const diverged = report.convergence.filter((c) => c.verdict === ConvergenceVerdict.diverged || c.verdict === ConvergenceVerdict.stuck);
    for (const c of diverged) report.problems.push(`members did not converge ${describeConvergence(c)[0] ?? ""}`);
    for (const s of report.elections?.slow ?? []) report.problems.push(`election slower than 3 × ${cluster.electionTimeoutMs} ms: ${s}`);
    const watchBroken = report.watch?.problem !== undefined;
    report.problems.push(...cluster.crashes);
    report.verdict =
      report.check.verdict === Verdict.illegal || report.lost.length > 0 || diverged.length > 0 || (report.elections?.slow.length ?? 0) > 0 || watchBroken || cluster.crashes.length > 0
        ? RunVerdict.violation
        : report.check.verdict === Verdict.unknown
          ? RunVerdict.unknown
          : RunVerdict.ok;
    return report;
  } finally {
    abort.abort();
    if (report.verdict !== RunVerdict.ok && opts.logTailOnFailure !== undefined && opts.keep !== true) {
      for (const line of await memberLogTails(cluster.root, cluster.members.map((m) => m.name), opts.logTailOnFailure)) opts.log(line);
    }
    await watcher?.stop();
    closeClientConnections();
    closeGrpcSessions();
    await cluster.destroy();
    report.elapsedMs = Date.now() - t0;
  }
}

/**
 * Corrupts the recorded history the way a broken server would: a read returns a value
 * that a completed, acknowledged write had already overwritten (stale-read), or after the
 * full restart a key holds such a value (lost-write). Returns what was done.
 */
function inject(
  kind: Injection,
  ctx: { history: RegisterOperation[]; keys: string[]; finals: Map<string, string | null>; finalOps: Map<string, RegisterOperation>; seed: number },
): string {
  const rng = mulberry32(ctx.seed);
  for (const key of ctx.keys) {
    const finalOp = ctx.finalOps.get(key);
    const keyOps = ctx.history.filter((op) => op.input.key === key && op !== finalOp);
    if (kind === Injection.lostWrite) {
      const bad = injectAnomaly(keyOps, Anomaly.lostWrite, rng);
      const added = bad?.at(-1);
      if (finalOp === undefined || added === undefined || added.output.type !== "value") continue;
      finalOp.output = added.output;
      ctx.finals.set(key, added.output.value);
      return `lost-write: ${key} reads ${JSON.stringify(added.output.value)} after the restart`;
    }
    const bad = injectAnomaly(keyOps, Anomaly.staleRead, rng);
    if (bad === undefined) continue;
    const i = bad.findIndex((op, j) => op.output !== keyOps[j]!.output);
    const victim = keyOps[i];
    const changed = bad[i];
    if (victim === undefined || changed === undefined) continue;
    victim.output = changed.output;
    return `stale-read: ${key} op at ${victim.call.toFixed(1)} ms now returns ${JSON.stringify(changed.output)}`;
  }
  return `${kind}: no place to inject (too few acknowledged writes)`;
}
