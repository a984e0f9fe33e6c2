// A small forward HTTP proxy for tests (127.0.0.1, port 0): absolute-URL requests are
// forwarded, CONNECT opens a tunnel. It records what it was asked and can demand Basic
// credentials (407 otherwise), as proxies in front of a discovery service do.
import { createServer, request, type Server } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";

export interface TinyProxy {
  url: string;
  /** "GET http://host/path" for forwarded requests, "CONNECT host:port" for tunnels. */
  asked: string[];
  close(): Promise<void>;
}

export async function startTinyProxy(opts: { credentials?: string } = {}): Promise<TinyProxy> {
  const asked: string[] = [];
  const sockets = new Set<Socket>();
  const authorized = (h: string | undefined): boolean => opts.credentials === undefined || h === `Basic ${Buffer.from(opts.credentials).toString("base64")}`;
  const server: Server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    if (!authorized(req.headers["proxy-authorization"])) {
      res.writeHead(407).end();
      return;
    }
    const u = new URL(req.url ?? "");
    const { "proxy-authorization": _p, ...headers } = req.headers;
    const fwd = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: req.method, headers, agent: false }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    fwd.on("error", () => res.writeHead(502).end());
    res.on("close", () => fwd.destroy());
    req.pipe(fwd);
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("connect", (req, client: Socket, head: Buffer) => {
    asked.push(`CONNECT ${req.url}`);
    if (!authorized(req.headers["proxy-authorization"])) {
      client.end("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n");
      return;
    }
    const i = (req.url ?? "").lastIndexOf(":");
    const upstream = connect(Number((req.url ?? "").slice(i + 1)), (req.url ?? "").slice(0, i), () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked,
    close: async () => {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
