import { test } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "./registry.ts";
import { V2HttpMetrics, v2MetricMethod } from "./v2-http-metrics.ts";

function expose(m: V2HttpMetrics): string {
  const r = new Registry();
  for (const f of m.families()) r.register(f);
  return r.expose();
}

test("etcd's methodFromRequest: a quorum GET is QGET, a quorum HEAD stays HEAD", () => {
  assert.equal(v2MetricMethod("GET", true), "QGET");
  assert.equal(v2MetricMethod("GET", false), "GET");
  assert.equal(v2MetricMethod("HEAD", true), "HEAD");
  assert.equal(v2MetricMethod("PUT", true), "PUT");
});

test("no etcd_http_* series before a v2 request, as etcd's vectors show none until used", () => {
  const m = new V2HttpMetrics();
  assert.doesNotMatch(expose(m), /etcd_http/);
  m.of("PUT"); // taking a method's series creates none of its series yet
  assert.doesNotMatch(expose(m), /etcd_http/);
  // The store's watch counter is a plain counter: 0 from the start, as etcd's.
  assert.match(expose(m), /^etcd_debugging_store_watch_requests_total 0$/m);
});

test("received, failed by method and code, successes timed in etcd's buckets (0.5 ms .. 2.048 s)", () => {
  const m = new V2HttpMetrics();
  const put = m.of("PUT");
  put.received();
  put.received();
  put.succeeded(1000, 1000.7); // 0.7 ms: the 1 ms bucket
  put.failed(412);
  const qget = m.of("QGET");
  qget.failed(404);
  assert.equal(m.of("PUT"), put, "one series object per method");
  const text = expose(m);
  const lines = text.split("\n");
  assert.ok(lines.includes('etcd_http_received_total{method="PUT"} 2'));
  assert.ok(!text.includes('etcd_http_received_total{method="QGET"}'), "a failure alone does not make a received series");
  // Series ordered by code, then method: client_golang sorts by label values in label name order.
  const failed = lines.filter((l) => l.startsWith("etcd_http_failed_total{"));
  assert.deepEqual(failed, ['etcd_http_failed_total{code="404",method="QGET"} 1', 'etcd_http_failed_total{code="412",method="PUT"} 1']);
  assert.ok(lines.includes('etcd_http_successful_duration_seconds_bucket{method="PUT",le="0.0005"} 0'));
  assert.ok(lines.includes('etcd_http_successful_duration_seconds_bucket{method="PUT",le="0.001"} 1'));
  assert.ok(lines.includes('etcd_http_successful_duration_seconds_bucket{method="PUT",le="2.048"} 1'));
  assert.ok(lines.includes('etcd_http_successful_duration_seconds_count{method="PUT"} 1'));
  assert.equal(lines.filter((l) => l.startsWith('etcd_http_successful_duration_seconds_bucket{method="PUT"')).length, 14, "13 buckets and +Inf");
  assert.ok(lines.includes("# TYPE etcd_http_successful_duration_seconds histogram"));
  assert.ok(lines.includes("# HELP etcd_http_received_total Counter of requests received into the system (successfully parsed and authd)."));
  assert.ok(!text.includes('method="QGET",le='), "QGET never succeeded: no histogram series");
});
