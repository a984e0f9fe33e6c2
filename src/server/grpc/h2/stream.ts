// One server stream of an H2Connection: the request's headers and body in, a response
// out (headers, DATA with flow control, trailers), as the gRPC mapping (server.ts) uses
// it. Callbacks, not events: one owner each. Writes are queued here while the client's
// stream or connection window (or a full socket) holds them; `write` returns false past
// HIGH_WATER_BYTES queued, and `drained()` resolves when the queue is under it again.
import { encodeHeaderBlock, type OutgoingFields } from "./hpack.ts";
import type { H2Connection } from "./connection.ts";
import type { ReceiveWindow, SendWindow } from "./flow.ts";

/**
 * Request headers: lower-case names; a repeated name gives an array. Read-only: calls
 * whose header blocks are the same bytes share one (frozen) object.
 */
export type RequestHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

/** Header fields encoded once (a constant block is encoded at start-up, not per call). */
export class HeaderBlock {
  readonly fields: OutgoingFields;
  readonly bytes: Buffer;
  constructor(fields: OutgoingFields) {
    this.fields = fields;
    this.bytes = encodeHeaderBlock(fields);
  }
}

/** Bytes queued past which `write` says wait (node's stream default highWaterMark). */
export const HIGH_WATER_BYTES = 16 * 1024;

/** What a stream asks of its connection. */
export interface StreamHost {
  /** Puts the stream's queued DATA (and its end) on the wire as far as windows allow. */
  pump(stream: H2Stream): void;
  /** HEADERS (+ CONTINUATION) for the stream, now. */
  sendHeaders(stream: H2Stream, block: HeaderBlock, endStream: boolean): void;
  /** HEADERS + DATA + trailing HEADERS in one write, when the windows take the DATA whole; false if not. */
  sendAnswer(stream: H2Stream, headers: HeaderBlock, data: Buffer, trailers: HeaderBlock): boolean;
  reset(stream: H2Stream, code: number): void;
  /** `bytes` of DATA were queued on a stream (the connection counts what all its streams hold). */
  queued(bytes: number): void;
}

export class H2Stream {
  readonly id: number;
  readonly headers: RequestHeaders;
  /** The connection (keepalive, socket for the client certificate). */
  readonly connection: H2Connection;
  readonly sendWindow: SendWindow;
  readonly recvWindow: ReceiveWindow;
  readonly #host: StreamHost;

  /** Request DATA (a copy, the stream's own), in order. Set by the owner at once. */
  onData: ((chunk: Buffer) => void) | undefined;
  /** The client half-closed. */
  onEnd: (() => void) | undefined;
  /** The stream is over (answered, reset either way, connection gone). Once. */
  onClose: (() => void) | undefined;

  /** The client sent END_STREAM. */
  remoteEnded = false;
  /** END_STREAM is queued or sent: no more writes. */
  localEnded = false;
  closed = false;
  headersSent: HeaderBlock | undefined;
  trailersSent: HeaderBlock | undefined;
  /** Request trailers, if the client sent any. */
  trailers: RequestHeaders | undefined;

  /** Queued DATA, and its bytes. */
  readonly queue: Buffer[] = [];
  queuedBytes = 0;
  /** The end waiting behind the queue: trailers, null for a bare END_STREAM, undefined for none yet. */
  pendingEnd: HeaderBlock | null | undefined;
  #drainWaiters: Array<() => void> | undefined;
  needDrain = false;

  constructor(id: number, headers: RequestHeaders, host: StreamHost, connection: H2Connection, sendWindow: SendWindow, recvWindow: ReceiveWindow) {
    this.id = id;
    this.headers = headers;
    this.#host = host;
    this.connection = connection;
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
  }

  get writableLength(): number {
    return this.queuedBytes;
  }

  /** Response headers; `endStream` for a trailers-only response. */
  respond(block: HeaderBlock, endStream = false): void {
    if (this.closed || this.headersSent !== undefined) return;
    this.headersSent = block;
    if (endStream) this.localEnded = true;
    this.#host.sendHeaders(this, block, endStream);
  }

  /** Queues `data`; false when the queue is over its mark (wait for `drained`). */
  write(data: Buffer): boolean {
    if (this.closed || this.localEnded) return false;
    if (data.length > 0) {
      this.queue.push(data);
      this.queuedBytes += data.length;
      this.#host.queued(data.length);
      this.#host.pump(this);
    }
    if (this.queuedBytes >= HIGH_WATER_BYTES) this.needDrain = true;
    return !this.needDrain;
  }

  /** Ends the response: `data` (if any), then `trailers`, else END_STREAM on the last DATA. */
  end(data?: Buffer, trailers?: HeaderBlock): void {
    if (this.closed || this.localEnded) return;
    if (data !== undefined && data.length > 0) {
      this.queue.push(data);
      this.queuedBytes += data.length;
      this.#host.queued(data.length);
    }
    this.localEnded = true;
    this.pendingEnd = trailers ?? null;
    this.#host.pump(this);
  }

  /** A unary answer: headers, one message, trailers; one socket write when the windows allow. */
  answer(headers: HeaderBlock, data: Buffer, trailers: HeaderBlock): void {
    if (this.closed || this.localEnded || this.headersSent !== undefined) return;
    this.headersSent = headers;
    if (this.queuedBytes === 0 && this.#host.sendAnswer(this, headers, data, trailers)) return;
    this.#host.sendHeaders(this, headers, false);
    this.end(data, trailers);
  }

  /** RST_STREAM with `code`; the stream closes. */
  reset(code: number): void {
    if (this.closed) return;
    this.#host.reset(this, code);
  }

  /** Resolves once the queue is under its mark again, or the stream closed. */
  drained(): Promise<void> {
    if (this.closed || !this.needDrain) return Promise.resolve();
    return new Promise((resolve) => (this.#drainWaiters ??= []).push(resolve));
  }

  /** The connection sent queued bytes: wake waiters once under the mark. */
  sentSome(): void {
    if (!this.needDrain || this.queuedBytes >= HIGH_WATER_BYTES) return;
    this.needDrain = false;
    this.#wake();
  }

  /** Called once by the connection when the stream is over. */
  markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.#wake();
    this.onClose?.();
  }

  #wake(): void {
    const w = this.#drainWaiters;
    if (w === undefined) return;
    this.#drainWaiters = undefined;
    for (const f of w) f();
  }
}
