// --cipher-suites takes Go's cipher suite names (crypto/tls), as etcd does; Node speaks
// OpenSSL. This table maps one to the other. As in Go, the list restricts TLS 1.2 only:
// the three TLS 1.3 suites stay enabled whatever the list says (Go ignores TLS 1.3 names
// in Config.CipherSuites; etcd 3.4 accepts them without effect). No node:tls here: config.ts
// validates the names on every start, and a member without TLS does not load node:tls.

/** Go name -> OpenSSL name; null for TLS 1.3 suites (accepted, always on). */
const GO_TO_OPENSSL: Readonly<Record<string, string | null>> = {
  // tls.CipherSuites()
  TLS_RSA_WITH_AES_128_CBC_SHA: "AES128-SHA",
  TLS_RSA_WITH_AES_256_CBC_SHA: "AES256-SHA",
  TLS_RSA_WITH_AES_128_GCM_SHA256: "AES128-GCM-SHA256",
  TLS_RSA_WITH_AES_256_GCM_SHA384: "AES256-GCM-SHA384",
  TLS_AES_128_GCM_SHA256: null,
  TLS_AES_256_GCM_SHA384: null,
  TLS_CHACHA20_POLY1305_SHA256: null,
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: "ECDHE-ECDSA-AES128-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: "ECDHE-ECDSA-AES256-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: "ECDHE-RSA-AES128-SHA",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: "ECDHE-RSA-AES256-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: "ECDHE-ECDSA-AES128-GCM-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: "ECDHE-ECDSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: "ECDHE-RSA-AES128-GCM-SHA256",
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: "ECDHE-RSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
  // tls.InsecureCipherSuites()
  TLS_RSA_WITH_RC4_128_SHA: "RC4-SHA",
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: "DES-CBC3-SHA",
  TLS_RSA_WITH_AES_128_CBC_SHA256: "AES128-SHA256",
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: "ECDHE-ECDSA-RC4-SHA",
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: "ECDHE-RSA-RC4-SHA",
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: "ECDHE-RSA-DES-CBC3-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: "ECDHE-ECDSA-AES128-SHA256",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: "ECDHE-RSA-AES128-SHA256",
  // etcd's extra spellings (tlsutil.GetCipherSuite)
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: "ECDHE-ECDSA-CHACHA20-POLY1305",
};

/** The TLS 1.3 suites Go always enables, in OpenSSL's spelling. */
export const TLS13_SUITES = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

export function isGoCipherSuite(name: string): boolean {
  return Object.hasOwn(GO_TO_OPENSSL, name);
}

/** Every accepted Go name, sorted (for the error message). */
export function goCipherSuiteNames(): string[] {
  return Object.keys(GO_TO_OPENSSL).sort();
}

export interface OpenSslCiphers {
  /** The `ciphers` option of node:tls: the TLS 1.2 list, then the TLS 1.3 suites. */
  ciphers: string;
  /**
   * "TLSv1.3" when no listed suite exists for TLS 1.2 in this OpenSSL (only TLS 1.3 names,
   * or only RC4/3DES, which OpenSSL 3 lacks): TLS 1.2 clients must then fail, as with Go.
   */
  minVersion: "TLSv1.2" | "TLSv1.3";
  /** Listed suites this OpenSSL build does not have (logged; Go would still offer them). */
  unavailable: string[];
}

/**
 * Maps validated Go names (see isGoCipherSuite) to node:tls options; undefined for an
 * empty list (the platform default). Order is kept: it is the server's preference.
 * `availableCiphers`: this OpenSSL build's ciphers (node:tls getCiphers()).
 * @throws Error on a name that is not a Go cipher suite (config validation comes first).
 */
export function toOpenSslCiphers(goNames: readonly string[], availableCiphers: readonly string[]): OpenSslCiphers | undefined {
  if (goNames.length === 0) return undefined;
  const available = new Set(availableCiphers.map((c) => c.toUpperCase()));
  const tls12: string[] = [];
  const unavailable: string[] = [];
  for (const name of goNames) {
    const ossl = GO_TO_OPENSSL[name];
    if (ossl === undefined) throw new Error(`unexpected TLS cipher suite ${JSON.stringify(name)}`);
    if (ossl === null) continue;
    if (!available.has(ossl)) unavailable.push(name);
    else if (!tls12.includes(ossl)) tls12.push(ossl);
  }
  return {
    ciphers: [...tls12, TLS13_SUITES].join(":"),
    minVersion: tls12.length === 0 ? "TLSv1.3" : "TLSv1.2",
    unavailable,
  };
}
