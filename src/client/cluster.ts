// The cluster client: one logical request tried on each endpoint in turn, the way etcd's
// Go client (httpClusterClient.Do) does it, but deterministic: endpoints keep the order
// given (etcd shuffles them), starting from the last one that answered.
//
// Invariants:
// - 0 <= #pinned < #endpoints.length whenever #endpoints is non-empty;
// - a non-idempotent ("one-shot") request is sent to at most one endpoint that may have
//   received it: it moves on only after failures that prove the request was never sent.

import { ClusterError, ClientError, DeadlineExceededError, NetworkError, ServerError } from "./errors.ts";
import type { HttpRequest, HttpResponse, Transport } from "./transport.ts";

export interface Credentials {
  username: string;
  password: string;
}

export interface ClusterClientOptions {
  endpoints: readonly string[];
  transport: Transport;
  /** Per-request header timeout (etcdctl --timeout); 0 = none. Never applied to watches. */
  headerTimeoutMs?: number;
  credentials?: Credentials;
  /** Called before every attempt with the equivalent curl command (etcdctl --debug). */
  onRequest?: (curl: string) => void;
}

/** One logical request; `path` gets the endpoint's own base path (usually ""). */
export interface Action {
  method: HttpRequest["method"];
  path: (basePath: string) => string;
  body?: string;
  contentType?: string;
  /** A long poll: no header timeout. */
  wait?: boolean;
}

export interface DoOptions {
  signal?: AbortSignal;
  /** Not idempotent (create, delete): do not resend once it may have been received. */
  oneShot?: boolean;
  /**
   * Go's client marks it one-shot too (a create, a delete), and so fails with the first
   * endpoint's error as it is, never a ClusterError. kvctl's own one-shot requests (auth
   * changes; Go resends them) still fail with a ClusterError.
   */
  goOneShot?: boolean;
}

export interface ParsedEndpoint {
  /** As given (after defaulting the scheme): what --debug prints. */
  text: string;
  origin: string;
  basePath: string;
}

export const noEndpointsMessage = "client: no endpoints available";

/**
 * Parses one endpoint like etcdctl (a missing scheme means http). Unlike etcdctl,
 * `host:port` without a scheme is accepted too (Go's url.Parse rejects it).
 */
export function parseEndpoint(raw: string): ParsedEndpoint {
  const text = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch (cause) {
    throw new ClientError("BAD_ENDPOINT", `parse "${raw}": invalid URL`, { cause });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ClientError("BAD_ENDPOINT", `unsupported protocol scheme "${url.protocol.slice(0, -1)}"`);
  }
  const basePath = url.pathname === "/" ? "" : url.pathname;
  return { text, origin: url.origin, basePath };
}

export class ClusterClient {
  #endpoints: ParsedEndpoint[] = [];
  #pinned = 0;
  readonly #transport: Transport;
  readonly #headerTimeoutMs: number;
  readonly #authorization: string | undefined;
  readonly #onRequest: ((curl: string) => void) | undefined;

  constructor(opts: ClusterClientOptions) {
    this.#transport = opts.transport;
    this.#headerTimeoutMs = opts.headerTimeoutMs ?? 0;
    this.#onRequest = opts.onRequest;
    if (opts.credentials !== undefined) {
      const { username, password } = opts.credentials;
      this.#authorization = `Basic ${Buffer.from(`${username}:${password}`, "utf8").toString("base64")}`;
    }
    this.setEndpoints(opts.endpoints);
  }

  get transport(): Transport {
    return this.#transport;
  }

  endpoints(): string[] {
    return this.#endpoints.map((e) => e.text);
  }

  setEndpoints(endpoints: readonly string[]): void {
    if (endpoints.length === 0) throw new ClientError("NO_ENDPOINTS", noEndpointsMessage);
    this.#endpoints = endpoints.map(parseEndpoint);
    this.#pinned = 0;
  }

  async do(action: Action, opts: DoOptions = {}): Promise<HttpResponse> {
    const eps = this.#endpoints;
    const errors: Error[] = [];
    for (let i = this.#pinned; i < this.#pinned + eps.length; i++) {
      const k = i % eps.length;
      const ep = eps[k];
      if (ep === undefined) continue;
      let failure: Error;
      try {
        const res = await this.#send(ep, action, opts.signal);
        if (Math.floor(res.status / 100) !== 5) {
          this.#pinned = k;
          return res;
        }
        failure = new ServerError(ep.text, res.status, res.statusText);
      } catch (err) {
        if (err instanceof DeadlineExceededError || opts.signal?.aborted) throw err;
        failure = err instanceof Error ? err : new Error(String(err));
      }
      errors.push(failure);
      const neverSent = failure instanceof NetworkError && !failure.sent;
      if (opts.oneShot && !neverSent) {
        this.#pinned = (k + 1) % eps.length;
        // Where Go's client would have gone on, its error would be a ClusterError.
        throw opts.goOneShot === true ? failure : new ClusterError(errors);
      }
    }
    // kvctl only tried further endpoints the request never reached; Go's client would
    // have stopped at the first.
    if (opts.goOneShot === true && errors[0] !== undefined) throw errors[0];
    throw new ClusterError(errors);
  }

  /** Closes kept-alive connections so the process can exit. */
  close(): void {
    this.#transport.close();
  }

  #send(ep: ParsedEndpoint, action: Action, signal: AbortSignal | undefined): Promise<HttpResponse> {
    const path = action.path(ep.basePath);
    const headers: Record<string, string> = {};
    if (action.contentType !== undefined) headers["content-type"] = action.contentType;
    if (this.#authorization !== undefined) headers["authorization"] = this.#authorization;
    if (this.#onRequest !== undefined) {
      const body = action.body !== undefined ? ` -d ${JSON.stringify(action.body)}` : "";
      this.#onRequest(`curl -X ${action.method} ${ep.origin}${path}${body}`);
    }
    const req: HttpRequest = {
      method: action.method,
      origin: ep.origin,
      path,
      headers,
      headerTimeoutMs: action.wait ? 0 : this.#headerTimeoutMs,
    };
    if (action.body !== undefined) req.body = action.body;
    if (signal !== undefined) req.signal = signal;
    return this.#transport.request(req);
  }
}
