// The one Markdown table: workload | etcd | kvctl | kvctl/etcd. Built only from the results
// object, so a results JSON can be re-rendered later (`node --import tsx bench/run.ts --render FILE`).
import { WRK_ROWS, type BenchResults, type ThroughputResult } from "./results.ts";
import type { ServerKind } from "./server.ts";

export const BETTER = { higher: "higher", lower: "lower", none: "none" } as const;
export type Better = (typeof BETTER)[keyof typeof BETTER];

export interface Cell {
  /** The numbers compared in the ratio column (e.g. [p50, p99]). */
  readonly values: readonly number[];
  /** Replaces the formatted values when set. */
  readonly text?: string;
  /** Appended after the value (errors, steal, checks). */
  readonly note?: string;
}

export interface Row {
  readonly label: string;
  readonly etcd?: Cell | string;
  readonly kvctl?: Cell | string;
  readonly better: Better;
  /** Replaces the computed ratio (e.g. for reference rows). */
  readonly ratio?: string;
}

/** Format like the shared report.js: >= 100 as integer, < 10 with 2 decimals, else 1. */
export function fmt(x: number | null | undefined): string {
  if (x === null || x === undefined || Number.isNaN(x)) return "-";
  if (Math.abs(x) >= 100) return Math.round(x).toString();
  return x.toFixed(Math.abs(x) < 10 ? 2 : 1);
}

export function mib(kb: number | null | undefined): number | null {
  return kb === null || kb === undefined ? null : kb / 1024;
}

function cellText(c: Cell | string | undefined): string {
  if (c === undefined) return "-";
  if (typeof c === "string") return c;
  const base = c.text ?? c.values.map(fmt).join(" / ");
  return c.note === undefined ? base : `${base} ${c.note}`;
}

/**
 * A ratio: 2 decimals, but 2 significant digits below 0.01 (etcd's auth GET is ~0.001 of its
 * plain GET; "0.00" would hide that) and whole numbers from 100 up.
 */
export function fmtRatio(x: number): string {
  if (x !== 0 && Math.abs(x) < 0.01) return x.toPrecision(2);
  if (Math.abs(x) >= 100) return Math.round(x).toString();
  return x.toFixed(2);
}

/** kvctl/etcd per value with the direction that is better; "-" when not comparable. */
export function ratioText(row: Row): string {
  if (row.ratio !== undefined) return row.ratio;
  const e = row.etcd;
  const k = row.kvctl;
  if (typeof e !== "object" || typeof k !== "object" || e.values.length === 0 || e.values.length !== k.values.length) return "-";
  const parts = e.values.map((ev, i) => {
    const kv = k.values[i] as number;
    if (ev === 0) return kv === 0 ? "1.00" : "-";
    return fmtRatio(kv / ev);
  });
  const dir = row.better === BETTER.none ? "" : ` (${row.better} is better)`;
  return parts.join(" / ") + dir;
}

export function renderTable(rows: readonly Row[]): string {
  const out = ["| workload | etcd | kvctl | kvctl/etcd |", "| --- | ---: | ---: | ---: |"];
  for (const r of rows) out.push(`| ${r.label} | ${cellText(r.etcd)} | ${cellText(r.kvctl)} | ${ratioText(r)} |`);
  return out.join("\n");
}

type PerServer = { etcd?: Cell | string; kvctl?: Cell | string };

function perServer<T>(items: readonly T[], server: (t: T) => ServerKind, cell: (t: T) => Cell | string): PerServer {
  const o: PerServer = {};
  for (const t of items) o[server(t)] = cell(t);
  return o;
}

function failed(msg: string): string {
  return `failed: ${msg.replaceAll("|", "/").slice(0, 80)}`;
}

function wrkNote(t: ThroughputResult, maxSteal: number): string | undefined {
  const notes: string[] = [];
  const bad = (t.socket_errors ?? 0) + (t.non2xx ?? 0);
  if (bad > 0) notes.push(`⚠ ${t.non2xx ?? 0} non-2xx, ${t.socket_errors ?? 0} socket errors`);
  if (t.cpu_steal_pct !== null && t.cpu_steal_pct > maxSteal) notes.push(`(steal ${t.cpu_steal_pct.toFixed(0)}%)`);
  return notes.length ? notes.join(" ") : undefined;
}

function withNote(c: Cell, note: string | undefined): Cell {
  return note === undefined ? c : { ...c, note };
}

/** All rows of the comparison table, in a fixed order; groups that were not run are left out. */
export function buildRows(r: BenchResults, maxSteal: number): Row[] {
  const rows: Row[] = [];
  for (const spec of WRK_ROWS) {
    const ts = r.throughput.filter((t) => t.row === spec.id);
    if (ts.length === 0) continue;
    const rps = perServer(ts, (t) => t.server, (t) =>
      t.error !== undefined || t.rps === undefined ? failed(t.error ?? "no result") : withNote({ values: [t.rps] }, wrkNote(t, maxSteal)));
    rows.push({ label: `${spec.title} (req/s)`, ...rps, better: BETTER.higher });
    const lat = perServer(ts, (t) => t.server, (t) =>
      t.p50_ms === undefined || t.p99_ms === undefined ? "-" : { values: [t.p50_ms, t.p99_ms] });
    rows.push({ label: `${spec.title} (p50 / p99 ms)`, ...lat, better: BETTER.lower });
  }
  if (r.watch.length > 0) {
    const n = r.watch[0]?.watchers ?? 0;
    const reps = r.watch[0]?.reps.length ?? 0;
    const note = (w: (typeof r.watch)[number]): string | undefined => {
      const errs = w.reps.reduce((a, x) => a + x.errors + x.bad_status + x.wrong_body, 0);
      return errs > 0 ? `⚠ ${errs} errors` : undefined;
    };
    rows.push({
      label: `${n}-watcher fan-out: all got the event (ms after the PUT, median of ${reps})`,
      ...perServer(r.watch, (w) => w.server, (w) =>
        w.error !== undefined ? failed(w.error) : w.all_ms === null ? "NOT ALL received" : withNote({ values: [w.all_ms] }, note(w))),
      better: BETTER.lower,
    });
    rows.push({
      label: `${n}-watcher fan-out: all ${n} registered (ms, median of ${reps})`,
      ...perServer(r.watch, (w) => w.server, (w) => (w.register_all_ms === null ? "- (no early heads)" : { values: [w.register_all_ms] })),
      better: BETTER.lower,
    });
  }
  if (r.memory.length > 0) rows.push(...memoryRows(r));
  if (r.client.length > 0) rows.push(...clientRows(r));
  return rows;
}

function memoryRows(r: BenchResults): Row[] {
  const m = r.memory;
  const n = Number(r.settings["fill_n"] ?? 0);
  const c = Number(r.settings["fill_c"] ?? 0);
  const reps = Number(r.settings["restart_reps"] ?? 1);
  const num = (v: number | null | undefined, note?: string): Cell | string =>
    v === null || v === undefined ? "-" : note === undefined ? { values: [v] } : { values: [v], note };
  const rows: Row[] = [];
  rows.push({ label: "start-up, empty data dir → /health 200 (ms)", ...perServer(m, (x) => x.server, (x) =>
    x.startup_ms === null ? failed(x.error ?? "no start") : { values: [x.startup_ms] }), better: BETTER.lower });
  rows.push({ label: `fill ${n} keys, ${c} conns (keys/s)`, ...perServer(m, (x) => x.server, (x) => {
    const f = x.fill;
    if (f === null) return failed(x.error ?? "no fill");
    const bad = f.non2xx + f.errors;
    const note = f.timed_out ? `⚠ timed out after ${f.completed} keys` : bad > 0 ? `⚠ ${f.non2xx} non-2xx, ${f.errors} errors` : undefined;
    return num(f.keys_per_s, note);
  }), better: BETTER.higher });
  rows.push({ label: `fill: per-request p50 / p99 (ms)`, ...perServer(m, (x) => x.server, (x) =>
    x.fill?.p50_ms == null || x.fill.p99_ms == null ? "-" : { values: [x.fill.p50_ms, x.fill.p99_ms] }), better: BETTER.lower });
  rows.push({ label: "RSS idle (MiB)", ...perServer(m, (x) => x.server, (x) => num(mib(x.rss_kb_idle))), better: BETTER.lower });
  rows.push({ label: `RSS after ${n} keys (MiB)`, ...perServer(m, (x) => x.server, (x) => num(mib(x.rss_kb_after_fill))), better: BETTER.lower });
  rows.push({ label: `restart with ${n} keys → /health 200 (ms, median of ${reps})`, ...perServer(m, (x) => x.server, (x) =>
    x.restart_ms === null ? failed(x.error ?? "no restart") : num(x.restart_ms, x.last_key_ok_after_restart === true ? "(last key ok)" : "⚠ last key MISSING")),
    better: BETTER.lower });
  rows.push({ label: `data dir after fill, stopped (MiB)`, ...perServer(m, (x) => x.server, (x) =>
    num(x.data_dir_bytes_stopped === null ? null : x.data_dir_bytes_stopped / 1048576)), better: BETTER.lower });
  return rows;
}

function clientRows(r: BenchResults): Row[] {
  const rows: Row[] = [];
  const runs = Number(r.settings["client_runs"] ?? 0);
  const cell = (kind: ServerKind): Cell | string | undefined => {
    const t = r.client.find((x) => x.client === kind)?.timing;
    if (t === undefined) return undefined;
    return t.error !== undefined || t.median_ms === null ? failed(t.error ?? "no timing") : { values: [t.median_ms] };
  };
  const e = cell("etcd");
  const k = cell("kvctl");
  if (e !== undefined || k !== undefined) {
    rows.push({
      label: `client start-up: \`etcdctl get\` (v2) vs \`kvctl get\` wall time (ms, median of ${runs})`,
      ...(e === undefined ? {} : { etcd: e }), ...(k === undefined ? {} : { kvctl: k }), better: BETTER.lower,
    });
  }
  const node = r.client.find((x) => x.client === "node")?.timing;
  if (node !== undefined) {
    const kv = r.client.find((x) => x.client === "kvctl")?.timing.median_ms;
    const nodeMs = node.median_ms;
    rows.push({
      label: `client start-up floor: \`node -e 0\` (ms, median of ${runs})`,
      kvctl: nodeMs === null ? failed(node.error ?? "no timing") : { values: [nodeMs] },
      better: BETTER.none,
      ratio: kv != null && nodeMs !== null ? `kvctl get = node + ${fmt(kv - nodeMs)} ms` : "-",
    });
  }
  return rows;
}

/** One line of the auth-cost table: per server, the auth row's figure divided by the same workload's without auth. */
export interface AuthCostRow {
  readonly label: string;
  readonly etcd: string;
  readonly kvctl: string;
}

/**
 * auth / no-auth per server and figure (req/s, p50), from the same run, with both numbers
 * in brackets. "-" when a side failed; a note when the no-auth row was not selected.
 */
export function authCostRows(r: BenchResults): AuthCostRow[] {
  const rows: AuthCostRow[] = [];
  const find = (id: string, k: ServerKind): ThroughputResult | undefined => r.throughput.find((t) => t.row === id && t.server === k);
  for (const spec of WRK_ROWS) {
    if (spec.auth !== true || spec.noAuthRow === undefined) continue;
    const noAuthId = spec.noAuthRow;
    if (!r.throughput.some((t) => t.row === spec.id)) continue;
    const cell = (k: ServerKind, figure: "rps" | "p50_ms"): string => {
      const a = find(spec.id, k);
      if (a === undefined) return "-";
      const b = find(noAuthId, k);
      if (b === undefined) return "- (no-auth row not run)";
      const av = a[figure];
      const bv = b[figure];
      if (av === undefined || bv === undefined || a.error !== undefined || b.error !== undefined || bv === 0) return "-";
      const unit = figure === "rps" ? "" : " ms";
      return `${fmtRatio(av / bv)} (${fmt(av)} / ${fmt(bv)}${unit})`;
    };
    const title = spec.title.replace(/ \(auth\)$/, "");
    rows.push({ label: `${title}: req/s (lower = auth costs throughput)`, etcd: cell("etcd", "rps"), kvctl: cell("kvctl", "rps") });
    rows.push({ label: `${title}: p50 (higher = auth adds latency)`, etcd: cell("etcd", "p50_ms"), kvctl: cell("kvctl", "p50_ms") });
  }
  return rows;
}

export function renderAuthCostTable(rows: readonly AuthCostRow[]): string {
  const out = ["| auth / no-auth, same run | etcd | kvctl |", "| --- | ---: | ---: |"];
  for (const r of rows) out.push(`| ${r.label} | ${r.etcd} | ${r.kvctl} |`);
  return out.join("\n");
}
