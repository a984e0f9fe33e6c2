// The gRPC server: HTTP/2 connections of our own (h2/) on the sockets the client listener
// hands over (mux.ts decided they speak HTTP/2), gRPC's HTTP/2 mapping done here, and a
// table of RPCs keyed by `:path` ("/etcdserverpb.KV/Range"). An RPC sees bytes in and
// bytes out (services.ts decodes and encodes), so a hot response can have a hand-made
// encoder.
//
// Invariants:
// - every call ends with a grpc-status: trailers after the messages, or a trailers-only
//   response when the call fails before its first message;
// - a failure is a V3Error (etcd's status code and message, percent-encoded as gRPC wants);
//   anything else is code 2 (Unknown) with its message, as grpc-go turns a plain Go error;
// - an unknown service or method is code 12 (Unimplemented) with grpc-go's wording;
// - a grpc-timeout deadline ends the call: a unary call whose wait it cuts short answers as
//   etcd's handlers do (the backend sees it in `ctx.deadline`), a stream ends with code 4;
// - closing the server ends every connection: open streams see `onClose`.
//
// A unary call is the hot path: its answer is one pre-encoded HEADERS block, the message,
// and the pre-encoded OK trailers, put in one buffer by the connection (one socket write).
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { GrpcCode, V3Error } from "../../api/v3-errors.ts";
import type { V3Caller } from "../v3-service.ts";
import { CallDeadline, parseGrpcTimeout } from "./deadline.ts";
import { MessageReader, UNARY_UNMARSHAL_PREFIX, encodeGrpcMessage, firstMessage, frameMessage } from "./frames.ts";
import { H2Connection } from "./h2/connection.ts";
import { ErrorCode } from "./h2/frame.ts";
import { HeaderBlock, type H2Stream, type RequestHeaders } from "./h2/stream.ts";
import { NO_LEADER, requiresLeader, type LeaderMonitor } from "./require-leader.ts";

/** What an RPC knows of its caller. */
export interface GrpcCall {
  /** Request metadata, lower-case names. */
  readonly headers: RequestHeaders;
  /** Token from `token` (etcd's clients) or `authorization` metadata; the TLS CN. */
  readonly ctx: V3Caller;
}

export interface UnaryRpc {
  kind: "unary";
  /**
   * May throw instead of rejecting: the call's error either way. A request that does not
   * decode must throw (grpc-go refuses it before any interceptor: the call is not counted).
   */
  run(request: Uint8Array, call: GrpcCall): Promise<Uint8Array>;
  /** `run` answers a message with its 5-byte prefix already in place (fast-codec.ts). */
  framed?: boolean;
  /** etcd's interceptor refusals (a learner's): checked once the request is read, before the call is counted. */
  refuse?(request: Uint8Array): GrpcStatus | undefined;
}

export interface StreamRpc {
  kind: "stream";
  /** Called once per call, before any request message arrives. */
  open(stream: RpcStream, call: GrpcCall): void;
  /** etcd's interceptor refusals (a learner's): checked before the stream opens or is counted. */
  refuse?(): GrpcStatus | undefined;
}

export type Rpc = UnaryRpc | StreamRpc;

/** The status of a call, as its trailers carry it. */
export interface GrpcStatus {
  code: number;
  message: string;
}

/** gRPC status of anything thrown by an RPC. */
export function statusOf(err: unknown): GrpcStatus {
  if (err instanceof V3Error) return { code: err.code, message: err.message };
  return { code: GrpcCode.Unknown, message: err instanceof Error ? err.message : String(err) };
}

/** grpc-go sends no `date`. Encoded once: every answer reuses the bytes. */
const RESPONSE_FIELDS = { ":status": 200, "content-type": "application/grpc" } as const;
const RESPONSE_HEADERS = new HeaderBlock(RESPONSE_FIELDS);

/**
 * grpc-go's content-subtype (grpcutil.ContentSubtype): "application/grpc" alone (""), or
 * followed by '+' or ';' and the subtype; undefined when the request is not gRPC.
 */
export function contentSubtype(contentType: string): string | undefined {
  if (contentType === "application/grpc") return "";
  if (!contentType.startsWith("application/grpc")) return undefined;
  const c = contentType[16];
  return c === "+" || c === ";" ? contentType.slice(17) : undefined;
}

/** The response's fields: grpc-go answers "application/grpc+<subtype>" to a subtype (etcd's codec is proto whatever it says). */
function responseFields(stream: H2Stream): { ":status": number; "content-type": string } {
  const ct = stream.headers["content-type"];
  const sub = typeof ct === "string" ? (contentSubtype(ct) ?? "") : "";
  return sub === "" ? RESPONSE_FIELDS : { ":status": 200, "content-type": `application/grpc+${sub}` };
}

function responseHeaders(stream: H2Stream): HeaderBlock {
  return stream.headers["content-type"] === "application/grpc" ? RESPONSE_HEADERS : new HeaderBlock(responseFields(stream));
}
// grpc-go's WriteStatus always writes grpc-message, empty when the status has no text.
const OK_TRAILERS = new HeaderBlock({ "grpc-status": "0", "grpc-message": "" });

const DEADLINE_EXCEEDED: GrpcStatus = { code: GrpcCode.DeadlineExceeded, message: "context deadline exceeded" };

function trailersOf(s: GrpcStatus): Record<string, string> {
  const t: Record<string, string> = { "grpc-status": String(s.code) };
  t["grpc-message"] = encodeGrpcMessage(s.message);
  return t;
}

function trailersBlock(s: GrpcStatus): HeaderBlock {
  return s.code === 0 && s.message === "" ? OK_TRAILERS : new HeaderBlock(trailersOf(s));
}

/** A trailers-only response: headers and status in one HEADERS frame that ends the stream. */
function respondStatus(stream: H2Stream, s: GrpcStatus): void {
  if (stream.closed || stream.headersSent !== undefined) return;
  stream.respond(new HeaderBlock({ ...responseFields(stream), ...trailersOf(s) }), true);
}

/** The grpc-status a stream's response carried (trailers, or a trailers-only HEADERS), if any. */
function sentStatus(stream: H2Stream): string | number | undefined {
  return stream.trailersSent?.fields["grpc-status"];
}

/** One streaming call: messages both ways, ended by `finish`. */
export class RpcStream {
  readonly #stream: H2Stream;
  #headersSent = false;
  #finished = false;
  onMessage: (msg: Uint8Array) => void = () => undefined;
  /** The client half-closed (no more messages); the call stays open. */
  onEnd: () => void = () => undefined;
  /** The call is over (finished, canceled by the client, connection gone). Once. */
  onClose: () => void = () => undefined;

  /** The server's end of the call: run once when `finish` ends it (or its stream closes). */
  readonly #ended: () => void;

  constructor(stream: H2Stream, ended: () => void = () => undefined) {
    this.#stream = stream;
    this.#ended = ended;
  }

  get closed(): boolean {
    return this.#finished || this.#stream.closed;
  }

  /** The connection the call is on (the unit whose frames leave together). */
  get session(): H2Connection {
    return this.#stream.connection;
  }

  /** Bytes accepted by `send` and not yet on the wire (HTTP/2 flow control holds them). */
  get writableLength(): number {
    return this.#stream.writableLength;
  }

  /** Sends one message; false when the buffer is over its mark (wait for `drained`). */
  send(payload: Uint8Array): boolean {
    return this.sendFramed(frameMessage(payload));
  }

  /** Sends one message whose 5-byte prefix is already in place (fast-codec.ts). */
  sendFramed(framed: Buffer): boolean {
    if (this.closed) return false;
    if (!this.#headersSent) {
      this.#headersSent = true;
      this.#stream.respond(responseHeaders(this.#stream));
    }
    return this.#stream.write(framed);
  }

  /** Resolves once the buffered bytes went out, or the call ended. */
  drained(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.#stream.drained();
  }

  /** Ends the call with `status` (default OK). Idempotent. */
  finish(status?: GrpcStatus): void {
    if (this.closed) return;
    this.#finished = true;
    const s = status ?? { code: 0, message: "" };
    if (!this.#headersSent) {
      this.#headersSent = true;
      this.#stream.respond(new HeaderBlock({ ...responseFields(this.#stream), ...trailersOf(s) }), true);
    } else {
      this.#stream.end(undefined, trailersBlock(s));
    }
    // The call is over for the server now (grpc-go: the handler returned), even while the
    // client has not yet closed its side: its watchers and timers go at once.
    this.#ended();
  }
}

/** Calls and bytes, for the Prometheus metrics (server/metrics/grpc-metrics.ts). */
export interface GrpcObserver {
  callStarted(path: string): void;
  /**
   * A call etcd's interceptors would have counted (etcd_server_client_requests_total):
   * a stream once open, a unary call once its request decoded. `apiVersion`: its
   * client-api-version metadata.
   */
  clientRequest?(path: string, apiVersion: string | undefined): void;
  /** `code`: the grpc-status the call ended with (1, Canceled, when the client reset it). */
  callHandled(path: string, code: number, ms: number): void;
  traffic(received: number, sent: number): void;
}

export interface GrpcServerOptions {
  observer?: GrpcObserver;
  /** Largest request message accepted (grpc-go's MaxRecvMsgSize). */
  maxRecvBytes: number;
  /** Whether a verified client certificate's CN names the user (--client-cert-auth). */
  clientCertAuth: boolean;
  /**
   * Told of every call and every message of a streaming call: the member decides where
   * its WAL saves wait from whether clients keep arriving (disk-wait.ts). Without it, a
   * gRPC-only load looked idle, saves blocked the loop, and writes lost group commit.
   */
  onRequest?: () => void;
  /** --max-concurrent-streams: HTTP/2 streams a client may have open on one connection. */
  maxConcurrentStreams?: number;
  /** --grpc-keepalive-*: grpc-go's server parameters and enforcement policy (0 = off). */
  keepAlive?: GrpcKeepAlive;
  /** Calls with hasleader=true need a leader (require-leader.ts); absent: not checked. */
  leader?: LeaderMonitor;
}

export interface GrpcKeepAlive {
  /** A client pinging more often than this is told ENHANCE_YOUR_CALM (after 2 strikes). */
  minTimeMs: number;
  /** The server pings a connection this often (0: never). */
  intervalMs: number;
  /** ...and closes it when the ping's answer has not come within this (0: never). */
  timeoutMs: number;
}

/** grpc-go: a ping with no call open is fine once per 2 hours; more than 2 strikes = GOAWAY. */
const NO_STREAM_PING_MS = 2 * 60 * 60 * 1000;
const MAX_PING_STRIKES = 2;

/** etcd's --max-concurrent-streams default: math.MaxUint32. */
export const DEFAULT_MAX_CONCURRENT_STREAMS = 2 ** 32 - 1;

/** Receive windows: room for a snapshot's chunks or many requests in flight (node's defaults were small). */
const STREAM_WINDOW_BYTES = 1 << 20;
const SESSION_WINDOW_BYTES = 16 << 20;

export class GrpcServer {
  readonly #rpcs: ReadonlyMap<string, Rpc>;
  readonly #services: ReadonlySet<string>;
  readonly #opts: GrpcServerOptions;
  readonly #connections = new Set<H2Connection>();
  /** Connections and the bytes already reported to the observer. */
  readonly #traffic = new Map<Socket, { read: number; written: number }>();
  #closed = false;

  constructor(rpcs: ReadonlyMap<string, Rpc>, opts: GrpcServerOptions) {
    this.#rpcs = rpcs;
    this.#services = new Set([...rpcs.keys()].map((p) => p.slice(1, p.lastIndexOf("/"))));
    this.#opts = opts;
  }

  /** Takes a connection whose first bytes (HTTP/2's preface) are still unread or unshifted. */
  accept(socket: Socket): void {
    if (this.#closed) {
      socket.destroy();
      return;
    }
    // node:http's sockets allow half-open connections; a client that went away (FIN) without
    // resetting its streams must close its connection, or its watchers keep being written to.
    socket.allowHalfOpen = false;
    if (this.#opts.observer !== undefined) {
      this.#traffic.set(socket, { read: 0, written: 0 });
      socket.once("close", () => {
        this.reportTraffic();
        this.#traffic.delete(socket);
      });
    }
    const conn = new H2Connection(socket, {
      maxConcurrentStreams: this.#opts.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS,
      streamWindow: STREAM_WINDOW_BYTES,
      connectionWindow: SESSION_WINDOW_BYTES,
      onStream: (stream) => this.#onStream(stream),
    });
    this.#connections.add(conn);
    const stopKeepAlive = this.#opts.keepAlive === undefined ? undefined : keepAlive(conn, this.#opts.keepAlive);
    conn.onClose = () => {
      this.#connections.delete(conn);
      stopKeepAlive?.();
    };
  }

  /** Tells the observer the bytes moved since the last report (called when metrics are read). */
  reportTraffic(): void {
    const o = this.#opts.observer;
    if (o === undefined) return;
    for (const [socket, seen] of this.#traffic) {
      const read = socket.bytesRead;
      const written = socket.bytesWritten;
      o.traffic(read - seen.read, written - seen.written);
      seen.read = read;
      seen.written = written;
    }
  }

  /** Ends every connection now (GOAWAY; open streams end, unary calls in flight are dropped). */
  close(): void {
    this.#closed = true;
    this.#opts.leader?.stop();
    for (const c of [...this.#connections]) c.close();
    this.#connections.clear();
  }

  /** Asks every connection to finish: no new calls (GOAWAY), open ones run to their end. */
  drain(): void {
    for (const c of this.#connections) c.drain();
  }

  #onStream(stream: H2Stream): void {
    const headers = stream.headers;
    const ct = headers["content-type"];
    if (typeof ct !== "string" || contentSubtype(ct) === undefined) {
      // grpc-go 1.33 (etcd 3.4.23's) resets a stream whose content-type is not gRPC's
      // (PROTOCOL_ERROR, no status) and never looks at :method.
      stream.reset(ErrorCode.PROTOCOL_ERROR);
      return;
    }
    if (this.#opts.keepAlive !== undefined) noteCall(stream);
    // grpc-go reads grpc-timeout with the other headers, before it looks at the method: a
    // value it cannot read resets the stream (PROTOCOL_ERROR), with no gRPC status.
    const timeout = headerValue(headers["grpc-timeout"]);
    let timeoutMs: number | undefined;
    if (timeout !== undefined) {
      timeoutMs = parseGrpcTimeout(timeout);
      if (timeoutMs === undefined) {
        stream.reset(ErrorCode.PROTOCOL_ERROR);
        return;
      }
    }
    const given = headerValue(headers[":path"]) ?? "";
    // grpc-go 1.33's handleStream: one leading '/' is optional, the last '/' splits service
    // from method, and a name without one is refused with ResourceExhausted (sic).
    const sm = given.startsWith("/") ? given.slice(1) : given;
    const path = "/" + sm;
    const rpc = this.#rpcs.get(path);
    if (rpc === undefined) {
      const pos = sm.lastIndexOf("/");
      if (pos < 0) {
        respondStatus(stream, { code: GrpcCode.ResourceExhausted, message: `malformed method name: ${JSON.stringify(given)}` });
        return;
      }
      const service = sm.slice(0, pos);
      const message = this.#services.has(service) ? `unknown method ${sm.slice(pos + 1)} for service ${service}` : `unknown service ${service}`;
      respondStatus(stream, { code: GrpcCode.Unimplemented, message });
      return;
    }
    // etcd registers no decompressor: grpc-go refuses the call from its headers, before
    // reading a message (server.go processUnaryRPC / processStreamingRPC).
    const encoding = headerValue(headers["grpc-encoding"]);
    if (encoding !== undefined && encoding !== "" && encoding !== "identity") {
      respondStatus(stream, { code: GrpcCode.Unimplemented, message: `grpc: Decompressor is not installed for grpc-encoding ${JSON.stringify(encoding)}` });
      return;
    }
    this.#opts.onRequest?.();
    const deadline = timeoutMs === undefined ? undefined : new CallDeadline(timeoutMs);
    const ctx = this.#callerOf(stream, headers);
    if (deadline !== undefined) ctx.deadline = deadline;
    const call: GrpcCall = { headers, ctx };
    if (rpc.kind === "unary") new UnaryCall(rpc, stream, call, path, this.#opts, deadline).start();
    else this.#streaming(rpc, stream, call, path, deadline);
  }

  #callerOf(stream: H2Stream, headers: RequestHeaders): V3Caller {
    const token = headerValue(headers["token"]) ?? headerValue(headers["authorization"]);
    // The acceptor asked for (and verified) a client certificate only with --client-cert-auth;
    // without it the session's socket is not looked at (a getter chain per call).
    if (!this.#opts.clientCertAuth) return { token };
    let commonName: string | undefined;
    const socket = stream.connection.socket as Partial<TLSSocket>;
    if (socket.encrypted === true && typeof socket.getPeerX509Certificate === "function") {
      const subject = socket.getPeerX509Certificate()?.subject;
      const cn = subject === undefined ? undefined : /(?:^|\n)CN=([^\n]*)/.exec(subject)?.[1];
      if (cn !== undefined && cn !== "") commonName = cn;
    }
    return commonName === undefined ? { token } : { token, commonName };
  }

  #streaming(rpc: StreamRpc, stream: H2Stream, call: GrpcCall, path: string, deadline: CallDeadline | undefined): void {
    const refused = rpc.refuse?.() ?? leaderRefusal(this.#opts.leader, call.headers);
    if (refused !== undefined) {
      deadline?.cancel();
      respondStatus(stream, refused);
      return;
    }
    const observer = this.#opts.observer;
    const t0 = observer === undefined ? 0 : performance.now();
    observer?.callStarted(path);
    observer?.clientRequest?.(path, headerValue(call.headers["client-api-version"]));
    let closed = false;
    let untrack: (() => void) | undefined;
    const ended = (): void => {
      deadline?.cancel();
      if (closed) return;
      closed = true;
      untrack?.();
      s.onClose();
    };
    const s = new RpcStream(stream, ended);
    if (this.#opts.leader !== undefined && requiresLeader(call.headers)) untrack = this.#opts.leader.track(s);
    const reader = new MessageReader(this.#opts.maxRecvBytes);
    stream.onClose = () => {
      if (observer !== undefined) {
        // A stream the client reset (or whose connection dropped) before any status: Cancelled.
        const status = sentStatus(stream);
        observer.callHandled(path, status === undefined ? GrpcCode.Cancelled : Number(status), performance.now() - t0);
      }
      ended();
    };
    // grpc-go ends a stream at its deadline from the transport (code 4; etcd's handlers race
    // it with their own code 2); the call's watchers go with it through onClose.
    if (deadline !== undefined) {
      if (deadline.expired) {
        s.finish(DEADLINE_EXCEEDED);
        return;
      }
      deadline.onExpire(() => s.finish(DEADLINE_EXCEEDED));
    }
    rpc.open(s, call);
    stream.onData = (chunk: Buffer) => {
      if (s.closed) return;
      let messages: Uint8Array[];
      try {
        messages = reader.push(chunk);
      } catch (err) {
        s.finish(statusOf(err));
        return;
      }
      for (const m of messages) {
        if (s.closed) return;
        this.#opts.onRequest?.();
        s.onMessage(m);
      }
    };
    stream.onEnd = () => {
      if (!s.closed) s.onEnd();
    };
  }
}

/**
 * One unary call: its request (usually already buffered when the stream is handed over:
 * clients send HEADERS and DATA together), the RPC, the answer. grpc-go runs the handler as
 * soon as one message is in, without waiting for the client's half-close, and ignores more.
 */
class UnaryCall {
  readonly #rpc: UnaryRpc;
  readonly #stream: H2Stream;
  readonly #call: GrpcCall;
  readonly #path: string;
  readonly #opts: GrpcServerOptions;
  readonly #deadline: CallDeadline | undefined;
  /** Bytes of an incomplete first message (rare: it came in several DATA frames). */
  #pending: Buffer | undefined;
  /** Set once the request is judged: later DATA and the end are ignored. */
  #done = false;
  #answered = false;
  #t0 = 0;

  constructor(rpc: UnaryRpc, stream: H2Stream, call: GrpcCall, path: string, opts: GrpcServerOptions, deadline: CallDeadline | undefined) {
    this.#rpc = rpc;
    this.#stream = stream;
    this.#call = call;
    this.#path = path;
    this.#opts = opts;
    this.#deadline = deadline;
  }

  start(): void {
    // Clients send HEADERS and DATA together: the DATA comes right after this returns.
    const stream = this.#stream;
    stream.onData = (chunk: Buffer) => {
      if (!this.#done) this.#take(chunk);
    };
    stream.onEnd = () => {
      if (this.#done) return;
      this.#done = true;
      // grpc-go's parser at EOF: io.EOF before any byte, io.ErrUnexpectedEOF inside a message
      // (status.Convert of a plain error: Unknown).
      this.#fail({ code: GrpcCode.Unknown, message: this.#pending === undefined ? "EOF" : "unexpected EOF" });
    };
  }

  /** Adds request bytes; true once the request is judged (run, or refused). */
  #take(chunk: Buffer): boolean {
    const buf = this.#pending === undefined ? chunk : Buffer.concat([this.#pending, chunk]);
    let request: Uint8Array | undefined;
    try {
      request = firstMessage(buf, this.#opts.maxRecvBytes);
    } catch (err) {
      this.#done = true;
      this.#fail(statusOf(err));
      return true;
    }
    if (request === undefined) {
      this.#pending = buf;
      return false;
    }
    this.#done = true;
    this.#pending = undefined;
    this.#run(request);
    return true;
  }

  #run(request: Uint8Array): void {
    const deadline = this.#deadline;
    // The deadline passed before the message was read: grpc-go's read fails with code 4.
    if (deadline?.expired === true) {
      this.#fail(DEADLINE_EXCEEDED);
      return;
    }
    const refused = this.#rpc.refuse?.(request) ?? leaderRefusal(this.#opts.leader, this.#call.headers);
    if (refused !== undefined) {
      // Not counted: #handled sees no start.
      this.#fail(refused);
      return;
    }
    // go-grpc-prometheus counts a unary call once grpc-go decoded its request, and its code
    // when the handler returns (not when the stream closes: no 'close' listener per call).
    // One that does not decode (run throws it) is counted nowhere: etcd 3.4.23's
    // grpc_server_started_total and _handled_total stay as they were.
    const t0 = this.#opts.observer === undefined ? 0 : performance.now();
    if (deadline !== undefined) {
      // The backend ends its own waits at the deadline (etcd's answers, ctx.deadline); this
      // answers, a turn later, for a wait that does not watch it.
      deadline.onExpire(() => setImmediate(() => this.#fail({ code: GrpcCode.Unknown, message: "context deadline exceeded" })));
    }
    let answer: Promise<Uint8Array>;
    try {
      answer = this.#rpc.run(request, this.#call);
    } catch (err) {
      const s = statusOf(err);
      if (!undecoded(s)) this.#started(t0);
      this.#fail(s);
      return;
    }
    this.#started(t0);
    answer.then(
      (bytes) => this.#answer(bytes),
      (err: unknown) => this.#fail(statusOf(err)),
    );
  }

  /**
   * The call's one answer: the stream to answer on, or undefined when it was answered
   * already or the client went away (then counted as Cancelled).
   */
  #settle(): H2Stream | undefined {
    if (this.#answered) return undefined;
    this.#answered = true;
    this.#deadline?.cancel();
    const stream = this.#stream;
    if (stream.closed) {
      this.#handled(GrpcCode.Cancelled);
      return undefined;
    }
    return stream;
  }

  #answer(bytes: Uint8Array): void {
    const stream = this.#settle();
    if (stream === undefined) return;
    this.#handled(0);
    const framed = this.#rpc.framed === true ? (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)) : frameMessage(bytes);
    stream.answer(responseHeaders(stream), framed, OK_TRAILERS);
  }

  #started(t0: number): void {
    if (t0 === 0) return;
    this.#t0 = t0;
    this.#opts.observer?.callStarted(this.#path);
  }

  #fail(s: GrpcStatus): void {
    const stream = this.#settle();
    if (stream === undefined) return;
    this.#handled(s.code, undecoded(s));
    respondStatus(stream, s);
  }

  /** `undecoded`: the request did not decode, so etcd's interceptors never saw the call. */
  #handled(code: number, undecoded = false): void {
    if (this.#t0 === 0) return;
    const observer = this.#opts.observer;
    observer?.callHandled(this.#path, code, performance.now() - this.#t0);
    if (!undecoded) observer?.clientRequest?.(this.#path, headerValue(this.#call.headers["client-api-version"]));
  }
}

/** grpc-go's refusal of a unary request that did not decode (code 13 and its prefix). */
function undecoded(s: GrpcStatus): boolean {
  return s.code === GrpcCode.Internal && s.message.startsWith(UNARY_UNMARSHAL_PREFIX);
}

/** Per-connection state of the keepalive enforcement; `reset` clears the strikes (grpc-go). */
const pingPolicy = new WeakMap<H2Connection, { lastPingAt: number; strikes: number; reset: boolean }>();

/**
 * grpc-go's keepalive on one connection: the enforcement policy for the client's pings
 * (GOAWAY ENHANCE_YOUR_CALM "too_many_pings" after more than 2 pings sooner than
 * minTime, or sooner than 2 hours with no call open, as etcd's PermitWithoutStream is
 * false), and the server's own pings every interval, closing the connection when one goes
 * unanswered for timeout. Returns the function that stops the timers.
 */
function keepAlive(conn: H2Connection, ka: GrpcKeepAlive): () => void {
  const p = { lastPingAt: Number.NEGATIVE_INFINITY, strikes: 0, reset: false };
  pingPolicy.set(conn, p);
  // grpc-go forgives the ping that follows any HEADERS or DATA frame it wrote: its clients
  // ping after DATA they receive (the BDP estimator), several times during one large
  // message, and a watch stream's answers draw one each; counted as strikes they closed
  // the connection (too_many_pings) and the client resumed its watchers, replaying events.
  conn.onPing = (afterWrite) => {
    const now = performance.now();
    const last = p.lastPingAt;
    p.lastPingAt = now;
    if (p.reset || afterWrite) {
      p.reset = false;
      p.strikes = 0;
      return;
    }
    const minMs = conn.streamCount === 0 ? NO_STREAM_PING_MS : ka.minTimeMs;
    if (now - last < minMs) p.strikes++;
    // grpc-go closes the connection once the GOAWAY is written.
    if (p.strikes > MAX_PING_STRIKES) conn.close(ErrorCode.ENHANCE_YOUR_CALM, "too_many_pings");
  };
  let interval: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;
  if (ka.intervalMs > 0) {
    interval = setInterval(() => {
      if (conn.destroyed || deadline !== undefined) return;
      if (ka.timeoutMs > 0) {
        deadline = setTimeout(() => conn.destroy(), ka.timeoutMs);
        deadline.unref();
      }
      const sent = conn.ping((err) => {
        clearTimeout(deadline);
        deadline = undefined;
        if (err !== null) conn.destroy();
      });
      if (!sent) {
        clearTimeout(deadline);
        deadline = undefined;
      }
    }, ka.intervalMs);
    interval.unref();
  }
  return () => {
    clearInterval(interval);
    clearTimeout(deadline);
  };
}

/** A call begins: the connection's strikes reset (grpc-go: the server writes). */
function noteCall(stream: H2Stream): void {
  const p = pingPolicy.get(stream.connection);
  if (p !== undefined) p.reset = true;
}

/** etcd's interceptors after the learner's: a call that requires a leader, with none known. */
function leaderRefusal(leader: LeaderMonitor | undefined, headers: RequestHeaders): GrpcStatus | undefined {
  return leader !== undefined && requiresLeader(headers) && !leader.hasLeader ? NO_LEADER : undefined;
}

function headerValue(v: string | readonly string[] | undefined): string | undefined {
  return typeof v === "string" || v === undefined ? v : v[0];
}
