// Client (and peer) listeners: one node:http server per URL, all sharing the same handler.
// Timeouts bound slow clients; long-poll watches are exempt from the request timeout
// (they end on their own schedule). An https:// URL gets TLS from ../tls/: the HTTP server
// still accepts the TCP connections, but each one goes through the TLS acceptor (fresh
// credentials, handshake, client-certificate verdict) before HTTP sees it. A client
// listener may put a fast lane (fast-lane.ts) between the accepted connection (after TLS)
// and node:http. With `grpc`, a client listener is also etcd's cmux: connections that open
// with HTTP/2's preface go to the gRPC server (../grpc/mux.ts), the rest as above.
import { Server } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "../logger.ts";
import { createTlsAcceptor } from "../tls/acceptor.ts";
import type { ListenerTls } from "../tls/server-tls.ts";
import { FastLane, type FastHandler } from "./fast-lane.ts";
import { onClientError, trackRequest } from "./client-error.ts";
import { chooseAlpn, muxConnections } from "../grpc/mux.ts";

export interface Listener {
  url: URL;
  server: Server;
}

type Handler = ConstructorParameters<typeof Server>[1];

const KEEP_ALIVE_MS = 30_000;
const MAX_HEADER_BYTES = 16 * 1024;
const HEADERS_TIMEOUT_MS = 60_000;

/**
 * node:http's server, whose idle and forced connection closing (server.close() calls the
 * former) also reaches the connections its fast lane owns.
 */
class LaneServer extends Server {
  lane: FastLane | undefined;
  override closeIdleConnections(): void {
    super.closeIdleConnections();
    this.lane?.closeIdle();
  }
  override closeAllConnections(): void {
    super.closeAllConnections();
    this.lane?.destroyAll();
  }
}

export interface ListenOptions {
  traffic?: "client" | "peer";
  /** required for https:// URLs; ignored (with a warning, as etcd) for http:// ones */
  tls?: ListenerTls | undefined;
  /** Requests answered before node:http parses them (fast-lane.ts). */
  fast?: FastHandler;
  /** Takes the HTTP/2 (gRPC) connections of a client listener, after TLS if any. */
  grpc?: (socket: Socket) => void;
}

export async function listen(urls: readonly URL[], handler: Handler, log: Logger, opts: ListenOptions = {}): Promise<Listener[]> {
  const { traffic = "client", tls, fast, grpc } = opts;
  const out: Listener[] = [];
  for (const url of urls) {
    const server = new LaneServer({ keepAliveTimeout: KEEP_ALIVE_MS, headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: 0, maxHeaderSize: MAX_HEADER_BYTES }, handler);
    if (traffic === "client") {
      // Registered before the handler's listener: the request is known before anything awaits.
      server.prependListener("request", trackRequest);
      server.on("clientError", onClientError);
    }
    // node:http's own connection listener; the lane and TLS go in front of it.
    const httpConnection = server.listeners("connection") as ((socket: Socket) => void)[];
    server.removeAllListeners("connection");
    const toHttp = (socket: Socket): void => {
      for (const l of httpConnection) l.call(server, socket);
    };
    let accept = toHttp;
    if (fast !== undefined) {
      const lane = new FastLane({ handler: fast, toHttp, keepAliveMs: KEEP_ALIVE_MS, maxHeadBytes: MAX_HEADER_BYTES, headersTimeoutMs: HEADERS_TIMEOUT_MS });
      server.lane = lane;
      accept = (socket) => lane.accept(socket);
    }
    if (grpc !== undefined) accept = muxConnections(accept, grpc);
    if (url.protocol === "https:") {
      if (tls === undefined) throw new Error(`Cannot listen on ${url.href}: TLS key/cert are not presented`);
      secure(server, tls, log, accept, grpc === undefined ? undefined : chooseAlpn);
    } else {
      if (tls !== undefined) log.warn(`scheme is HTTP while key and cert files are present; ignoring key and cert files`, { [`${traffic}-url`]: url.origin });
      server.on("connection", accept);
    }
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      // A deep accept queue, as Go listens with the kernel's somaxconn: with Node's default of
      // 511, a burst of 1000 watchers connecting at once loses SYNs and waits ~1 s to retry.
      server.listen({ port: Number(url.port), host: url.hostname.replace(/^\[|\]$/g, ""), backlog: 4096 }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    log.info(`serving ${traffic} traffic`, { address: url.origin });
    out.push({ url, server });
  }
  return out;
}

/**
 * Puts the TLS acceptor between the server's accepted sockets and `next` (the lane or
 * node:http). Sockets are accepted paused, so no byte is read before the handshake owns them.
 */
function secure(server: Server, tls: ListenerTls, log: Logger, next: (socket: Socket) => void, alpn: ((offered: string[]) => string | undefined) | undefined): void {
  // net.Server reads this property for every accepted socket.
  (server as Server & { pauseOnConnect: boolean }).pauseOnConnect = true;
  const acceptor = createTlsAcceptor({ ...tls, log, ...(alpn === undefined ? {} : { alpn }) }, next);
  server.on("connection", (raw: Socket) => acceptor.accept(raw));
  server.on("close", () => acceptor.close());
}
