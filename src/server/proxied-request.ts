// One HTTP request through an HTTP proxy, as Go's http.Transport sends it for etcd's
// --discovery-proxy (http.ProxyURL): a plain http target is asked of the proxy with the
// absolute URL as the request target; an https target goes through a CONNECT tunnel, TLS
// inside it. fetch in Node 20 takes no proxy without undici's agent, which is not a
// dependency; node:http, node:https and node:tls are enough for this.
import * as http from "node:http";
import * as https from "node:https";
import * as tls from "node:tls";
import { isIP } from "node:net";
import type { Duplex } from "node:stream";

export interface ProxiedAnswer {
  status: number;
  header(name: string): string | undefined;
  text: string;
}

export interface ProxiedRequestOptions {
  method: string;
  headers?: Record<string, string>;
  body?: string;
  /** Gives up (rejects) after this long; undefined waits as long as it takes. */
  timeoutMs?: number;
  /** Roots an https target's certificate is checked against (default: Node's). */
  ca?: string;
}

function proxyAuthorization(proxy: URL): Record<string, string> {
  if (proxy.username === "") return {};
  const creds = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { "proxy-authorization": `Basic ${Buffer.from(creds).toString("base64")}` };
}

const defaultPort = (u: URL): number => Number(u.port || (u.protocol === "https:" ? 443 : 80));

/** Sends `target` through `proxy`; a transport failure rejects with an Error saying what failed. */
export function proxiedRequest(target: URL, proxy: URL, opts: ProxiedRequestOptions): Promise<ProxiedAnswer> {
  const toProxy = proxy.protocol === "https:" ? https : http;
  const proxyAddr = { host: proxy.hostname.replace(/^\[|\]$/g, ""), port: defaultPort(proxy) };
  return new Promise<ProxiedAnswer>((resolve, reject) => {
    let done = false;
    const cleanups: Array<() => void> = [];
    const fail = (err: Error): void => {
      if (done) return;
      done = true;
      for (const c of cleanups) c();
      reject(err);
    };
    if (opts.timeoutMs !== undefined) {
      const t = setTimeout(() => fail(new Error(`request through proxy ${proxy.host} timed out after ${opts.timeoutMs} ms`)), opts.timeoutMs);
      cleanups.push(() => clearTimeout(t));
    }
    const onAnswer = (res: http.IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", fail);
      res.on("end", () => {
        if (done) return;
        done = true;
        for (const c of cleanups) c();
        const h = res.headers;
        resolve({
          status: res.statusCode ?? 0,
          header: (name) => {
            const v = h[name.toLowerCase()];
            return Array.isArray(v) ? v[0] : v;
          },
          text: Buffer.concat(chunks).toString("utf8"),
        });
      });
    };
    const headers: Record<string, string> = { host: target.host, ...opts.headers };
    if (opts.body !== undefined) headers["content-length"] = String(Buffer.byteLength(opts.body));
    if (target.protocol === "http:") {
      const req = toProxy.request({ ...proxyAddr, method: opts.method, path: target.href, headers: { ...headers, ...proxyAuthorization(proxy) }, agent: false }, onAnswer);
      cleanups.push(() => req.destroy());
      req.on("error", fail);
      req.end(opts.body);
      return;
    }
    const authority = `${target.hostname.replace(/^\[|\]$/g, "")}:${defaultPort(target)}`;
    const connect = toProxy.request({ ...proxyAddr, method: "CONNECT", path: authority, headers: { host: authority, ...proxyAuthorization(proxy) }, agent: false });
    cleanups.push(() => connect.destroy());
    connect.on("error", fail);
    connect.on("connect", (res: http.IncomingMessage, socket: Duplex) => {
      cleanups.push(() => socket.destroy());
      if (res.statusCode !== 200) {
        fail(new Error(`proxy ${proxy.host} refused CONNECT ${authority}: ${res.statusCode ?? 0} ${res.statusMessage ?? ""}`.trim()));
        return;
      }
      const name = target.hostname.replace(/^\[|\]$/g, "");
      // SNI carries host names only.
      const secure = tls.connect({ socket, ...(isIP(name) === 0 ? { servername: name } : {}), ...(opts.ca === undefined ? {} : { ca: opts.ca }) });
      cleanups.push(() => secure.destroy());
      secure.on("error", fail);
      const req = https.request({ method: opts.method, host: target.hostname, path: target.pathname + target.search, headers, createConnection: () => secure }, onAnswer);
      req.on("error", fail);
      req.end(opts.body);
    });
    connect.end();
  });
}
