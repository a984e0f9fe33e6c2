// Writing v3 gateway answers. Successes: 200, application/json, `Grpc-Metadata-Content-Type:
// application/grpc` (the gRPC response header the gateway forwards), one write with a
// Content-Length. Errors: `{"error":m,"message":m,"code":c}` with the HTTP status of the
// gRPC code; an error that came back from the gRPC server also carries the gRPC trailer
// (`Trailer: Grpc-Trailer-Content-Type`, sent chunked with the trailer value), one made by
// the gateway itself (JSON/base64/enum decoding, a stream's broken first message) does not.
//
// Note: respond.ts imports this file and this file imports respond.ts; nothing here uses
// respond.ts at module load, only inside functions, so the cycle is harmless.
import type { ServerResponse } from "node:http";
import { V3Error, httpStatusOfGrpcCode } from "../../api/v3-errors.ts";
import { corsHeaders, jsonBase, sendJson } from "./respond.ts";
import type { JsonObject } from "./v3-encode.ts";
import { GatewayError } from "./v3-wire.ts";

const GRPC_METADATA = ["Grpc-Metadata-Content-Type", "application/grpc"] as const;

function cors(): string[] {
  return Object.entries(corsHeaders).flat() as string[];
}

/**
 * A unary answer as the router writes it: the status, the headers after `jsonBase`, the
 * body, and for an error from the gRPC server the trailer (then sent chunked, without a
 * Content-Length). The router's writers and the fast lane (v3-fast-kv.ts) both use these.
 */
export interface V3AnswerParts {
  status: number;
  extra: readonly string[];
  body: string;
  /** Trailer names and values, flat; absent: a complete answer with a Content-Length. */
  trailer?: readonly string[];
}

const GRPC_TRAILER = ["Grpc-Trailer-Content-Type", "application/grpc"] as const;
const TRAILER_HEADER = ["Trailer", "Grpc-Trailer-Content-Type"] as const;

/** A unary success's parts. */
export function v3SuccessParts(body: JsonObject): V3AnswerParts {
  return { status: 200, extra: GRPC_METADATA, body: JSON.stringify(body) };
}

/** A unary success. */
export function sendV3Json(res: ServerResponse, body: JsonObject): void {
  const p = v3SuccessParts(body);
  sendJson(res, p.status, p.extra, p.body);
}

/** The error body, as grpc-gateway's DefaultHTTPError writes it. */
export function errorBody(code: number, message: string): string {
  return JSON.stringify({ error: message, message, code });
}

/** A V3Error's parts: one the gateway made has a Content-Length; one from the server, the gRPC trailer. */
export function v3ErrorParts(err: V3Error): V3AnswerParts {
  const status = httpStatusOfGrpcCode(err.code);
  const body = errorBody(err.code, err.message);
  if (err instanceof GatewayError) return { status, extra: [], body };
  return { status, extra: TRAILER_HEADER, body, trailer: GRPC_TRAILER };
}

/** THE rendering of a V3Error (respond.ts's writeError calls it). */
export function writeV3Error(res: ServerResponse, err: V3Error): void {
  const p = v3ErrorParts(err);
  if (p.trailer === undefined) {
    sendJson(res, p.status, p.extra, p.body);
    return;
  }
  // Chunked, so that the trailer can follow the body.
  res.writeHead(p.status, jsonBase.concat(p.extra));
  const trailers: Record<string, string> = {};
  for (let i = 0; i + 1 < p.trailer.length; i += 2) trailers[p.trailer[i]!] = p.trailer[i + 1]!;
  res.addTrailers(trailers);
  res.end(p.body);
}

/** grpc-gateway's text for an HTTP status (Go's http.StatusText) in stream error chunks. */
const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  408: "Request Timeout",
  409: "Conflict",
  412: "Precondition Failed",
  429: "Too Many Requests",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** grpc-gateway's error chunk ending a stream, `{"error":{grpc_code, http_code, message, http_status}}`, and its HTTP status. */
export function streamErrorChunk(err: V3Error): { status: number; body: string } {
  const status = httpStatusOfGrpcCode(err.code);
  return { status, body: JSON.stringify({ error: { grpc_code: err.code, http_code: status, message: err.message, http_status: STATUS_TEXT[status] ?? "" } }) };
}

/**
 * A response stream: `{"result":...}` lines. The head is written with the first line (so a
 * stream that never answers sends nothing at all, as etcd's gateway), and every line is
 * handed to the socket at once.
 */
export class V3StreamWriter {
  readonly res: ServerResponse;
  #started = false;

  constructor(res: ServerResponse) {
    this.res = res;
  }

  get started(): boolean {
    return this.#started || this.res.headersSent;
  }

  /** Writes one line; false when the response is gone. */
  line(text: string): boolean {
    if (this.res.destroyed || this.res.writableEnded) return false;
    this.#head(true);
    this.res.write(text);
    return true;
  }

  /**
   * Ends the stream. A stream that sent nothing gets etcd's bare head (no gRPC metadata:
   * the server never answered).
   */
  end(): void {
    if (this.res.destroyed || this.res.writableEnded) return;
    this.#head(false);
    this.res.end();
  }

  /**
   * A gRPC error ends the stream: before any line it is answered like a unary error
   * (without trailer: the gateway got it as the stream's status); after, as grpc-gateway's
   * error chunk `{"error":{grpc_code, http_code, message, http_status}}`.
   */
  fail(err: unknown): void {
    if (this.res.destroyed || this.res.writableEnded) return;
    const v = err instanceof V3Error ? err : new V3Error(2, err instanceof Error ? err.message : String(err));
    const status = httpStatusOfGrpcCode(v.code);
    if (!this.started) {
      sendJson(this.res, status, [], errorBody(v.code, v.message));
      return;
    }
    this.res.end(streamErrorChunk(v).body);
  }

  #head(withMetadata: boolean): void {
    if (this.#started || this.res.headersSent) return;
    this.#started = true;
    const h = [...cors(), "Content-Type", "application/json"];
    if (withMetadata) h.push(...GRPC_METADATA);
    this.res.writeHead(200, h);
  }
}
