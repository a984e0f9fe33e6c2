// The v2 proxy process (`kvctl serve --proxy on|readonly`, etcd's startProxy): no member, no
// Raft, no store; it listens on --listen-client-urls (TLS ended here, --cert-file) and sends
// every request to a member's client URL, dialling with its own peer certificate (spec 5.2
// rule 5). See README.md.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Agent } from "node:http";
import type { ConnectionOptions } from "node:tls";
import { createAgent, type PeerTlsClient } from "../../transport/index.ts";
import { listen, type Listener } from "../http/listener.ts";
import { clientListenerTls, preparePeerTls, type ListenerTls } from "../tls/server-tls.ts";
import { srvClusterFromConfig, withSrvDomainCheck } from "../discovery-srv.ts";
import type { ServerConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import { Director } from "./director.ts";
import { clusterFromPeers, proxyDir, readClusterFile, writeClusterFile } from "./cluster.ts";
import { createReverseProxy } from "./reverse.ts";

export interface RunningProxy {
  listeners: Listener[];
  director: Director;
  stop(): Promise<void>;
}

/** etcd's refresh loop retries every second while no endpoint is known and the interval is this long or longer. */
const LONG_REFRESH_MS = 30_000;
/** etcd's GetClusterFromRemotePeers timeout. */
const MEMBERS_TIMEOUT_MS = 10_000;

/**
 * Decides as etcd does: a data dir that holds a member starts a member; one that holds a
 * proxy starts a proxy, whatever --proxy says; an empty one follows --proxy.
 */
export function wantsProxy(config: Pick<ServerConfig, "dataDir" | "proxy">): boolean {
  if (existsSync(join(config.dataDir, "member"))) return false;
  if (existsSync(proxyDir(config.dataDir))) return true;
  return config.proxy.mode !== "off";
}

/** Starts the proxy when wantsProxy(config); undefined means: start a member instead. */
export async function startProxyIfConfigured(config: ServerConfig, log: Logger): Promise<RunningProxy | undefined> {
  return wantsProxy(config) ? startProxy(config, log) : undefined;
}

/** Client TLS used for dialling when no peer certificate is configured (etcd's proxy prefers client TLS; spec 5.2 the peer one). */
function fromClientTls(tls: ListenerTls | undefined, autoTls: boolean): PeerTlsClient | undefined {
  if (tls === undefined) return undefined;
  return { clientOptions: async (): Promise<ConnectionOptions> => ({ secureContext: await tls.credentials.current(), rejectUnauthorized: !autoTls }) };
}

async function initialPeerUrls(config: ServerConfig, log: Logger): Promise<string[]> {
  const fromFile = await readClusterFile(config.dataDir);
  if (fromFile !== undefined) {
    if (config.discoverySrv !== "") log.warn("DNS SRV discovery ignored since the proxy has already been initialized; valid cluster file found");
    log.info("proxy using peer URLs from cluster file", { "peer-urls": fromFile });
    return fromFile;
  }
  if (config.discovery !== "") {
    const { discoveryPeerUrls } = await import("../discovery.ts");
    const urls = await discoveryPeerUrls(config.discovery, { log, ...(config.discoveryProxy === undefined ? {} : { proxy: config.discoveryProxy }) });
    log.info("proxy using peer URLs", { "peer-urls": urls });
    return urls;
  }
  const cluster = config.discoverySrv !== "" ? await srvClusterFromConfig(config, log, { requireLocal: false }) : config.initialCluster;
  const urls = [...cluster.values()].flat();
  log.info("proxy using peer URLs", { "peer-urls": urls });
  return urls;
}

export async function startProxy(config: ServerConfig, log: Logger): Promise<RunningProxy> {
  const mode = config.proxy.mode === "readonly" ? "readonly" : "on";
  log.info("v2 API proxy starting", { proxy: mode });
  await mkdir(proxyDir(config.dataDir), { recursive: true, mode: 0o700 });
  const clientTls = await clientListenerTls(config, log);
  const memberTls = (await preparePeerTls(config, log)) ?? fromClientTls(clientTls, config.clientTls.autoTls);
  const agents: { http: Agent; https: Agent } = {
    http: createAgent({ keepAlive: true, maxFreeSockets: 128 }),
    https: createAgent({ keepAlive: true, maxFreeSockets: 128 }, memberTls ?? { clientOptions: async () => ({}) }),
  };
  // The member list is read from the peer port: there the SRV domain check applies.
  const peerAgents = {
    http: createAgent({ keepAlive: false }),
    https: createAgent({ keepAlive: false }, withSrvDomainCheck(memberTls, config.discoverySrv) ?? { clientOptions: async () => ({}) }),
  };

  let peerUrls = await initialPeerUrls(config, log);
  const director = new Director({ failureWaitMs: config.proxy.failureWaitMs, log });
  let announced = false;
  const refresh = async (): Promise<void> => {
    const view = await clusterFromPeers({ peerUrls, agents: peerAgents, timeoutMs: MEMBERS_TIMEOUT_MS, log });
    if (view === undefined) {
      log.warn("proxy: could not retrieve cluster information from the given URLs", { "peer-urls": peerUrls });
      director.setUrls([]);
      return;
    }
    director.setUrls(view.clientUrls);
    if (view.peerUrls.length > 0) {
      await writeClusterFile(config.dataDir, view.peerUrls).catch((err: unknown) => log.warn("proxy failed to write cluster file", { error: String(err) }));
      if (view.peerUrls.join(",") !== [...peerUrls].sort().join(",")) log.info("proxy updated peer URLs", { from: peerUrls, to: view.peerUrls });
      peerUrls = view.peerUrls;
    }
    if (!announced && view.clientUrls.length > 0) {
      announced = true;
      log.info("endpoints found", { endpoints: director.all() });
    }
  };
  await refresh();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const loop = (): void => {
    const long = config.proxy.refreshIntervalMs >= LONG_REFRESH_MS;
    const wait = long && director.endpoints().length === 0 ? 1000 : Math.max(1, config.proxy.refreshIntervalMs);
    timer = setTimeout(() => {
      void refresh().finally(() => {
        if (!stopped) loop();
      });
    }, wait);
  };
  loop();

  const handler = createReverseProxy({
    director,
    agents,
    timeouts: { dialMs: config.proxy.dialTimeoutMs, writeMs: config.proxy.writeTimeoutMs, readMs: config.proxy.readTimeoutMs },
    readonly: mode === "readonly",
    log,
  });
  let listeners: Listener[];
  try {
    listeners = await listen(config.listenClientUrls, handler, log, { tls: clientTls });
  } catch (err) {
    stopped = true;
    clearTimeout(timer);
    throw err;
  }
  log.info("v2 proxy started listening on client requests", { urls: listeners.map((l) => l.url.origin) });
  return {
    listeners,
    director,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      for (const l of listeners) {
        l.server.close();
        l.server.closeAllConnections();
      }
      for (const a of [agents.http, agents.https, peerAgents.http, peerAgents.https]) a.destroy();
      log.info("stopped");
    },
  };
}
