// Server side TLS for one listener: each accepted TCP connection gets the credentials as
// they are on disk now (credentials.ts), a TLS handshake, and — with client certificate
// authentication — a verdict before any HTTP byte is read:
// - no certificate, a certificate the trusted CA did not sign, or one without the
//   clientAuth extended key usage (OpenSSL's "ssl_client" purpose check): refused with a
//   `bad_certificate` alert, as Go refuses it (spec 5.2 rule 1, 7.2);
// - then the optional `check` (peer links: SAN against the remote IP, allowed CN).
// A cipher suite outside --cipher-suites never gets that far: OpenSSL answers the
// ClientHello with a `handshake_failure` alert itself.
import type { Socket } from "node:net";
import { TLSSocket } from "node:tls";
import type { Logger } from "../logger.ts";
import { AlertDescription, encryptedAlert, plaintextAlert, serverTrafficSecret } from "./alert.ts";
import type { ReloadingCredentials } from "./credentials.ts";
import { HandshakeGate } from "./handshake-gate.ts";

/** Why a verified connection is refused: with a bad_certificate alert, or by closing it. */
export interface Refusal {
  refuse: "bad-certificate" | "close";
  reason: string;
}

export interface TlsAcceptorOptions {
  credentials: ReloadingCredentials;
  /** Require and verify a client certificate (--client-cert-auth, or a trusted CA given). */
  clientCertAuth: boolean;
  /** Checks after the chain is verified; a Refusal closes the connection. */
  check?: (socket: TLSSocket, remoteAddress: string) => Refusal | undefined | Promise<Refusal | undefined>;
  /** Picks the ALPN protocol among the client's (a client listener serving gRPC); undefined refuses. */
  alpn?: (offered: string[]) => string | undefined;
  /** A handshake not finished in time is dropped (default 30 s). */
  handshakeTimeoutMs?: number;
  log: Logger;
}

export interface TlsAcceptor {
  /** Takes a freshly accepted TCP socket (best created paused: `pauseOnConnect`). */
  accept(raw: Socket): void;
  /** Destroys connections still in their handshake. */
  close(): void;
}

/**
 * OpenSSL's verdict on the client's chain (trusted CA, validity, the "ssl_client" purpose
 * that requires the clientAuth extended key usage), as Node's own server reads it to set
 * `authorized` — which it only does when the tls.Server owns the socket. Undefined: valid.
 * Fails closed if the internal call ever disappears.
 */
function verifyError(socket: TLSSocket): string | undefined {
  const handle = (socket as unknown as { _handle?: { verifyError?: () => (Error & { code?: string }) | null } })._handle;
  if (typeof handle?.verifyError !== "function") return "cannot read the certificate verification result";
  if (socket.getPeerX509Certificate() === undefined) return "no client certificate";
  const err = handle.verifyError();
  return err === null ? undefined : (err.code ?? err.message);
}

/** Node sends TLS errors of a socket it has not handed over only to its own listener. */
function releaseControl(socket: TLSSocket): void {
  const release = (socket as unknown as { _releaseControl?: () => boolean })._releaseControl;
  if (typeof release === "function") release.call(socket);
}

function alertFor(socket: TLSSocket, secret: Buffer | undefined): Buffer | undefined {
  const description = AlertDescription.badCertificate;
  const protocol = socket.getProtocol();
  if (protocol === "TLSv1.2" && !socket.isSessionReused()) return plaintextAlert(description);
  if (protocol === "TLSv1.3" && secret !== undefined) {
    return encryptedAlert({ suite: socket.getCipher().standardName, trafficSecret: secret, description });
  }
  return undefined;
}

/**
 * @param onSecure receives each accepted TLS socket, handshake done and verdict given
 */
export function createTlsAcceptor(opts: TlsAcceptorOptions, onSecure: (socket: TLSSocket) => void): TlsAcceptor {
  const pending = new Set<Socket>();
  const { log } = opts;

  async function handshake(raw: Socket, remote: string): Promise<void> {
    const context = await opts.credentials.current();
    if (raw.destroyed) return;
    const gate = opts.clientCertAuth ? new HandshakeGate(raw) : undefined;
    const socket = new TLSSocket(gate ?? raw, {
      isServer: true,
      secureContext: context,
      requestCert: opts.clientCertAuth,
      // Judged below, so that a refusal carries the alert instead of a bare close.
      rejectUnauthorized: false,
      ...(opts.alpn === undefined ? {} : { ALPNCallback: ({ protocols }: { protocols: string[] }) => opts.alpn?.(protocols) }),
    });
    if (gate !== undefined) {
      // A TLS socket over a JS stream has no address of its own: lend it the TCP socket's.
      for (const k of ["remoteAddress", "remotePort", "remoteFamily", "localAddress", "localPort"] as const) {
        Object.defineProperty(socket, k, { value: raw[k], configurable: true });
      }
    }
    socket.setTimeout(opts.handshakeTimeoutMs ?? 30_000, () => socket.destroy());
    let secret: Buffer | undefined;
    if (gate !== undefined) socket.on("keylog", (line: Buffer) => (secret = serverTrafficSecret(line) ?? secret));
    const onError = (err: Error): void => {
      log.warn("rejected connection", { "remote-addr": remote, error: err.message });
      socket.destroy();
    };
    socket.on("error", onError);
    socket.once("secure", () => {
      void (async () => {
        let refusal: Refusal | undefined;
        const invalid = opts.clientCertAuth ? verifyError(socket) : undefined;
        if (invalid !== undefined) {
          refusal = { refuse: "bad-certificate", reason: `client certificate refused: ${invalid}` };
        } else {
          try {
            refusal = await opts.check?.(socket, remote);
          } catch (err) {
            refusal = { refuse: "close", reason: err instanceof Error ? err.message : String(err) };
          }
        }
        if (socket.destroyed) return;
        if (refusal !== undefined) {
          log.warn("rejected connection", { "remote-addr": remote, error: refusal.reason });
          gate?.refuse(refusal.refuse === "bad-certificate" ? alertFor(socket, secret) : undefined);
          socket.destroy();
          return;
        }
        gate?.release();
        pending.delete(raw);
        socket.setTimeout(0);
        socket.off("error", onError);
        socket.removeAllListeners("keylog");
        releaseControl(socket);
        onSecure(socket);
      })();
    });
  }

  return {
    accept(raw) {
      pending.add(raw);
      raw.once("close", () => pending.delete(raw));
      raw.on("error", () => raw.destroy());
      const remote = raw.remoteAddress ?? "";
      handshake(raw, remote).catch((err: unknown) => {
        log.warn("rejected connection", { "remote-addr": remote, error: err instanceof Error ? err.message : String(err) });
        raw.destroy();
      });
    },
    close() {
      for (const raw of pending) raw.destroy();
      pending.clear();
    },
  };
}
