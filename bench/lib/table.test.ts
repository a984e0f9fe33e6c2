// Unit tests of lib/table.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { BenchResults } from "./results.ts";
import { BETTER, buildRows, fmt, ratioText, renderTable } from "./table.ts";

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
