// gRPC's message framing on an HTTP/2 stream (PROTOCOL-HTTP2.md: Length-Prefixed-Message):
// one byte compressed-flag, a 4-byte big-endian length, the protobuf bytes. Also the
// grpc-message percent-encoding and grpc-go's wording for oversized messages.
import { GrpcCode, V3Error, V3Errors } from "../../api/v3-errors.ts";

const PREFIX_BYTES = 5;

/** `payload` with its 5-byte prefix, in one buffer (one DATA write per message). */
export function frameMessage(payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(PREFIX_BYTES + payload.length);
  out[0] = 0;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, PREFIX_BYTES);
  return out;
}

/** Writes the 5-byte prefix into the first bytes of `buf`, which an encoder left free. */
export function prefixInPlace(buf: Buffer): Buffer {
  buf[0] = 0;
  buf.writeUInt32BE(buf.length - PREFIX_BYTES, 1);
  return buf;
}

export const MESSAGE_PREFIX_BYTES = PREFIX_BYTES;

/** How grpc-go begins its answer to a unary request whose message does not decode (code 13). */
export const UNARY_UNMARSHAL_PREFIX = "grpc: error unmarshalling request: ";

/**
 * grpc-go's checks of a whole message's flag byte (rpc_util.go checkRecvPayload). A call
 * whose grpc-encoding names a compressor never gets here (server.ts refuses it at its
 * headers, as etcd, which registers no decompressor), so a set flag is always "identity".
 */
function checkPayloadFormat(flag: number): void {
  if (flag === 0) return;
  if (flag === 1) throw new V3Error(GrpcCode.Internal, "grpc: compressed flag set with identity or empty encoding");
  throw new V3Error(GrpcCode.Internal, `grpc: received unexpected payload format ${flag}`);
}

/**
 * The first message of a unary call's bytes, undefined while it is incomplete: grpc-go
 * serves a unary call as soon as one message is in, and ignores what follows.
 */
export function firstMessage(buf: Buffer, limit: number): Uint8Array | undefined {
  if (buf.length < PREFIX_BYTES) return undefined;
  const size = buf.readUInt32BE(1);
  if (size > limit) throw V3Errors.messageTooLarge(size, limit);
  if (buf.length - PREFIX_BYTES < size) return undefined;
  checkPayloadFormat(buf[0]!);
  return buf.subarray(PREFIX_BYTES, PREFIX_BYTES + size);
}

/**
 * Splits the bytes of a request stream into messages. Chunk boundaries fall anywhere;
 * a message over `limit` is refused as soon as its prefix arrives (nothing is buffered
 * for it); the flag byte is judged once the message is whole, as grpc-go does.
 */
export class MessageReader {
  readonly #limit: number;
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** True when a partial message is buffered (a stream ending now was cut short). */
  get partial(): boolean {
    return this.#pendingBytes > 0;
  }

  /** The complete messages `chunk` finishes; throws a V3Error for a refused message. */
  push(chunk: Buffer): Uint8Array[] {
    let buf: Buffer;
    if (this.#pendingBytes === 0) buf = chunk;
    else {
      this.#pending.push(chunk);
      buf = Buffer.concat(this.#pending, this.#pendingBytes + chunk.length);
      this.#pending = [];
      this.#pendingBytes = 0;
    }
    const out: Uint8Array[] = [];
    let at = 0;
    while (buf.length - at >= PREFIX_BYTES) {
      const flag = buf[at]!;
      const size = buf.readUInt32BE(at + 1);
      if (size > this.#limit) throw V3Errors.messageTooLarge(size, this.#limit);
      if (buf.length - at - PREFIX_BYTES < size) break;
      checkPayloadFormat(flag);
      out.push(buf.subarray(at + PREFIX_BYTES, at + PREFIX_BYTES + size));
      at += PREFIX_BYTES + size;
    }
    if (at < buf.length) {
      // Copied: the chunk's memory is the socket's, and a stream may sit idle for hours.
      const rest = Buffer.from(buf.subarray(at));
      this.#pending.push(rest);
      this.#pendingBytes = rest.length;
    }
    return out;
  }
}

/** grpc-message's percent-encoding: bytes outside printable ASCII, and '%', as %XX. */
export function encodeGrpcMessage(message: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(message)) return message;
  let out = "";
  for (const b of Buffer.from(message, "utf8")) {
    out += b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

export function decodeGrpcMessage(encoded: string): string {
  if (!encoded.includes("%")) return encoded;
  try {
    return decodeURIComponent(encoded);
  } catch {
    return encoded;
  }
}
