// Certificate issuing: --auto-tls's self-signed certificates, and the test suite's CA,
// server, client and peer certificates. node-forge builds and signs the X.509 structure;
// keys come from node:crypto (RSA: forge signs RSA only). Parsing and checking
// certificates is node:crypto's X509Certificate everywhere else, never forge.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import forge from "node-forge";

export type ExtKeyUsage = "serverAuth" | "clientAuth";

export interface IssueOptions {
  /** Subject common name; omitted: no CN (etcd's self-signed certificates have none). */
  commonName?: string;
  /** Subject organization (etcd's self-signed certificates say "etcd"). */
  organization?: string;
  /** DNS names and IP addresses for the SAN extension, in order; a literal IP is an IP SAN. */
  hosts?: readonly string[];
  extKeyUsage?: readonly ExtKeyUsage[];
  /** A CA certificate (basicConstraints CA:TRUE, keyCertSign). */
  isCa?: boolean;
  /** Signs with this CA; omitted: self-signed. */
  issuer?: IssuedCert;
  /** Validity start and length; defaults: now - 1 minute, 365 days. */
  notBefore?: Date;
  days?: number;
  /** RSA modulus length (default 2048; the tests use smaller keys for speed). */
  keyBits?: number;
}

export interface IssuedCert {
  certPem: string;
  /** PKCS#8 PEM, unencrypted. */
  keyPem: string;
}

/** Issues a certificate and its fresh key. Synchronous: RSA generation takes ~50-200 ms. */
export function issueCertificate(opts: IssueOptions = {}): IssuedCert {
  const { publicKey, privateKey } = generateKeyPairSync("rsa", {
    modulusLength: opts.keyBits ?? 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
  // A positive 128-bit serial, as Go's SelfCert draws it.
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  cert.serialNumber = serial.toString("hex");
  const notBefore = opts.notBefore ?? new Date(Date.now() - 60_000);
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = new Date(notBefore.getTime() + (opts.days ?? 365) * 86_400_000);
  const subject: forge.pki.CertificateField[] = [];
  if (opts.organization !== undefined) subject.push({ name: "organizationName", value: opts.organization });
  if (opts.commonName !== undefined) subject.push({ name: "commonName", value: opts.commonName });
  cert.setSubject(subject);
  const exts: object[] = [
    { name: "basicConstraints", cA: opts.isCa === true, critical: true },
    opts.isCa === true
      ? { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true }
      : { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ];
  const eku = opts.extKeyUsage ?? [];
  if (eku.length > 0) exts.push({ name: "extKeyUsage", serverAuth: eku.includes("serverAuth"), clientAuth: eku.includes("clientAuth") });
  const hosts = opts.hosts ?? [];
  if (hosts.length > 0) {
    exts.push({
      name: "subjectAltName",
      altNames: hosts.map((h) => (isIP(h) !== 0 ? { type: 7, ip: h } : { type: 2, value: h })),
    });
  }
  let signer = forge.pki.privateKeyFromPem(privateKey);
  if (opts.issuer !== undefined) {
    const ca = forge.pki.certificateFromPem(opts.issuer.certPem);
    cert.setIssuer(ca.subject.attributes);
    exts.push({ name: "authorityKeyIdentifier", keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() });
    signer = forge.pki.privateKeyFromPem(opts.issuer.keyPem);
  } else {
    cert.setIssuer(subject);
  }
  cert.setExtensions(exts);
  cert.sign(signer, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: privateKey };
}
