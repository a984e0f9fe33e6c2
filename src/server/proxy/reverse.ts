// The v2 proxy's request path (etcd's httpproxy reverseProxy and readonly handler): read the
// client's body, send the request to the first available member, on a transport failure
// mark that member failed and try the next one; once a member answers, its status, headers
// and body (streamed: long-poll and stream watches pass through) go back to the client.
// A member's own error answers (4xx, 5xx) are passed on, never retried.
//
// Answers made here, with etcd's status and bodies:
//   503 {"message":"httpproxy: zero endpoints currently available"}
//   502 {"message":"httpproxy: unable to get response from N endpoint(s)"}
//   501 and no body: --proxy readonly and a method other than GET
//   GET /v2/config/local/proxy -> {"endpoints":[...]} (405 for other methods)
import http, { type Agent, type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import type { Logger } from "../logger.ts";
import type { Director } from "./director.ts";
import { BodyTooLargeError, readBody } from "../http/body.ts";

/** Removed when a request or answer crosses the proxy (etcd's singleHopHeaders). */
const hopByHop = new Set(["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers", "transfer-encoding", "upgrade"]);

/** etcd's default CORS answer headers (--cors "*"), added where the member's are missing. */
const cors: Record<string, string> = {
  "Access-Control-Allow-Headers": "accept, content-type, authorization",
  "Access-Control-Allow-Methods": "POST, GET, OPTIONS, PUT, DELETE",
  "Access-Control-Allow-Origin": "*",
};

export const PROXY_CONFIG_PATH = "/v2/config/local/proxy";

export interface ProxyTimeouts {
  /** TCP connect to a member; 0 = none. */
  dialMs: number;
  /** Sending the whole request; 0 = none. */
  writeMs: number;
  /** Idle time while reading the answer; 0 = none (watches may wait for long). */
  readMs: number;
}

export interface ReverseProxyOptions {
  director: Director;
  /** Agents for http:// and https:// members (the https one carries the proxy's certificate). */
  agents: { http: Agent; https: Agent };
  timeouts: ProxyTimeouts;
  readonly: boolean;
  log: Logger;
  /** Largest request body forwarded (default PROXY_MAX_BODY_BYTES). */
  maxBodyBytes?: number;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** An error from the proxy itself, as etcd's httptypes.HTTPError writes it. */
function sendError(res: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, { ...cors, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

/** The client's address with earlier proxies' kept in front (etcd's maybeSetForwardedFor). */
export function forwardedFor(prior: string | string[] | undefined, remoteAddress: string | undefined): string | undefined {
  if (remoteAddress === undefined) return prior === undefined ? undefined : [prior].flat().join(", ");
  const ip = remoteAddress.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
  if (prior === undefined) return ip;
  return [...[prior].flat(), ip].join(", ");
}

/** Request headers for the member: hop-by-hop ones dropped, X-Forwarded-For set. */
export function upstreamHeaders(req: Pick<IncomingMessage, "rawHeaders" | "socket">, bodyLength: number): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const raw = req.rawHeaders;
  const prior: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (hopByHop.has(lower) || lower === "content-length") continue;
    if (lower === "x-forwarded-for") {
      prior.push(value);
      continue;
    }
    const have = out[name];
    out[name] = have === undefined ? value : [...[have].flat(), value];
  }
  const xff = forwardedFor(prior.length === 0 ? undefined : prior, req.socket.remoteAddress);
  if (xff !== undefined) out["X-Forwarded-For"] = xff;
  if (bodyLength > 0) out["Content-Length"] = String(bodyLength);
  return out;
}

/** Answer headers for the client: the member's, in their order and case, hop-by-hop dropped. */
function downstreamHeaders(up: IncomingMessage): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i + 1 < up.rawHeaders.length; i += 2) {
    const lower = up.rawHeaders[i]!.toLowerCase();
    if (hopByHop.has(lower)) continue;
    seen.add(lower);
    out.push(up.rawHeaders[i]!, up.rawHeaders[i + 1]!);
  }
  for (const [k, v] of Object.entries(cors)) if (!seen.has(k.toLowerCase())) out.push(k, v);
  return out;
}

/**
 * etcd's proxy reads any body whole; a cap keeps one client from taking the proxy's heap.
 * It is far above what a member accepts (a v2 form: 10 MiB; a v3 request: 1.5 MiB), so
 * only what no member would take is refused here.
 */
export const PROXY_MAX_BODY_BYTES = 64 << 20;

class ProxyTimeoutError extends Error {
  readonly code = "ERR_PROXY_TIMEOUT";
}

/**
 * Sends one request to one member. Resolves with the answer's head; rejects when the
 * member could not be reached or did not answer (the caller then tries another one).
 */
function send(o: ReverseProxyOptions, target: string, req: IncomingMessage, body: Buffer, clientGone: AbortSignal): Promise<{ up: IncomingMessage; request: http.ClientRequest }> {
  const u = new URL(target);
  const secure = u.protocol === "https:";
  return new Promise((resolve, reject) => {
    const request = (secure ? https : http).request({
      protocol: u.protocol,
      hostname: u.hostname.replace(/^\[|\]$/g, ""),
      port: u.port,
      method: req.method ?? "GET",
      path: req.url ?? "/",
      headers: upstreamHeaders(req, body.length),
      agent: secure ? o.agents.https : o.agents.http,
      signal: clientGone,
    });
    const timers: NodeJS.Timeout[] = [];
    const clear = (): void => timers.forEach(clearTimeout);
    const fail = (what: string, ms: number): void => {
      request.destroy(new ProxyTimeoutError(`${what} timeout after ${ms}ms`));
    };
    if (o.timeouts.writeMs > 0) {
      const t = setTimeout(() => fail("write", o.timeouts.writeMs), o.timeouts.writeMs);
      timers.push(t);
      request.once("finish", () => clearTimeout(t));
    }
    request.once("socket", (socket) => {
      if (o.timeouts.dialMs > 0 && socket.connecting) {
        const t = setTimeout(() => fail("dial", o.timeouts.dialMs), o.timeouts.dialMs);
        timers.push(t);
        socket.once("connect", () => clearTimeout(t));
      }
    });
    if (o.timeouts.readMs > 0) request.setTimeout(o.timeouts.readMs, () => fail("read", o.timeouts.readMs));
    request.once("response", (up) => {
      clear();
      resolve({ up, request });
    });
    request.once("error", (err) => {
      clear();
      reject(err);
    });
    request.end(body.length > 0 ? body : undefined);
  });
}

export function createReverseProxy(o: ReverseProxyOptions): Handler {
  const maxBody = o.maxBodyBytes ?? PROXY_MAX_BODY_BYTES;
  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let body: Buffer;
    try {
      body = await readBody(req, maxBody);
    } catch (err) {
      if (err instanceof BodyTooLargeError) {
        o.log.warn(`refused a request body of ${err.size} bytes`);
        if (!res.headersSent && !res.destroyed) sendError(res, 413, `httpproxy: request body larger than ${maxBody} bytes`);
        return;
      }
      const msg = `failed to read request body: ${err instanceof Error ? err.message : String(err)}`;
      o.log.warn(msg);
      if (!res.headersSent && !res.destroyed) sendError(res, 500, `httpproxy: ${msg}`);
      return;
    }
    const endpoints = o.director.endpoints();
    if (endpoints.length === 0) {
      o.log.warn("zero endpoints currently available");
      sendError(res, 503, "httpproxy: zero endpoints currently available");
      return;
    }
    // The client hanging up cancels the member request (and a watch with it).
    const gone = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) gone.abort();
    });
    for (const target of endpoints) {
      let sent: Awaited<ReturnType<typeof send>>;
      try {
        sent = await send(o, target, req, body, gone.signal);
      } catch (err) {
        if (gone.signal.aborted) return;
        o.log.warn("failed to direct request", { endpoint: target, error: err instanceof Error ? err.message : String(err) });
        o.director.failed(target);
        continue;
      }
      const { up } = sent;
      res.writeHead(up.statusCode ?? 502, downstreamHeaders(up));
      // The head goes out now, as the member sent it: a long-poll watch answers 200 and
      // headers at once and its body only when an event comes (etcd's proxy flushes too).
      res.flushHeaders();
      // pipe() writes every chunk as it arrives (watch events are not held back) and
      // pauses the member's answer while the client is slow.
      up.on("error", () => res.destroy());
      up.pipe(res);
      return;
    }
    const msg = `unable to get response from ${endpoints.length} endpoint(s)`;
    o.log.warn(msg);
    sendError(res, 502, `httpproxy: ${msg}`);
  };

  const config = (req: IncomingMessage, res: ServerResponse): void => {
    req.resume();
    if (req.method !== "GET") {
      res.writeHead(405, { ...cors, Allow: "GET", "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff" });
      res.end("Method Not Allowed\n");
      return;
    }
    const body = JSON.stringify({ endpoints: o.director.endpoints() }) + "\n";
    res.writeHead(200, { ...cors, "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  };

  return (req, res) => {
    // etcd's readonly handler wraps everything: any method but GET is 501 with no body.
    if (o.readonly && req.method !== "GET") {
      req.resume();
      res.writeHead(501, { "Content-Length": 0 });
      res.end();
      return;
    }
    if ((req.url ?? "/").split("?")[0] === PROXY_CONFIG_PATH) {
      config(req, res);
      return;
    }
    void forward(req, res);
  };
}
