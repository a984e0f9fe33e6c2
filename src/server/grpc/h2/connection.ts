// The server side of one HTTP/2 connection (RFC 9113) on a socket the client listener
// handed over (plain TCP after the preface sniff, or TLS after ALPN h2): preface and
// SETTINGS, HPACK, stream states, flow control both ways, PING, RST_STREAM, GOAWAY.
// Where the RFC leaves a choice it does as nghttp2 (node:http2) or grpc-go do:
// - DATA on a stream the client already ended: connection error STREAM_CLOSED (nghttp2);
//   DATA, WINDOW_UPDATE, RST_STREAM or trailers on a stream closed and forgotten: ignored;
// - a stream over SETTINGS_MAX_CONCURRENT_STREAMS: RST_STREAM REFUSED_STREAM;
// - when the server ends a stream the client has not half-closed, RST_STREAM NO_ERROR
//   follows (grpc-go);
// - received DATA is given back at once (WINDOW_UPDATE when half a window is used): the
//   gRPC layer consumes what arrives, and bounds what it keeps itself.
// Frames out are gathered and written once the current run and its microtasks are done
// (a unary answer and the others of the same run leave in one socket write).
import type { Socket } from "node:net";
import { ReceiveWindow, SendWindow } from "./flow.ts";
import {
  DEFAULT_MAX_FRAME,
  DEFAULT_WINDOW,
  ErrorCode,
  FRAME_HEADER_BYTES,
  Flag,
  FrameParser,
  FrameType,
  H2Error,
  MAX_FRAME_LIMIT,
  MAX_WINDOW,
  PREFACE,
  SETTINGS_ACK,
  Setting,
  goawayFrame,
  headersBytes,
  pingFrame,
  rstStreamFrame,
  settingsFrame,
  unpad,
  windowUpdateFrame,
  writeFrameHeader,
  writeHeaders,
} from "./frame.ts";
import { HpackDecoder, HpackError, tableSizeUpdate, type HeaderList } from "./hpack.ts";
import { H2Stream, type HeaderBlock, type RequestHeaders, type StreamHost } from "./stream.ts";

export interface H2ConnectionOptions {
  /** SETTINGS_MAX_CONCURRENT_STREAMS (2^32-1: not sent, as grpc-go). */
  maxConcurrentStreams: number;
  /** Our SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window. */
  streamWindow: number;
  /** The connection's receive window (a WINDOW_UPDATE right after our SETTINGS). */
  connectionWindow: number;
  /** A new request stream; its owner sets the callbacks before returning. */
  onStream(stream: H2Stream): void;
}

/** Queued bytes in the socket past which DATA waits for 'drain' (control frames never do). */
const SOCKET_HIGH_WATER = 1 << 20;
/**
 * Unsent bytes past which the connection stops reading until the socket drains. Answers
 * to control frames (SETTINGS and PING acknowledgements), resets and trailers-only
 * answers do not wait for windows, so a client that sends without reading would otherwise
 * grow our output without bound; grpc-go's server throttles its reader the same way.
 */
const READ_PAUSE_BYTES = 4 * SOCKET_HIGH_WATER;
/**
 * grpc-go's server header list limit (defaultServerMaxHeaderListSize; etcd sets none, so
 * it is not advertised in SETTINGS either): a request whose header list (name + value +
 * 32 per field) passes it is reset with FRAME_SIZE_ERROR and the connection goes on; a
 * string literal longer than it is a COMPRESSION_ERROR (x/net/http2's hpack).
 */
export const MAX_HEADER_LIST_SIZE = 16 << 20;
/**
 * Largest header block kept across CONTINUATION frames (then ENHANCE_YOUR_CALM): grpc-go
 * decodes fragments as they come and keeps at most one string; we decode whole blocks,
 * so this bounds what a connection holds. A block this large passes the list limit
 * unless its strings are Huffman-coded rare bytes.
 */
export const MAX_HEADER_BLOCK = MAX_HEADER_LIST_SIZE;
/** How long a closing connection may take to flush before it is destroyed. */
const CLOSE_GRACE_MS = 1000;

const PSEUDO_REQUEST = new Set([":method", ":scheme", ":path", ":authority"]);

export class H2Connection implements StreamHost {
  readonly socket: Socket;
  readonly #opts: H2ConnectionOptions;
  readonly #parser = new FrameParser();
  readonly #decoder = new HpackDecoder(4096, MAX_HEADER_LIST_SIZE);
  readonly #streams = new Map<number, H2Stream>();
  /** Highest client stream id seen (streams at or below it and not in the map are closed). */
  #lastStreamId = 0;
  /** GOAWAY sent: streams above this id are ignored. */
  #goawayLastId: number | undefined;
  #prefaceLeft = PREFACE.length;
  #settingsSeen = false;
  #peerInitialWindow = DEFAULT_WINDOW;
  #peerMaxFrame = DEFAULT_MAX_FRAME;
  /** A table size the client lowered its decoder to, to announce in our next block. */
  #pendingTableSize: number | undefined;
  readonly #sendWindow = new SendWindow(DEFAULT_WINDOW, 0);
  readonly #recvWindow: ReceiveWindow;
  /** A header block being received across CONTINUATION frames. */
  #cont: { streamId: number; flags: number; chunks: Buffer[]; bytes: number } | undefined;
  /** The decoder's last list read as request headers, and those headers (frozen, shared). */
  #lastList: HeaderList | undefined;
  #lastHeaders: RequestHeaders | undefined;
  #out: Buffer[] = [];
  #outBytes = 0;
  #flushQueued = false;
  #readPaused = false;
  /** Streams with DATA held by the connection window or a full socket. */
  readonly #blocked = new Set<H2Stream>();
  /** DATA queued on all its streams (held by flow control or a full socket). */
  #queuedData = 0;
  /** unsentBelow() waits: each resolves once unsentBytes is at most its mark. */
  #unsentWaiters: Array<{ below: number; resolve: () => void }> = [];
  #pingSeq = 0;
  readonly #pings = new Map<string, (err: Error | null) => void>();
  #closing = false;
  #destroyed = false;
  /** The client's GOAWAY arrived: the connection ends with its last stream. */
  #peerGoaway = false;

  /**
   * A PING from the client (acknowledged already); grpc-go's policy watches these.
   * `afterWrite`: this connection wrote a HEADERS or DATA frame since the previous PING.
   */
  onPing: ((afterWrite: boolean) => void) | undefined;
  /** A HEADERS or DATA frame went out since the last PING arrived. */
  #wroteSincePing = false;
  /** The connection is gone (every stream closed first). Once. */
  onClose: (() => void) | undefined;

  constructor(socket: Socket, opts: H2ConnectionOptions) {
    this.socket = socket;
    this.#opts = opts;
    this.#recvWindow = new ReceiveWindow(opts.connectionWindow, 0);
    const settings: Array<[number, number]> = [];
    if (opts.maxConcurrentStreams < 2 ** 32 - 1) settings.push([Setting.MAX_CONCURRENT_STREAMS, opts.maxConcurrentStreams]);
    settings.push([Setting.INITIAL_WINDOW_SIZE, opts.streamWindow]);
    this.#send(settingsFrame(settings));
    if (opts.connectionWindow > DEFAULT_WINDOW) this.#send(windowUpdateFrame(0, opts.connectionWindow - DEFAULT_WINDOW));
    socket.on("data", this.#onData);
    socket.on("close", () => this.#teardown());
    socket.on("error", () => this.destroy());
    socket.on("drain", this.#onDrain);
    socket.resume();
  }

  get streamCount(): number {
    return this.#streams.size;
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  /** No new streams (GOAWAY NO_ERROR); the connection ends with its last open stream. */
  drain(): void {
    if (this.#closing || this.#destroyed) return;
    this.#goaway(ErrorCode.NO_ERROR);
    this.#closeIfIdle();
  }

  /** GOAWAY `code` and the connection ends now: open streams close. */
  close(code: number = ErrorCode.NO_ERROR, debug?: string): void {
    if (this.#destroyed) return;
    // After drain()'s GOAWAY NO_ERROR a second one says nothing new.
    if (!this.#closing && (this.#goawayLastId === undefined || code !== ErrorCode.NO_ERROR)) this.#goaway(code, debug);
    this.#closing = true;
    this.#closeStreams();
    this.#flush();
    this.socket.end();
    setTimeout(() => this.destroy(), CLOSE_GRACE_MS).unref();
  }

  /** Drops the connection without a word. */
  destroy(): void {
    if (this.#destroyed) return;
    this.socket.destroy();
    this.#teardown();
  }

  /** Sends a PING; `cb` gets its ACK (null) or an error when the connection goes first. */
  ping(cb: (err: Error | null) => void): boolean {
    if (this.#closing || this.#destroyed) return false;
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(++this.#pingSeq, 4);
    this.#pings.set(payload.toString("latin1"), cb);
    this.#send(pingFrame(payload, false));
    return true;
  }

  readonly #onData = (chunk: Buffer): void => {
    if (this.#destroyed) return;
    try {
      if (this.#prefaceLeft > 0) {
        const n = Math.min(this.#prefaceLeft, chunk.length);
        const at = PREFACE.length - this.#prefaceLeft;
        if (chunk.compare(PREFACE, at, at + n, 0, n) !== 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "bad client preface");
        this.#prefaceLeft -= n;
        chunk = chunk.subarray(n);
        if (chunk.length === 0) return;
      }
      this.#parser.push(chunk, this.#onFrame);
    } catch (err) {
      this.#connectionError(err);
    }
  };

  readonly #onFrame = (type: number, flags: number, streamId: number, payload: Buffer): void => {
    if (this.#closing) return;
    if (!this.#settingsSeen) {
      if (type !== FrameType.SETTINGS || (flags & Flag.ACK) !== 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "first frame is not SETTINGS");
      this.#settingsSeen = true;
    }
    if (this.#cont !== undefined && (type !== FrameType.CONTINUATION || streamId !== this.#cont.streamId)) {
      throw new H2Error(ErrorCode.PROTOCOL_ERROR, "expected CONTINUATION");
    }
    switch (type) {
      case FrameType.DATA:
        return this.#onDataFrame(flags, streamId, payload);
      case FrameType.HEADERS:
        return this.#onHeadersFrame(flags, streamId, payload);
      case FrameType.CONTINUATION:
        return this.#onContinuation(flags, streamId, payload);
      case FrameType.PRIORITY:
        if (streamId === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "PRIORITY on stream 0");
        if (payload.length !== 5) return this.#streamError(streamId, ErrorCode.FRAME_SIZE_ERROR);
        if ((payload.readUInt32BE(0) & 0x7fffffff) === streamId) return this.#streamError(streamId, ErrorCode.PROTOCOL_ERROR);
        return;
      case FrameType.RST_STREAM:
        return this.#onRst(streamId, payload);
      case FrameType.SETTINGS:
        return this.#onSettings(flags, streamId, payload);
      case FrameType.PUSH_PROMISE:
        throw new H2Error(ErrorCode.PROTOCOL_ERROR, "PUSH_PROMISE from a client");
      case FrameType.PING:
        return this.#onPing(flags, streamId, payload);
      case FrameType.GOAWAY:
        if (streamId !== 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "GOAWAY on a stream");
        if (payload.length < 8) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, "short GOAWAY");
        this.#peerGoaway = true;
        this.#closeIfIdle();
        return;
      case FrameType.WINDOW_UPDATE:
        return this.#onWindowUpdate(streamId, payload);
      default:
        // Unknown frame types are ignored (§5.5).
        return;
    }
  };

  #isIdle(streamId: number): boolean {
    return streamId > this.#lastStreamId;
  }

  #onDataFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "DATA on stream 0");
    // The whole frame, padding included, counts against both windows (§6.9.1).
    this.#recvWindow.receive(payload.length);
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      if (this.#isIdle(streamId)) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "DATA on an idle stream");
      this.#giveBack(undefined);
      return;
    }
    if (stream.remoteEnded) throw new H2Error(ErrorCode.STREAM_CLOSED, "DATA after END_STREAM");
    if (payload.length > stream.recvWindow.available) {
      // The stream's window overrun: a stream error; the connection's window gets the bytes back.
      this.#giveBack(undefined);
      return this.#streamError(streamId, ErrorCode.FLOW_CONTROL_ERROR);
    }
    stream.recvWindow.receive(payload.length);
    const data = unpad(flags, payload);
    this.#giveBack(stream);
    if (data.length > 0 && !stream.localEnded) stream.onData?.(Buffer.from(data));
    if ((flags & Flag.END_STREAM) !== 0) this.#remoteEnd(stream);
  }

  /** Received bytes are consumed at once: WINDOW_UPDATEs when half a window went. */
  #giveBack(stream: H2Stream | undefined): void {
    const c = this.#recvWindow.consumed();
    if (c > 0) this.#send(windowUpdateFrame(0, c));
    if (stream === undefined || stream.remoteEnded || stream.closed) return;
    const s = stream.recvWindow.consumed();
    if (s > 0) this.#send(windowUpdateFrame(stream.id, s));
  }

  #onHeadersFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "HEADERS on stream 0");
    let block = unpad(flags, payload);
    if ((flags & Flag.PRIORITY) !== 0) {
      if (block.length < 5) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, "HEADERS too short for its priority");
      if ((block.readUInt32BE(0) & 0x7fffffff) === streamId) {
        // A stream depending on itself (§5.3.1): a stream error, after the block is decoded.
        flags |= 0x100;
      }
      block = block.subarray(5);
    }
    if ((flags & Flag.END_HEADERS) === 0) {
      this.#cont = { streamId, flags, chunks: [Buffer.from(block)], bytes: block.length };
      return;
    }
    this.#onHeaderBlock(streamId, flags, block);
  }

  #onContinuation(flags: number, streamId: number, payload: Buffer): void {
    const c = this.#cont;
    if (c === undefined) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "CONTINUATION without HEADERS");
    c.chunks.push(Buffer.from(payload));
    c.bytes += payload.length;
    if (c.bytes > MAX_HEADER_BLOCK) throw new H2Error(ErrorCode.ENHANCE_YOUR_CALM, "header block too large");
    if ((flags & Flag.END_HEADERS) === 0) return;
    this.#cont = undefined;
    this.#onHeaderBlock(streamId, c.flags, Buffer.concat(c.chunks, c.bytes));
  }

  #onHeaderBlock(streamId: number, flags: number, block: Buffer): void {
    let list: HeaderList;
    try {
      list = this.#decoder.decode(block, MAX_HEADER_LIST_SIZE);
    } catch (err) {
      if (err instanceof HpackError) throw new H2Error(ErrorCode.COMPRESSION_ERROR, err.message);
      throw err;
    }
    if (this.#decoder.truncated) {
      // grpc-go (decodeHeader, "peer header list size exceeded limit"): the stream is reset
      // before any other check of it, the connection goes on.
      if (streamId % 2 === 1 && streamId > this.#lastStreamId && !this.#streams.has(streamId)) this.#lastStreamId = streamId;
      return this.#streamError(streamId, ErrorCode.FRAME_SIZE_ERROR);
    }
    const endStream = (flags & Flag.END_STREAM) !== 0;
    const existing = this.#streams.get(streamId);
    if (existing !== undefined) {
      // Trailers (§8.1): they end the stream and carry no pseudo-header.
      if (existing.remoteEnded) throw new H2Error(ErrorCode.STREAM_CLOSED, "HEADERS after END_STREAM");
      const trailers = toHeaders(list, false);
      if (!endStream || trailers === undefined) return this.#streamError(streamId, ErrorCode.PROTOCOL_ERROR);
      existing.trailers = trailers;
      this.#remoteEnd(existing);
      return;
    }
    if (streamId % 2 === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "even stream id from a client");
    if (!this.#isIdle(streamId)) {
      // Trailers that crossed our END_STREAM (and the RST_STREAM after it) are ignored; a
      // request reusing an old id is not.
      if (endStream) return;
      throw new H2Error(ErrorCode.PROTOCOL_ERROR, "HEADERS on a closed stream");
    }
    this.#lastStreamId = streamId;
    if (this.#goawayLastId !== undefined || this.#closing) return;
    if ((flags & 0x100) !== 0) return this.#streamError(streamId, ErrorCode.PROTOCOL_ERROR);
    if (this.#streams.size >= this.#opts.maxConcurrentStreams) return this.#streamError(streamId, ErrorCode.REFUSED_STREAM);
    // The decoder hands back the same list for the same block bytes (hpack.ts): the headers
    // read from it are the same too.
    let headers = list === this.#lastList ? this.#lastHeaders : undefined;
    if (headers === undefined) {
      headers = toHeaders(list, true);
      if (headers === undefined) return this.#streamError(streamId, ErrorCode.PROTOCOL_ERROR);
      this.#lastList = list;
      this.#lastHeaders = Object.freeze(headers);
    }
    const stream = new H2Stream(
      streamId,
      headers,
      this,
      this,
      new SendWindow(this.#peerInitialWindow, streamId),
      new ReceiveWindow(this.#opts.streamWindow, streamId),
    );
    this.#streams.set(streamId, stream);
    if (endStream) stream.remoteEnded = true;
    this.#opts.onStream(stream);
    if (endStream && !stream.closed) stream.onEnd?.();
  }

  #remoteEnd(stream: H2Stream): void {
    stream.remoteEnded = true;
    stream.onEnd?.();
  }

  #onRst(streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "RST_STREAM on stream 0");
    if (payload.length !== 4) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, "RST_STREAM of the wrong size");
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      if (this.#isIdle(streamId)) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "RST_STREAM on an idle stream");
      return;
    }
    this.#forget(stream);
  }

  #onSettings(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "SETTINGS on a stream");
    if ((flags & Flag.ACK) !== 0) {
      if (payload.length !== 0) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
      return;
    }
    if (payload.length % 6 !== 0) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS of a size not a multiple of 6");
    for (let at = 0; at < payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const v = payload.readUInt32BE(at + 2);
      switch (id) {
        case Setting.HEADER_TABLE_SIZE:
          // We never index: any size fits, but a lowered one must be announced (§4.2 of RFC 7541).
          if (v < 4096) this.#pendingTableSize = Math.min(v, this.#pendingTableSize ?? v);
          break;
        case Setting.ENABLE_PUSH:
          if (v > 1) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "ENABLE_PUSH not 0 or 1");
          break;
        case Setting.INITIAL_WINDOW_SIZE: {
          if (v > MAX_WINDOW) throw new H2Error(ErrorCode.FLOW_CONTROL_ERROR, "INITIAL_WINDOW_SIZE over 2^31-1");
          const delta = v - this.#peerInitialWindow;
          this.#peerInitialWindow = v;
          for (const s of this.#streams.values()) s.sendWindow.adjust(delta);
          if (delta > 0) for (const s of [...this.#streams.values()]) if (s.queuedBytes > 0 || s.pendingEnd !== undefined) this.pump(s);
          break;
        }
        case Setting.MAX_FRAME_SIZE:
          if (v < DEFAULT_MAX_FRAME || v > MAX_FRAME_LIMIT) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "MAX_FRAME_SIZE out of range");
          this.#peerMaxFrame = v;
          break;
        default:
          // MAX_CONCURRENT_STREAMS limits our pushes (none); MAX_HEADER_LIST_SIZE is advisory; others unknown.
          break;
      }
    }
    this.#send(SETTINGS_ACK);
  }

  #onPing(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "PING on a stream");
    if (payload.length !== 8) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, "PING not of 8 bytes");
    if ((flags & Flag.ACK) !== 0) {
      const key = payload.toString("latin1");
      const cb = this.#pings.get(key);
      if (cb !== undefined) {
        this.#pings.delete(key);
        cb(null);
      }
      return;
    }
    this.#send(pingFrame(payload, true));
    const afterWrite = this.#wroteSincePing;
    this.#wroteSincePing = false;
    this.onPing?.(afterWrite);
  }

  #onWindowUpdate(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, "WINDOW_UPDATE not of 4 bytes");
    const inc = payload.readUInt32BE(0) & 0x7fffffff;
    if (streamId === 0) {
      this.#sendWindow.update(inc);
      this.#pumpBlocked();
      return;
    }
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      if (this.#isIdle(streamId)) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
      return;
    }
    try {
      stream.sendWindow.update(inc);
    } catch (err) {
      if (err instanceof H2Error) return this.#streamError(streamId, err.code);
      throw err;
    }
    this.pump(stream);
  }

  #pumpBlocked(): void {
    if (this.#blocked.size === 0) return;
    const streams = [...this.#blocked];
    this.#blocked.clear();
    for (const s of streams) this.pump(s);
  }

  readonly #onDrain = (): void => {
    if (this.#readPaused) {
      this.#readPaused = false;
      this.socket.resume();
    }
    this.#pumpBlocked();
    this.#checkUnsent();
  };

  /** Reading stopped for a client that does not read our output (READ_PAUSE_BYTES). */
  get readPaused(): boolean {
    return this.#readPaused;
  }

  /**
   * Bytes written for the client and not yet taken by the socket's peer, over all streams:
   * DATA queued on streams (their windows or a full socket hold it), frames gathered for
   * this turn, and the socket's own buffer. Cheap (counters): callers may ask per message.
   */
  get unsentBytes(): number {
    return this.#queuedData + this.#outBytes + this.socket.writableLength;
  }

  /** Resolves once unsentBytes is at most `below`, or the connection is gone; never rejects. */
  unsentBelow(below: number): Promise<void> {
    if (this.#destroyed || this.unsentBytes <= below) return Promise.resolve();
    return new Promise((resolve) => this.#unsentWaiters.push({ below, resolve }));
  }

  queued(bytes: number): void {
    this.#queuedData += bytes;
  }

  /** Wakes unsentBelow() waiters whose mark was reached (after bytes left a queue or the socket). */
  #checkUnsent(): void {
    if (this.#unsentWaiters.length === 0) return;
    const unsent = this.#destroyed ? 0 : this.unsentBytes;
    if (!this.#unsentWaiters.some((w) => unsent <= w.below)) return;
    const ready = this.#unsentWaiters.filter((w) => unsent <= w.below);
    this.#unsentWaiters = this.#unsentWaiters.filter((w) => unsent > w.below);
    for (const w of ready) w.resolve();
  }

  // ---- sending ----

  pump(stream: H2Stream): void {
    if (stream.closed || this.#destroyed) return;
    const q = stream.queue;
    while (q.length > 0) {
      if (this.socket.writableLength + this.#outBytes > SOCKET_HIGH_WATER || this.#sendWindow.available <= 0) {
        this.#blocked.add(stream);
        break;
      }
      const chunk = q[0]!;
      const n = Math.min(chunk.length, stream.sendWindow.available, this.#sendWindow.available, this.#peerMaxFrame);
      if (n <= 0) break; // the stream's own window: its WINDOW_UPDATE pumps it
      const whole = n === chunk.length;
      if (whole) q.shift();
      else q[0] = chunk.subarray(n);
      stream.queuedBytes -= n;
      this.#queuedData -= n;
      stream.sendWindow.consume(n);
      this.#sendWindow.consume(n);
      const last = whole && q.length === 0 && stream.pendingEnd === null;
      const head = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
      writeFrameHeader(head, 0, n, FrameType.DATA, last ? Flag.END_STREAM : 0, stream.id);
      this.#wroteSincePing = true;
      this.#send(head);
      this.#send(whole ? chunk : chunk.subarray(0, n));
      if (last) {
        stream.pendingEnd = undefined;
        this.#localEndWritten(stream);
        return;
      }
    }
    if (q.length === 0 && stream.pendingEnd !== undefined) {
      const trailers = stream.pendingEnd;
      stream.pendingEnd = undefined;
      if (trailers === null) this.#sendFrameHeaderOnly(FrameType.DATA, Flag.END_STREAM, stream.id);
      else {
        stream.trailersSent = trailers;
        this.#sendBlock(stream.id, trailers, true);
      }
      this.#localEndWritten(stream);
      return;
    }
    stream.sentSome();
  }

  #sendFrameHeaderOnly(type: number, flags: number, streamId: number): void {
    if (type === FrameType.DATA) this.#wroteSincePing = true;
    const b = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
    writeFrameHeader(b, 0, 0, type, flags, streamId);
    this.#send(b);
  }

  /** Our END_STREAM is on the wire: the stream is over (grpc-go resets one the client left open). */
  #localEndWritten(stream: H2Stream): void {
    if (!stream.remoteEnded) this.#send(rstStreamFrame(stream.id, ErrorCode.NO_ERROR));
    this.#forget(stream);
  }

  sendHeaders(stream: H2Stream, block: HeaderBlock, endStream: boolean): void {
    if (endStream) {
      stream.trailersSent = block;
      this.#sendBlock(stream.id, block, true);
      this.#localEndWritten(stream);
      return;
    }
    this.#sendBlock(stream.id, block, false);
  }

  #blockBytes(block: HeaderBlock): Buffer {
    if (this.#pendingTableSize === undefined) return block.bytes;
    const update = tableSizeUpdate(this.#pendingTableSize);
    this.#pendingTableSize = undefined;
    return Buffer.concat([update, block.bytes]);
  }

  #sendBlock(streamId: number, block: HeaderBlock, endStream: boolean): void {
    const bytes = this.#blockBytes(block);
    const out = Buffer.allocUnsafe(headersBytes(bytes, this.#peerMaxFrame));
    writeHeaders(out, 0, streamId, bytes, endStream, this.#peerMaxFrame);
    this.#wroteSincePing = true;
    this.#send(out);
  }

  sendAnswer(stream: H2Stream, headers: HeaderBlock, data: Buffer, trailers: HeaderBlock): boolean {
    const n = data.length;
    if (n > this.#peerMaxFrame || n > stream.sendWindow.available || n > this.#sendWindow.available) return false;
    if (this.socket.writableLength + this.#outBytes > SOCKET_HIGH_WATER) return false;
    const h = this.#blockBytes(headers);
    const t = this.#blockBytes(trailers);
    const max = this.#peerMaxFrame;
    const out = Buffer.allocUnsafe(headersBytes(h, max) + FRAME_HEADER_BYTES + n + headersBytes(t, max));
    let at = writeHeaders(out, 0, stream.id, h, false, max);
    writeFrameHeader(out, at, n, FrameType.DATA, 0, stream.id);
    out.set(data, at + FRAME_HEADER_BYTES);
    at += FRAME_HEADER_BYTES + n;
    writeHeaders(out, at, stream.id, t, true, max);
    stream.sendWindow.consume(n);
    this.#sendWindow.consume(n);
    stream.localEnded = true;
    stream.trailersSent = trailers;
    this.#wroteSincePing = true;
    this.#send(out);
    this.#localEndWritten(stream);
    return true;
  }

  reset(stream: H2Stream, code: number): void {
    this.#send(rstStreamFrame(stream.id, code));
    this.#forget(stream);
  }

  #streamError(streamId: number, code: number): void {
    this.#send(rstStreamFrame(streamId, code));
    const stream = this.#streams.get(streamId);
    if (stream !== undefined) this.#forget(stream);
  }

  #forget(stream: H2Stream): void {
    if (!this.#streams.delete(stream.id)) return;
    this.#blocked.delete(stream);
    this.#queuedData -= stream.queuedBytes;
    stream.markClosed();
    this.#checkUnsent();
    this.#closeIfIdle();
  }

  #closeIfIdle(): void {
    if (this.#streams.size > 0 || this.#destroyed) return;
    if (this.#goawayLastId !== undefined || this.#peerGoaway) this.close();
  }

  #goaway(code: number, debug?: string): void {
    this.#goawayLastId = this.#lastStreamId;
    this.#send(goawayFrame(this.#lastStreamId, code, debug === undefined ? undefined : Buffer.from(debug)));
  }

  #connectionError(err: unknown): void {
    // Stream errors never reach here (they are answered where found, so the frames after
    // them in the same chunk are still read): anything thrown ends the connection.
    const e = err instanceof H2Error ? err : new H2Error(ErrorCode.INTERNAL_ERROR, err instanceof Error ? err.message : String(err));
    this.close(e.code, e.message);
  }

  #send(buf: Buffer): void {
    if (this.#destroyed) return;
    this.#out.push(buf);
    this.#outBytes += buf.length;
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      // A tick, not a microtask: a tick queued now runs once the microtask queue is empty,
      // so answers resolved one after another through promise chains (a stream's
      // keepalives, answered in order) still leave together; a microtask flushed after
      // the first and the client's next requests then came one per packet.
      process.nextTick(this.#flushSoon);
    }
  }

  readonly #flushSoon = (): void => this.#flush();

  #flush(): void {
    this.#flushQueued = false;
    if (this.#out.length === 0 || this.#destroyed) return;
    const out = this.#out;
    const bytes = this.#outBytes;
    this.#out = [];
    this.#outBytes = 0;
    if (this.socket.destroyed || !this.socket.writable) return;
    this.socket.write(out.length === 1 ? out[0]! : Buffer.concat(out, bytes));
    if (!this.#readPaused && this.socket.writableLength > READ_PAUSE_BYTES) {
      this.#readPaused = true;
      this.socket.pause();
    }
    // A socket that took it all frees the mark now; one that did not says so with 'drain'.
    this.#checkUnsent();
  }

  #closeStreams(): void {
    const streams = [...this.#streams.values()];
    this.#streams.clear();
    this.#blocked.clear();
    this.#queuedData = 0;
    for (const s of streams) s.markClosed();
  }

  #teardown(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.#closeStreams();
    const pings = [...this.#pings.values()];
    this.#pings.clear();
    for (const cb of pings) cb(new Error("connection closed"));
    this.#checkUnsent();
    this.onClose?.();
  }
}

/**
 * A decoded list as request headers or trailers; undefined when malformed (§8.3): an
 * upper-case name, a pseudo-header in trailers, after a field, unknown or repeated, a
 * request without :method, :scheme or :path, connection-specific fields.
 */
function toHeaders(list: HeaderList, request: boolean): RequestHeaders | undefined {
  const h: Record<string, string | string[] | undefined> = {};
  let regular = false;
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    const value = list[i + 1]!;
    if (name.length === 0 || name !== name.toLowerCase()) return undefined;
    if (name.charCodeAt(0) === 0x3a) {
      if (!request || regular || !PSEUDO_REQUEST.has(name) || h[name] !== undefined) return undefined;
      h[name] = value;
      continue;
    }
    regular = true;
    if (name === "connection" || name === "keep-alive" || name === "proxy-connection" || name === "transfer-encoding" || name === "upgrade") return undefined;
    if (name === "te" && value !== "trailers") return undefined;
    const prev = h[name];
    if (prev === undefined) h[name] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else h[name] = [prev, value];
  }
  if (request && (h[":method"] === undefined || h[":path"] === undefined || h[":scheme"] === undefined)) return undefined;
  return h;
}
