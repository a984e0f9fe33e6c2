// Server assembly: the KV server, its client listeners and graceful shutdown. The one place
// that holds the KvServer itself: everything it is handed to sees it through the narrow
// host interface declared beside that consumer (test/architecture.test.ts holds that).
import type { ServerResponse } from "node:http";
import { KvServer } from "./kv-server.ts";
import { listen, type BoundListener, type Listener } from "./http/listener.ts";
import { createPeerRouter } from "./http/peer-router.ts";
import type { GrpcServer } from "./grpc/server.ts";
import { tlsConfigured } from "./tls/configured.ts";
import { withSrvDomainCheck } from "./discovery-srv.ts";
import { MemberMetrics } from "./metrics/member-metrics.ts";
import { notifyReady, notifyTargetFromEnv } from "./systemd-notify.ts";
import type { ServerConfig } from "./config.ts";
import type { Logger } from "./logger.ts";

export interface RunningServer {
  listeners: Listener[];
  stop(): Promise<void>;
}

/**
 * Starts a member. `bound`: peer and client listeners bound ahead (bindListeners), which it
 * takes over once the member is ready; the caller closes them if this throws.
 */
export async function startServer(config: ServerConfig, log: Logger, bound: readonly BoundListener[] = []): Promise<RunningServer> {
  // Credentials load (or auto TLS creates them) before anything starts: a bad file is a
  // startup error, and nothing is left running. The TLS modules load only with TLS flags.
  const serverTls = tlsConfigured(config.clientTls) || tlsConfigured(config.peerTls) ? await import("./tls/server-tls.ts") : undefined;
  const clientTls = await serverTls?.clientListenerTls(config, log);
  const peerTls = withSrvDomainCheck(await serverTls?.preparePeerTls(config, log), config.discoverySrv);
  let stop: () => Promise<void> = async () => undefined;
  // A member removed from the cluster stops, as etcd's does.
  // KV_TRACE_WRITES=N (a debugging aid, not an etcd flag): every Nth write traced end to end.
  const traceWritesEvery = Number(process.env["KV_TRACE_WRITES"] ?? 0);
  const kv = new KvServer({ config, logger: log, onRemoved: () => void stop().then(() => process.exit(0)), traceWritesEvery, ...(peerTls === undefined ? {} : { peerTls }) });
  await kv.start();
  // Prometheus metrics: counters the server feeds, the peers' traffic, gRPC calls.
  const metrics = new MemberMetrics(kv, { level: config.metrics });
  kv.transport.observer = metrics.transportObserver();
  const watches = new Set<ServerResponse>();
  const opened: Listener[] = [];
  let peerListeners: Listener[];
  let listeners: Listener[];
  let grpc: GrpcServer | undefined;
  try {
    peerListeners = await listen(config.listenPeerUrls, createPeerRouter(kv), log, { traffic: "peer", tls: peerTls?.listener }, bound);
    opened.push(...peerListeners);
    const { createRouter, keysFastGet, keysFast, keysFastWrite, v3FastKv, firstOf, V3Service, GrpcServer, LeaderMonitor, createRpcTable, grpcRecvLimit, createMetricsRouter } = await import("./client-api.ts");
    // v3 streams (watch, keepalive) join the v2 watches: shutdown ends them all.
    const v3Gateway = { backend: new V3Service(kv), maxRequestBytes: config.maxRequestBytes, maxTxnOps: config.maxTxnOps, streams: watches, watchMetrics: kv.metrics.watch, clientRequests: kv.metrics.clientRequest.bind(kv.metrics) };
    const routes = { server: kv, clusterId: kv.clusterId.toString(16), watches, v3Gateway, metrics };
    // The same backend serves etcd's gRPC API on the client port (grpc/: cmux, HTTP/2).
    grpc = new GrpcServer(createRpcTable(v3Gateway), { maxRecvBytes: grpcRecvLimit(v3Gateway), clientCertAuth: clientTls?.clientCertAuth ?? false, observer: metrics.grpc, onRequest: () => kv.noteClientRequest(), maxConcurrentStreams: config.maxConcurrentStreams, keepAlive: config.grpcKeepAlive, leader: new LeaderMonitor(() => kv.leaderId !== 0, config.electionTimeout) });
    metrics.attachGrpc(grpc);
    const toGrpc = grpc;
    // Plain key reads and writes, and v3 puts and ranges, skip node:http (fast-lane.ts); everything else goes through the router.
    const router = createRouter(routes);
    const tracer = kv.tracer;
    const handler: typeof router = tracer.enabled ? (req, res) => tracer.around(req, res, () => router(req, res)) : router;
    listeners = await listen(config.listenClientUrls, handler, log, { tls: clientTls, fast: firstOf(v3FastKv(routes, tracer.enabled ? tracer : undefined), keysFast(keysFastGet(routes), keysFastWrite(routes, tracer.enabled ? tracer : undefined))), grpc: (socket) => toGrpc.accept(socket) }, bound);
    // --listen-metrics-urls: /metrics and /health only, as etcd's metrics mux.
    if (config.listenMetricsUrls.length > 0) {
      const metricsListeners = await listen(config.listenMetricsUrls, createMetricsRouter(kv, metrics), log, { tls: clientTls });
      opened.push(...metricsListeners);
      listeners.push(...metricsListeners);
    }
  } catch (err) {
    // A port in use (or any listener failure) after the member started: stop it cleanly
    // (WAL closed, timers cleared) so the process can exit with the error.
    await kv.stop().catch(() => undefined);
    for (const l of opened) l.server.close();
    grpc?.close();
    throw err;
  }
  // Publish name and client URLs through the log; retried until it lands (needs a leader).
  void (async () => {
    for (let attempt = 0; attempt < 100; attempt++) {
      try {
        await kv.publish();
        log.info("published member attributes", { name: config.name, clientUrls: config.advertiseClientUrls });
        // etcd tells systemd it is ready at this point (its ReadyNotify): joined and published.
        notifyReady(notifyTargetFromEnv(process.env), log);
        return;
      } catch (err) {
        log.warn("failed to publish member attributes, retrying", { error: String(err) });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  })();

  let stopping: Promise<void> | undefined;
  stop = (): Promise<void> => {
    stopping ??= (async () => {
      for (const l of listeners) l.server.close();
      // Open watches end as etcd ends them on shutdown: 200 with an empty body.
      for (const w of watches) w.end();
      watches.clear();
      grpc?.close();
      await kv.stop();
      for (const l of [...listeners, ...peerListeners]) {
        l.server.close();
        l.server.closeAllConnections();
      }
      log.info("stopped");
    })();
    return stopping;
  };
  return { listeners, stop };
}
