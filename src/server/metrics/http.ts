// /metrics (Prometheus text format) and /debug/vars (Go's expvar page, as etcd serves it).
import type { IncomingMessage, ServerResponse } from "node:http";
import { getHeapStatistics } from "node:v8";
import type { Status } from "../../raft/index.ts";
import { corsHeaders, writeError } from "../http/respond.ts";
import { handleHealth, type HealthHost } from "../http/info-handlers.ts";
import type { MemberMetrics } from "./member-metrics.ts";
import { maxFds } from "./process.ts";
import { CONTENT_TYPE } from "./registry.ts";

export function handleMetrics(req: IncomingMessage, res: ServerResponse, metrics: MemberMetrics): void {
  req.resume();
  const body = metrics.expose();
  res.writeHead(200, { ...corsHeaders, "Content-Type": CONTENT_TYPE, "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

/** What /debug/vars reads of the member. */
export interface DebugVarsHost {
  raftStatus(): Status;
}

/** etcd's expvar "raft.status" (raft.Status.MarshalJSON). */
export function raftStatusJSON(kv: DebugVarsHost): Record<string, unknown> {
  const s = kv.raftStatus();
  const hex = (n: number): string => n.toString(16);
  const out: Record<string, unknown> = {
    id: hex(s.id),
    term: s.hardState.term,
    vote: hex(s.hardState.vote),
    commit: s.hardState.commit,
    lead: hex(s.softState.lead),
    raftState: s.softState.raftState,
    applied: s.applied,
    progress: Object.fromEntries([...(s.progress ?? [])].map(([id, p]) => [hex(id), { match: p.match, next: p.next, state: p.state }])),
    leadtransferee: hex(s.leadTransferee),
  };
  return out;
}

/** Go's runtime.MemStats names for what V8 reports (the fields Node can measure). */
function memstats(): Record<string, number> {
  const m = process.memoryUsage();
  const h = getHeapStatistics();
  return {
    Alloc: m.heapUsed + m.external,
    Sys: m.rss,
    HeapAlloc: m.heapUsed,
    HeapSys: m.heapTotal,
    HeapIdle: m.heapTotal - m.heapUsed,
    HeapInuse: m.heapUsed,
    NextGC: h.heap_size_limit,
    External: m.external,
    ArrayBuffers: m.arrayBuffers,
  };
}

/** The expvar page: keys sorted, one per line, in Go's expvar layout. */
export function debugVarsBody(kv: DebugVarsHost): string {
  const vars: Record<string, unknown> = {
    cmdline: ["kvctl", ...process.argv.slice(2)],
    file_descriptor_limit: maxFds() ?? 0,
    memstats: memstats(),
    "raft.status": raftStatusJSON(kv),
  };
  const lines = Object.keys(vars)
    .sort()
    .map((k) => `${JSON.stringify(k)}: ${JSON.stringify(vars[k])}`);
  return `{\n${lines.join(",\n")}\n}\n`;
}

export function handleDebugVars(req: IncomingMessage, res: ServerResponse, kv: DebugVarsHost): void {
  req.resume();
  const body = debugVarsBody(kv);
  res.writeHead(200, { ...corsHeaders, "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

/** What the metrics listener uses of the member: /health, and the cluster id its errors carry. */
export interface MetricsRouterHost extends HealthHost {
  readonly clusterId: number;
}

/** The --listen-metrics-urls handler: etcd's metrics mux serves /metrics and /health only. */
export function createMetricsRouter(kv: MetricsRouterHost, metrics: MemberMetrics): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const fail = (err: unknown): void => writeError(req, res, err, { clusterId: kv.clusterId.toString(16) });
    try {
      if (path === "/metrics") return handleMetrics(req, res, metrics);
      if (path === "/health") return void handleHealth(req, res, kv).catch(fail);
      req.resume();
      const body = "404 page not found\n";
      res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff", "Content-Length": Buffer.byteLength(body) });
      res.end(body);
    } catch (err) {
      fail(err);
    }
  };
}
