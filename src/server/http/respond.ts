// Writing responses. Every error a handler can raise is turned into status, headers and
// body here and nowhere else, so the wire shapes stay etcd's (see REFERENCE.md).
import type { IncomingMessage, ServerResponse, OutgoingHttpHeaders } from "node:http";
import { V2Error, v2ErrorStatus } from "../../api/v2-errors.ts";
import { Header } from "../../api/headers.ts";
import { V3Error } from "../../api/v3-errors.ts";
import { writeV3Error } from "./v3-respond.ts";
import { ServerUnavailableError } from "../errors.ts";

/** Headers etcd's CORS wrapper adds to every response. */
export const corsHeaders: Readonly<OutgoingHttpHeaders> = {
  "Access-Control-Allow-Headers": "accept, content-type, authorization",
  "Access-Control-Allow-Methods": "POST, GET, OPTIONS, PUT, DELETE",
  "Access-Control-Allow-Origin": "*",
};

/**
 * An error the HTTP layer itself answers with a status of its choosing: raised only in
 * http/ (the core raises its own errors, server/errors.ts, and the APIs' V2Error and
 * V3Error, which writeError maps). The subclass says the body's shape.
 */
abstract class HttpError extends Error {
  readonly status: number;
  readonly headers: OutgoingHttpHeaders;
  constructor(status: number, message: string, headers: OutgoingHttpHeaders = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

/** An error answered with `{"message": ...}` (members, auth admin endpoints): etcd's httptypes.HTTPError. */
export class HttpMessageError extends HttpError {
  override name = "HttpMessageError";
}

/** A plain-text error as Go's http.Error writes it (404 page not found, 405 Method Not Allowed). */
export class HttpTextError extends HttpError {
  override name = "HttpTextError";
}

export interface ErrorContext {
  clusterId: string;
}

export function notFound(): HttpTextError {
  return new HttpTextError(404, "404 page not found");
}

export function methodNotAllowed(allow: string): HttpTextError {
  return new HttpTextError(405, "Method Not Allowed", { Allow: allow });
}

/** CORS + JSON content type as a flat [name, value, ...] list (writeHead's cheapest form). */
export const jsonBase: readonly string[] = [...Object.entries(corsHeaders).flat() as string[], "Content-Type", "application/json"];

/**
 * Writes a complete JSON response. The Content-Length matters for speed: with it Node sends
 * head and body in ONE write; without it every response is chunked and costs a writev of
 * several buffers (the hottest spot in a profile of the key-space workloads).
 */
export function sendJson(res: ServerResponse, status: number, extra: readonly string[], body: string | undefined): void {
  const h = jsonBase.concat(extra);
  h.push("Content-Length", body === undefined ? "0" : String(Buffer.byteLength(body)));
  res.writeHead(status, h);
  res.end(body);
}

export function writeJson(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: string): void {
  const extra: string[] = [];
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) extra.push(k, String(v));
  sendJson(res, status, extra, body);
}

export function writeText(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, text: string): void {
  // Go's server gives a short complete answer a Content-Length (chunked only for long or flushed ones).
  res.writeHead(status, {
    ...corsHeaders,
    "Content-Type": "text/plain; charset=utf-8",
    "X-Content-Type-Options": "nosniff",
    ...headers,
    "Content-Length": String(Buffer.byteLength(text)),
  });
  res.end(text);
}

/** A v2 error's status, headers after `jsonBase`, and body (also used by the fast lane). */
export function v2ErrorParts(err: V2Error, clusterId: string): { status: number; extra: string[]; body: string } {
  const idx = String(err.index);
  return {
    status: v2ErrorStatus(err.errorCode),
    extra: [Header.kvClusterId, clusterId, Header.etcdClusterId, clusterId, Header.kvIndex, idx, Header.etcdIndex, idx],
    body: JSON.stringify(err.toJSON()) + "\n",
  };
}

/** THE error mapper: any thrown value -> status, headers, body. */
export function writeError(req: IncomingMessage, res: ServerResponse, err: unknown, ctx: ErrorContext): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof V2Error) {
    const r = v2ErrorParts(err, ctx.clusterId);
    sendJson(res, r.status, r.extra, r.body);
    return;
  }
  if (err instanceof HttpMessageError) {
    writeJson(res, err.status, err.headers, JSON.stringify({ message: err.message }));
    return;
  }
  if (err instanceof HttpTextError) {
    writeText(res, err.status, err.headers, err.message + "\n");
    return;
  }
  if (err instanceof V3Error) {
    writeV3Error(res, err);
    return;
  }
  const r = proposalErrorParts(err, ctx.clusterId);
  sendJson(res, r.status, r.extra, r.body);
  void req;
}

/**
 * What a failed proposal is answered with besides a V2Error (also used by the fast lane,
 * which must answer a write it proposed itself): a raft-side failure, or anything else.
 */
export function proposalErrorParts(err: unknown, clusterId: string): { status: number; extra: string[]; body: string } {
  if (err instanceof V2Error) return v2ErrorParts(err, clusterId);
  if (err instanceof ServerUnavailableError) {
    // etcd answers raft-side failures on /v2/keys as a v2 error 300 (Raft Internal Error), status 500.
    const body = { errorCode: 300, message: "Raft Internal Error", cause: err.message, index: 0 };
    return { status: 500, extra: [Header.kvClusterId, clusterId, Header.etcdClusterId, clusterId], body: JSON.stringify(body) + "\n" };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { status: 500, extra: [], body: JSON.stringify({ message: `internal error: ${message}` }) };
}
