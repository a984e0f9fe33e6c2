import { test } from "node:test";
import assert from "node:assert/strict";
import { Counter, Gauge, GaugeFunc, Histogram, Registry, counterFunc, exponentialBuckets, formatValue } from "./registry.ts";
import { parseLimit, parseStat } from "./process.ts";

test("values are written as Go's strconv 'g' writes them (client_golang)", () => {
  const cases: Array<[number, string]> = [
    [0, "0"],
    [1, "1"],
    [1408, "1408"],
    [100000, "100000"],
    [1e6, "1e+06"],
    [2147483648, "2.147483648e+09"],
    [0.001, "0.001"],
    [0.0001, "0.0001"],
    [0.00001, "1e-05"],
    [0.00029650900000000003, "0.00029650900000000003"],
    [1.8446744073709552e19, "1.8446744073709552e+19"],
    [Infinity, "+Inf"],
    [-Infinity, "-Inf"],
    [NaN, "NaN"],
    [-3.5, "-3.5"],
  ];
  for (const [v, s] of cases) assert.equal(formatValue(v), s, String(v));
});

test("etcd's bucket layouts", () => {
  const wal = exponentialBuckets(0.001, 2, 14);
  assert.equal(wal.length, 14);
  assert.equal(formatValue(wal[13]!), "8.192");
  assert.equal(formatValue(exponentialBuckets(0.0001, 2, 16)[15]!), "3.2768");
});

test("exposition: HELP/TYPE once per family, families and series sorted, labels sorted with le last", () => {
  const r = new Registry();
  const c = r.register(new Counter("b_total", "B things.", ["To"]));
  c.inc({ To: "z" }, 2);
  c.inc({ To: "a" });
  r.register(new Gauge("a_gauge", "A level with a \\ and\na newline.")).set(2.5);
  const h = r.register(new Histogram("c_seconds", "C latency.", [0.1, 1], ["op"]));
  h.observe(0.05, { op: "x" });
  h.observe(0.5, { op: "x" });
  h.observe(5, { op: "x" });
  r.register(new GaugeFunc("d_info", "D.", () => [{ labels: { v: 'q"uote' }, value: 1 }]));
  r.register(counterFunc("e_total", "E.", () => 7));
  r.register(new GaugeFunc("f_absent", "Nothing to report.", () => []));
  assert.equal(
    r.expose(),
    [
      "# HELP a_gauge A level with a \\\\ and\\na newline.",
      "# TYPE a_gauge gauge",
      "a_gauge 2.5",
      "# HELP b_total B things.",
      "# TYPE b_total counter",
      'b_total{To="a"} 1',
      'b_total{To="z"} 2',
      "# HELP c_seconds C latency.",
      "# TYPE c_seconds histogram",
      'c_seconds_bucket{op="x",le="0.1"} 1',
      'c_seconds_bucket{op="x",le="1"} 2',
      'c_seconds_bucket{op="x",le="+Inf"} 3',
      'c_seconds_sum{op="x"} 5.55',
      'c_seconds_count{op="x"} 3',
      "# HELP d_info D.",
      "# TYPE d_info gauge",
      'd_info{v="q\\"uote"} 1',
      "# HELP e_total E.",
      "# TYPE e_total counter",
      "e_total 7",
      "",
    ].join("\n"),
  );
});

test("a counter refuses to go down; registering a name twice is an error", () => {
  assert.throws(() => new Counter("c_total", "C.").inc({}, -1), RangeError);
  const r = new Registry();
  r.register(new Gauge("g", "G."));
  assert.throws(() => r.register(new Gauge("g", "G.")), /twice/);
});

test("process collector parsing: /proc/self/limits and /proc/self/stat", () => {
  const limits = [
    "Limit                     Soft Limit           Hard Limit           Units",
    "Max open files            20000                1048576              files",
    "Max address space         unlimited            unlimited            bytes",
  ].join("\n");
  assert.equal(parseLimit(limits, "Max open files"), 20000);
  assert.equal(parseLimit(limits, "Max address space"), 18446744073709552000);
  assert.equal(parseLimit(limits, "Max processes"), undefined);
  // A command name with spaces and a parenthesis does not shift the fields.
  const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
  fields[23 - 3] = "1333538816";
  assert.deepEqual(parseStat(`42 (node (x) y) ${fields.join(" ")}`), { vsize: 1333538816 });
});
