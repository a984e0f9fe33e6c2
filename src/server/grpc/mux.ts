// One client port for both protocols, as etcd's cmux: a connection whose first bytes are
// HTTP/2's client preface goes to the gRPC server, anything else to the HTTP/1.1 stack.
// On TLS the same test runs after the handshake (the acceptor offers ALPN "h2" and
// "http/1.1"; a client that chose h2 sends the preface). The bytes read to decide are put
// back (unshift) before the connection is handed over, so neither side misses any.
import type { Socket } from "node:net";

export const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** What a connection that sent nothing for this long is worth: nothing (node:http's headers timeout). */
export const SNIFF_TIMEOUT_MS = 60_000;

/**
 * The ALPN answer of a client listener. gRPC clients (grpc-go, grpc-js) offer "h2" alone and
 * get it; a client that also offers "http/1.1" (curl, browsers, got) gets HTTP/1.1, because
 * the HTTP handlers speak HTTP/1.1 only (etcd serves them over h2 as well: not done here).
 */
export function chooseAlpn(offered: readonly string[]): string | undefined {
  if (offered.includes("http/1.1")) return "http/1.1";
  if (offered.includes("h2")) return "h2";
  return undefined;
}

/** "grpc" once `head` is the whole preface, "http" at the first byte that differs, else undefined. */
export function classify(head: Buffer): "grpc" | "http" | undefined {
  const n = Math.min(head.length, HTTP2_PREFACE.length);
  if (head.compare(HTTP2_PREFACE, 0, n, 0, n) !== 0) return "http";
  return n === HTTP2_PREFACE.length ? "grpc" : undefined;
}

/** Wraps a connection handler: h2 connections go to `toGrpc`, the rest to `toHttp`. */
export function muxConnections(toHttp: (socket: Socket) => void, toGrpc: (socket: Socket) => void): (socket: Socket) => void {
  return (socket) => {
    let head: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), SNIFF_TIMEOUT_MS);
    timer.unref();
    const cleanup = (): void => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("close", cleanup);
    };
    const onData = (chunk: Buffer): void => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const kind = classify(head);
      if (kind === undefined) return;
      cleanup();
      socket.pause();
      socket.unshift(head);
      if (kind === "grpc") toGrpc(socket);
      else toHttp(socket);
    };
    // Ended inside the preface: neither protocol has anything to answer.
    const onEnd = (): void => {
      cleanup();
      socket.destroy();
    };
    socket.on("data", onData);
    socket.on("end", onEnd);
    socket.on("close", cleanup);
    // Sockets may be accepted paused (TLS); the sniff needs to read.
    socket.resume();
  };
}
