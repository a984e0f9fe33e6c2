import { test } from "node:test";
import assert from "node:assert/strict";
import { Counter, Registry } from "./registry.ts";
import { GrpcMetrics, codeName } from "./grpc-metrics.ts";

function metrics(extensive: boolean): { g: GrpcMetrics; text: () => string } {
  const sent = new Counter("etcd_network_client_grpc_sent_bytes_total", "S.");
  const received = new Counter("etcd_network_client_grpc_received_bytes_total", "R.");
  const g = new GrpcMetrics({ extensive, sentBytes: sent, receivedBytes: received });
  const r = new Registry();
  for (const f of [...g.families(), sent, received]) r.register(f);
  return { g, text: () => r.expose() };
}

test("grpc-go's code names", () => {
  assert.equal(codeName(0), "OK");
  assert.equal(codeName(1), "Canceled");
  assert.equal(codeName(5), "NotFound");
  assert.equal(codeName(16), "Unauthenticated");
  assert.equal(codeName(42), "Code(42)");
});

test("calls are counted by method, service, type and code; unknown paths are not", () => {
  const { g, text } = metrics(false);
  g.callStarted("/etcdserverpb.KV/Range");
  g.callHandled("/etcdserverpb.KV/Range", 0, 3);
  g.callStarted("/etcdserverpb.Watch/Watch");
  g.callHandled("/etcdserverpb.Watch/Watch", 1, 50);
  g.callStarted("/nope.Service/Method");
  g.callHandled("/nope.Service/Method", 12, 1);
  g.traffic(100, 250);
  const t = text();
  assert.match(t, /^grpc_server_started_total\{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"\} 1$/m);
  assert.match(t, /^grpc_server_handled_total\{grpc_code="OK",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"\} 1$/m);
  assert.match(t, /^grpc_server_handled_total\{grpc_code="Canceled",grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"\} 1$/m);
  assert.doesNotMatch(t, /nope/);
  assert.doesNotMatch(t, /grpc_server_handling_seconds/, "basic level: no handling histogram");
  assert.match(t, /^etcd_network_client_grpc_received_bytes_total 100$/m);
  assert.match(t, /^etcd_network_client_grpc_sent_bytes_total 250$/m);
});

test("every method and code is at 0 from the first scrape (go-grpc-prometheus InitializeMetrics)", () => {
  const { g, text } = metrics(false);
  assert.doesNotMatch(text(), /grpc_code="Aborted"/, "not before initializeSeries: it costs the start-up");
  g.initializeSeries();
  const t = text();
  const handled = t.split("\n").filter((l) => l.startsWith("grpc_server_handled_total{"));
  const started = t.split("\n").filter((l) => l.startsWith("grpc_server_started_total{"));
  assert.equal(handled.length, started.length * 17);
  assert.ok(started.some((l) => l.includes('grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"')));
  assert.ok(started.some((l) => l.includes('grpc_method="Snapshot",grpc_service="etcdserverpb.Maintenance",grpc_type="server_stream"')));
  assert.ok(started.some((l) => l.includes('grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"')));
});

test("--metrics extensive adds grpc_server_handling_seconds", () => {
  const { g, text } = metrics(true);
  g.callStarted("/etcdserverpb.KV/Put");
  g.callHandled("/etcdserverpb.KV/Put", 0, 7);
  const t = text();
  assert.match(t, /^# TYPE grpc_server_handling_seconds histogram$/m);
  assert.match(t, /^grpc_server_handling_seconds_bucket\{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary",le="0.01"\} 1$/m);
  assert.match(t, /^grpc_server_handling_seconds_count\{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"\} 1$/m);
});

test("client requests by etcd's call type: unary methods (Lock and Election's too), streams (Watch, keepalive, Observe); unknown paths none", () => {
  const seen: string[] = [];
  const sent = new Counter("s", "S.");
  const received = new Counter("r", "R.");
  const g = new GrpcMetrics({ extensive: false, sentBytes: sent, receivedBytes: received, clientRequest: (type, v) => void seen.push(`${type}/${v ?? "-"}`) });
  g.clientRequest("/etcdserverpb.KV/Range", "3.4");
  g.clientRequest("/etcdserverpb.Watch/Watch", "3.4");
  g.clientRequest("/etcdserverpb.Lease/LeaseKeepAlive", undefined);
  g.clientRequest("/etcdserverpb.Maintenance/Snapshot", undefined);
  g.clientRequest("/v3lockpb.Lock/Lock", "3.4");
  g.clientRequest("/v3electionpb.Election/Observe", "3.4");
  g.clientRequest("/nope.Service/Method", "3.4");
  assert.deepEqual(seen, ["unary/3.4", "stream/3.4", "stream/-", "stream/-", "unary/3.4", "stream/3.4"]);
});
