import { test } from "node:test";
import assert from "node:assert/strict";
import { Counter, Histogram, Registry } from "../../src/server/metrics/registry.ts";
import { parseExposition } from "./prometheus.ts";

test("the exposition parses back (test/helpers/prometheus.ts) into the same families and values", () => {
  const r = new Registry();
  const c = r.register(new Counter("x_total", "X.", ["grpc_code", "grpc_method"]));
  c.touch({ grpc_code: "OK", grpc_method: "Range" });
  c.inc({ grpc_code: "Unknown", grpc_method: "Put" }, 3);
  r.register(new Histogram("y_seconds", "Y.", [1])).observe(2);
  const parsed = parseExposition(r.expose());
  assert.equal(parsed.get("x_total")?.type, "counter");
  assert.deepEqual([...(parsed.get("x_total")?.labelNames ?? [])].sort(), ["grpc_code", "grpc_method"]);
  assert.equal(parsed.get("x_total")?.samples.find((s) => s.labels["grpc_method"] === "Put")?.value, 3);
  assert.equal(parsed.get("y_seconds")?.samples.find((s) => s.name === "y_seconds_count")?.value, 1);
});

test("the parser refuses lines that are not exposition text", () => {
  assert.throws(() => parseExposition("not a metric line at all\n"), /not an exposition line/);
  assert.throws(() => parseExposition('x{a="1",b} 1\n'), /bad labels/);
});
