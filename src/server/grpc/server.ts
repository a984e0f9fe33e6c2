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
// - closing the server ends every session: open streams see `onClose`.
import http2 from "node:http2";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { GrpcCode, V3Error } from "../../api/v3-errors.ts";
import type { V3Caller } from "../v3-service.ts";
import { MessageReader, encodeGrpcMessage, frameMessage } from "./frames.ts";

/** What an RPC knows of its caller. */
export interface GrpcCall {
  /** Request metadata, lower-case names. */
  readonly headers: http2.IncomingHttpHeaders;
  /** Token from `token` (etcd's clients) or `authorization` metadata; the TLS CN. */
  readonly ctx: V3Caller;
}

export interface UnaryRpc {
  kind: "unary";
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

function trailersOf(s: GrpcStatus): http2.OutgoingHttpHeaders {
  const t: http2.OutgoingHttpHeaders = { "grpc-status": String(s.code) };
  if (s.message !== "") t["grpc-message"] = encodeGrpcMessage(s.message);
  return t;
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

  constructor(stream: http2.ServerHttp2Stream) {
    this.#stream = stream;
    stream.on("wantTrailers", () => stream.sendTrailers(this.#trailers));
    stream.once("close", () => (this.#gone = true));
  }

  get closed(): boolean {
    return this.#finished || this.#gone || this.#stream.destroyed;
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
      this.#stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
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
      this.#stream.respond({ ...RESPONSE_HEADERS, ...trailersOf(s) }, { endStream: true });
      return;
    }
    this.#trailers = trailersOf(s);
    this.#stream.end();
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
    stream.on("error", () => stream.destroy());
    const session = stream.session;
    if (session !== undefined && this.#opts.keepAlive !== undefined) {
      openStreams.set(session, (openStreams.get(session) ?? 0) + 1);
      resetPingStrikes(session);
      stream.once("close", () => openStreams.set(session, (openStreams.get(session) ?? 1) - 1));
    }
    const ct = headers["content-type"] ?? "";
    if (headers[":method"] !== "POST" || !ct.startsWith("application/grpc")) {
      // grpc-go answers a non-gRPC request on its port with 415.
      stream.respond({ ":status": 415, "content-type": "text/plain" });
      stream.end("invalid gRPC request content-type\n");
      return;
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
      stream.respond({ ...RESPONSE_HEADERS, ...trailersOf({ code: GrpcCode.Unimplemented, message }) }, { endStream: true });
      return;
    }
    this.#opts.onRequest?.();
    const observer = this.#opts.observer;
    if (observer !== undefined) {
      const t0 = performance.now();
      observer.callStarted(path);
      stream.once("close", () => {
        // A stream the client reset (or whose connection dropped) before any answer has sent
        // no headers at all: node's typings say sentHeaders is always there, it is not.
        const sent = stream.sentHeaders as http2.OutgoingHttpHeaders | undefined;
        const status = stream.sentTrailers?.["grpc-status"] ?? sent?.["grpc-status"];
        observer.callHandled(path, status === undefined ? GrpcCode.Cancelled : Number(status), performance.now() - t0);
      });
    }
    const call: GrpcCall = { headers, ctx: this.#callerOf(stream, headers) };
    if (rpc.kind === "unary") this.#unary(rpc, stream, call);
    else this.#streaming(rpc, stream, call);
  }

  #callerOf(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): V3Caller {
    const token = headerValue(headers["token"]) ?? headerValue(headers["authorization"]);
    let commonName: string | undefined;
    const socket = stream.session?.socket as Partial<TLSSocket> | undefined;
    // The acceptor asked for (and verified) a client certificate only with --client-cert-auth.
    if (this.#opts.clientCertAuth && socket?.encrypted === true && typeof socket.getPeerX509Certificate === "function") {
      const subject = socket.getPeerX509Certificate()?.subject;
      const cn = subject === undefined ? undefined : /(?:^|\n)CN=([^\n]*)/.exec(subject)?.[1];
      if (cn !== undefined && cn !== "") commonName = cn;
    }
    return commonName === undefined ? { token } : { token, commonName };
  }

  #unary(rpc: UnaryRpc, stream: http2.ServerHttp2Stream, call: GrpcCall): void {
    const reader = new MessageReader(this.#opts.maxRecvBytes);
    let request: Uint8Array | undefined;
    let failed = false;
    const fail = (s: GrpcStatus): void => {
      if (failed || stream.destroyed) return;
      failed = true;
      stream.respond({ ...RESPONSE_HEADERS, ...trailersOf(s) }, { endStream: true });
    };
    stream.on("data", (chunk: Buffer) => {
      if (failed) return;
      try {
        for (const m of reader.push(chunk)) {
          if (request !== undefined) throw new V3Error(GrpcCode.Unimplemented, "grpc: too many messages for a unary call");
          request = m;
        }
      } catch (err) {
        fail(statusOf(err));
      }
    });
    stream.on("end", () => {
      if (failed) return;
      if (request === undefined) {
        fail({ code: GrpcCode.Internal, message: reader.partial ? "grpc: message truncated" : "grpc: no request message" });
        return;
      }
      rpc.run(request, call).then(
        (bytes) => {
          if (stream.destroyed || stream.closed) return;
          stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
          stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
          stream.end(rpc.framed === true ? bytes : frameMessage(bytes));
        },
        (err: unknown) => fail(statusOf(err)),
      );
    });
  }

  #streaming(rpc: StreamRpc, stream: http2.ServerHttp2Stream, call: GrpcCall): void {
    const s = new RpcStream(stream);
    const reader = new MessageReader(this.#opts.maxRecvBytes);
    let closed = false;
    stream.once("close", () => {
      if (closed) return;
      closed = true;
      s.onClose();
    });
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

/** Per-session state of the keepalive enforcement; `answered` resets the strikes (grpc-go). */
const pingPolicy = new WeakMap<http2.Http2Session, { lastPingAt: number; strikes: number; reset: boolean }>();

/** Noted when the server sends a call's headers: grpc-go resets ping strikes on every write. */
function resetPingStrikes(session: http2.Http2Session | undefined): void {
  const p = session === undefined ? undefined : pingPolicy.get(session);
  if (p !== undefined) p.reset = true;
}

/**
 * grpc-go's keepalive on one connection: the enforcement policy for the client's pings
 * (GOAWAY ENHANCE_YOUR_CALM "too_many_pings" after more than 2 pings sooner than
 * minTime, or sooner than 2 hours with no call open, as etcd's PermitWithoutStream is
 * false), and the server's own pings every interval, closing the connection when one goes
 * unanswered for timeout. Returns the function that stops the timers.
 */
function keepAlive(session: http2.ServerHttp2Session, ka: GrpcKeepAlive): () => void {
  const p = { lastPingAt: Number.NEGATIVE_INFINITY, strikes: 0, reset: false };
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

function activeStreams(session: http2.ServerHttp2Session): number {
  return openStreams.get(session) ?? 0;
}

/** Calls open per session (node:http2 does not expose the count). */
const openStreams = new WeakMap<http2.Http2Session, number>();

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
