// Client-side errors. Messages are etcd's Go client messages (go.etcd.io/etcd/client), so
// `kvctl` prints what `etcdctl` prints and scripts that grep stderr keep working.
// The v2 key-space error itself is the shared V2Error from src/api.

import { V2Error, v2ErrorMessages } from "../api/v2-errors.ts";

/** Base class: a stable string `code` for programs, a Go-style `message` for people. */
export class ClientError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ClientError";
    this.code = code;
  }
}

/**
 * A network failure talking to one endpoint. `sent` is false when the request surely
 * never reached the server (connection refused, DNS failure): only then is it safe to
 * retry a non-idempotent request (create, delete) on the next endpoint.
 */
export class NetworkError extends ClientError {
  readonly sent: boolean;
  /** True for dial/read failures and timeouts: etcdctl's isConnectionError. */
  readonly connection: boolean;

  constructor(message: string, opts: { code: string; sent: boolean; connection: boolean; cause?: unknown }) {
    super(opts.code, message, { cause: opts.cause });
    this.name = "NetworkError";
    this.sent = opts.sent;
    this.connection = opts.connection;
  }
}

/** No response headers within --timeout (etcd client: "exceeded header timeout"). */
export class HeaderTimeoutError extends ClientError {
  constructor(endpoint: string) {
    super("HEADER_TIMEOUT", `client: endpoint ${endpoint} exceeded header timeout`);
    this.name = "HeaderTimeoutError";
  }
}

/** The whole command ran past --total-timeout (Go: context.DeadlineExceeded). */
export class DeadlineExceededError extends ClientError {
  constructor() {
    super("DEADLINE_EXCEEDED", "context deadline exceeded");
    this.name = "DeadlineExceededError";
  }
}

/** A member answered 5xx: etcd's client moves on to the next endpoint. */
export class ServerError extends ClientError {
  readonly status: number;

  constructor(endpoint: string, status: number, statusText: string) {
    super(
      "SERVER_ERROR",
      status === 500 || status === 503
        ? `client: etcd member ${endpoint} has no leader`
        : `client: etcd member ${endpoint} returns server error [${statusText}]`,
    );
    this.name = "ServerError";
    this.status = status;
  }
}

/** Every endpoint failed; `errors` in the order they were tried. */
export class ClusterError extends ClientError {
  readonly errors: readonly Error[];

  constructor(errors: readonly Error[]) {
    // etcd joins the per-endpoint errors with "\n; "; we keep the message on one line.
    const detail = errors.map((e, i) => `; error #${i}: ${e.message}`).join("");
    super("CLUSTER_UNAVAILABLE", `client: etcd cluster is unavailable or misconfigured${detail}`);
    this.name = "ClusterError";
    this.errors = errors;
  }
}

export const invalidJsonMessage =
  "client: response is invalid json. The endpoint is probably not valid etcd cluster endpoint";

export function invalidJsonError(): ClientError {
  return new ClientError("INVALID_JSON", invalidJsonMessage);
}

/** etcdctl's isConnectionError: every underlying failure was a dial/read error or a timeout. */
export function isConnectionError(err: unknown): boolean {
  if (err instanceof ClusterError) return err.errors.length > 0 && err.errors.every(isConnectionError);
  if (err instanceof NetworkError) return err.connection;
  return err instanceof DeadlineExceededError;
}

/**
 * The text etcd's Go client gives a v2 error: `100: Key not found (/foo) [12]`. The
 * message is the server's, which equals the shared table's for every known code.
 */
export function formatV2Error(err: V2Error): string {
  return `${err.errorCode}: ${v2ErrorText(err)} (${err.cause_}) [${err.index}]`;
}

function v2ErrorText(err: V2Error): string {
  const known = v2ErrorMessages[err.errorCode];
  if (known !== undefined) return known;
  // V2Error decorates an unknown code's message with " (cause)": take it back off.
  const suffix = err.cause_ === "" ? "" : ` (${err.cause_})`;
  return suffix !== "" && err.message.endsWith(suffix) ? err.message.slice(0, -suffix.length) : err.message;
}
