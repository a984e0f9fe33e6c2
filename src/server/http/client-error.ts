// node:http's `clientError` for client listeners. Go reads a request body as the handler
// reads it, so a malformed chunked body is an error of that read (etcd answers a v2 form
// with 210 "Invalid POST form" and the chunk reader's message); llhttp instead fails the
// whole connection and, left alone, node:http answers a bare 400 with no CORS headers,
// even for a request already being handled. Here the request being read gets its body
// ended with Go's error, its handler answers, and the connection closes after that answer.
// goHeadRefusal: heads Go refuses while reading them, some of which node:http serves.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { markBodyBroken } from "./body.ts";
import { unescape } from "./form.ts";
import { originForm } from "./path.ts";

interface Current {
  req: IncomingMessage;
  res: ServerResponse;
}

/** The request each connection is on (the last one node:http emitted on it). */
const current = new WeakMap<Socket, Current>();
/** Connections whose parser has failed: later errors of the same parser are echoes. */
const failed = new WeakSet<Socket>();

/** Remembers the request a connection is on; call for every request, before any await. */
export function trackRequest(req: IncomingMessage, res: ServerResponse): void {
  current.set(req.socket, { req, res });
}

interface ParserError extends Error {
  code?: string;
  reason?: string;
  rawPacket?: Buffer;
  bytesParsed?: number;
}

/** Go's chunked reader's words (net/http/internal/chunked.go) for llhttp's error at this byte. */
export function goChunkedError(err: ParserError): string {
  if (err.code === "HPE_INVALID_CHUNK_SIZE") {
    return /overflow/i.test(err.reason ?? "") ? "http chunk length too large" : "invalid byte in chunk length";
  }
  return "malformed chunked encoding";
}

/**
 * An empty chunk-size line: the Go etcd 3.4 is built with reads it as size 0 (the last
 * chunk; parseHexUint had no emptiness check then), so the body ends there without error.
 */
function emptyChunkSize(err: ParserError): boolean {
  const at = err.bytesParsed === undefined ? undefined : err.rawPacket?.[err.bytesParsed];
  return err.code === "HPE_INVALID_CHUNK_SIZE" && (at === 13 || at === 10);
}

/** Go's answer to a request head it cannot parse. */
export const BAD_REQUEST = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request";
/** Go's answer to a transfer coding it does not implement (the coding is not echoed). */
export const UNSUPPORTED_TE = "HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nUnsupported transfer encoding";
const HEADERS_TOO_LARGE = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large";
const TIMEOUT = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n";

/**
 * Go's raw answer to a head with these header lines (rawHeaders form: name, value, ...) that
 * Go (etcd 3.4.23's) refuses before any handler, or undefined when Go reads it: a
 * Transfer-Encoding other than one `chunked` line is 501 (fixTransferEncoding; `identity`
 * and `gzip, chunked` too; HTTP/1.0 ignores the header), more than one Host line is 400.
 */
export function goHeadRefusal(rawHeaders: readonly string[], httpVersion: string): string | undefined {
  const te: string[] = [];
  let hosts = 0;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (name === "transfer-encoding") te.push(rawHeaders[i + 1]!);
    else if (name === "host") hosts++;
  }
  if (httpVersion !== "1.0" && te.length > 0 && (te.length > 1 || te[0]!.trim().toLowerCase() !== "chunked")) return UNSUPPORTED_TE;
  if (hosts > 1) return BAD_REQUEST;
  return undefined;
}

/** Whether Go refuses this request target (a bad escape, a path not starting with "/"), as the router does: a raw 400. */
export function goTargetRefused(target: string): boolean {
  if (target === "*") return false;
  const rawPath = (originForm(target)?.target ?? target).split("?")[0] ?? "";
  return "error" in unescape(rawPath, false) || !rawPath.startsWith("/");
}

/**
 * Go's refusal of a raw head (as much of it as llhttp had when it failed): its target first
 * (a bad escape, or a path not starting with "/": the router's raw 400), then goHeadRefusal.
 */
function rawHeadRefusal(raw: Buffer | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const text = raw.toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  const lines = (end < 0 ? text : text.slice(0, end)).split("\r\n");
  const target = /^[^ ]+ ([^ ]*) HTTP\/\d\.\d$/.exec(lines[0] ?? "")?.[1];
  if (target !== undefined && goTargetRefused(target)) return BAD_REQUEST;
  const rawHeaders: string[] = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) rawHeaders.push(line.slice(0, colon), line.slice(colon + 1));
  }
  return goHeadRefusal(rawHeaders, /HTTP\/1\.0$/.test(lines[0] ?? "") ? "1.0" : "1.1");
}

export function onClientError(error: Error, socket: Socket): void {
  const err = error as ParserError;
  if (failed.has(socket)) return;
  failed.add(socket);
  socket.on("error", () => undefined);
  const cur = current.get(socket);
  if (cur !== undefined && !cur.req.complete && err.code?.startsWith("HPE_") === true) {
    if (cur.res.writableFinished) {
      // Answered without reading its body (Go discards the rest): the connection just closes.
      socket.end();
      return;
    }
    cur.res.shouldKeepAlive = false;
    if (!emptyChunkSize(err)) markBodyBroken(cur.req, goChunkedError(err));
    // Complete, or the request's auto-destroy at its end would take the socket with it.
    cur.req.complete = true;
    cur.req.push(null);
    return;
  }
  if (cur !== undefined && !cur.res.writableFinished) {
    // A broken request pipelined behind one not yet answered: that one first, then close.
    cur.res.shouldKeepAlive = false;
    return;
  }
  if (cur !== undefined && !cur.res.shouldKeepAlive) {
    // The last answer said Connection: close (bytes of a body it did not wait for can still
    // arrive and fail the parser): nothing may follow it on this connection.
    socket.end();
    return;
  }
  if (socket.writable) {
    // llhttp fails some heads Go refuses otherwise (Transfer-Encoding `identity` with a
    // Content-Length, `chunked, chunked`).
    const refusal = err.code === "HPE_INVALID_TRANSFER_ENCODING" || err.code === "HPE_INVALID_CONTENT_LENGTH" || err.code === "HPE_UNEXPECTED_CONTENT_LENGTH" ? rawHeadRefusal(err.rawPacket) : undefined;
    socket.write(err.code === "HPE_HEADER_OVERFLOW" ? HEADERS_TOO_LARGE : err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? TIMEOUT : (refusal ?? BAD_REQUEST));
  }
  socket.destroySoon();
}
