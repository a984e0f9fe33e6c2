// --auto-tls and --peer-auto-tls: a self-signed certificate and key kept in
// <data-dir>/fixtures/client (or /peer), as etcd's transport.SelfCert keeps them: created
// on the first start, reused as they are on every later start (so clients that pinned it
// keep working), valid for the hosts and IPs the member listens on. Clients cannot verify
// it (rule 7 of the TLS spec): they must skip verification.
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../logger.ts";
import type { ExtKeyUsage } from "./issue-cert.ts";

export interface SelfCertFiles {
  certFile: string;
  keyFile: string;
}

/** The SAN hosts of listen URLs: `https://[::1]:2379` -> `::1`. */
export function listenHosts(urls: readonly URL[]): string[] {
  return [...new Set(urls.map((u) => u.hostname.replace(/^\[|\]$/g, "")))];
}

/**
 * Returns `<dir>/cert.pem` and `<dir>/key.pem`, creating them when either is missing.
 * @param opts.extKeyUsage serverAuth for the client port; peers add clientAuth, since a
 *   member presents the same certificate when it dials the others
 */
export async function selfCert(opts: { dir: string; hosts: readonly string[]; extKeyUsage: readonly ExtKeyUsage[]; log: Logger }): Promise<SelfCertFiles> {
  const certFile = join(opts.dir, "cert.pem");
  const keyFile = join(opts.dir, "key.pem");
  await mkdir(opts.dir, { recursive: true, mode: 0o700 });
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile };
  // Loaded only here: node-forge costs every member 25 ms of startup, and only auto TLS needs it.
  const { issueCertificate } = await import("./issue-cert.ts");
  const { certPem, keyPem } = issueCertificate({ organization: "etcd", hosts: opts.hosts, extKeyUsage: opts.extKeyUsage });
  // Key first, with 0600: a crash between the two writes leaves no certificate without key.
  await writeFile(keyFile, keyPem, { mode: 0o600 });
  await writeFile(certFile, certPem, { mode: 0o644 });
  opts.log.info("created self-signed certificate", { "cert-file": certFile, "key-file": keyFile, hosts: opts.hosts });
  return { certFile, keyFile };
}
