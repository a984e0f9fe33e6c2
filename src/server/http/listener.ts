// Client (and peer) listeners: one node:http server per URL, all sharing the same handler.
// Timeouts bound slow clients; long-poll watches are exempt from the request timeout
// (they end on their own schedule). An https:// URL gets TLS from ../tls/: the HTTP server
// still accepts the TCP connections, but each one goes through the TLS acceptor (fresh
// credentials, handshake, client-certificate verdict) before HTTP sees it. A client
// listener may put a fast lane (fast-lane.ts) between the accepted connection (after TLS)
// and node:http. With `grpc`, a client listener is also etcd's cmux: connections that open
// with HTTP/2's preface go to the gRPC server (../grpc/mux.ts), the rest as above.
import { Server, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "../logger.ts";
import type { createTlsAcceptor } from "../tls/acceptor.ts";
import type { ListenerTls } from "../tls/server-tls.ts";
import { FastLane, type FastHandler } from "./fast-lane.ts";
import { goHeadRefusal, goTargetRefused, onClientError, trackRequest } from "./client-error.ts";
import { chooseAlpn, muxConnections } from "../grpc/mux.ts";

export interface Listener {
  url: URL;
  server: Server;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const KEEP_ALIVE_MS = 30_000;
/** The lane's limit: a longer head goes to node:http. */
const MAX_HEADER_BYTES = 16 * 1024;
/** node:http's, as Go's server (etcd's): DefaultMaxHeaderBytes plus its 4096 bytes of slack, then 431. */
const GO_MAX_HEADER_BYTES = (1 << 20) + 4096;
const HEADERS_TIMEOUT_MS = 60_000;

/**
 * node:http's server, whose idle and forced connection closing (server.close() calls the
 * former) also reaches the connections its fast lane owns.
 */
class LaneServer extends Server {
  lane: FastLane | undefined;
  /** node:http's own connection listener, taken off the server: the lane, TLS and mux go in front of it. */
  readonly httpConnection: ((socket: Socket) => void)[];
  /** net.Server reads it for every accepted socket (not in @types/node). */
  declare pauseOnConnect: boolean;
  constructor() {
    super({ keepAliveTimeout: KEEP_ALIVE_MS, headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: 0, maxHeaderSize: GO_MAX_HEADER_BYTES });
    this.httpConnection = this.listeners("connection") as ((socket: Socket) => void)[];
    this.removeAllListeners("connection");
  }
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

/**
 * A listening socket bound before its handler exists (bindListeners): connections that
 * arrive meanwhile are accepted and held, unread, until listen() takes it over and hands
 * them to the handler, so a peer or client that connects while the member starts waits
 * instead of being refused (and backing off). Nothing is answered before listen().
 */
export interface BoundListener {
  readonly url: URL;
  /** @internal taken over by listen() */
  readonly server: LaneServer;
  /** @internal the held connections, handed over once by listen() */
  release(accept: (socket: Socket) => void): void;
  /** Closes it and the connections it holds (a start-up that failed). */
  close(): void;
}

async function bindServer(server: Server, url: URL): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // A deep accept queue, as Go listens with the kernel's somaxconn: with Node's default of
    // 511, a burst of 1000 watchers connecting at once loses SYNs and waits ~1 s to retry.
    server.listen({ port: Number(url.port), host: url.hostname.replace(/^\[|\]$/g, ""), backlog: 4096 }, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/** Binds every URL now (see BoundListener); on a failure closes those already bound and throws. */
export async function bindListeners(urls: readonly URL[]): Promise<BoundListener[]> {
  const out: BoundListener[] = [];
  try {
    for (const url of urls) {
      const server = new LaneServer();
      // A TLS socket must not be read before the acceptor owns it (as secure() accepts them);
      // a plain one buffers what arrives, which node:http reads once it is handed over.
      if (url.protocol === "https:") server.pauseOnConnect = true;
      const held = new Set<Socket>();
      const drop = function (this: Socket): void {
        this.destroy();
      };
      const hold = (socket: Socket): void => {
        held.add(socket);
        socket.on("error", drop);
        socket.once("close", () => held.delete(socket));
      };
      server.on("connection", hold);
      await bindServer(server, url);
      out.push({
        url,
        server,
        release(accept) {
          server.off("connection", hold);
          for (const socket of held) {
            socket.off("error", drop);
            if (!socket.destroyed) accept(socket);
          }
          held.clear();
        },
        close() {
          server.close();
          for (const socket of held) socket.destroy();
          held.clear();
        },
      });
    }
  } catch (err) {
    for (const b of out) b.close();
    throw err;
  }
  return out;
}

export async function listen(urls: readonly URL[], handler: Handler, log: Logger, opts: ListenOptions = {}, bound: readonly BoundListener[] = []): Promise<Listener[]> {
  const { traffic = "client", tls, fast, grpc } = opts;
  // The TLS acceptor (node:tls) loads only for https:// URLs.
  const acceptor = urls.some((u) => u.protocol === "https:") ? await import("../tls/acceptor.ts") : undefined;
  const out: Listener[] = [];
  for (const url of urls) {
    const early = bound.find((b) => b.url.href === url.href);
    const server = early?.server ?? new LaneServer();
    if (traffic === "client") {
      server.on("request", handler);
      // Registered before the handler's listener: the request is known before anything awaits.
      server.prependListener("request", trackRequest);
      server.on("clientError", onClientError);
      // Go answers 100 Continue when the handler reads a body: none without one, nor for a head
      // it refuses (kvctl still sends it for a body its handler then ignores). Any other
      // expectation is 417 with an empty, Content-Length-framed body, once the head is read
      // (a head Go refuses is the router's); an empty one is none.
      const refused = (req: IncomingMessage): boolean => goTargetRefused(req.url ?? "/") || goHeadRefusal(req.rawHeaders, req.httpVersion) !== undefined;
      server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
        const body = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
        if (body && !refused(req)) res.writeContinue();
        server.emit("request", req, res);
      });
      server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
        if ((req.headers.expect ?? "").trim() === "" || refused(req)) {
          server.emit("request", req, res);
          return;
        }
        trackRequest(req, res);
        req.resume();
        res.writeHead(417, { Connection: "close", "Content-Length": "0" });
        res.end();
      });
    } else {
      server.on("request", handler);
    }
    const toHttp = (socket: Socket): void => {
      for (const l of server.httpConnection) l.call(server, socket);
    };
    let accept = toHttp;
    if (fast !== undefined) {
      const lane = new FastLane({ handler: fast, toHttp, keepAliveMs: KEEP_ALIVE_MS, maxHeadBytes: MAX_HEADER_BYTES, headersTimeoutMs: HEADERS_TIMEOUT_MS });
      server.lane = lane;
      accept = (socket) => lane.accept(socket);
    }
    if (grpc !== undefined) accept = muxConnections(accept, grpc);
    let onConnection = accept;
    if (url.protocol === "https:") {
      if (tls === undefined || acceptor === undefined) throw new Error(`Cannot listen on ${url.href}: TLS key/cert are not presented`);
      onConnection = secure(acceptor.createTlsAcceptor, server, tls, log, accept, grpc === undefined ? undefined : chooseAlpn);
    } else if (tls !== undefined) {
      log.warn(`scheme is HTTP while key and cert files are present; ignoring key and cert files`, { [`${traffic}-url`]: url.origin });
    }
    server.on("connection", onConnection);
    if (early === undefined) await bindServer(server, url);
    else early.release(onConnection);
    log.info(`serving ${traffic} traffic`, { address: url.origin });
    out.push({ url, server });
  }
  return out;
}

/**
 * The TLS acceptor between the server's accepted sockets and `next` (the lane or
 * node:http), as the server's connection listener. Sockets are accepted paused, so no byte is read before the handshake owns them.
 */
function secure(create: typeof createTlsAcceptor, server: LaneServer, tls: ListenerTls, log: Logger, next: (socket: Socket) => void, alpn: ((offered: string[]) => string | undefined) | undefined): (raw: Socket) => void {
  server.pauseOnConnect = true;
  const acceptor = create({ ...tls, log, ...(alpn === undefined ? {} : { alpn }) }, next);
  server.on("close", () => acceptor.close());
  return (raw) => acceptor.accept(raw);
}
