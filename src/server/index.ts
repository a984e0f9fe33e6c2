// Server assembly: the KV server, its client listeners and graceful shutdown. The one place
// that holds the KvServer itself: everything it is handed to sees it through the narrow
// host interface declared beside that consumer (test/architecture.test.ts holds that).
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
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

/** How long after it serves clients a member loads the gRPC modules if no gRPC client asked yet. */
const GRPC_WARM_UP_MS = 1000;

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
  metrics.attachTransport(kv.transport);
  const watches = new Set<ServerResponse>();
  const opened: Listener[] = [];
  let peerListeners: Listener[];
  // The client listeners join once the member published itself (below); metrics ones at once.
  const listeners: Listener[] = [];
  let serveClients: () => Promise<void>;
  let grpc: GrpcServer | undefined;
  let stopping: Promise<void> | undefined;
  try {
    peerListeners = await listen(config.listenPeerUrls, createPeerRouter(kv), log, { traffic: "peer", tls: peerTls?.listener }, bound);
    opened.push(...peerListeners);
    const { createRouter, keysFastGet, keysFast, keysFastWrite, v3FastKv, firstOf, V3Service, LeaderMonitor, createMetricsRouter } = await import("./client-api.ts");
    // v3 streams (watch, keepalive) join the v2 watches: shutdown ends them all.
    const v3Gateway = { backend: new V3Service(kv), maxRequestBytes: config.maxRequestBytes, maxTxnOps: config.maxTxnOps, streams: watches, watchMetrics: kv.metrics.watch, clientRequests: kv.metrics.clientRequest.bind(kv.metrics) };
    const routes = { server: kv, clusterId: kv.clusterId.toString(16), watches, v3Gateway, metrics };
    // The same backend serves etcd's gRPC API on the client port (grpc/: cmux, HTTP/2). Its
    // modules (@bufbuild/protobuf building etcd's descriptors: ~45 ms of CPU at load 8, 85%
    // of the client API's) load with the first gRPC connection, which waits for them paused,
    // or GRPC_WARM_UP_MS after the client listener serves: HTTP clients do not wait for them.
    const leader = new LeaderMonitor(() => kv.leaderId !== 0, config.electionTimeout);
    const grpcOptions = { clientCertAuth: clientTls?.clientCertAuth ?? false, observer: metrics.grpc, onRequest: () => kv.noteClientRequest(), maxConcurrentStreams: config.maxConcurrentStreams, keepAlive: config.grpcKeepAlive, leader };
    let grpcApi: Promise<GrpcServer | undefined> | undefined;
    const loadGrpc = (): Promise<GrpcServer | undefined> =>
      (grpcApi ??= import("./grpc-api.ts").then(({ createGrpcServer }) => {
        if (stopping !== undefined) return undefined;
        grpc = createGrpcServer(v3Gateway, grpcOptions);
        metrics.attachGrpc(grpc);
        return grpc;
      }));
    const toGrpc = (socket: Socket): void => {
      void loadGrpc().then(
        (g) => (g === undefined || socket.destroyed ? socket.destroy() : g.accept(socket)),
        (err: unknown) => {
          log.error("cannot serve gRPC", { error: err instanceof Error ? err.message : String(err) });
          socket.destroy();
        },
      );
    };
    // Plain key reads and writes, and v3 puts and ranges, skip node:http (fast-lane.ts); everything else goes through the router.
    const router = createRouter(routes);
    const tracer = kv.tracer;
    const handler: typeof router = tracer.enabled ? (req, res) => tracer.around(req, res, () => router(req, res)) : router;
    const lanes = { tls: clientTls, fast: firstOf(v3FastKv(routes, tracer.enabled ? tracer : undefined), keysFast(keysFastGet(routes), keysFastWrite(routes, tracer.enabled ? tracer : undefined))), grpc: toGrpc };
    serveClients = async () => {
      listeners.push(...(await listen(config.listenClientUrls, handler, log, lanes, bound)));
      // Without a gRPC connection to ask for them sooner, its modules load a moment after:
      // the HTTP requests that waited for the publish are answered first.
      setTimeout(() => void loadGrpc().catch(() => undefined), GRPC_WARM_UP_MS).unref();
    };
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
  // Publish name and client URLs through the log; retried until it lands (needs a leader)
  // or the member stops, as etcd's publish. Only then are clients served: etcd's client
  // listeners wait for its ReadyNotify, so a member that cannot publish (no quorum, or
  // peers that refuse it: a wrong --initial-cluster-token) holds client connections
  // unanswered, /health and /version too (etcd 3.4.23: curl times out, etcdctl 'context
  // deadline exceeded'), where kvctl answered reads from its empty state.
  void (async () => {
    while (stopping === undefined) {
      try {
        await kv.publish();
      } catch (err) {
        if (stopping !== undefined) return;
        log.warn("failed to publish member attributes, retrying", { error: String(err) });
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      log.info("published member attributes", { name: config.name, clientUrls: config.advertiseClientUrls });
      if (stopping !== undefined) return;
      try {
        await serveClients();
      } catch (err) {
        log.error("cannot serve clients", { error: err instanceof Error ? err.message : String(err) });
        void stop().then(() => process.exit(1));
        return;
      }
      // etcd tells systemd it is ready at this point (its ReadyNotify): joined and published.
      notifyReady(notifyTargetFromEnv(process.env), log);
      return;
    }
  })();

  stop = (): Promise<void> => {
    stopping ??= (async () => {
      // Client listeners bound ahead and never taken over (the member had not published).
      for (const b of bound) if (config.listenClientUrls.some((u) => u.href === b.url.href) && !listeners.some((l) => l.url.href === b.url.href)) b.close();
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
