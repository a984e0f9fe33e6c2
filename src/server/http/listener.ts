// Client listeners: one node:http server per --listen-client-urls entry, all sharing the
// same router. Timeouts bound slow clients; long-poll watches are exempt from the request
// timeout (they end on their own schedule).
import { createServer, type Server } from "node:http";
import type { Logger } from "../logger.ts";

export interface Listener {
  url: URL;
  server: Server;
}

export async function listen(urls: readonly URL[], handler: Parameters<typeof createServer>[1], log: Logger, traffic: "client" | "peer" = "client"): Promise<Listener[]> {
  const out: Listener[] = [];
  for (const url of urls) {
    if (url.protocol === "https:") throw new Error(`Cannot listen on ${url.href}: TLS is not supported yet (use http://)`);
    const server = createServer({ keepAliveTimeout: 30_000, headersTimeout: 60_000, requestTimeout: 0, maxHeaderSize: 16 * 1024 }, handler);
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
