// kvctl's own benchmark: the same workloads as the shared harness, run against kvctl and
// (when installed) etcd, one member each, interleaved; prints ONE Markdown table on stdout
// and writes bench/results/<label>-<timestamp>.json. Progress goes to stderr.
//   npm run bench -- --help
//   node --import tsx bench/run.ts --render bench/results/<file>.json   (table of a saved run)
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { authCheckText } from "./lib/auth.ts";
import { PORTS, errorText, startServer, type BenchContext } from "./lib/context.ts";
import { httpRequest } from "./lib/http.ts";
import { GROUP_ALIASES, parseOptions, USAGE, type BenchOptions } from "./lib/options.ts";
import { clientPhase, etcdctlPath } from "./lib/phases-client.ts";
import { memoryPhase } from "./lib/phases-memory.ts";
import { throughputPhase, watchPhase } from "./lib/phases.ts";
import type { BenchResults, ServerInfo } from "./lib/results.ts";
import { killAllStartedSync, type ServerKind, type ServerSpec } from "./lib/server.ts";
import { hasHyperfine } from "./lib/client-startup.ts";
import { authCostRows, buildRows, renderAuthCostTable, renderTable } from "./lib/table.ts";
import { killRunningWrkSync } from "./lib/wrk.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const log = (msg: string): void => {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

function utcStamp(d: Date): string {
  return d.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

/** /proc/loadavg's 1-minute figure: other people's load on the shared cores skews every row. */
function loadAvg(): number | null {
  try {
    return Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
  } catch {
    return null;
  }
}

function toolVersion(cmd: string, args: string[]): string | null {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 5000 });
  if (r.error !== undefined) return null;
  return `${r.stdout}${r.stderr}`.trim().split("\n")[0] ?? null;
}

/** Newest mtime (ms) of the non-test sources under dir; 0 when there are none. */
function newestSourceMs(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || !e.name.endsWith(".ts") || e.name.endsWith(".test.ts")) continue;
    newest = Math.max(newest, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return newest;
}

/**
 * Build dist/ when missing, older than src/, or forced: kvctl is measured as users run it,
 * compiled, and from the current sources.
 */
function ensureKvctlBuilt(o: BenchOptions): string | undefined {
  const entry = join(ROOT, o.kvctlEntry);
  const srcDir = join(ROOT, "src");
  const stale = existsSync(entry) && existsSync(srcDir) && newestSourceMs(srcDir) > statSync(entry).mtimeMs;
  if (o.build || !existsSync(entry) || stale) {
    log(`building kvctl (npm run build)${stale ? ": dist/ is older than src/" : ""}`);
    const r = spawnSync("npm", ["run", "build", "--silent"], { cwd: ROOT, encoding: "utf8", timeout: 300_000 });
    if (r.status !== 0) log(`  the build exited ${r.status}: ${(r.stdout + r.stderr).trim().split("\n").slice(0, 3).join(" | ")}`);
  }
  return existsSync(entry) ? undefined : `${o.kvctlEntry} missing after the build`;
}

function specsFor(o: BenchOptions): Map<ServerKind, ServerSpec> {
  return new Map<ServerKind, ServerSpec>([
    ["etcd", { kind: "etcd", command: o.etcdBin, prefixArgs: ["--enable-v2=true"], clientPort: PORTS.etcd.client, peerPort: PORTS.etcd.peer }],
    ["kvctl", { kind: "kvctl", command: process.execPath, prefixArgs: [join(ROOT, o.kvctlEntry), "serve"], clientPort: PORTS.kvctl.client, peerPort: PORTS.kvctl.peer }],
  ]);
}

/** Start each server once (not timed) to check it works and read /version; drop the ones that fail. */
async function preflight(ctx: BenchContext, kinds: readonly ServerKind[]): Promise<ServerInfo[]> {
  const infos: ServerInfo[] = [];
  for (const k of kinds) {
    const spec = ctx.specs.get(k) as ServerSpec;
    const commandLine = [spec.command, ...spec.prefixArgs, "--name b --data-dir DIR ..."].join(" ");
    try {
      const s = await startServer(ctx, k, { phase: "preflight", deadlineMs: 30_000 });
      let version: unknown = null;
      try {
        const v = await httpRequest(`${s.url}/version`);
        version = v.status === 200 ? JSON.parse(v.body) : null;
      } catch {
        version = null;
      }
      await s.stop();
      rmSync(s.dataDir, { recursive: true, force: true });
      log(`preflight ${k}: ok, version ${JSON.stringify(version)}`);
      infos.push({ kind: k, command_line: commandLine, version, available: true });
    } catch (e) {
      log(`preflight ${k}: FAILED ${errorText(e)}`);
      ctx.errors.push(`preflight ${k}: ${errorText(e)}`);
      infos.push({ kind: k, command_line: commandLine, version: null, available: false, error: errorText(e) });
    }
  }
  return infos;
}

function report(r: BenchResults, maxSteal: number, file: string | null): string {
  const s = r.settings;
  const lines = [
    `### kvctl bench \`${r.label}\` — ${r.timestamp}`,
    "",
    `One member each, fresh data dir per ${s["fresh_server_per_row"] ? "row" : "phase"}; wrk rows ${s["warmup_s"]} s warm-up + ${s["duration_s"]} s measured; ` +
      `${r.machine["cpus"]} cores (${r.machine["cpu_model"]}), load average ${r.machine["loadavg_1m_before"] ?? "?"} before / ${r.machine["loadavg_1m_after"] ?? "?"} after; ` +
      `node ${r.machine["node"]}, ${r.machine["wrk"] ?? "no wrk"}.`,
    "",
    renderTable(buildRows(r, maxSteal)),
    "",
    `Ratio = kvctl / etcd per figure. p99 is wrk's coordinated-omission-corrected tail (noisy on this VM); ` +
      `\`(steal N%)\` marks rows where the hypervisor took more than ${maxSteal}% of the CPU.`,
  ];
  const authCost = authCostRows(r);
  if (authCost.length > 0) {
    lines.push(
      "",
      "Cost of v2 auth on each server: the `(auth)` row divided by the same workload without auth " +
        "(user `bencher` with a `/bench*` role, Basic credentials on every request, guest read/write revoked).",
      "",
      renderAuthCostTable(authCost),
      "",
    );
    for (const t of r.throughput) {
      if (t.auth_check !== undefined) lines.push(`- auth setup check ${t.row} ${t.server}: ${authCheckText(t.auth_check)}`);
    }
  }
  for (const sv of r.servers) {
    lines.push(`- ${sv.kind}: \`${sv.command_line}\`${sv.version ? ` — version ${JSON.stringify(sv.version)}` : ""}${sv.available ? "" : ` — NOT MEASURED: ${sv.error}`}`);
  }
  for (const c of r.client) lines.push(`- client ${c.client}: \`${c.timing.command}\` (${c.timing.tool})`);
  if (r.errors.length > 0) lines.push("", `Failures (${r.errors.length}):`, ...r.errors.map((e) => `- ${e}`));
  if (file !== null) lines.push("", `Results: ${file}`);
  return lines.join("\n");
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === "--render") {
    const file = argv[1];
    if (file === undefined) throw new Error("Cannot render: usage --render FILE.json");
    const r = JSON.parse(readFileSync(file, "utf8")) as BenchResults;
    console.log(report(r, Number(r.settings["max_steal_pct"] ?? 5), file));
    return 0;
  }
  const o = parseOptions(argv);
  if (o.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const t0 = performance.now();
  const started = new Date();
  // Set on this workplace to the system CA bundle: it makes every Node process parse ~150
  // certificates at start (about +50 ms per `node -e 0` here), which a user's machine does
  // not pay. Removed for everything the bench starts (kvctl server, kvctl get, node -e 0).
  const extraCa = process.env["NODE_EXTRA_CA_CERTS"];
  delete process.env["NODE_EXTRA_CA_CERTS"];
  const ts = utcStamp(started);
  const runDir = join(ROOT, "bench", "tmp", `run-${o.label}-${ts}-${process.pid}`);
  mkdirSync(join(runDir, "logs"), { recursive: true });
  const ctx: BenchContext = { options: o, root: ROOT, runDir, specs: specsFor(o), log, errors: [] };

  const onSignal = (sig: NodeJS.Signals): void => {
    log(`${sig}: stopping the servers this run started`);
    killRunningWrkSync();
    killAllStartedSync();
    rmSync(join(runDir, "data"), { recursive: true, force: true });
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  let kinds = [...o.servers];
  const notMeasured: ServerInfo[] = [];
  if (kinds.includes("etcd") && !existsSync(o.etcdBin)) {
    if (o.servers.length === 1) throw new Error(`Cannot run: ${o.etcdBin} is not installed`);
    log(`${o.etcdBin} not installed: measuring kvctl only`);
    kinds = kinds.filter((k) => k !== "etcd");
  }
  if (kinds.includes("kvctl")) {
    const err = ensureKvctlBuilt(o);
    if (err !== undefined) {
      ctx.errors.push(`kvctl: ${err}`);
      notMeasured.push({ kind: "kvctl", command_line: o.kvctlEntry, version: null, available: false, error: err });
      kinds = kinds.filter((k) => k !== "kvctl");
    }
  }
  const wrkVersion = toolVersion("wrk", ["-v"])?.replace(/\s*Copyright.*$/, "") ?? null;
  const loadBefore = loadAvg();
  let only = o.only;
  if (wrkVersion === null && (GROUP_ALIASES["throughput"] ?? []).some((g) => only.has(g))) {
    ctx.errors.push("wrk is not installed: throughput rows skipped (apt-get install wrk)");
    log("wrk is not installed: throughput rows skipped");
    only = new Set([...only].filter((g) => g === "watch" || g === "fill" || g === "client"));
  }
  const run = { ...ctx, options: { ...o, only } };
  log(`label ${o.label}; servers ${kinds.join(", ") || "none"}; groups ${[...only].join(",")}; run dir ${relative(ROOT, runDir)}`);

  const infos = [...(await preflight(run, kinds)), ...notMeasured];
  const ok = infos.filter((i) => i.available).map((i) => i.kind);
  const order = (["etcd", "kvctl"] as const).filter((k) => ok.includes(k));
  const throughput = order.length ? await throughputPhase(run, order) : [];
  const watch = order.length && only.has("watch") ? await watchPhase(run, order) : [];
  const memory = order.length && only.has("fill") ? await memoryPhase(run, order) : [];
  const client = order.length && only.has("client") ? await clientPhase(run, order) : [];

  const results: BenchResults = {
    label: o.label, timestamp: ts, argv,
    settings: {
      duration_s: o.durationS, warmup_s: o.warmupS, groups: [...only], smoke: o.smoke,
      fill_n: o.fillN, fill_c: o.fillC, watchers: o.watchers, watch_reps: o.watchReps,
      restart_reps: o.restartReps, client_runs: o.clientRuns, client_warmup: o.clientWarmup,
      fresh_server_per_row: o.freshPerRow, settle_ms: o.settleMs, max_steal_pct: o.maxSteal, ports: PORTS,
    },
    machine: {
      cpus: cpus().length, cpu_model: cpus()[0]?.model ?? "?", mem_total_kb: Math.round(totalmem() / 1024),
      kernel: release(), node: process.version, wrk: wrkVersion, hyperfine: hasHyperfine() ? toolVersion("hyperfine", ["--version"]) : null,
      etcdctl: order.includes("etcd") ? etcdctlPath(o.etcdBin) : null,
      loadavg_1m_before: loadBefore, loadavg_1m_after: loadAvg(),
      node_extra_ca_certs_removed: extraCa ?? null,
    },
    servers: infos, throughput, watch, memory, client, errors: ctx.errors,
    elapsed_s: Math.round((performance.now() - t0) / 100) / 10,
  };
  const outDir = join(ROOT, o.outDir);
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `${o.label}-${ts}.json`);
  writeFileSync(file, JSON.stringify(results, null, 2) + "\n");
  console.log(report(results, o.maxSteal, relative(ROOT, file)));

  rmSync(join(runDir, "data"), { recursive: true, force: true });
  if (o.keep || ctx.errors.length > 0) log(`server logs kept in ${relative(ROOT, runDir)}/logs`);
  else rmSync(runDir, { recursive: true, force: true });
  log(`done in ${results.elapsed_s} s`);
  return ctx.errors.length > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    killRunningWrkSync();
    killAllStartedSync();
    process.stderr.write(`bench: ${errorText(e)}\n\n${e instanceof TypeError ? "" : USAGE}`);
    process.exit(2);
  },
);
