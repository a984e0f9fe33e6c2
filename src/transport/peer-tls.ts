// Peer certificate checks (spec 5.2 rules 2 and 4, 7.3), made after the TLS chain was
// verified: is the certificate a member presents valid for the address it connects from,
// and does its Common Name match --peer-cert-allowed-cn? Pure apart from DNS, which comes
// through the injected PeerResolver (tests use a fake one). The messages are etcd's:
// - `x509: certificate is valid for 10.0.0.1, not 10.0.0.2` (Go's HostnameError),
// - `tls: "10.0.0.2" does not match any of DNSNames ["a.example.com" "*.b.example.com"]`,
//   with ` (<last lookup error>)` appended when a lookup failed,
// - `CommonName authentication failed`.
import type { X509Certificate } from "node:crypto";
import { promises as dns } from "node:dns";
import { isIP } from "node:net";

export interface PeerResolver {
  /** Forward lookup: every address of `name` (Go's Resolver.LookupHost). */
  lookupHost(name: string): Promise<string[]>;
  /** Reverse lookup: the PTR names of `ip`, possibly with a trailing dot (Resolver.LookupAddr). */
  lookupAddr(ip: string): Promise<string[]>;
}

/** The system resolver: getaddrinfo for names (as /etc/hosts applies), PTR queries for addresses. */
export const systemResolver: PeerResolver = {
  async lookupHost(name) {
    return (await dns.lookup(name, { all: true })).map((a) => a.address);
  },
  async lookupAddr(ip) {
    return dns.reverse(ip);
  },
};

/** What the checks need of a certificate. */
export interface PeerCertNames {
  commonName: string;
  ipAddresses: string[];
  dnsNames: string[];
}

export class PeerCertError extends Error {
  override name = "PeerCertError";
  readonly code: "SAN_IP_MISMATCH" | "SAN_DNS_MISMATCH" | "CN_MISMATCH" | "HOSTNAME_MISMATCH";
  constructor(code: PeerCertError["code"], message: string) {
    super(message);
    this.code = code;
  }
}

/** An IP in Go's canonical text: IPv4-mapped IPv6 as IPv4, IPv6 compressed; else undefined. */
export function canonicalIp(text: string): string | undefined {
  const t = text.replace(/^\[|\]$/g, "");
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(t);
  if (mapped !== null) return mapped[1];
  if (isIP(t) === 4) return t.split(".").map(Number).join(".");
  if (isIP(t) === 6) {
    const h = new URL(`http://[${t}]/`).hostname.slice(1, -1);
    const v4 = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h);
    if (v4 === null) return h;
    const a = parseInt(v4[1]!, 16);
    const b = parseInt(v4[2]!, 16);
    return [a >> 8, a & 0xff, b >> 8, b & 0xff].join(".");
  }
  return undefined;
}

/** Reads CN and SAN entries from a parsed certificate. */
export function peerCertNames(cert: X509Certificate): PeerCertNames {
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject);
  const ipAddresses: string[] = [];
  const dnsNames: string[] = [];
  for (const entry of (cert.subjectAltName ?? "").split(/,\s*/)) {
    if (entry.startsWith("DNS:")) dnsNames.push(entry.slice(4));
    else if (entry.startsWith("IP Address:")) {
      const ip = canonicalIp(entry.slice(11));
      if (ip !== undefined) ipAddresses.push(ip);
    }
  }
  return { commonName: cn?.[1] ?? "", ipAddresses, dnsNames };
}

/** --peer-cert-allowed-cn: throws unless the certificate's CN is exactly `allowedCn` ("" allows all). */
export function checkAllowedCn(cert: PeerCertNames, allowedCn: string): void {
  if (allowedCn !== "" && cert.commonName !== allowedCn) {
    throw new PeerCertError("CN_MISMATCH", "CommonName authentication failed");
  }
}

/**
 * --peer-cert-allowed-hostname / --client-cert-allowed-hostname (etcd: x509's VerifyHostname
 * on the verified certificate): an IP must be one of the IP SANs; a name must match a DNS SAN,
 * case-insensitively, a leading `*.` standing for exactly one label; a certificate without
 * SANs is matched on its Common Name (the legacy rule of the Go etcd 3.4 is built with).
 * "" allows all.
 */
export function checkAllowedHostname(cert: PeerCertNames, hostname: string): void {
  if (hostname === "") return;
  const ip = canonicalIp(hostname);
  if (ip !== undefined) {
    if (cert.ipAddresses.includes(ip)) return;
  } else {
    const want = hostname.toLowerCase().replace(/\.$/, "");
    const names = cert.dnsNames.length > 0 || cert.ipAddresses.length > 0 ? cert.dnsNames : [cert.commonName];
    for (const n of names) if (hostMatches(n.toLowerCase(), want)) return;
  }
  throw new PeerCertError("HOSTNAME_MISMATCH", `x509: certificate is not valid for ${JSON.stringify(hostname)}`);
}

function hostMatches(pattern: string, host: string): boolean {
  if (pattern === host) return true;
  if (!pattern.startsWith("*.")) return false;
  const dot = host.indexOf(".");
  return dot > 0 && host.slice(dot + 1) === pattern.slice(2);
}

const goQuoteList = (names: readonly string[]): string => `[${names.map((n) => JSON.stringify(n)).join(" ")}]`;

/**
 * Checks the SAN entries against the remote IP (etcd's checkCertSAN); throws PeerCertError.
 * A certificate without SAN entries passes (etcd accepts it: the chain was verified).
 * (a) IP SANs: the remote IP must be one of them; then DNS names are not looked at.
 *     With no DNS names, a mismatch is final.
 * (b) DNS names: a forward lookup of the names must give the remote IP; else a reverse
 *     lookup of the remote IP must give a name equal to one of them or under a wildcard
 *     (`*.example.com` matches `a.example.com` and `a.b.example.com`, by suffix as etcd
 *     does); else each name is looked up again, one by one, keeping the last error.
 */
export async function checkCertSan(cert: PeerCertNames, remoteAddress: string, resolver: PeerResolver): Promise<void> {
  if (cert.ipAddresses.length === 0 && cert.dnsNames.length === 0) return;
  const host = canonicalIp(remoteAddress) ?? remoteAddress;
  if (cert.ipAddresses.length > 0) {
    if (cert.ipAddresses.includes(host)) return;
    if (cert.dnsNames.length === 0) {
      throw new PeerCertError("SAN_IP_MISMATCH", `x509: certificate is valid for ${cert.ipAddresses.join(", ")}, not ${host}`);
    }
  }
  const wildcards = cert.dnsNames.filter((n) => n.startsWith("*.")).map((n) => n.slice(1));
  const names = cert.dnsNames.filter((n) => !n.startsWith("*."));
  let lastError: unknown;
  const matchesHost = (addrs: readonly string[]): boolean => addrs.some((a) => (canonicalIp(a) ?? a) === host);

  // 1. Forward lookups of all names at once: the common case, one round trip.
  const forward = await Promise.allSettled(names.map((n) => resolver.lookupHost(n)));
  if (forward.some((r) => r.status === "fulfilled" && matchesHost(r.value))) return;
  // 2. Reverse lookup of the remote IP, matched exactly or under a wildcard.
  try {
    for (const raw of await resolver.lookupAddr(host)) {
      const name = raw.endsWith(".") ? raw.slice(0, -1) : raw;
      if (names.includes(name) || wildcards.some((w) => name.endsWith(w))) return;
    }
  } catch (err) {
    lastError = err;
  }
  // 3. Each name again, one by one (etcd's last step; its error is the one reported).
  for (const n of names) {
    try {
      if (matchesHost(await resolver.lookupHost(n))) return;
    } catch (err) {
      lastError = err;
    }
  }
  const detail = lastError === undefined ? "" : ` (${lastError instanceof Error ? lastError.message : String(lastError)})`;
  throw new PeerCertError("SAN_DNS_MISMATCH", `tls: ${JSON.stringify(host)} does not match any of DNSNames ${goQuoteList(cert.dnsNames)}${detail}`);
}
