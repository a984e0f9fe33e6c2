// Unit tests of lib/table.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { BenchResults } from "./results.ts";
import type { ThroughputResult } from "./results.ts";
import { authCostRows, BETTER, buildRows, fmt, fmtRatio, ratioText, renderAuthCostTable, renderTable } from "./table.ts";

test("fmt rounds like the shared report", () => {
  assert.deepEqual([fmt(12345.6), fmt(123.4), fmt(12.34), fmt(1.234), fmt(null)], ["12346", "123", "12.3", "1.23", "-"]);
});

test("ratioText divides kvctl by etcd per value and names the better direction", () => {
  assert.equal(ratioText({ label: "x", etcd: { values: [100] }, kvctl: { values: [50] }, better: BETTER.higher }), "0.50 (higher is better)");
  assert.equal(ratioText({ label: "x", etcd: { values: [1, 4] }, kvctl: { values: [2, 2] }, better: BETTER.lower }), "2.00 / 0.50 (lower is better)");
  assert.equal(ratioText({ label: "x", etcd: "failed: x", kvctl: { values: [2] }, better: BETTER.lower }), "-");
  assert.equal(ratioText({ label: "x", kvctl: { values: [2] }, better: BETTER.lower }), "-");
});

test("buildRows renders throughput, memory and client rows from a results object", () => {
  const r: BenchResults = {
    label: "t", timestamp: "T", argv: [], machine: {}, servers: [], errors: [], elapsed_s: 1, watch: [],
    settings: { fill_n: 10, fill_c: 2, restart_reps: 1, client_runs: 3 },
    throughput: [
      { row: "v2-get-c16", server: "etcd", connections: 16, rps: 1000, p50_ms: 1, p99_ms: 4, cpu_steal_pct: 0, rss_kb_before: 1, rss_kb_after: 1, wrk_exit: 0, socket_errors: 0, non2xx: 0 },
      { row: "v2-get-c16", server: "kvctl", connections: 16, rps: 1500, p50_ms: 0.5, p99_ms: 8, cpu_steal_pct: 9, rss_kb_before: 1, rss_kb_after: 1, wrk_exit: 0, socket_errors: 0, non2xx: 3 },
    ],
    memory: [],
    client: [
      { client: "kvctl", timing: { command: "kvctl get", tool: "spawnSync loop", runs: 3, median_ms: 150, min_ms: 1, max_ms: 1 } },
      { client: "node", timing: { command: "node -e 0", tool: "spawnSync loop", runs: 3, median_ms: 40, min_ms: 1, max_ms: 1 } },
    ],
  };
  const table = renderTable(buildRows(r, 5));
  assert.match(table, /\| v2 GET, 16 conns \(req\/s\) \| 1000 \| 1500 ⚠ 3 non-2xx, 0 socket errors \(steal 9%\) \| 1\.50 \(higher is better\) \|/);
  assert.match(table, /\| v2 GET, 16 conns \(p50 \/ p99 ms\) \| 1\.00 \/ 4\.00 \| 0\.50 \/ 8\.00 \| 0\.50 \/ 2\.00 \(lower is better\) \|/);
  assert.match(table, /`node -e 0`.*\| - \| 40\.0 \| kvctl get = node \+ 110 ms \|/);
  assert.doesNotMatch(table, /fan-out/);
});

const tp = (row: string, server: "etcd" | "kvctl", rps: number, p50: number, extra: Partial<ThroughputResult> = {}): ThroughputResult => ({
  row, server, connections: 16, rps, p50_ms: p50, p99_ms: p50 * 4, cpu_steal_pct: 0, rss_kb_before: 1, rss_kb_after: 1,
  wrk_exit: 0, socket_errors: 0, non2xx: 0, ...extra,
});
const base = { label: "t", timestamp: "T", argv: [], machine: {}, servers: [], errors: [], elapsed_s: 1, watch: [], memory: [], client: [], settings: {} } as const;
const CHECK = { get_without_credentials: 401, put_without_credentials: 401, get_as_user: 200, ok: true, notes: [] } as const;

test("authCostRows divides each auth row by its no-auth row per server", () => {
  const r: BenchResults = {
    ...base,
    throughput: [
      tp("v2-get-c16", "etcd", 2000, 0.5), tp("v2-get-c16", "kvctl", 4000, 0.25),
      tp("v2-get-c16-auth", "etcd", 40, 400, { auth_check: CHECK }), tp("v2-get-c16-auth", "kvctl", 3000, 0.5, { auth_check: CHECK }),
    ],
  };
  const rows = authCostRows(r);
  assert.deepEqual(rows, [
    { label: "v2 GET, 16 conns: req/s (lower = auth costs throughput)", etcd: "0.02 (40.0 / 2000)", kvctl: "0.75 (3000 / 4000)" },
    { label: "v2 GET, 16 conns: p50 (higher = auth adds latency)", etcd: "800 (400 / 0.50 ms)", kvctl: "2.00 (0.50 / 0.25 ms)" },
  ]);
  const table = renderAuthCostTable(rows);
  assert.match(table, /^\| auth \/ no-auth, same run \| etcd \| kvctl \|/);
  assert.match(renderTable(buildRows(r, 5)), /\| v2 GET, 16 conns \(auth\) \(req\/s\) \| 40\.0 \| 3000 \| 75\.00 \(higher is better\) \|/);
  assert.match(renderTable(buildRows(r, 5)), /\| v2 GET, 16 conns \(auth\) \(p50 \/ p99 ms\) \| 400 \/ 1600 \| 0\.50 \/ 2\.00 \| 0\.0013 \/ 0\.0013 \(lower is better\) \|/);
});

test("authCostRows says so when the no-auth row was not run, and is empty without auth rows", () => {
  const only = authCostRows({ ...base, throughput: [tp("v2-put-unique-c16-auth", "kvctl", 500, 2)] });
  assert.deepEqual(only.map((x) => [x.etcd, x.kvctl]), [["-", "- (no-auth row not run)"], ["-", "- (no-auth row not run)"]]);
  assert.deepEqual(authCostRows({ ...base, throughput: [tp("v2-get-c16", "kvctl", 500, 2)] }), []);
});

test("authCostRows gives - when the auth row failed", () => {
  const failed: ThroughputResult = { row: "v2-get-c16-auth", server: "etcd", connections: 16, cpu_steal_pct: null, rss_kb_before: null, rss_kb_after: null, wrk_exit: null, error: "auth setup check failed" };
  const rows = authCostRows({ ...base, throughput: [tp("v2-get-c16", "etcd", 2000, 0.5), failed] });
  assert.equal(rows[0]?.etcd, "-");
});

const ratioCases: { x: number; want: string }[] = [
  { x: 0.5, want: "0.50" }, { x: 0.00099, want: "0.00099" }, { x: 0.0123, want: "0.01" }, { x: 713.2, want: "713" }, { x: 0, want: "0.00" },
];
for (const c of ratioCases) {
  test(`fmtRatio gives ${c.want} when the ratio is ${c.x}`, () => assert.equal(fmtRatio(c.x), c.want));
}
