// HTTP/1.1 chunked transfer coding (RFC 9112 §7.1) for the message stream's body, written
// straight to the socket once the peer accepted the stream (peer.ts #goRaw).

const CRLF = 0x0d0a;

/**
 * One chunk holding `data`: size in hex, CRLF, the data, CRLF, in one buffer (one socket
 * write). An empty chunk would end the body, so there is none: empty data is refused.
 */
export function httpChunk(data: Uint8Array): Buffer {
  if (data.length === 0) throw new RangeError("Cannot write an empty HTTP chunk: it would end the stream");
  const size = data.length.toString(16);
  const out = Buffer.allocUnsafe(size.length + 2 + data.length + 2);
  let at = out.write(size, 0, "latin1");
  out.writeUInt16BE(CRLF, at);
  at += 2;
  out.set(data, at);
  out.writeUInt16BE(CRLF, at + data.length);
  return out;
}
