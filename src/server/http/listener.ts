// Client (and peer) listeners: one node:http server per URL, all sharing the same handler.
// Timeouts bound slow clients; long-poll watches are exempt from the request timeout
// (they end on their own schedule). An https:// URL gets TLS from ../tls/: the HTTP server
// still accepts the TCP connections, but each one goes through the TLS acceptor (fresh
// credentials, handshake, client-certificate verdict) before HTTP sees it.
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "../logger.ts";
import { createTlsAcceptor } from "../tls/acceptor.ts";
import type { ListenerTls } from "../tls/server-tls.ts";

export interface Listener {
  url: URL;
  server: Server;
}

type Handler = Parameters<typeof createServer>[1];

/**
 * @param tls required for https:// URLs; ignored (with a warning, as etcd) for http:// ones
 */
export async function listen(urls: readonly URL[], handler: Handler, log: Logger, traffic: "client" | "peer" = "client", tls?: ListenerTls): Promise<Listener[]> {
  const out: Listener[] = [];
  for (const url of urls) {
    const server = createServer({ keepAliveTimeout: 30_000, headersTimeout: 60_000, requestTimeout: 0, maxHeaderSize: 16 * 1024 }, handler);
    if (url.protocol === "https:") {
      if (tls === undefined) throw new Error(`Cannot listen on ${url.href}: TLS key/cert are not presented`);
      secure(server, tls, log);
    } else if (tls !== undefined) {
      log.warn(`scheme is HTTP while key and cert files are present; ignoring key and cert files`, { [`${traffic}-url`]: url.origin });
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
 * Puts the TLS acceptor between the server's accepted sockets and its HTTP connection
 * handler. Sockets are accepted paused, so no byte is read before the handshake owns them.
 */
function secure(server: Server, tls: ListenerTls, log: Logger): void {
  const httpConnection = server.listeners("connection") as ((socket: Socket) => void)[];
  server.removeAllListeners("connection");
  // net.Server reads this property for every accepted socket.
  (server as Server & { pauseOnConnect: boolean }).pauseOnConnect = true;
  const acceptor = createTlsAcceptor({ ...tls, log }, (socket) => {
    for (const l of httpConnection) l.call(server, socket);
  });
  server.on("connection", (raw: Socket) => acceptor.accept(raw));
  server.on("close", () => acceptor.close());
}
