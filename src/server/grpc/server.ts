// The gRPC server: node:http2 sessions on connections the client listener hands over
// (mux.ts decided they speak HTTP/2), gRPC's HTTP/2 mapping done here, and a table of RPCs
// keyed by `:path` ("/etcdserverpb.KV/Range"). An RPC sees bytes in and bytes out
// (services.ts decodes and encodes), so a hot response can have a hand-made encoder.
//
// Invariants:
// - every call ends with a grpc-status: trailers after the messages, or a trailers-only
//   response when the call fails before its first message;
// - a failure is a V3Error (etcd's status code and message, percent-encoded as gRPC wants);
//   anything else is code 2 (Unknown) with its message, as grpc-go turns a plain Go error;
// - an unknown service or method is code 12 (Unimplemented) with grpc-go's wording;
// - a grpc-timeout deadline ends the call: a unary call whose wait it cuts short answers as
//   etcd's handlers do (the backend sees it in `ctx.deadline`), a stream ends with code 4;
// - closing the server ends every session: open streams see `onClose`.
//
// A unary call is the hot path (h2load Put: node:http2's own work was most of the gRPC
// layer's share). Per call it adds 'error', 'data' and 'end' listeners and one shared
// 'wantTrailers' function, sets the stream flowing itself (no resume tick), and answers
// with one respond and one end.
import http2 from "node:http2";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { GrpcCode, V3Error } from "../../api/v3-errors.ts";
import type { V3Caller } from "../v3-service.ts";
import { CallDeadline, parseGrpcTimeout } from "./deadline.ts";
import { MessageReader, encodeGrpcMessage, firstMessage, frameMessage } from "./frames.ts";

/** What an RPC knows of its caller. */
export interface GrpcCall {
  /** Request metadata, lower-case names. */
  readonly headers: http2.IncomingHttpHeaders;
  /** Token from `token` (etcd's clients) or `authorization` metadata; the TLS CN. */
  readonly ctx: V3Caller;
}

export interface UnaryRpc {
  kind: "unary";
  /** May throw instead of rejecting: the call's error either way. */
  run(request: Uint8Array, call: GrpcCall): Promise<Uint8Array>;
  /** `run` answers a message with its 5-byte prefix already in place (fast-codec.ts). */
  framed?: boolean;
}

export interface StreamRpc {
  kind: "stream";
  /** Called once per call, before any request message arrives. */
  open(stream: RpcStream, call: GrpcCall): void;
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

const RESPONSE_HEADERS = { ":status": 200, "content-type": "application/grpc" } as const;
/** grpc-go sends no `date` (and node's would cost a lookup per response). */
/** node:http2's respond reads `sendDate` (its typings list it only for the compat API). */
type RespondOptions = http2.ServerStreamResponseOptions & { sendDate?: boolean };
const WITH_TRAILERS: RespondOptions = { waitForTrailers: true, sendDate: false };
const TRAILERS_ONLY: RespondOptions = { endStream: true, sendDate: false };
const OK_TRAILERS = { "grpc-status": "0" } as const;

/** The 'wantTrailers' listener of every successful unary call: shared, not a closure per call. */
function sendOkTrailers(this: http2.ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** A stream's 'error' listener: the stream destroys itself before emitting it; without a listener it would throw. */
function ignoreStreamError(): void {}

const DEADLINE_EXCEEDED: GrpcStatus = { code: GrpcCode.DeadlineExceeded, message: "context deadline exceeded" };

function trailersOf(s: GrpcStatus): http2.OutgoingHttpHeaders {
  const t: http2.OutgoingHttpHeaders = { "grpc-status": String(s.code) };
  if (s.message !== "") t["grpc-message"] = encodeGrpcMessage(s.message);
  return t;
}

/** A trailers-only response: headers and status in one HEADERS frame that ends the stream. */
function respondStatus(stream: http2.ServerHttp2Stream, s: GrpcStatus): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond({ ...RESPONSE_HEADERS, ...trailersOf(s) }, TRAILERS_ONLY);
}

/** One streaming call: messages both ways, ended by `finish`. */
export class RpcStream {
  readonly #stream: http2.ServerHttp2Stream;
  #headersSent = false;
  #finished = false;
  #trailers: http2.OutgoingHttpHeaders = { "grpc-status": "0" };
  onMessage: (msg: Uint8Array) => void = () => undefined;
  /** The client half-closed (no more messages); the call stays open. */
  onEnd: () => void = () => undefined;
  /** The call is over (finished, canceled by the client, connection gone). Once. */
  onClose: () => void = () => undefined;

  /** The stream emitted 'close' (a flag: the getters behind `closed` showed in fan-out profiles). */
  #gone = false;

  /** The server's end of the call: run once when `finish` ends it (or its stream closes). */
  readonly #ended: () => void;

  constructor(stream: http2.ServerHttp2Stream, ended: () => void = () => undefined) {
    this.#stream = stream;
    this.#ended = ended;
    stream.on("wantTrailers", () => stream.sendTrailers(this.#trailers));
    stream.once("close", () => (this.#gone = true));
  }

  get closed(): boolean {
    return this.#finished || this.#gone || this.#stream.destroyed;
  }

  /** The connection the call is on (gone once the stream is destroyed). */
  get session(): http2.Http2Session | undefined {
    return this.#stream.session;
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
      this.#stream.respond(RESPONSE_HEADERS, WITH_TRAILERS);
    }
    return this.#stream.write(framed);
  }

  /** Resolves once the buffered bytes went out, or the call ended. */
  drained(): Promise<void> {
    if (this.closed || !this.#stream.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.#stream.off("drain", done);
        this.#stream.off("close", done);
        resolve();
      };
      this.#stream.on("drain", done);
      this.#stream.on("close", done);
    });
  }

  /** Ends the call with `status` (default OK). Idempotent. */
  finish(status?: GrpcStatus): void {
    if (this.closed) return;
    this.#finished = true;
    const s = status ?? { code: 0, message: "" };
    if (!this.#headersSent) {
      this.#headersSent = true;
      this.#stream.respond({ ...RESPONSE_HEADERS, ...trailersOf(s) }, TRAILERS_ONLY);
    } else {
      this.#trailers = trailersOf(s);
      this.#stream.end();
    }
    // The call is over for the server now (grpc-go: the handler returned), even while the
    // client has not yet closed its side: its watchers and timers go at once.
    this.#ended();
  }
}

/** Calls and bytes, for the Prometheus metrics (server/metrics/grpc-metrics.ts). */
export interface GrpcObserver {
  callStarted(path: string): void;
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
/** HTTP/2 error code ENHANCE_YOUR_CALM (RFC 9113 §7). */
const ENHANCE_YOUR_CALM = 0xb;

/** etcd's --max-concurrent-streams default: math.MaxUint32. */
export const DEFAULT_MAX_CONCURRENT_STREAMS = 2 ** 32 - 1;

/** Node's HTTP/2 defaults are small for streaming a snapshot or thousands of watch events. */
function h2Options(maxConcurrentStreams: number): http2.ServerOptions {
  return { maxSessionMemory: 64, settings: { maxConcurrentStreams, initialWindowSize: 1 << 20 } };
}
const SESSION_WINDOW_BYTES = 16 << 20;

export class GrpcServer {
  readonly #rpcs: ReadonlyMap<string, Rpc>;
  readonly #services: ReadonlySet<string>;
  readonly #opts: GrpcServerOptions;
  readonly #h2: http2.Http2Server;
  readonly #sessions = new Set<http2.ServerHttp2Session>();
  /** Connections and the bytes already reported to the observer. */
  readonly #traffic = new Map<Socket, { read: number; written: number }>();
  #closed = false;

  constructor(rpcs: ReadonlyMap<string, Rpc>, opts: GrpcServerOptions) {
    this.#rpcs = rpcs;
    this.#services = new Set([...rpcs.keys()].map((p) => p.slice(1, p.lastIndexOf("/"))));
    this.#opts = opts;
    this.#h2 = http2.createServer(h2Options(opts.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS));
    this.#h2.on("session", (session) => {
      if (this.#closed) {
        session.destroy();
        return;
      }
      this.#sessions.add(session);
      const stopKeepAlive = opts.keepAlive === undefined ? undefined : keepAlive(session, opts.keepAlive);
      session.on("close", () => {
        this.#sessions.delete(session);
        stopKeepAlive?.();
      });
      session.on("error", () => session.destroy());
      session.on("connect", () => {
        if (!session.destroyed) session.setLocalWindowSize(SESSION_WINDOW_BYTES);
      });
    });
    this.#h2.on("stream", (stream, headers) => this.#onStream(stream, headers));
  }

  /** Takes a connection whose first bytes (HTTP/2's preface) are still unread or unshifted. */
  accept(socket: Socket): void {
    if (this.#closed) {
      socket.destroy();
      return;
    }
    // node:http's sockets allow half-open connections; node:http2 counts on the socket
    // closing when the peer's FIN arrives. Without this, a client that went away without
    // resetting its streams left its session open, and each watcher on it kept being
    // written to (one stream per connection in the watch fan-out bench).
    socket.allowHalfOpen = false;
    // A server-side TLSSocket made by hand (tls/acceptor.ts) keeps `secureConnecting` true
    // after its handshake (tls.Server clears it itself); node:http2 would then wait for a
    // 'secureConnect' that never comes. The acceptor hands sockets over only once secure.
    const tlsSocket = socket as Socket & { secureConnecting?: boolean };
    if (tlsSocket.secureConnecting === true) tlsSocket.secureConnecting = false;
    if (this.#opts.observer !== undefined) {
      this.#traffic.set(socket, { read: 0, written: 0 });
      socket.once("close", () => {
        this.reportTraffic();
        this.#traffic.delete(socket);
      });
    }
    this.#h2.emit("connection", socket);
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

  /** Ends every session now (streams get RST, unary calls in flight are dropped). */
  close(): void {
    this.#closed = true;
    for (const s of this.#sessions) s.destroy();
    this.#sessions.clear();
  }

  /** Asks every session to finish: no new calls (GOAWAY), open ones run to their end. */
  drain(): void {
    for (const s of this.#sessions) if (!s.closed) s.close();
  }

  #onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    stream.on("error", ignoreStreamError);
    const ct = headers["content-type"] ?? "";
    if (headers[":method"] !== "POST" || !ct.startsWith("application/grpc")) {
      // grpc-go answers a non-gRPC request on its port with 415.
      stream.respond({ ":status": 415, "content-type": "text/plain" });
      stream.end("invalid gRPC request content-type\n");
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
        stream.close(http2.constants.NGHTTP2_PROTOCOL_ERROR);
        return;
      }
    }
    const path = headers[":path"] ?? "";
    const rpc = this.#rpcs.get(path);
    if (rpc === undefined) {
      stream.resume();
      const slash = path.lastIndexOf("/");
      let message: string;
      if (!path.startsWith("/") || slash <= 0) message = `malformed method name: ${JSON.stringify(path)}`;
      else if (this.#services.has(path.slice(1, slash))) message = `unknown method ${path.slice(slash + 1)} for service ${path.slice(1, slash)}`;
      else message = `unknown service ${path.slice(1, slash)}`;
      respondStatus(stream, { code: GrpcCode.Unimplemented, message });
      return;
    }
    // etcd registers no decompressor: grpc-go refuses the call from its headers, before
    // reading a message (server.go processUnaryRPC / processStreamingRPC).
    const encoding = headerValue(headers["grpc-encoding"]);
    if (encoding !== undefined && encoding !== "" && encoding !== "identity") {
      stream.resume();
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

  #callerOf(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): V3Caller {
    const token = headerValue(headers["token"]) ?? headerValue(headers["authorization"]);
    // The acceptor asked for (and verified) a client certificate only with --client-cert-auth;
    // without it the session's socket is not looked at (a getter chain per call).
    if (!this.#opts.clientCertAuth) return { token };
    let commonName: string | undefined;
    const socket = stream.session?.socket as Partial<TLSSocket> | undefined;
    if (socket?.encrypted === true && typeof socket.getPeerX509Certificate === "function") {
      const subject = socket.getPeerX509Certificate()?.subject;
      const cn = subject === undefined ? undefined : /(?:^|\n)CN=([^\n]*)/.exec(subject)?.[1];
      if (cn !== undefined && cn !== "") commonName = cn;
    }
    return commonName === undefined ? { token } : { token, commonName };
  }

  #streaming(rpc: StreamRpc, stream: http2.ServerHttp2Stream, call: GrpcCall, path: string, deadline: CallDeadline | undefined): void {
    const observer = this.#opts.observer;
    const t0 = observer === undefined ? 0 : performance.now();
    observer?.callStarted(path);
    let closed = false;
    const ended = (): void => {
      deadline?.cancel();
      if (closed) return;
      closed = true;
      s.onClose();
    };
    const s = new RpcStream(stream, ended);
    const reader = new MessageReader(this.#opts.maxRecvBytes);
    stream.once("close", () => {
      if (observer !== undefined) {
        // A stream the client reset (or whose connection dropped) before any answer has sent
        // no headers at all: node's typings say sentHeaders is always there, it is not.
        const sent = stream.sentHeaders as http2.OutgoingHttpHeaders | undefined;
        const status = stream.sentTrailers?.["grpc-status"] ?? sent?.["grpc-status"];
        observer.callHandled(path, status === undefined ? GrpcCode.Cancelled : Number(status), performance.now() - t0);
      }
      ended();
    });
    // grpc-go ends a stream at its deadline from the transport (code 4; etcd's handlers race
    // it with their own code 2); the call's watchers go with it through onClose.
    if (deadline !== undefined) {
      if (deadline.expired) {
        s.finish(DEADLINE_EXCEEDED);
        stream.resume();
        return;
      }
      deadline.onExpire(() => s.finish(DEADLINE_EXCEEDED));
    }
    rpc.open(s, call);
    stream.on("data", (chunk: Buffer) => {
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
    });
    stream.on("end", () => {
      if (!s.closed) s.onEnd();
    });
  }
}

/**
 * One unary call: its request (usually already buffered when the stream is handed over:
 * clients send HEADERS and DATA together), the RPC, the answer. grpc-go runs the handler as
 * soon as one message is in, without waiting for the client's half-close, and ignores more.
 */
class UnaryCall {
  readonly #rpc: UnaryRpc;
  readonly #stream: http2.ServerHttp2Stream;
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

  constructor(rpc: UnaryRpc, stream: http2.ServerHttp2Stream, call: GrpcCall, path: string, opts: GrpcServerOptions, deadline: CallDeadline | undefined) {
    this.#rpc = rpc;
    this.#stream = stream;
    this.#call = call;
    this.#path = path;
    this.#opts = opts;
    this.#deadline = deadline;
  }

  start(): void {
    // read() takes what is buffered without switching to flowing mode (no 'data'/'end'
    // listeners, no resume tick); a request that has not fully arrived falls back to them.
    const first = this.#stream.read() as Buffer | null;
    if (first !== null && this.#take(first)) return;
    const stream = this.#stream;
    // The read above started the handle reading (node:http2 emits a stream at its HEADERS,
    // before the DATA of the same packet, so it usually finds nothing). Flowing is set here
    // rather than by the 'data' listener, whose resume() would cost a tick and a read(0).
    // (node's typings make readableFlowing read-only; Readable has had its setter since v10.)
    (stream as { readableFlowing: boolean | null }).readableFlowing = true;
    stream.on("data", (chunk: Buffer) => {
      if (!this.#done) this.#take(chunk);
    });
    stream.on("end", () => {
      if (this.#done) return;
      this.#done = true;
      // grpc-go's parser at EOF: io.EOF before any byte, io.ErrUnexpectedEOF inside a message
      // (status.Convert of a plain error: Unknown).
      this.#fail({ code: GrpcCode.Unknown, message: this.#pending === undefined ? "EOF" : "unexpected EOF" });
    });
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
      // Copied: the chunk's memory is the socket's.
      this.#pending = Buffer.from(buf);
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
    const observer = this.#opts.observer;
    if (observer !== undefined) {
      // go-grpc-prometheus counts a unary call once its request is decoded, and its code
      // when the handler returns (not when the stream closes: no 'close' listener per call).
      this.#t0 = performance.now();
      observer.callStarted(this.#path);
    }
    if (deadline !== undefined) {
      // The backend ends its own waits at the deadline (etcd's answers, ctx.deadline); this
      // answers, a turn later, for a wait that does not watch it.
      deadline.onExpire(() => setImmediate(() => this.#fail({ code: GrpcCode.Unknown, message: "context deadline exceeded" })));
    }
    let answer: Promise<Uint8Array>;
    try {
      answer = this.#rpc.run(request, this.#call);
    } catch (err) {
      this.#fail(statusOf(err));
      return;
    }
    answer.then(
      (bytes) => this.#answer(bytes),
      (err: unknown) => this.#fail(statusOf(err)),
    );
  }

  /**
   * The call's one answer: the stream to answer on, or undefined when it was answered
   * already or the client went away (then counted as Cancelled).
   */
  #settle(): http2.ServerHttp2Stream | undefined {
    if (this.#answered) return undefined;
    this.#answered = true;
    this.#deadline?.cancel();
    const stream = this.#stream;
    if (stream.destroyed || stream.closed) {
      this.#handled(GrpcCode.Cancelled);
      return undefined;
    }
    return stream;
  }

  #answer(bytes: Uint8Array): void {
    const stream = this.#settle();
    if (stream === undefined) return;
    this.#handled(0);
    stream.respond(RESPONSE_HEADERS, WITH_TRAILERS);
    stream.on("wantTrailers", sendOkTrailers);
    stream.end(this.#rpc.framed === true ? bytes : frameMessage(bytes));
  }

  #fail(s: GrpcStatus): void {
    const stream = this.#settle();
    if (stream === undefined) return;
    this.#handled(s.code);
    respondStatus(stream, s);
    // Whatever else the client sends is not read: let it drain so the stream can close.
    stream.resume();
  }

  #handled(code: number): void {
    if (this.#t0 === 0) return;
    this.#opts.observer?.callHandled(this.#path, code, performance.now() - this.#t0);
  }
}

/** Per-session state of the keepalive enforcement; `reset` clears the strikes (grpc-go); the calls seen. */
const pingPolicy = new WeakMap<http2.Http2Session, { lastPingAt: number; strikes: number; reset: boolean; calls: Set<http2.ServerHttp2Stream>; pruneAt: number }>();

/**
 * grpc-go's keepalive on one connection: the enforcement policy for the client's pings
 * (GOAWAY ENHANCE_YOUR_CALM "too_many_pings" after more than 2 pings sooner than
 * minTime, or sooner than 2 hours with no call open, as etcd's PermitWithoutStream is
 * false), and the server's own pings every interval, closing the connection when one goes
 * unanswered for timeout. Returns the function that stops the timers.
 */
function keepAlive(session: http2.ServerHttp2Session, ka: GrpcKeepAlive): () => void {
  const p = { lastPingAt: Number.NEGATIVE_INFINITY, strikes: 0, reset: false, calls: new Set<http2.ServerHttp2Stream>(), pruneAt: PRUNE_CALLS };
  pingPolicy.set(session, p);
  session.on("ping", () => {
    const now = performance.now();
    const last = p.lastPingAt;
    p.lastPingAt = now;
    if (p.reset) {
      p.reset = false;
      p.strikes = 0;
      return;
    }
    const minMs = activeStreams(session) === 0 ? NO_STREAM_PING_MS : ka.minTimeMs;
    if (now - last < minMs) p.strikes++;
    if (p.strikes > MAX_PING_STRIKES && !session.closed && !session.destroyed) {
      session.goaway(ENHANCE_YOUR_CALM, 0, Buffer.from("too_many_pings"));
      // grpc-go closes the connection once the GOAWAY is written.
      setTimeout(() => session.destroy(), 50).unref();
    }
  });
  let interval: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;
  if (ka.intervalMs > 0) {
    interval = setInterval(() => {
      if (session.closed || session.destroyed || deadline !== undefined) return;
      if (ka.timeoutMs > 0) {
        deadline = setTimeout(() => session.destroy(), ka.timeoutMs);
        deadline.unref();
      }
      const sent = session.ping((err) => {
        clearTimeout(deadline);
        deadline = undefined;
        if (err !== null) session.destroy();
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

/** Calls open on a session, pruned of closed streams when a ping asks (node:http2 keeps no count). */
function activeStreams(session: http2.ServerHttp2Session): number {
  const p = pingPolicy.get(session);
  return p === undefined ? 0 : pruneCalls(p);
}

function pruneCalls(p: { calls: Set<http2.ServerHttp2Stream>; pruneAt: number }): number {
  for (const s of p.calls) if (s.closed || s.destroyed) p.calls.delete(s);
  p.pruneAt = Math.max(PRUNE_CALLS, 2 * p.calls.size);
  return p.calls.size;
}

/** Ended calls are dropped from a session's set once it holds this many (or twice the open ones). */
const PRUNE_CALLS = 64;

/** A call begins: the session's strikes reset (grpc-go: the server writes), and it counts as open. */
function noteCall(stream: http2.ServerHttp2Stream): void {
  const session = stream.session;
  const p = session === undefined ? undefined : pingPolicy.get(session);
  if (p === undefined) return;
  p.reset = true;
  p.calls.add(stream);
  // A long-lived session must not hold every stream it ever had until its next ping; no
  // 'close' listener per call: pruning now and then costs less.
  if (p.calls.size >= p.pruneAt) pruneCalls(p);
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
