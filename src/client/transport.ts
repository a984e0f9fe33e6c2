// One HTTP exchange with one endpoint. The cluster client (cluster.ts) decides which
// endpoint and what to do with failures; a Transport only sends, times out and maps
// socket errors to Go-style NetworkErrors.
//
// Two implementations share this contract (transport.test.ts runs one suite on both):
// - createNodeTransport: node:http directly. The CLI uses it because a `kvctl get` is
//   dominated by start-up time, and node:http is already in the runtime (got costs
//   ~90 ms of module loading on this machine, more than Node's own start-up).
// - createGotTransport (got-transport.ts): got, for long-lived programs that want it.

import type { Agent as HttpAgent, ClientRequest, IncomingMessage } from "node:http";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { DeadlineExceededError, HeaderTimeoutError, NetworkError } from "./errors.ts";

export interface HttpRequest {
  method: "GET" | "PUT" | "POST" | "DELETE";
  /** Scheme, host and port, e.g. `http://127.0.0.1:2379` (no trailing slash). */
  origin: string;
  /** Path and query, already escaped: sent byte for byte. */
  path: string;
  headers?: Readonly<Record<string, string>>;
  body?: string;
  /** Fail with HeaderTimeoutError when no response headers arrive in time; 0 = never. */
  headerTimeoutMs?: number;
  /** Aborts the exchange; a DeadlineExceededError reason is rethrown as is. */
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  statusText: string;
  /** Lower-case header names; repeated headers joined with ", ". */
  headers: Readonly<Record<string, string>>;
  body: string;
}

export interface Transport {
  request(req: HttpRequest): Promise<HttpResponse>;
  /** Closes idle keep-alive connections so the process can exit. */
  close(): void;
}

/** Client TLS: etcdctl's --cacert, --cert, --key, --insecure-skip-tls-verify, --insecure-transport. */
export interface TlsFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** Accept any server certificate (needed against --auto-tls servers). */
  insecureSkipVerify?: boolean;
  /**
   * etcdctl's --insecure-transport (default true): false dials TLS even for http://
   * endpoints, as etcdctl v3 sets up TLS for every endpoint then. https:// always dials TLS.
   */
  insecureTransport?: boolean;
  /**
   * The name every server certificate must be valid for (and the SNI sent), instead of each
   * endpoint's host: etcdctl v2 sets it to the --discovery-srv domain unless
   * --insecure-discovery, so a discovered member must prove it serves that domain.
   */
  serverName?: string;
}

type RequestFn = typeof import("node:http").request;

/** A node:http(s) transport with keep-alive agents (https loaded only when used). */
export async function createNodeTransport(tls: TlsFiles = {}): Promise<Transport> {
  const http = await import("node:http");
  const agents: HttpAgent[] = [];
  let httpAgent: HttpAgent | undefined;
  let https: { request: RequestFn; agent: HttpAgent } | undefined;

  async function pick(origin: string): Promise<{ request: RequestFn; agent: HttpAgent }> {
    if (usesTls(origin, tls)) {
      if (https === undefined) {
        const mod = await import("node:https");
        const agent = new mod.Agent({ keepAlive: true, ...readTlsFiles(tls) });
        agents.push(agent);
        https = { request: mod.request, agent };
      }
      return https;
    }
    if (httpAgent === undefined) {
      httpAgent = new http.Agent({ keepAlive: true });
      agents.push(httpAgent);
    }
    return { request: http.request, agent: httpAgent };
  }

  return {
    async request(req) {
      const { request, agent } = await pick(req.origin);
      return send(request, agent, usesTls(req.origin, tls) && req.origin.startsWith("http:") ? { ...req, origin: "https:" + req.origin.slice(5) } : req);
    },
    close() {
      for (const agent of agents) agent.destroy();
    },
  };
}

/** Whether a request to `origin` goes over TLS. */
export function usesTls(origin: string, tls: TlsFiles): boolean {
  return origin.startsWith("https:") || tls.insecureTransport === false;
}

/**
 * The bytes tls-files.ts's up-front check read, by flags object and path: the dial uses
 * them rather than reading each file a second time (Go's client reads them once, when it
 * builds its transport). Another flags object, even with the same paths, reads its own.
 */
const checkedFiles = new WeakMap<TlsFiles, Map<string, Buffer>>();

/** Hands a file the check read to the dial of the same flags (tls-files.ts). */
export function keepCheckedTlsFile(tls: TlsFiles, path: string, data: Buffer): void {
  let files = checkedFiles.get(tls);
  if (files === undefined) checkedFiles.set(tls, (files = new Map()));
  files.set(path, data);
}

function tlsFile(tls: TlsFiles, path: string): Buffer {
  return checkedFiles.get(tls)?.get(path) ?? readFileSync(path);
}

/** node:https agent options from the flags (the files as the up-front check read them, else read now). */
export function readTlsFiles(tls: TlsFiles): { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized?: boolean; servername?: string } {
  const out: { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized?: boolean; servername?: string } = {};
  if (tls.caFile) out.ca = tlsFile(tls, tls.caFile);
  if (tls.certFile) out.cert = tlsFile(tls, tls.certFile);
  if (tls.keyFile) out.key = tlsFile(tls, tls.keyFile);
  if (tls.insecureSkipVerify === true) out.rejectUnauthorized = false;
  // An agent's servername wins over the one node:https derives from each request's host,
  // and node checks the certificate against it. SNI may not carry an IP address (RFC 6066).
  if (tls.serverName !== undefined && tls.serverName !== "" && isIP(tls.serverName) === 0) out.servername = tls.serverName;
  return out;
}

function send(request: RequestFn, agent: HttpAgent, req: HttpRequest): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const url = new URL(req.origin);
    const headers: Record<string, string> = { ...req.headers };
    if (req.body !== undefined) headers["content-length"] = String(Buffer.byteLength(req.body));
    let settled = false;
    let headerTimer: NodeJS.Timeout | undefined;
    let cr: ClientRequest | undefined;

    const finish = (err: Error | undefined, res?: HttpResponse): void => {
      if (settled) return;
      settled = true;
      if (headerTimer !== undefined) clearTimeout(headerTimer);
      req.signal?.removeEventListener("abort", onAbort);
      if (err !== undefined) {
        cr?.destroy();
        reject(err);
      } else if (res !== undefined) resolve(res);
    };
    const onAbort = (): void => finish(abortReason(req.signal));

    if (req.signal?.aborted) return finish(abortReason(req.signal));
    req.signal?.addEventListener("abort", onAbort, { once: true });

    cr = request({
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port,
      method: req.method,
      path: req.path,
      headers,
      agent,
    });
    if ((req.headerTimeoutMs ?? 0) > 0) {
      headerTimer = setTimeout(() => finish(new HeaderTimeoutError(req.origin)), req.headerTimeoutMs);
    }
    cr.on("error", (err: NodeJS.ErrnoException) => {
      // A kept-alive socket the server closed while idle: the request never reached it.
      // Node's documented remedy is to retry once on a fresh connection (reads only).
      if (cr?.reusedSocket === true && err.code === "ECONNRESET" && req.method === "GET" && !settled) {
        settled = true;
        if (headerTimer !== undefined) clearTimeout(headerTimer);
        req.signal?.removeEventListener("abort", onAbort);
        send(request, agent, req).then(resolve, reject);
        return;
      }
      finish(toNetworkError(err, url));
    });
    cr.on("response", (res: IncomingMessage) => {
      if (headerTimer !== undefined) clearTimeout(headerTimer);
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", (err: NodeJS.ErrnoException) => finish(toNetworkError(err, url)));
      res.on("end", () =>
        finish(undefined, {
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? "",
          headers: flattenHeaders(res.headers),
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    });
    cr.end(req.body);
  });
}

export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DeadlineExceededError();
}

export function flattenHeaders(h: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
  }
  return out;
}

/**
 * Maps a socket error to the text Go's net package would print, so that
 * `dial tcp 127.0.0.1:1: connect: connection refused` reads the same as etcdctl's.
 */
export function toNetworkError(err: NodeJS.ErrnoException, url: URL): NetworkError {
  const host = url.hostname;
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  const addr = `${host}:${port}`;
  const code = err.code ?? "EUNKNOWN";
  const dial = (text: string): NetworkError =>
    new NetworkError(`dial tcp ${addr}: ${text}`, { code, sent: false, connection: true, cause: err });
  const tlsText = tlsErrorText(err, url);
  if (tlsText !== undefined) return new NetworkError(tlsText, { code, sent: false, connection: true, cause: err });
  switch (code) {
    case "ECONNREFUSED":
      return dial("connect: connection refused");
    case "EHOSTUNREACH":
      return dial("connect: no route to host");
    case "ENETUNREACH":
      return dial("connect: network is unreachable");
    case "ETIMEDOUT":
      return dial("i/o timeout");
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new NetworkError(`dial tcp: lookup ${host}: no such host`, {
        code,
        sent: false,
        connection: true,
        cause: err,
      });
    case "ECONNRESET":
      return read("connection reset by peer");
    case "EPIPE":
      return new NetworkError(`write tcp ${addr}: write: broken pipe`, { code, sent: true, connection: false, cause: err });
    default:
      return new NetworkError(err.message, { code, sent: true, connection: false, cause: err });
  }

  function read(text: string): NetworkError {
    return new NetworkError(`read tcp ${addr}: read: ${text}`, { code, sent: true, connection: true, cause: err });
  }
}

const UNKNOWN_AUTHORITY = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
]);

/** Go's words for a TLS failure (what etcdctl prints), or undefined for other errors. */
export function tlsErrorText(err: NodeJS.ErrnoException & { cert?: { subjectaltname?: string }; host?: string }, url: URL): string | undefined {
  const code = err.code ?? "";
  if (UNKNOWN_AUTHORITY.has(code)) return "x509: certificate signed by unknown authority";
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") return "x509: certificate has expired or is not yet valid";
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    const host = err.host ?? url.hostname.replace(/^\[|\]$/g, "");
    const ip = /^[\d.]+$|:/.test(host);
    const valid = (err.cert?.subjectaltname ?? "")
      .split(/,\s*/)
      .filter((e) => e.startsWith(ip ? "IP Address:" : "DNS:"))
      .map((e) => e.slice(e.indexOf(":") + 1));
    if (valid.length === 0) {
      return ip ? `x509: cannot validate certificate for ${host} because it doesn't contain any IP SANs` : `x509: certificate is not valid for any names, but wanted to match ${host}`;
    }
    return `x509: certificate is valid for ${valid.join(", ")}, not ${host}`;
  }
  const alert = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_(.+)$/.exec(code);
  if (alert !== null) return `remote error: tls: ${alert[1]!.toLowerCase().replace(/_/g, " ")}`;
  if (code === "ERR_SSL_WRONG_VERSION_NUMBER") return "http: server gave HTTP response to HTTPS client";
  return undefined;
}
