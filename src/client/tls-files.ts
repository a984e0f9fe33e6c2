// The client TLS files checked before the first request, as etcd's Go client does when it
// builds its transport (pkg/transport TLSInfo.ClientConfig): etcdctl refuses a missing or
// unreadable --ca-file/--cert-file/--key-file even when every endpoint is http://, so a
// script's typo fails at once, with Go's words. The bytes read here go to the transport's
// dial of the same flags (transport.ts keepCheckedTlsFile), so each file is read once.

import { readFile } from "node:fs/promises";
import { ClientError } from "./errors.ts";
import { keepCheckedTlsFile, type TlsFiles } from "./transport.ts";

/** A TLS file etcd's client would refuse; the message is Go's. */
export class TlsFilesError extends ClientError {
  constructor(message: string, cause?: unknown) {
    super("TLS_FILES", message, { cause });
    this.name = "TlsFilesError";
  }
}

/** The file's bytes, kept for the dial; Go's os.ReadFile error text. */
async function read(tls: TlsFiles, path: string): Promise<Buffer> {
  try {
    const data = await readFile(path);
    keepCheckedTlsFile(tls, path, data);
    return data;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const text =
      code === "ENOENT" ? `open ${path}: no such file or directory`
      : code === "EACCES" ? `open ${path}: permission denied`
      : code === "EISDIR" ? `read ${path}: is a directory`
      : `open ${path}: ${err instanceof Error ? err.message : String(err)}`;
    throw new TlsFilesError(text, err);
  }
}

interface PemBlock {
  type: string;
  body: string;
}

/** The PEM blocks of a file, in order (pem.Decode's loop). */
function pemBlocks(data: Buffer): PemBlock[] {
  const out: PemBlock[] = [];
  const re = /-----BEGIN ([^-\r\n]*)-----\r?\n([\s\S]*?)-----END \1-----/g;
  for (const m of data.toString("latin1").matchAll(re)) out.push({ type: m[1] ?? "", body: m[0] });
  return out;
}

/**
 * Throws TlsFilesError where etcdctl's getTransport fails: a certificate without its key
 * (or the reverse), a file it cannot read, no certificate or key PEM block, a key that
 * does not match the certificate, a CA bundle block that is not a certificate. Empty
 * names count as absent, as in etcdctl. An absent CA file or a bundle without PEM blocks
 * is no error (Go's NewCertPool adds nothing).
 */
export async function checkTlsFiles(tls: TlsFiles): Promise<void> {
  const certFile = tls.certFile ?? "";
  const keyFile = tls.keyFile ?? "";
  if (certFile !== "" || keyFile !== "") {
    if (certFile === "" || keyFile === "") {
      throw new TlsFilesError(`KeyFile and CertFile must both be present[key: ${keyFile}, cert: ${certFile}]`);
    }
    const cert = await read(tls, certFile);
    const key = await read(tls, keyFile);
    await checkKeyPair(cert, key);
  }
  const caFile = tls.caFile ?? "";
  if (caFile !== "") {
    const ca = await read(tls, caFile);
    const { X509Certificate } = await import("node:crypto");
    for (const block of pemBlocks(ca)) {
      try {
        new X509Certificate(block.body);
      } catch (err) {
        throw new TlsFilesError("x509: malformed certificate", err);
      }
    }
  }
}

/** Go's tls.X509KeyPair checks, with its messages. */
async function checkKeyPair(cert: Buffer, key: Buffer): Promise<void> {
  const certBlocks = pemBlocks(cert);
  if (certBlocks.length === 0) throw new TlsFilesError("tls: failed to find any PEM data in certificate input");
  const certs = certBlocks.filter((b) => b.type === "CERTIFICATE");
  if (certs.length === 0) {
    if (certBlocks.length === 1 && certBlocks[0]?.type.endsWith("PRIVATE KEY") === true) {
      throw new TlsFilesError("tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched");
    }
    throw new TlsFilesError(
      `tls: failed to find "CERTIFICATE" PEM block in certificate input after skipping PEM blocks of the following types: [${certBlocks.map((b) => b.type).join(" ")}]`,
    );
  }
  const keyBlocks = pemBlocks(key);
  if (keyBlocks.length === 0) throw new TlsFilesError("tls: failed to find any PEM data in key input");
  const keyBlock = keyBlocks.find((b) => b.type === "PRIVATE KEY" || b.type.endsWith(" PRIVATE KEY"));
  if (keyBlock === undefined) {
    if (keyBlocks.length === 1 && keyBlocks[0]?.type === "CERTIFICATE") {
      throw new TlsFilesError("tls: found a certificate rather than a key in the PEM for the private key");
    }
    throw new TlsFilesError(
      `tls: failed to find PEM block with type ending in "PRIVATE KEY" in key input after skipping PEM blocks of the following types: [${keyBlocks.map((b) => b.type).join(" ")}]`,
    );
  }
  const { X509Certificate, createPrivateKey } = await import("node:crypto");
  let leaf: InstanceType<typeof X509Certificate>;
  try {
    leaf = new X509Certificate(certs[0]?.body ?? "");
  } catch (err) {
    throw new TlsFilesError("x509: malformed certificate", err);
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(keyBlock.body);
  } catch (err) {
    throw new TlsFilesError("tls: failed to parse private key", err);
  }
  if (leaf.publicKey.asymmetricKeyType !== privateKey.asymmetricKeyType) throw new TlsFilesError("tls: private key type does not match public key type");
  if (!leaf.checkPrivateKey(privateKey)) throw new TlsFilesError("tls: private key does not match public key");
}
