// A client of the v3 JSON gateway (POST /v3/kv/range …), the way etcd's clientv3 behaves
// where a user can tell: endpoints tried in turn, the auth token fetched once from
// /v3/auth/authenticate (and again when the server calls it invalid), sent raw in the
// Authorization header; a gateway error body `{"error","message","code"}` becomes a
// V3Error with its gRPC code and etcd's message.
//
// Invariants:
// - A request moves to the next endpoint only after a failure that proves it was never
//   sent (connection refused, DNS): a write is never sent twice.
// - The token is sent only to the endpoints of this client.

import { V3Error, GrpcCode } from "../api/v3-errors.ts";
import { parseEndpoint, type ParsedEndpoint } from "./cluster.ts";
import { ClientError, ClusterError, DeadlineExceededError, NetworkError } from "./errors.ts";
import type { HttpResponse, TlsFiles, Transport } from "./transport.ts";
import { openStream } from "./v3-stream.ts";
import type { WireAuthenticateResponse } from "./v3-types.ts";

export interface V3ClientOptions {
  endpoints: readonly string[];
  transport: Transport;
  /** Time to wait for an endpoint's response headers (etcdctl --dial-timeout); 0 = none. */
  dialTimeoutMs?: number;
  credentials?: { username: string; password: string };
  /** TLS files for streams (unary requests use the transport's own). */
  tls?: TlsFiles;
  /** Called before each attempt with `POST <url> <body>` (--debug). */
  onRequest?: (line: string) => void;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** Authentication failed while connecting: etcdctl exits 2 (ExitBadConnection) for it. */
export class V3AuthError extends ClientError {
  override readonly cause: V3Error;
  constructor(cause: V3Error) {
    super("AUTH_FAILED", cause.message, { cause });
    this.name = "V3AuthError";
    this.cause = cause;
  }
}

function isErrorBody(v: unknown): v is { error?: unknown; message?: unknown; code?: unknown } {
  return typeof v === "object" && v !== null && ("code" in v || "error" in v);
}

/** The V3Error a gateway answer carries, or undefined for a 2xx answer. */
export function gatewayError(res: HttpResponse): V3Error | undefined {
  if (res.status >= 200 && res.status < 300) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return new V3Error(GrpcCode.Unknown, `unexpected HTTP status ${res.status} ${res.statusText}: ${res.body.trim()}`);
  }
  if (isErrorBody(body)) {
    const message = typeof body.message === "string" && body.message !== "" ? body.message : String(body.error ?? "");
    return new V3Error(typeof body.code === "number" ? body.code : GrpcCode.Unknown, message);
  }
  return new V3Error(GrpcCode.Unknown, `unexpected HTTP status ${res.status} ${res.statusText}`);
}

export class V3Client {
  readonly #endpoints: ParsedEndpoint[];
  #pinned = 0;
  readonly #transport: Transport;
  readonly #dialTimeoutMs: number;
  readonly #credentials: { username: string; password: string } | undefined;
  readonly #tls: TlsFiles;
  readonly #onRequest: ((line: string) => void) | undefined;
  /** undefined: not authenticated yet; "": the server has auth disabled. */
  #token: string | undefined;

  constructor(opts: V3ClientOptions) {
    if (opts.endpoints.length === 0) throw new ClientError("NO_ENDPOINTS", "client: no endpoints available");
    this.#endpoints = opts.endpoints.map(parseEndpoint);
    this.#transport = opts.transport;
    this.#dialTimeoutMs = opts.dialTimeoutMs ?? 0;
    this.#credentials = opts.credentials;
    this.#tls = opts.tls ?? {};
    this.#onRequest = opts.onRequest;
  }

  /** POSTs `body` to `path` (e.g. /v3/kv/range) and returns the parsed answer. */
  async call<T>(path: string, body: unknown, opts: CallOptions = {}): Promise<T> {
    await this.#ensureToken(opts);
    try {
      return await this.#post<T>(path, body, opts);
    } catch (err) {
      // clientv3 re-authenticates once when a token expired (simple tokens last 5 min).
      if (err instanceof V3Error && err.code === GrpcCode.Unauthenticated && this.#credentials !== undefined) {
        this.#token = undefined;
        await this.#ensureToken(opts);
        return this.#post<T>(path, body, opts);
      }
      throw err;
    }
  }

  /**
   * Opens a server stream (watch, keep-alive) on the first endpoint that accepts a
   * connection; `onMessage` gets each `result`. Resolves when the stream ends.
   */
  async stream(
    path: string,
    body: unknown,
    onMessage: (result: unknown) => void,
    opts: CallOptions & { connectTimeoutMs?: number } = {},
  ): Promise<void> {
    await this.#ensureToken(opts);
    const text = JSON.stringify(body);
    const errors: Error[] = [];
    for (let i = 0; i < this.#endpoints.length; i++) {
      const k = (this.#pinned + i) % this.#endpoints.length;
      const ep = this.#endpoints[k];
      if (ep === undefined) continue;
      this.#onRequest?.(`POST ${ep.origin}${ep.basePath}${path} ${text}`);
      let failure: V3Error | undefined;
      try {
        const status = await openStream(
          {
            origin: ep.origin,
            path: `${ep.basePath}${path}`,
            headers: this.#headers(),
            body: text,
            tls: this.#tls,
            ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
            connectTimeoutMs: opts.connectTimeoutMs ?? this.#dialTimeoutMs,
          },
          (msg) => {
            if (typeof msg === "object" && msg !== null && "result" in msg) onMessage((msg as { result: unknown }).result);
            else if (typeof msg === "object" && msg !== null && "error" in msg) {
              const e = (msg as { error: unknown }).error;
              failure = isErrorBody(e)
                ? new V3Error(typeof e.code === "number" ? e.code : GrpcCode.Unknown, String(e.message ?? e.error ?? ""))
                : new V3Error(GrpcCode.Unknown, JSON.stringify(e));
            } else if (isErrorBody(msg)) {
              failure = new V3Error(typeof msg.code === "number" ? msg.code : GrpcCode.Unknown, String(msg.message ?? msg.error ?? ""));
            }
          },
        );
        this.#pinned = k;
        if (failure !== undefined) throw failure;
        if (status !== 200 && status !== 0) throw new V3Error(GrpcCode.Unknown, `unexpected HTTP status ${status}`);
        return;
      } catch (err) {
        if (err instanceof NetworkError && !err.sent) {
          errors.push(err);
          continue;
        }
        throw err;
      }
    }
    throw new ClusterError(errors);
  }

  close(): void {
    this.#transport.close();
  }

  /** GETs a plain-text path (/metrics) from the first endpoint that answers. */
  async getText(path: string, opts: CallOptions = {}): Promise<string> {
    const errors: Error[] = [];
    for (const ep of this.#endpoints) {
      try {
        const res = await this.#transport.request({
          method: "GET",
          origin: ep.origin,
          path: `${ep.basePath}${path}`,
          headers: {},
          headerTimeoutMs: this.#dialTimeoutMs,
          ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
        });
        if (res.status !== 200) throw new ClientError("HTTP_STATUS", `unexpected HTTP status ${res.status} ${res.statusText}`);
        return res.body;
      } catch (err) {
        if (err instanceof NetworkError && !err.sent) {
          errors.push(err);
          continue;
        }
        throw err;
      }
    }
    throw new ClusterError(errors);
  }

  /** The auth token (after logging in with the credentials), "" without auth: for calls made over gRPC. */
  async authToken(opts: CallOptions = {}): Promise<string> {
    await this.#ensureToken(opts);
    return this.#token ?? "";
  }

  #headers(): Record<string, string> {
    const h: Record<string, string> = { "content-type": "application/json" };
    if (this.#token !== undefined && this.#token !== "") h["authorization"] = this.#token;
    return h;
  }

  async #ensureToken(opts: CallOptions): Promise<void> {
    if (this.#credentials === undefined || this.#token !== undefined) return;
    const { username, password } = this.#credentials;
    try {
      const r = await this.#post<WireAuthenticateResponse>("/v3/auth/authenticate", { name: username, password }, opts);
      this.#token = r.token ?? "";
    } catch (err) {
      // clientv3 connects without a token when the server has auth disabled.
      if (err instanceof V3Error && err.message === "etcdserver: authentication is not enabled") {
        this.#token = "";
        return;
      }
      if (err instanceof V3Error) throw new V3AuthError(err);
      throw err;
    }
  }

  async #post<T>(path: string, body: unknown, opts: CallOptions): Promise<T> {
    const text = JSON.stringify(body);
    const errors: Error[] = [];
    const n = this.#endpoints.length;
    for (let i = 0; i < n; i++) {
      const k = (this.#pinned + i) % n;
      const ep = this.#endpoints[k];
      if (ep === undefined) continue;
      const logged = path === "/v3/auth/authenticate" ? text.replace(/"password":"(?:[^"\\]|\\.)*"/, '"password":"***"') : text;
      this.#onRequest?.(`POST ${ep.origin}${ep.basePath}${path} ${logged}`);
      let res: HttpResponse;
      try {
        res = await this.#transport.request({
          method: "POST",
          origin: ep.origin,
          path: `${ep.basePath}${path}`,
          headers: this.#headers(),
          body: text,
          headerTimeoutMs: this.#dialTimeoutMs,
          ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
        });
      } catch (err) {
        if (err instanceof DeadlineExceededError || opts.signal?.aborted) throw err;
        if (err instanceof NetworkError && !err.sent) {
          errors.push(err);
          continue;
        }
        throw err;
      }
      const v3err = gatewayError(res);
      this.#pinned = k;
      if (v3err !== undefined) throw v3err;
      try {
        return JSON.parse(res.body === "" ? "{}" : res.body) as T;
      } catch (cause) {
        throw new ClientError("INVALID_JSON", `invalid JSON from ${ep.origin}${path}`, { cause });
      }
    }
    throw new ClusterError(errors);
  }
}
