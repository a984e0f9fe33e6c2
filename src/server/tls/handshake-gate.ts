// A stream between a TCP socket and the server's TLS engine that can hold back the
// server's last handshake flight until the client's certificate has been judged. Node
// judges client certificates only after OpenSSL finished the handshake; holding that
// flight (TLS 1.2: ChangeCipherSpec + Finished; TLS 1.3: the session tickets) lets a
// refused client read a `bad_certificate` alert in its place (alert.ts), as from etcd.
//
// When to hold: once the client sends its second flight (any record but a ClientHello,
// ChangeCipherSpec or alert) after the server has answered the latest ClientHello. A
// HelloRetryRequest round (a second ClientHello) therefore never holds the server's reply.
//
// Invariants: bytes from the client pass through unchanged and in order; bytes from the
// server pass through unchanged until held; held bytes are either all written, in order
// (release) or all dropped (refuse); after refuse nothing the engine writes reaches the
// client except the alert.
import { Duplex } from "node:stream";
import type { Socket } from "node:net";

const HANDSHAKE = 22;
const CHANGE_CIPHER_SPEC = 20;
const ALERT = 21;
const CLIENT_HELLO = 1;

type State = "pass" | "hold" | "released" | "refused";

export class HandshakeGate extends Duplex {
  readonly raw: Socket;
  #state: State = "pass";
  #held: Buffer[] = [];
  #serverAnswered = false;
  /** The current inbound record's first bytes (5 header bytes + 1 body byte). */
  #header: number[] = [];
  /** Bytes left to skip in the current inbound record. */
  #skip = 0;

  constructor(raw: Socket) {
    super({ allowHalfOpen: false });
    this.raw = raw;
    raw.on("data", (chunk: Buffer) => {
      if (this.#state === "pass") this.#inspect(chunk);
      if (!this.push(chunk)) raw.pause();
    });
    raw.on("end", () => this.push(null));
    raw.on("error", (err) => this.destroy(err));
    raw.on("close", () => this.destroy());
  }

  /** Lets the held flight and everything after it through. */
  release(): void {
    if (this.#state === "refused" || this.#state === "released") return;
    this.#state = "released";
    const held = this.#held;
    this.#held = [];
    for (const b of held) this.raw.write(b);
  }

  /** Drops the held flight, sends `alert` (if any) as the last bytes, and closes. */
  refuse(alert: Buffer | undefined): void {
    if (this.#state === "refused") return;
    this.#state = "refused";
    this.#held = [];
    if (alert === undefined || this.raw.destroyed) {
      this.raw.destroy();
      return;
    }
    this.raw.end(alert);
    // The client normally closes on the alert; do not wait for it for long.
    setTimeout(() => this.raw.destroy(), 2000).unref();
  }

  override _read(): void {
    this.raw.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    switch (this.#state) {
      case "refused":
        cb();
        return;
      case "hold":
        this.#held.push(chunk);
        cb();
        return;
      case "pass":
        this.#serverAnswered = true;
        this.raw.write(chunk, cb);
        return;
      case "released":
        this.raw.write(chunk, cb);
    }
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (this.#state !== "refused") this.raw.end();
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    // A refused connection closes itself once the alert is out.
    if (this.#state !== "refused") this.raw.destroy();
    cb(err);
  }

  #inspect(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length && this.#state === "pass") {
      if (this.#skip > 0) {
        const n = Math.min(this.#skip, chunk.length - i);
        i += n;
        this.#skip -= n;
        continue;
      }
      this.#header.push(chunk[i++]!);
      if (this.#header.length < 6) continue;
      const [type, , , hi, lo, first] = this.#header as [number, number, number, number, number, number];
      this.#header = [];
      this.#skip = Math.max(0, ((hi << 8) | lo) - 1);
      this.#onRecord(type, first);
    }
  }

  #onRecord(type: number, first: number): void {
    if (type === HANDSHAKE && first === CLIENT_HELLO) {
      this.#serverAnswered = false;
      return;
    }
    if (type === CHANGE_CIPHER_SPEC || type === ALERT) return;
    if (this.#serverAnswered) this.#state = "hold";
  }
}
