// A fatal TLS alert written by us rather than by OpenSSL. Node verifies client
// certificates in JavaScript after the handshake and then only closes the socket, where
// Go (etcd) refuses the certificate inside the handshake with a `bad_certificate` alert
// (spec 7.2). The handshake gate (handshake-gate.ts) holds back the server's final flight
// so that we can still send that alert as the next record the client reads:
// - TLS 1.2: the server has not sent ChangeCipherSpec yet, so the alert is plaintext;
// - TLS 1.3: the server already switched to its application traffic key, so the alert is
//   encrypted under that key with record sequence number 0 (every record sent under it so
//   far, the session tickets, was held back and is dropped), as Go's server sends it.
// The traffic secret comes from the socket's `keylog` event (RFC 8446 §7.1 key schedule).
import { createCipheriv, createHmac } from "node:crypto";

export const AlertDescription = { handshakeFailure: 40, badCertificate: 42 } as const;
export type AlertDescription = (typeof AlertDescription)[keyof typeof AlertDescription];

const ALERT = 21;
const APPLICATION_DATA = 23;
const FATAL = 2;

/** A TLS 1.2 plaintext fatal alert record. */
export function plaintextAlert(description: AlertDescription): Buffer {
  return Buffer.from([ALERT, 3, 3, 0, 2, FATAL, description]);
}

/** HKDF-Expand-Label(secret, label, "", length) for lengths up to one hash block. */
function expandLabel(hash: "sha256" | "sha384", secret: Buffer, label: string, length: number): Buffer {
  const full = Buffer.from(`tls13 ${label}`, "latin1");
  const info = Buffer.concat([Buffer.from([length >> 8, length & 0xff, full.length]), full, Buffer.from([0])]);
  return createHmac(hash, secret).update(info).update(Buffer.from([1])).digest().subarray(0, length);
}

const TLS13_SUITES: Readonly<Record<string, { cipher: "aes-128-gcm" | "aes-256-gcm" | "chacha20-poly1305"; keyLength: number; hash: "sha256" | "sha384" }>> = {
  TLS_AES_128_GCM_SHA256: { cipher: "aes-128-gcm", keyLength: 16, hash: "sha256" },
  TLS_AES_256_GCM_SHA384: { cipher: "aes-256-gcm", keyLength: 32, hash: "sha384" },
  TLS_CHACHA20_POLY1305_SHA256: { cipher: "chacha20-poly1305", keyLength: 32, hash: "sha256" },
};

/**
 * A TLS 1.3 fatal alert record encrypted under `trafficSecret` at sequence number 0.
 * Returns undefined for a suite it cannot build (the caller then just closes).
 * @param suite the IANA name (`socket.getCipher().standardName`)
 */
export function encryptedAlert(opts: { suite: string; trafficSecret: Buffer; description: AlertDescription }): Buffer | undefined {
  const s = TLS13_SUITES[opts.suite];
  if (s === undefined) return undefined;
  const key = expandLabel(s.hash, opts.trafficSecret, "key", s.keyLength);
  // Sequence number 0: the per-record nonce is the IV itself.
  const nonce = expandLabel(s.hash, opts.trafficSecret, "iv", 12);
  const inner = Buffer.from([FATAL, opts.description, ALERT]);
  const length = inner.length + 16;
  const header = Buffer.from([APPLICATION_DATA, 3, 3, length >> 8, length & 0xff]);
  // One AEAD call shape for the three suites (the typings split them into overloads).
  const cipher = createCipheriv(s.cipher as "aes-256-gcm", key, nonce, { authTagLength: 16 });
  cipher.setAAD(header, { plaintextLength: inner.length });
  const body = Buffer.concat([cipher.update(inner), cipher.final(), cipher.getAuthTag()]);
  return Buffer.concat([header, body]);
}

/** The SERVER_TRAFFIC_SECRET_0 of a keylog line (NSS key log format), or undefined. */
export function serverTrafficSecret(line: Buffer): Buffer | undefined {
  const m = /^SERVER_TRAFFIC_SECRET_0 [0-9a-fA-F]+ ([0-9a-fA-F]+)\s*$/.exec(line.toString("latin1"));
  return m === null ? undefined : Buffer.from(m[1]!, "hex");
}
