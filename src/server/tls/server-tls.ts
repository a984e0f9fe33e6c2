// From the TLS flags of the configuration to what listeners and the peer client use.
// etcd's TLSInfo.ServerConfig / ClientConfig in spirit: TLS 1.2 at least, the cipher
// list of --cipher-suites, a client certificate required when --client-cert-auth is set
// or a trusted CA is given, auto TLS in <data-dir>/fixtures/<client|peer>.
import { join } from "node:path";
import { getCiphers, type ConnectionOptions } from "node:tls";
import type { ServerConfig, TlsFlags } from "../config.ts";
import type { Logger } from "../logger.ts";
import { checkAllowedCn, checkAllowedHostname, checkCertSan, peerCertNames, PeerCertError, systemResolver, type PeerResolver } from "../../transport/peer-tls.ts";
import type { Refusal, TlsAcceptorOptions } from "./acceptor.ts";
import { toOpenSslCiphers } from "./cipher-suites.ts";
import { ReloadingCredentials } from "./credentials.ts";
import { listenHosts, selfCert } from "./self-cert.ts";

/** What listen() needs to serve https:// URLs. */
export type ListenerTls = Omit<TlsAcceptorOptions, "log">;

interface Side {
  credentials: ReloadingCredentials;
  clientCertAuth: boolean;
  /** Auto TLS: nobody can verify this certificate, so peers skip verification. */
  selfSigned: boolean;
}

async function prepareSide(config: ServerConfig, side: "client" | "peer", log: Logger): Promise<Side | undefined> {
  const flags: TlsFlags = side === "client" ? config.clientTls : config.peerTls;
  const urls = side === "client" ? config.listenClientUrls : config.listenPeerUrls;
  let files = { certFile: flags.certFile, keyFile: flags.keyFile };
  let selfSigned = false;
  if (files.certFile === "" && flags.autoTls) {
    files = await selfCert({
      dir: join(config.dataDir, "fixtures", side),
      hosts: listenHosts(urls),
      extKeyUsage: side === "peer" ? ["serverAuth", "clientAuth"] : ["serverAuth"],
      log,
    });
    selfSigned = true;
    if (flags.clientCertAuth) log.warn(`ignoring ${side} client cert auth with auto TLS (as etcd, the generated TLS info replaces it)`);
  } else if (files.certFile !== "" && flags.autoTls) {
    log.warn(`ignoring ${side} auto TLS since certs given`);
  }
  if (files.certFile === "") return undefined;
  const ciphers = toOpenSslCiphers(config.cipherSuites, getCiphers());
  if (ciphers !== undefined && ciphers.unavailable.length > 0) {
    log.warn("cipher suites not available in this OpenSSL build are ignored", { "cipher-suites": ciphers.unavailable });
  }
  const credentials = new ReloadingCredentials({
    files: {
      ...files,
      // As etcd replaces TLSInfo with the self-signed one, auto TLS drops the trusted CA.
      trustedCaFile: selfSigned ? "" : flags.trustedCaFile,
      crlFile: selfSigned ? "" : flags.crlFile,
      flagPrefix: side === "client" ? "" : "peer-",
    },
    ciphers,
    log,
  });
  await credentials.init();
  // etcd: RequireAndVerifyClientCert when client cert auth is on or a trusted CA is given.
  const clientCertAuth = !selfSigned && (flags.clientCertAuth || flags.trustedCaFile !== "");
  return { credentials, clientCertAuth, selfSigned };
}

/** TLS for the https:// client URLs; undefined when no certificate is configured. */
export async function clientListenerTls(config: ServerConfig, log: Logger): Promise<ListenerTls | undefined> {
  const side = await prepareSide(config, "client", log);
  if (side === undefined) return undefined;
  const allowed = config.clientTls.allowedHostname;
  if (allowed === "") return { credentials: side.credentials, clientCertAuth: side.clientCertAuth };
  return { credentials: side.credentials, clientCertAuth: side.clientCertAuth, check: clientHostnameCheck(allowed) };
}

/** --client-cert-allowed-hostname: a verified client certificate not valid for it is refused (alert). */
export function clientHostnameCheck(allowedHostname: string): NonNullable<ListenerTls["check"]> {
  return async (socket): Promise<Refusal | undefined> => {
    const x509 = socket.getPeerX509Certificate();
    if (x509 === undefined) return undefined;
    try {
      checkAllowedHostname(peerCertNames(x509), allowedHostname);
    } catch (err) {
      return { refuse: "bad-certificate", reason: (err as Error).message };
    }
    return undefined;
  };
}

export interface PeerTls {
  /** For listen(config.listenPeerUrls, handler, log, { traffic: "peer", tls: peerTls.listener }). */
  listener: ListenerTls;
  /**
   * node:tls / node:https options for one new connection to another member: the
   * certificate as it is on disk now (reloaded like the listener's), the trusted CA,
   * TLS 1.2+, the cipher list. With auto TLS, verification is skipped (rule 7).
   */
  clientOptions(): Promise<ConnectionOptions>;
}

/** The peer side's checks after the chain was verified: allowed CN (alert), then SAN (close). */
export function peerCheck(opts: { allowedCn: string; allowedHostname?: string; resolver: PeerResolver; skipSanCheck?: boolean }): NonNullable<ListenerTls["check"]> {
  return async (socket, remoteAddress): Promise<Refusal | undefined> => {
    const x509 = socket.getPeerX509Certificate();
    if (x509 === undefined) return undefined;
    const names = peerCertNames(x509);
    try {
      checkAllowedCn(names, opts.allowedCn);
      checkAllowedHostname(names, opts.allowedHostname ?? "");
    } catch (err) {
      return { refuse: "bad-certificate", reason: (err as Error).message };
    }
    // --experimental-peer-skip-client-san-verification: etcd's listener then skips checkSAN.
    if (opts.skipSanCheck === true) return undefined;
    try {
      await checkCertSan(names, remoteAddress, opts.resolver);
    } catch (err) {
      if (err instanceof PeerCertError) return { refuse: "close", reason: err.message };
      throw err;
    }
    return undefined;
  };
}

/** TLS for the peer port and for dialling other members; undefined when peer TLS is off. */
export async function preparePeerTls(config: ServerConfig, log: Logger, resolver: PeerResolver = systemResolver): Promise<PeerTls | undefined> {
  const side = await prepareSide(config, "peer", log);
  if (side === undefined) return undefined;
  const { credentials, selfSigned } = side;
  return {
    listener: {
      credentials,
      clientCertAuth: side.clientCertAuth,
      // etcd checks the SAN of every verified peer certificate; without client cert
      // auth there is no certificate and nothing to check.
      check: peerCheck({ allowedCn: config.peerTls.allowedCn, allowedHostname: config.peerTls.allowedHostname, resolver, skipSanCheck: config.peerTls.skipClientSanVerify }),
    },
    async clientOptions() {
      return { secureContext: await credentials.current(), rejectUnauthorized: !selfSigned };
    },
  };
}
