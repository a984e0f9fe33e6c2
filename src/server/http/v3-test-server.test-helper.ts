// A real node:http server on 127.0.0.1 (port 0) serving the v3 gateway routes over a fake
// backend, and small HTTP clients for unary calls and streams. Tests register close() with after().
import { createServer, request, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { writeError } from "./respond.ts";
import { handleV3, v3Route } from "./v3-routes.ts";
import type { V3GatewayContext } from "./v3-backend.ts";
import { FakeV3Backend } from "./v3-fake-backend.test-helper.ts";
import { until } from "../../until.test-helper.ts";

export interface V3TestServer {
  url: string;
  port: number;
  backend: FakeV3Backend;
  gw: V3GatewayContext;
  streams: Set<ServerResponse>;
  close(): Promise<void>;
}

export async function startV3Server(opts: { maxRequestBytes?: number; streamBufferBytes?: number } = {}): Promise<V3TestServer> {
  const backend = new FakeV3Backend();
  const streams = new Set<ServerResponse>();
  const gw: V3GatewayContext = { backend, maxRequestBytes: opts.maxRequestBytes ?? 1572864, maxTxnOps: 128, streams };
  if (opts.streamBufferBytes !== undefined) gw.streamBufferBytes = opts.streamBufferBytes;
  const ctx = { clusterId: "cdf818194e3a8c32", v3Gateway: gw };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    const route = v3Route(path);
    const run = route === undefined ? Promise.reject(new Error("not a v3 path")) : handleV3(req, res, route, ctx);
    run.catch((err: unknown) => writeError(req, res, err, ctx));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    backend,
    gw,
    streams,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of streams) s.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  text: string;
}

/** One request; resolves with the whole answer. */
export function call(port: number, path: string, body: string | object, opts: { method?: string; headers?: Record<string, string> } = {}): Promise<HttpAnswer> {
  const data = typeof body === "string" ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method: opts.method ?? "POST", headers: { "Content-Length": Buffer.byteLength(data), ...opts.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(data);
  });
}

export { until };

/** A streaming call: lines as they arrive; the body can be written in pieces. */
export class StreamClient {
  readonly lines: string[] = [];
  status = 0;
  headers: IncomingHttpHeaders = {};
  gotResponse = false;
  ended = false;
  closed = false;
  #buf = "";
  readonly #req: ReturnType<typeof request>;
  #res: import("node:http").IncomingMessage | undefined;

  constructor(port: number, path: string, opts: { headers?: Record<string, string>; paused?: boolean } = {}) {
    this.#req = request({ host: "127.0.0.1", port, path, method: "POST", headers: { "Transfer-Encoding": "chunked", ...opts.headers } }, (res) => {
      this.#res = res;
      this.gotResponse = true;
      this.status = res.statusCode ?? 0;
      this.headers = res.headers;
      if (opts.paused === true) res.pause();
      res.on("data", (c: Buffer) => {
        this.#buf += c.toString("utf8");
        let nl: number;
        while ((nl = this.#buf.indexOf("\n")) >= 0) {
          this.lines.push(this.#buf.slice(0, nl));
          this.#buf = this.#buf.slice(nl + 1);
        }
      });
      res.on("end", () => {
        if (this.#buf !== "") this.lines.push(this.#buf);
        this.#buf = "";
        this.ended = true;
      });
      res.on("close", () => (this.closed = true));
      res.on("error", () => {});
    });
    this.#req.on("error", () => (this.closed = true));
    this.#req.flushHeaders();
  }

  /** Parsed `result` of each line. */
  get results(): Array<Record<string, unknown>> {
    return this.lines.map((l) => (JSON.parse(l) as { result: Record<string, unknown> }).result);
  }

  write(data: string | object): void {
    this.#req.write(typeof data === "string" ? data : JSON.stringify(data));
  }

  endBody(): void {
    this.#req.end();
  }

  resume(): void {
    this.#res?.resume();
  }

  waitLines(n: number, timeoutMs = 3000): Promise<void> {
    return until(() => this.lines.length >= n, `${n} stream lines (have ${this.lines.length}: ${this.lines.join(" | ")})`, timeoutMs);
  }

  /** The client goes away. */
  destroy(): void {
    this.#req.destroy();
    this.#res?.destroy();
  }
}
