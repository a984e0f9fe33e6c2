// Certificates for TLS tests, generated at run time (no key is ever committed): a CA and
// leaf certificates with chosen SANs, Common Name and extended key usages, written as PEM
// files into a temporary directory. Keys are 1024-bit RSA: weak, but ten times faster to
// generate than 2048-bit on a shared 2-core machine, and accepted by OpenSSL's default
// security level. Register `after(() => dir.remove())`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { issueCertificate, type ExtKeyUsage, type IssuedCert } from "../../src/server/tls/issue-cert.ts";

export type { IssuedCert };

export interface CertFiles {
  cert: string;
  key: string;
  pem: IssuedCert;
}

export interface LeafOptions {
  commonName?: string;
  hosts?: readonly string[];
  extKeyUsage?: readonly ExtKeyUsage[];
  /** Default: the directory's CA. */
  issuer?: IssuedCert;
  days?: number;
  notBefore?: Date;
}

export class CertDir {
  readonly path: string;
  readonly ca: CertFiles;
  #n = 0;

  constructor(prefix = "kvctl-certs-") {
    this.path = mkdtempSync(join(tmpdir(), prefix));
    this.ca = this.write("ca", issueCertificate({ commonName: "kvctl test CA", isCa: true, keyBits: 1024 }));
  }

  /** Another CA (for wrong-CA tests). */
  otherCa(name = "other-ca"): CertFiles {
    return this.write(name, issueCertificate({ commonName: name, isCa: true, keyBits: 1024 }));
  }

  /** A leaf certificate signed by `opts.issuer` (default: this directory's CA). */
  leaf(name: string, opts: LeafOptions = {}): CertFiles {
    return this.write(
      name,
      issueCertificate({
        ...(opts.commonName !== undefined ? { commonName: opts.commonName } : {}),
        hosts: opts.hosts ?? [],
        extKeyUsage: opts.extKeyUsage ?? ["serverAuth", "clientAuth"],
        issuer: opts.issuer ?? this.ca.pem,
        keyBits: 1024,
        ...(opts.days !== undefined ? { days: opts.days } : {}),
        ...(opts.notBefore !== undefined ? { notBefore: opts.notBefore } : {}),
      }),
    );
  }

  /** The usual server certificate: 127.0.0.1 and localhost, serverAuth. */
  server(name = "server", hosts: readonly string[] = ["127.0.0.1", "localhost"]): CertFiles {
    return this.leaf(name, { commonName: name, hosts, extKeyUsage: ["serverAuth"] });
  }

  /** A client certificate for `commonName` with clientAuth. */
  client(commonName: string, name = `client-${commonName}`): CertFiles {
    return this.leaf(name, { commonName, extKeyUsage: ["clientAuth"] });
  }

  /** Writes a pair as <name>.pem / <name>-key.pem (unique names: files may be replaced later). */
  write(name: string, pem: IssuedCert): CertFiles {
    const base = join(this.path, `${name}-${this.#n++}`);
    writeFileSync(`${base}.pem`, pem.certPem);
    writeFileSync(`${base}-key.pem`, pem.keyPem, { mode: 0o600 });
    return { cert: `${base}.pem`, key: `${base}-key.pem`, pem };
  }

  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}
