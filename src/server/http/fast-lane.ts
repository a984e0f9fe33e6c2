// A byte-level lane in front of node:http for requests answered at once from memory (a
// plain `GET /v2/keys/...`). For such a request node:http costs more CPU than the work
// itself (request and response objects, header maps, a socket write through the outgoing
// message machinery); on a read-heavy member that is the difference between serving fewer
// GETs than etcd and more. The lane parses the request head itself, asks a `FastHandler`
// for the whole response and writes it in one call.
//
// A PUT, POST, PATCH or DELETE may carry a small body by Content-Length (a v2 write's form,
// a v3 gateway call's JSON): the lane hands it
// to the handler with the head once all of it has arrived; a body still on its way, or
// longer than `maxBodyBytes`, is left to node:http.
//
// Everything else goes to node:http unchanged: when the handler declines a request (any
// other method or path, an unusual or malformed head), the lane stops reading, puts
// the unread bytes back on the socket and hands the connection to node:http, which keeps it
// from then on. So every request the lane does not answer is parsed and answered exactly
// as it would be without the lane.
//
// Invariants:
// - responses leave in request order: the lane answers one request at a time (waiting,
//   with the socket paused, when the handler's answer is a promise) and hands a
//   connection over only between requests, before anything of the next one is answered;
// - the lane accepts only heads node:http would accept too (strict HTTP/1.1, CRLF lines,
//   visible ASCII, one Host, at most one Content-Length and no Transfer-Encoding, no
//   Connection other than keep-alive, no Expect or Upgrade), so it never answers a request
//   node:http would have refused;
// - a request whose answer is a promise is answered: a graceful close waits for it;
// - a response is byte for byte what node:http would write for the same status, headers
//   and body (Date, Connection and Keep-Alive after the handler's headers; with a trailer,
//   Transfer-Encoding: chunked after them and the body as one chunk).
import { METHODS, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";

/** The part of a request head the lane understands. */
export interface RequestHead {
  method: string;
  /** The request target as sent (origin form: path and query). */
  target: string;
  host: string;
  authorization: string | undefined;
  /** The Grpc-Metadata-Token header (the v3 gateway's token), when present. */
  grpcToken?: string;
  /** Bytes of the request: the head, final empty line included, and the body. */
  length: number;
  /** The body (bytes as latin1 characters), present only when the head gave a Content-Length. */
  body?: string;
  /** The Content-Type header, when the request has a body. */
  contentType?: string | undefined;
}

/** A complete response; the lane adds Content-Length, Date, Connection and Keep-Alive. */
export interface FastResponse {
  status: number;
  /** Header names and values, flat, in the order they are written. */
  headers: readonly string[];
  body: string;
  /**
   * Trailer names and values, flat: the response is then sent chunked with them after the
   * body, as node:http sends one with addTrailers (no Content-Length).
   */
  trailer?: readonly string[];
  /** Called once the response was handed to the socket (a traced write's last phase). */
  written?: () => void;
}

/**
 * Answers a request from memory, or `undefined` to leave it to node:http. Never throws.
 * A promise when the answer must wait for something slow but bounded (a password check):
 * the connection reads nothing more until it settles (a rejection counts as `undefined`).
 */
export type FastHandler = (head: RequestHead) => FastResponse | undefined | Promise<FastResponse | undefined>;

/** A head is `incomplete` until its empty line arrives; `decline` leaves it to node:http. */
export type HeadParse = RequestHead | "incomplete" | "decline";

const CR = 13;
/** The methods whose body the lane reads (a form); a GET or HEAD with one goes to node:http. */
const BODY_METHODS: ReadonlySet<string> = new Set(["PUT", "POST", "PATCH", "DELETE"]);
const SP = 32;
const HT = 9;

/** Visible ASCII only: what a request target may hold. */
function isVisible(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return s.length > 0;
}

/** RFC 7230 token characters: what a header name may hold. */
function isToken(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f || '"(),/:;<=>?@[\\]{}'.includes(s[i]!)) return false;
  }
  return true;
}

/** Header values: visible ASCII, spaces and tabs. */
function isFieldValue(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if ((c < 0x20 && c !== HT) || c > 0x7e) return false;
  }
  return true;
}

/**
 * Parses one request head starting at `from` in `buf` (bytes as latin1 characters). Pure.
 * @param maxHeadBytes a head not complete within this many bytes is declined (node:http
 *   then answers it with its own limit)
 * @param maxBodyBytes a request with a longer body, or with a body when 0, is declined; so
 *   is one whose body has not all arrived (node:http reads the rest)
 */
export function parseHead(buf: string, from: number, maxHeadBytes: number, maxBodyBytes = 0): HeadParse {
  let pos = from;
  let method = "";
  let target = "";
  let host: string | undefined;
  let authorization: string | undefined;
  let grpcToken: string | undefined;
  let contentLength = -1;
  let contentType: string | undefined;
  for (let line = 0; ; line++) {
    const nl = buf.indexOf("\n", pos);
    if (nl < 0) return buf.length - from > maxHeadBytes ? "decline" : "incomplete";
    if (nl - from > maxHeadBytes) return "decline";
    // Bare LF line ends are left to node:http (it is lenient about some of them).
    if (nl === pos || buf.charCodeAt(nl - 1) !== CR) return "decline";
    const end = nl - 1;
    if (end === pos) {
      if (line === 0 || host === undefined) return "decline";
      const token = grpcToken === undefined ? {} : { grpcToken };
      if (contentLength < 0) return { method, target, host, authorization, ...token, length: nl + 1 - from };
      if (buf.length - (nl + 1) < contentLength) return "decline";
      const body = buf.slice(nl + 1, nl + 1 + contentLength);
      return { method, target, host, authorization, ...token, length: nl + 1 + contentLength - from, body, contentType };
    }
    if (line === 0) {
      const sp1 = buf.indexOf(" ", pos);
      const sp2 = sp1 < 0 ? -1 : buf.indexOf(" ", sp1 + 1);
      if (sp1 < 0 || sp2 < 0 || sp2 > end || end - sp2 - 1 !== 8 || !buf.startsWith("HTTP/1.1", sp2 + 1)) return "decline";
      method = buf.slice(pos, sp1);
      target = buf.slice(sp1 + 1, sp2);
      if (!/^[A-Z]+$/.test(method) || !isVisible(target)) return "decline";
    } else {
      const first = buf.charCodeAt(pos);
      if (first === SP || first === HT) return "decline"; // obsolete line folding
      const colon = buf.indexOf(":", pos);
      if (colon < 0 || colon > end) return "decline";
      const name = buf.slice(pos, colon).toLowerCase();
      if (!isToken(name)) return "decline";
      let vs = colon + 1;
      let ve = end;
      while (vs < ve && (buf.charCodeAt(vs) === SP || buf.charCodeAt(vs) === HT)) vs++;
      while (ve > vs && (buf.charCodeAt(ve - 1) === SP || buf.charCodeAt(ve - 1) === HT)) ve--;
      if (!isFieldValue(buf, vs, ve)) return "decline";
      // Binary metadata the v3 gateway decodes, or refuses (v3-routes.ts annotateContext).
      if (name.endsWith("-bin") && name.startsWith("grpc-metadata-")) return "decline";
      switch (name) {
        case "host":
          if (host !== undefined) return "decline";
          host = buf.slice(vs, ve);
          break;
        case "authorization":
          if (authorization !== undefined) return "decline";
          authorization = buf.slice(vs, ve);
          break;
        case "grpc-metadata-token":
          if (grpcToken !== undefined) return "decline";
          grpcToken = buf.slice(vs, ve);
          break;
        case "connection":
          if (buf.slice(vs, ve).toLowerCase() !== "keep-alive") return "decline";
          break;
        case "content-type":
          if (contentType !== undefined) return "decline";
          contentType = buf.slice(vs, ve);
          break;
        case "content-length": {
          const v = buf.slice(vs, ve);
          if (contentLength >= 0 || maxBodyBytes === 0 || !BODY_METHODS.has(method) || !/^[0-9]{1,9}$/.test(v) || Number(v) > maxBodyBytes) return "decline";
          contentLength = Number(v);
          break;
        }
        case "transfer-encoding":
        case "expect":
        case "upgrade":
        // The router reads it for etcd_server_client_requests_total's label.
        case "grpc-metadata-client-api-version":
        // The gateway's deadline, or its refusal (v3-routes.ts gatewayTimeoutMs).
        case "grpc-timeout":
          return "decline";
      }
    }
    pos = nl + 1;
  }
}

let dateSecond = -1;
let dateText = "";

/** The Date header's value, as node:http caches it: recomputed once a second. */
function httpDate(now: number): string {
  const s = Math.floor(now / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateText = new Date(s * 1000).toUTCString();
  }
  return dateText;
}

/** The bytes node:http writes for this response on a keep-alive connection. */
export function renderResponse(res: FastResponse, keepAliveSeconds: number, now: number): string {
  let out = `HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? "unknown"}\r\n`;
  const h = res.headers;
  for (let i = 0; i + 1 < h.length; i += 2) out += `${h[i]!}: ${h[i + 1]!}\r\n`;
  const length = Buffer.byteLength(res.body);
  const t = res.trailer;
  if (t === undefined) {
    out += `Content-Length: ${length}\r\nDate: ${httpDate(now)}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=${keepAliveSeconds}\r\n\r\n`;
    return out + res.body;
  }
  out += `Date: ${httpDate(now)}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=${keepAliveSeconds}\r\nTransfer-Encoding: chunked\r\n\r\n`;
  if (length > 0) out += `${length.toString(16)}\r\n${res.body}\r\n`;
  out += "0\r\n";
  for (let i = 0; i + 1 < t.length; i += 2) out += `${t[i]!}: ${t[i + 1]!}\r\n`;
  return out + "\r\n";
}

export interface FastLaneOptions {
  handler: FastHandler;
  /** Hands a connection to node:http (its connection listener). */
  toHttp: (socket: Socket) => void;
  /** The server's keepAliveTimeout: idle lane connections are closed after it. */
  keepAliveMs: number;
  /** node:http's maxHeaderSize: longer heads are left to it (it answers 431). */
  maxHeadBytes: number;
  /** node:http's headersTimeout: a head still incomplete after it closes the connection. */
  headersTimeoutMs: number;
  /** Longer bodies are left to node:http (default: DEFAULT_MAX_BODY_BYTES). */
  maxBodyBytes?: number;
}

/** Enough for a v2 write's form with a value of a few KiB; larger ones go the normal way. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024;

/** One connection while the lane owns it. */
class LaneConnection {
  readonly #socket: Socket;
  readonly #lane: FastLane;
  /** Received and not yet answered, as latin1 (one character per byte). */
  #pending = "";
  #waitingForDrain = false;
  /** The handler's answer to the first pending request is a promise not yet settled. */
  #waitingForAnswer = false;
  /** When the first byte of the head being received arrived (a byte a minute must not hold a connection forever). */
  #headSince = 0;
  /** A graceful close came while an answer was awaited: end the connection after it. */
  #closeAfterAnswer = false;
  readonly #onData = (chunk: Buffer): void => {
    if (this.#pending === "") this.#headSince = Date.now();
    this.#pending += chunk.toString("latin1");
    this.#serve();
  };
  readonly #onDrain = (): void => {
    this.#waitingForDrain = false;
    if (this.#waitingForAnswer) return;
    this.#socket.resume();
    this.#serve();
  };
  /** An idle timeout or a socket error ends the connection. */
  readonly #destroy = (): void => {
    this.#socket.destroy();
  };
  readonly #onClose = (): void => {
    this.#lane.forget(this.#socket);
  };

  constructor(socket: Socket, lane: FastLane) {
    this.#socket = socket;
    this.#lane = lane;
    socket.setTimeout(lane.options.keepAliveMs);
    socket.on("timeout", this.#destroy);
    socket.on("error", this.#destroy);
    socket.on("close", this.#onClose);
    socket.on("drain", this.#onDrain);
    socket.on("data", this.#onData);
    // Accepted paused (TLS, pauseOnConnect): the data listener alone would not start it.
    socket.resume();
  }

  #serve(): void {
    if (this.#waitingForDrain || this.#waitingForAnswer) return;
    const buf = this.#pending;
    const { handler, maxHeadBytes, headersTimeoutMs, maxBodyBytes = DEFAULT_MAX_BODY_BYTES } = this.#lane.options;
    let pos = 0;
    while (pos < buf.length) {
      const head = parseHead(buf, pos, maxHeadBytes, maxBodyBytes);
      if (head === "incomplete") {
        if (pos > 0) this.#headSince = Date.now(); // a new head begins after the answered ones
        else if (Date.now() - this.#headSince > headersTimeoutMs) {
          this.#socket.destroy();
          return;
        }
        break;
      }
      const res = head === "decline" ? undefined : handler(head);
      if (res instanceof Promise) {
        this.#pending = buf.slice(pos);
        this.#waitingForAnswer = true;
        this.#socket.pause();
        const later = (r: FastResponse | undefined): void => this.#answerLater(r, head.length);
        res.then(later, () => later(undefined));
        return;
      }
      if (res === undefined) {
        this.#handOver(buf.slice(pos));
        return;
      }
      pos += head.length;
      if (!this.#write(res)) break;
    }
    this.#pending = pos === 0 ? buf : buf.slice(pos);
  }

  #render(res: FastResponse): string {
    return renderResponse(res, Math.floor(this.#lane.options.keepAliveMs / 1000), Date.now());
  }

  /** Writes a response; false when the client is not reading (then neither do we until it drains). */
  #write(res: FastResponse): boolean {
    const flowing = this.#socket.write(this.#render(res));
    res.written?.();
    if (flowing) return true;
    this.#waitingForDrain = true;
    this.#socket.pause();
    return false;
  }

  /** The settled answer to the first pending request (`length` bytes, head and body). */
  #answerLater(res: FastResponse | undefined, length: number): void {
    this.#waitingForAnswer = false;
    if (this.#socket.destroyed) return;
    if (this.#closeAfterAnswer) {
      if (res === undefined) this.#socket.destroy();
      else this.#socket.end(this.#render(res));
      return;
    }
    if (res === undefined) {
      this.#handOver(this.#pending);
      return;
    }
    this.#pending = this.#pending.slice(length);
    this.#headSince = Date.now(); // of the next head, if any: the wait was not the client's
    if (!this.#write(res)) return;
    this.#socket.resume();
    this.#serve();
  }

  /** A graceful close: now when idle, else once the awaited answer is written. */
  closeWhenIdle(): void {
    if (this.#waitingForAnswer) this.#closeAfterAnswer = true;
    else this.#socket.destroy();
  }

  #handOver(pending: string): void {
    const rest = withKnownMethod(pending);
    const s = this.#socket;
    s.off("data", this.#onData);
    s.off("drain", this.#onDrain);
    s.off("timeout", this.#destroy);
    s.off("error", this.#destroy);
    s.off("close", this.#onClose);
    s.setTimeout(0);
    this.#lane.forget(s);
    s.pause();
    if (rest !== "") s.unshift(Buffer.from(rest, "latin1"));
    this.#lane.options.toHttp(s);
    // node:http reads the put-back bytes first: they flow on the next tick, before any
    // new bytes can reach its parser from the socket.
    s.resume();
  }
}

/** Go's token characters (validMethod): any such word is a method to Go's server. */
const GO_METHOD = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+ /;
const KNOWN_METHODS = new Set(METHODS);
/** What an unknown method becomes for node:http: one no etcd handler serves, so answered alike. */
export const STAND_IN_METHOD = "PROPPATCH";

/**
 * The bytes with the first request's method replaced by STAND_IN_METHOD when llhttp would
 * refuse the method (it knows a fixed list; Go takes any token): etcd then answers 405 or
 * 404 as for any method its handlers do not serve, not a bare 400 with no CORS headers.
 */
export function withKnownMethod(bytes: string): string {
  const m = GO_METHOD.exec(bytes);
  if (m === null) return bytes;
  const method = m[0].slice(0, -1);
  const line = bytes.indexOf("\r\n");
  const sp = bytes.lastIndexOf(" ", line < 0 ? bytes.length : line);
  let target = sp > method.length ? bytes.slice(method.length + 1, sp) : "";
  // Go takes bytes above 0x7f in a target as they are; llhttp refuses them. Escaped, the
  // router decodes them back (path and query alike), lower-case as Go's redirects echo them.
  if (/[\x80-\xff]/.test(target)) target = target.replace(/[\x80-\xff]/g, (c) => "%" + c.charCodeAt(0).toString(16));
  else if (KNOWN_METHODS.has(method)) return bytes;
  return (KNOWN_METHODS.has(method) ? method : STAND_IN_METHOD) + " " + target + bytes.slice(sp);
}

/** The lane for one listener: owns connections until they are handed to node:http. */
export class FastLane {
  readonly options: FastLaneOptions;
  readonly #open = new Map<Socket, LaneConnection>();

  constructor(options: FastLaneOptions) {
    this.options = options;
  }

  /** Takes a connection as node:http's connection listener would. */
  accept(socket: Socket): void {
    this.#open.set(socket, new LaneConnection(socket, this));
  }

  /** @internal the connection closed or went to node:http */
  forget(socket: Socket): void {
    this.#open.delete(socket);
  }

  /** Connections the lane owns now (between requests, or mid-head). */
  get size(): number {
    return this.#open.size;
  }

  /**
   * Closes the connections the lane owns that are idle or mid-head (a graceful server
   * close); one awaiting an answer (a password check) closes once the answer is written.
   */
  closeIdle(): void {
    for (const c of [...this.#open.values()]) c.closeWhenIdle();
  }

  /** Closes every connection the lane owns at once (a forced close). */
  destroyAll(): void {
    for (const s of this.#open.keys()) s.destroy();
    this.#open.clear();
  }
}

/**
 * One handler of several, each of which declines (synchronously) what it does not take:
 * the first that answers answers. (A handler's promise is its answer: one settling to
 * `undefined` hands the connection over, as for a single handler.)
 */
export function firstOf(...handlers: readonly FastHandler[]): FastHandler {
  return (head) => {
    for (const h of handlers) {
      const res = h(head);
      if (res !== undefined) return res;
    }
    return undefined;
  };
}
