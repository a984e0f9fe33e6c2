// Throughput (wrk) and watch fan-out phases. Servers are interleaved row by row, so slow
// drift of the shared VM (CPU steal, disk) hits both servers alike.
import { authCheckText, prepareAuth, wrkCredentials, type AuthCheck } from "./auth.ts";
import { errorText, orderFor, sleep, startServer, stopAndClean, type BenchContext } from "./context.ts";
import { putKey, VALUE64 } from "./http.ts";
import { WRK_ROWS, type ThroughputResult, type WatchPhaseResult, type WrkRowSpec } from "./results.ts";
import type { ServerKind, ServerProcess } from "./server.ts";
import { median, readCpuTicks, stealPct } from "./stats.ts";
import { parseWrkOutput, runWrkRaw } from "./wrk.ts";
import { watchFanout, type WatchResult } from "./watch.ts";

/** Pre-populate the keys read / CAS-ed by the workloads, as the shared run.sh's tp_prepare. */
export async function prepareKeys(url: string): Promise<void> {
  for (const key of ["bench-get/k", "bench-cas/k"]) {
    const st = await putKey(url, key, VALUE64);
    if (st < 200 || st > 299) throw new Error(`Cannot prepare ${key}: HTTP ${st}`);
  }
}

/**
 * Get a fresh server ready for the rows it will serve: auth rows get the v2 auth setup, the
 * GET key written with credentials and the 401/2xx check (logged as the setup check line);
 * the others get the plain keys. Resolves with the check for auth rows.
 */
async function prepareFor(ctx: BenchContext, s: ServerProcess, auth: boolean): Promise<AuthCheck | undefined> {
  if (!auth) {
    await prepareKeys(s.url);
    return undefined;
  }
  try {
    const check = await prepareAuth(s.url);
    ctx.log(`  auth setup check ${s.spec.kind}: ${authCheckText(check)}`);
    return check;
  } catch (e) {
    ctx.log(`  auth setup check ${s.spec.kind}: FAILED ${errorText(e)}`);
    throw e;
  }
}

/**
 * Key prefix for one wrk run. Auth rows' prefixes start with "bench" so the role's "/bench*"
 * pattern covers every key the PUT row creates (the warm-up's too).
 */
export function wrkPrefix(spec: WrkRowSpec, kind: ServerKind, phase: "warm" | "run", now: number = Date.now()): string {
  const base = `${spec.id}-${kind}-${now}`;
  const tagged = phase === "warm" ? `warm-${base}` : base;
  return spec.auth === true ? `bench-${tagged}` : tagged;
}

/** One wrk row on a running server: warm-up (not counted), then the measured run. */
export async function measureWrk(ctx: BenchContext, s: ServerProcess, spec: WrkRowSpec): Promise<ThroughputResult> {
  const o = ctx.options;
  const base = { row: spec.id, server: s.spec.kind, connections: spec.connections } as const;
  const now = Date.now();
  const wrk = { script: spec.script, url: s.url, connections: spec.connections, ...(spec.auth === true ? { scriptArgs: [wrkCredentials()] } : {}) };
  try {
    if (o.warmupS > 0) {
      await runWrkRaw({ ...wrk, durationS: o.warmupS, prefix: wrkPrefix(spec, s.spec.kind, "warm", now) });
    }
    const rss0 = s.rssKb();
    const t0 = readCpuTicks();
    const run = await runWrkRaw({ ...wrk, durationS: o.durationS, prefix: wrkPrefix(spec, s.spec.kind, "run", now) });
    const steal = stealPct(t0, readCpuTicks());
    const rss1 = s.rssKb();
    const w = parseWrkOutput(run.output);
    const common = { ...base, cpu_steal_pct: steal, rss_kb_before: rss0, rss_kb_after: rss1, wrk_exit: run.code };
    if (w === null) {
      return { ...common, error: `no wrk summary (exit ${run.code}): ${run.output.trim().split("\n").slice(-2).join(" ")}` };
    }
    return { ...common, rps: w.rps, p50_ms: w.p50_ms, p99_ms: w.p99_ms, max_ms: w.max_ms, socket_errors: w.socket_errors, non2xx: w.non2xx };
  } catch (e) {
    return { ...base, cpu_steal_pct: null, rss_kb_before: null, rss_kb_after: null, wrk_exit: null, error: errorText(e) };
  }
}

function logRow(ctx: BenchContext, t: ThroughputResult): void {
  if (t.error !== undefined) {
    ctx.errors.push(`${t.row} ${t.server}: ${t.error}`);
    ctx.log(`  ${t.row} ${t.server}: FAILED ${t.error}`);
    return;
  }
  ctx.log(`  ${t.row} ${t.server}: ${t.rps} req/s p50 ${t.p50_ms} ms p99 ${t.p99_ms} ms ` +
    `non2xx ${t.non2xx} sockerr ${t.socket_errors} steal ${t.cpu_steal_pct}%`);
  // with credentials every request must pass: a non-2xx (401) means the setup is wrong and the row measured refusals
  if (t.auth_check !== undefined && (t.non2xx ?? 0) > 0) {
    ctx.errors.push(`${t.row} ${t.server}: ${t.non2xx} non-2xx responses with credentials (auth setup wrong?)`);
  }
}

function failRow(spec: WrkRowSpec, kind: ServerKind, e: unknown): ThroughputResult {
  return {
    row: spec.id, server: kind, connections: spec.connections, cpu_steal_pct: null,
    rss_kb_before: null, rss_kb_after: null, wrk_exit: null, error: errorText(e),
  };
}

/**
 * `rows` (all auth or all plain) on one server per kind. `first` = index of the first row in
 * the whole list, so the ABBA order continues across calls.
 */
async function sharedServerRows(ctx: BenchContext, kinds: readonly ServerKind[], rows: readonly WrkRowSpec[], first: number): Promise<ThroughputResult[]> {
  const out: ThroughputResult[] = [];
  const auth = rows[0]?.auth === true;
  const shared = new Map<ServerKind, { s: ServerProcess; check: AuthCheck | undefined } | Error>();
  try {
    for (const k of kinds) {
      let s: ServerProcess | undefined;
      try {
        s = await startServer(ctx, k, { phase: auth ? "tp-auth" : "tp" });
        shared.set(k, { s, check: await prepareFor(ctx, s, auth) });
      } catch (e) {
        if (s !== undefined) await stopAndClean(s);
        shared.set(k, e instanceof Error ? e : new Error(String(e)));
      }
    }
    for (const [i, spec] of rows.entries()) {
      for (const k of orderFor(kinds, first + i)) {
        const x = shared.get(k);
        const t = x === undefined || x instanceof Error ? failRow(spec, k, x ?? "not started") : withCheck(await measureWrk(ctx, x.s, spec), x.check);
        logRow(ctx, t);
        out.push(t);
      }
    }
  } finally {
    for (const x of shared.values()) if (!(x instanceof Error)) await stopAndClean(x.s);
  }
  return out;
}

function withCheck(t: ThroughputResult, check: AuthCheck | undefined): ThroughputResult {
  return check === undefined ? t : { ...t, auth_check: check };
}

/**
 * All selected wrk rows for all servers. Fresh server (empty data dir) per row unless
 * options.freshPerRow is off; then one server per kind for the plain rows and, since auth
 * cannot be switched off again without root on every request, another for the auth rows.
 */
export async function throughputPhase(ctx: BenchContext, kinds: readonly ServerKind[]): Promise<ThroughputResult[]> {
  const rows = WRK_ROWS.filter((r) => ctx.options.only.has(r.group));
  if (rows.length === 0) return [];
  if (!ctx.options.freshPerRow) {
    ctx.log("throughput: one server per kind for all rows (another one for the auth rows)");
    const plain = rows.filter((r) => r.auth !== true);
    const auth = rows.filter((r) => r.auth === true);
    const out = plain.length ? await sharedServerRows(ctx, kinds, plain, 0) : [];
    return auth.length ? [...out, ...(await sharedServerRows(ctx, kinds, auth, plain.length))] : out;
  }
  ctx.log("throughput: a fresh server (empty data dir) for every row");
  const out: ThroughputResult[] = [];
  for (const [i, spec] of rows.entries()) {
    for (const k of orderFor(kinds, i)) {
      let s: ServerProcess | undefined;
      let t: ThroughputResult;
      try {
        s = await startServer(ctx, k, { phase: spec.id });
        const check = await prepareFor(ctx, s, spec.auth === true);
        await sleep(1000);
        t = withCheck(await measureWrk(ctx, s, spec), check);
      } catch (e) {
        t = failRow(spec, k, e);
      } finally {
        if (s !== undefined) await stopAndClean(s);
      }
      logRow(ctx, t);
      out.push(t);
    }
  }
  return out;
}

/** Fan-out: `watchReps` rounds of N long polls + one PUT, on one fresh server per kind. */
export async function watchPhase(ctx: BenchContext, kinds: readonly ServerKind[]): Promise<WatchPhaseResult[]> {
  const o = ctx.options;
  const out: WatchPhaseResult[] = [];
  for (const k of kinds) {
    let s: ServerProcess | undefined;
    const reps: WatchResult[] = [];
    let error: string | undefined;
    try {
      s = await startServer(ctx, k, { phase: "watch" });
      const server = s;
      for (let rep = 1; rep <= o.watchReps; rep++) {
        ctx.log(`watch ${k}: ${o.watchers} long polls, one PUT (rep ${rep}/${o.watchReps})`);
        const r = await watchFanout({ url: server.url, n: o.watchers, key: "bench-watch/k", rssKb: () => server.rssKb() });
        ctx.log(`  all ${r.all_ms} ms, registered ${r.register_all_ms} ms, p50 ${r.p50_ms} ms, errors ${r.errors + r.bad_status + r.wrong_body}`);
        reps.push(r);
        if (rep < o.watchReps) await sleep(o.smoke ? 200 : 2000);
      }
    } catch (e) {
      error = errorText(e);
      ctx.errors.push(`watch ${k}: ${error}`);
    } finally {
      if (s !== undefined) await stopAndClean(s);
    }
    const allMs = reps.some((r) => r.all_ms === null) ? null : median(reps.map((r) => r.all_ms));
    out.push({
      server: k, watchers: o.watchers, reps,
      all_ms: reps.length === 0 ? null : allMs,
      register_all_ms: median(reps.map((r) => r.register_all_ms)),
      ...(error === undefined ? {} : { error }),
    });
  }
  return out;
}
