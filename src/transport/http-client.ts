// The only place that creates agents and outgoing requests, so that TLS (https agents,
// peer certificate checks) can be threaded in here without touching the peer logic.

import { createReadStream } from "node:fs";
import http from "node:http";
import type https from "node:https";
import type tls from "node:tls";
import { createRequire } from "node:module";
import { isIP } from "node:net";
import type { Duplex } from "node:stream";
import type { AgentOptions } from "node:http";

/** A failed peer request; `code` is stable (ERR_PEER_TIMEOUT, ERR_PEER_STATUS, ERR_PEER_URL…). */
export class TransportError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Peer TLS as the server configured it: options for each NEW connection (certificates re-read). */
export interface PeerTlsClient {
  clientOptions(): Promise<tls.ConnectionOptions>;
}

// node:https and node:tls load with the first https agent or request, that is only with peer
// TLS (or the proxy's https side): a member without it serves its peers without them.
const requireBuiltin = createRequire(import.meta.url);
interface TlsSide {
  https: typeof https;
  tls: typeof tls;
  PeerHttpsAgent: new (options: https.AgentOptions, peerTls: PeerTlsClient) => https.Agent;
}
let tlsModules: TlsSide | undefined;

function tlsSide(): TlsSide {
  if (tlsModules !== undefined) return tlsModules;
  const httpsModule = requireBuiltin("node:https") as typeof https;
  const tlsModule = requireBuiltin("node:tls") as typeof tls;
  /**
   * An https agent whose connections take their TLS options at connect time, so a
   * certificate replaced on disk is used by the next connection without a restart.
   */
  class PeerHttpsAgent extends httpsModule.Agent {
    readonly #tls: PeerTlsClient;
    constructor(options: https.AgentOptions, peerTls: PeerTlsClient) {
      super(options);
      this.#tls = peerTls;
    }
    override createConnection(options: https.RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
      const host = String(options.host ?? options.hostname ?? "");
      this.#tls.clientOptions().then(
        (extra) => {
          const socket = tlsModule.connect({
            ...(options as tls.ConnectionOptions),
            ...extra,
            host,
            port: Number(options.port),
            // SNI takes a host name, never an IP literal.
            ...(isIP(host) === 0 ? { servername: host } : {}),
          });
          socket.setNoDelay(true);
          callback?.(null, socket);
        },
        (err: unknown) => callback?.(err instanceof Error ? err : new Error(String(err)), undefined as unknown as Duplex),
      );
      return undefined;
    }
  }
  tlsModules = { https: httpsModule, tls: tlsModule, PeerHttpsAgent };
  return tlsModules;
}

/** A keep-alive agent: one per transport and per traffic class (messages, snapshots). */
export function createAgent(options: AgentOptions | undefined, peerTls?: PeerTlsClient): http.Agent {
  // noDelay: a Raft message is latency-critical; with Nagle on, the second small write of a
  // request waited for the peer's delayed ACK (a replicated write measured ~2 ms per hop).
  const o: AgentOptions = { keepAlive: true, keepAliveMsecs: 1000, scheduling: "lifo", noDelay: true, ...options };
  return peerTls === undefined ? new http.Agent(o) : new (tlsSide().PeerHttpsAgent)(o, peerTls);
}

/** node:http or node:https, by the URL's scheme. */
function requestFn(url: URL): typeof http.request {
  return url.protocol === "https:" ? tlsSide().https.request : http.request;
}

/** A GET to a peer's peer port (membership probes); the body as text, or an error. */
export function peerGet(url: URL, opts: { agent: http.Agent; timeoutMs: number }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = requestFn(url)(url, { method: "GET", agent: opts.agent, signal: AbortSignal.timeout(opts.timeoutMs) }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (s: string) => (body += s));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/**
 * A small POST to a peer's peer port (a keepalive or TTL question forwarded to the leader):
 * the status and the whole body, or an error (connection failed, timed out, aborted).
 */
export function peerPost(
  url: URL,
  body: Uint8Array,
  opts: { agent: http.Agent; timeoutMs: number; headers?: Record<string, string> },
): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const headers = { ...opts.headers, "Content-Type": "application/protobuf", "Content-Length": String(body.length) };
    const req = requestFn(url)(url, { method: "POST", agent: opts.agent, headers, signal: AbortSignal.timeout(Math.max(1, Math.ceil(opts.timeoutMs))) }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Bodies up to this size are sent as one buffer (one write); larger ones chunk by chunk. */
const coalesceLimit = 1 << 20;

/** Parses a peer URL: http:, or https: when peer TLS is configured. */
export function parsePeerUrl(u: string, opts: { tls: boolean } = { tls: false }): URL {
  let url: URL;
  try {
    url = new URL(u);
  } catch (cause) {
    throw new TransportError("ERR_PEER_URL", `Cannot parse peer URL: ${JSON.stringify(u)}`, { cause });
  }
  if (url.protocol === "https:" && !opts.tls) {
    throw new TransportError("ERR_PEER_URL", `Cannot use peer URL ${u}: https needs peer TLS (--peer-cert-file/--peer-key-file or --peer-auto-tls)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TransportError("ERR_PEER_URL", `Cannot use peer URL ${u}: the scheme must be http or https`);
  }
  return url;
}

export interface PostOptions {
  url: URL;
  agent: http.Agent;
  headers: Record<string, string>;
  /** Body chunks, written in order without concatenation (a snapshot is one big chunk). */
  chunks: readonly Uint8Array[];
  /** A file sent after the chunks, streamed from disk (a snapshot's database). */
  tail?: { path: string; size: number };
  /** The request fails when the socket shows no activity for this long. */
  idleTimeoutMs: number;
  signal: AbortSignal;
}

export interface PostResult {
  status: number;
  /** The start of the response body (diagnostics only: peers answer errors in text). */
  body: string;
}

const maxResponseText = 4096;

function postOnce(o: PostOptions): Promise<PostResult> {
  return new Promise((resolve, reject) => {
    let length = o.tail?.size ?? 0;
    for (const c of o.chunks) length += c.length;
    const req = requestFn(o.url)(o.url, {
      method: "POST",
      agent: o.agent,
      signal: o.signal,
      headers: { ...o.headers, "Content-Type": "application/octet-stream", "Content-Length": String(length) },
    });
    req.setTimeout(o.idleTimeoutMs, () => {
      req.destroy(new TransportError("ERR_PEER_TIMEOUT", `no progress for ${o.idleTimeoutMs} ms`));
    });
    req.on("error", (err: Error & { reusedSocket?: boolean }) => {
      // Node's advice: a request on a reused keep-alive socket may meet the server's close
      // of that idle socket; such a failure says nothing about the peer and is retried.
      err.reusedSocket = req.reusedSocket;
      reject(err);
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (s: string) => {
        if (text.length < maxResponseText) text += s.slice(0, maxResponseText - text.length);
      });
      res.on("error", reject);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text.trimEnd() }));
    });
    if (o.tail !== undefined) {
      for (const c of o.chunks) req.write(c);
      const file = createReadStream(o.tail.path, { start: 0, end: Math.max(0, o.tail.size - 1), highWaterMark: 1024 * 1024 });
      file.on("error", (err) => req.destroy(err));
      if (o.tail.size === 0) {
        file.destroy();
        req.end();
      } else file.pipe(req);
    } else if (length <= coalesceLimit) {
      // One write for head and body: no small segments waiting on each other.
      req.end(o.chunks.length === 1 ? o.chunks[0] : Buffer.concat(o.chunks, length));
    } else {
      // A snapshot: written chunk by chunk without copying, corked so frames go out together.
      req.cork();
      for (const c of o.chunks) req.write(c);
      req.uncork();
      req.end();
    }
  });
}

export interface StreamOptions {
  url: URL;
  agent: http.Agent;
  headers: Record<string, string>;
  signal: AbortSignal;
  /** The peer accepted the stream (status 200). */
  onAccepted(): void;
  /** The peer acknowledged data (it is alive and reading). */
  onAck(): void;
  /** The stream ended, for whatever reason; called exactly once. */
  onClose(err: TransportError | Error): void;
}

/**
 * Opens a long-lived POST whose body is written as messages are produced (chunked) and
 * whose response carries acknowledgements. The caller writes to the returned request;
 * any end of it, orderly or not, is reported once through onClose.
 */
export function openStream(o: StreamOptions): http.ClientRequest {
  let closed = false;
  const close = (err: Error): void => {
    if (closed) return;
    closed = true;
    o.onClose(err);
  };
  const req = requestFn(o.url)(o.url, {
    method: "POST",
    agent: o.agent,
    signal: o.signal,
    headers: { ...o.headers, "Content-Type": "application/octet-stream" },
  });
  req.on("error", close);
  req.on("close", () => close(new TransportError("ERR_PEER_STREAM_CLOSED", "stream closed")));
  req.on("response", (res) => {
    if (res.statusCode !== 200) {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (s: string) => {
        if (text.length < maxResponseText) text += s.slice(0, maxResponseText - text.length);
      });
      res.on("error", close);
      res.on("end", () => {
        try {
          checkStatus({ status: res.statusCode ?? 0, body: text.trimEnd() });
        } catch (err) {
          close(err as TransportError);
        }
        req.destroy();
      });
      return;
    }
    o.onAccepted();
    res.on("data", () => o.onAck());
    res.on("error", close);
    res.on("end", () => {
      close(new TransportError("ERR_PEER_STREAM_CLOSED", "peer ended the stream"));
      req.destroy();
    });
  });
  return req;
}

/** Turns a non-2xx answer into a TransportError with a stable code. */
export function checkStatus(r: PostResult): void {
  if (r.status >= 200 && r.status < 300) return;
  // 412 with "cluster ID mismatch" is the one refusal worth a distinct code: it never heals.
  const code =
    r.status === 410 ? "ERR_PEER_REMOVED" : r.status === 412 && r.body.startsWith("cluster ID mismatch") ? "ERR_PEER_CLUSTER_MISMATCH" : "ERR_PEER_STATUS";
  throw new TransportError(code, `peer answered ${r.status}${r.body === "" ? "" : `: ${r.body}`}`);
}

/** POSTs the chunks; settles once the response is fully read (socket back in the agent). */
export async function post(o: PostOptions): Promise<PostResult> {
  try {
    return await postOnce(o);
  } catch (err) {
    const e = err as Error & { reusedSocket?: boolean; code?: string };
    if (e.reusedSocket === true && e.code === "ECONNRESET" && !o.signal.aborted) return await postOnce(o);
    throw err;
  }
}
