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
import { corsHeaders, sendJson } from "./respond.ts";
import type { JsonObject } from "./v3-encode.ts";
import { GatewayError } from "./v3-wire.ts";

const GRPC_METADATA = ["Grpc-Metadata-Content-Type", "application/grpc"] as const;

function cors(): string[] {
  return Object.entries(corsHeaders).flat() as string[];
}

/** A unary success. */
export function sendV3Json(res: ServerResponse, body: JsonObject): void {
  sendJson(res, 200, GRPC_METADATA, JSON.stringify(body));
}

/** The error body, as grpc-gateway's DefaultHTTPError writes it. */
export function errorBody(code: number, message: string): string {
  return JSON.stringify({ error: message, message, code });
}

/** THE rendering of a V3Error (respond.ts's writeError calls it). */
export function writeV3Error(res: ServerResponse, err: V3Error): void {
  const body = errorBody(err.code, err.message);
  if (err instanceof GatewayError) {
    sendJson(res, httpStatusOfGrpcCode(err.code), [], body);
    return;
  }
  // Chunked, so that the trailer can follow the body.
  res.writeHead(httpStatusOfGrpcCode(err.code), [...cors(), "Content-Type", "application/json", "Trailer", "Grpc-Trailer-Content-Type"]);
  res.addTrailers({ "Grpc-Trailer-Content-Type": "application/grpc" });
  res.end(body);
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
    const chunk = { error: { grpc_code: v.code, http_code: status, message: v.message, http_status: STATUS_TEXT[status] ?? "" } };
    this.res.end(JSON.stringify(chunk));
  }

  #head(withMetadata: boolean): void {
    if (this.#started || this.res.headersSent) return;
    this.#started = true;
    const h = [...cors(), "Content-Type", "application/json"];
    if (withMetadata) h.push(...GRPC_METADATA);
    this.res.writeHead(200, h);
  }
}
