// HTTP/2 framing (RFC 9113 §4, §6): the 9-byte frame header, the constants, the
// encoders of the frames a server sends, and a parser that cuts a byte stream into
// frames. Pure: no socket, no clock.

export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
export const FRAME_HEADER_BYTES = 9;

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** RFC 9113 §7. */
export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

export const DEFAULT_WINDOW = 65_535;
export const DEFAULT_MAX_FRAME = 16_384;
export const MAX_FRAME_LIMIT = 2 ** 24 - 1;
export const MAX_WINDOW = 2 ** 31 - 1;

/** A protocol violation: the connection (stream 0) or one stream ends with `code`. */
export class H2Error extends Error {
  readonly code: number;
  /** 0: a connection error (GOAWAY); else the stream to reset. */
  readonly streamId: number;
  constructor(code: number, message: string, streamId = 0) {
    super(message);
    this.code = code;
    this.streamId = streamId;
  }
}

export function writeFrameHeader(buf: Buffer, at: number, length: number, type: number, flags: number, streamId: number): void {
  buf[at] = length >>> 16;
  buf[at + 1] = (length >>> 8) & 0xff;
  buf[at + 2] = length & 0xff;
  buf[at + 3] = type;
  buf[at + 4] = flags;
  buf.writeUInt32BE(streamId, at + 5);
}

export function frame(type: number, flags: number, streamId: number, payload?: Uint8Array): Buffer {
  const len = payload?.length ?? 0;
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + len);
  writeFrameHeader(out, 0, len, type, flags, streamId);
  if (payload !== undefined) out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

export function settingsFrame(values: ReadonlyArray<readonly [number, number]>): Buffer {
  const p = Buffer.allocUnsafe(6 * values.length);
  values.forEach(([id, v], i) => {
    p.writeUInt16BE(id, 6 * i);
    p.writeUInt32BE(v, 6 * i + 2);
  });
  return frame(FrameType.SETTINGS, 0, 0, p);
}

export const SETTINGS_ACK = frame(FrameType.SETTINGS, Flag.ACK, 0);

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 4);
  writeFrameHeader(out, 0, 4, FrameType.WINDOW_UPDATE, 0, streamId);
  out.writeUInt32BE(increment, FRAME_HEADER_BYTES);
  return out;
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 4);
  writeFrameHeader(out, 0, 4, FrameType.RST_STREAM, 0, streamId);
  out.writeUInt32BE(code, FRAME_HEADER_BYTES);
  return out;
}

export function pingFrame(payload: Uint8Array, ack: boolean): Buffer {
  return frame(FrameType.PING, ack ? Flag.ACK : 0, 0, payload);
}

export function goawayFrame(lastStreamId: number, code: number, debug?: Uint8Array): Buffer {
  const p = Buffer.allocUnsafe(8 + (debug?.length ?? 0));
  p.writeUInt32BE(lastStreamId, 0);
  p.writeUInt32BE(code, 4);
  if (debug !== undefined) p.set(debug, 8);
  return frame(FrameType.GOAWAY, 0, 0, p);
}

/**
 * A header block as HEADERS (+ CONTINUATION frames when it is over `maxFrame`), written
 * into `out` at `at`; returns the end offset. `out` must hold `headersBytes(block, maxFrame)`.
 */
export function writeHeaders(out: Buffer, at: number, streamId: number, block: Uint8Array, endStream: boolean, maxFrame: number): number {
  let off = 0;
  let type: number = FrameType.HEADERS;
  do {
    const n = Math.min(maxFrame, block.length - off);
    const last = off + n === block.length;
    let flags = last ? Flag.END_HEADERS : 0;
    if (type === FrameType.HEADERS && endStream) flags |= Flag.END_STREAM;
    writeFrameHeader(out, at, n, type, flags, streamId);
    out.set(block.subarray(off, off + n), at + FRAME_HEADER_BYTES);
    at += FRAME_HEADER_BYTES + n;
    off += n;
    type = FrameType.CONTINUATION;
  } while (off < block.length);
  return at;
}

export function headersBytes(block: Uint8Array, maxFrame: number): number {
  const frames = Math.max(1, Math.ceil(block.length / maxFrame));
  return frames * FRAME_HEADER_BYTES + block.length;
}

export interface RawFrame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/**
 * Cuts bytes into frames. A frame longer than `maxFrame` (our SETTINGS_MAX_FRAME_SIZE) is
 * a FRAME_SIZE_ERROR of the connection (§4.2), found from its header alone.
 */
export class FrameParser {
  #pending: Buffer | undefined;
  maxFrame = DEFAULT_MAX_FRAME;

  /** The whole frames `chunk` completes, in order; the payloads are views of the input. */
  push(chunk: Buffer, onFrame: (type: number, flags: number, streamId: number, payload: Buffer) => void): void {
    let buf = chunk;
    if (this.#pending !== undefined) {
      buf = Buffer.concat([this.#pending, chunk]);
      this.#pending = undefined;
    }
    let at = 0;
    while (buf.length - at >= FRAME_HEADER_BYTES) {
      const len = (buf[at]! << 16) | (buf[at + 1]! << 8) | buf[at + 2]!;
      if (len > this.maxFrame) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, `frame of ${len} bytes over SETTINGS_MAX_FRAME_SIZE ${this.maxFrame}`);
      if (buf.length - at - FRAME_HEADER_BYTES < len) break;
      const type = buf[at + 3]!;
      const flags = buf[at + 4]!;
      const streamId = buf.readUInt32BE(at + 5) & 0x7fffffff;
      const start = at + FRAME_HEADER_BYTES;
      at = start + len;
      onFrame(type, flags, streamId, buf.subarray(start, at));
    }
    if (at < buf.length) this.#pending = Buffer.from(buf.subarray(at));
  }
}

/**
 * The payload of a DATA or HEADERS frame without its padding (§6.1, §6.2); the pad length
 * reaching the payload's end is a PROTOCOL_ERROR of the connection.
 */
export function unpad(flags: number, payload: Buffer): Buffer {
  if ((flags & Flag.PADDED) === 0) return payload;
  if (payload.length < 1) throw new H2Error(ErrorCode.FRAME_SIZE_ERROR, "padded frame without a pad length");
  const pad = payload[0]!;
  if (pad >= payload.length) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "padding as long as the payload");
  return payload.subarray(1, payload.length - pad);
}
