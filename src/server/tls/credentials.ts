// The certificate, key and CA files of one side (client or peer), re-read for every new
// connection as etcd reads them on every handshake (its GetCertificate): an expired
// certificate is replaced by overwriting the files, without a restart. Reading happens
// before the TLS socket exists, so it works whatever the client sends (with or without
// SNI, for certificates that list only IP addresses).
//
// Invariants:
// - the files are read afresh for each connection; a SecureContext is rebuilt only when
//   their bytes changed, so an unchanged pair costs three small reads;
// - the first load must succeed (a startup error names the flag); a later load that fails
//   (file half-written, key and certificate from different pairs) keeps serving the last
//   good pair and logs a warning: a rotation in progress never refuses clients.
import { readFile } from "node:fs/promises";
import { createSecureContext, type SecureContext, type SecureContextOptions } from "node:tls";
import type { Logger } from "../logger.ts";
import type { OpenSslCiphers } from "./cipher-suites.ts";

export interface CredentialFiles {
  certFile: string;
  keyFile: string;
  /** "" = none (the system's roots then verify client certificates). */
  trustedCaFile: string;
  /** "" = none. */
  crlFile: string;
  /** The flag prefix for messages: "" (client side) or "peer-". */
  flagPrefix: "" | "peer-";
}

export class CredentialsError extends Error {
  override name = "CredentialsError";
}

interface Loaded {
  bytes: Buffer[];
  context: SecureContext;
}

export class ReloadingCredentials {
  readonly files: CredentialFiles;
  #ciphers: OpenSslCiphers | undefined;
  #log: Logger;
  #last: Loaded | undefined;

  constructor(opts: { files: CredentialFiles; ciphers: OpenSslCiphers | undefined; log: Logger }) {
    this.files = opts.files;
    this.#ciphers = opts.ciphers;
    this.#log = opts.log;
  }

  /** Loads the files once; throws a CredentialsError naming the flag (startup). */
  async init(): Promise<void> {
    this.#last = await this.#load();
  }

  /** The context for a new connection: the files as they are now, or the last good pair. */
  async current(): Promise<SecureContext> {
    try {
      this.#last = await this.#load();
    } catch (err) {
      if (this.#last === undefined) throw err;
      this.#log.warn("failed to reload certificate; serving the previous one", {
        "cert-file": this.files.certFile,
        "key-file": this.files.keyFile,
        error: err instanceof Error ? err.message : String(err),
      });
    }
    return this.#last.context;
  }

  async #load(): Promise<Loaded> {
    const f = this.files;
    const p = f.flagPrefix;
    const read = async (flag: string, path: string): Promise<Buffer> => {
      try {
        return await readFile(path);
      } catch (err) {
        throw new CredentialsError(`Cannot read --${flag} ${path}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file or directory" : String(err)}`);
      }
    };
    const bytes = await Promise.all([
      read(`${p}cert-file`, f.certFile),
      read(`${p}key-file`, f.keyFile),
      f.trustedCaFile === "" ? Buffer.alloc(0) : read(`${p}trusted-ca-file`, f.trustedCaFile),
      f.crlFile === "" ? Buffer.alloc(0) : read(`${p}crl-file`, f.crlFile),
    ]);
    const last = this.#last;
    if (last !== undefined && bytes.every((b, i) => b.equals(last.bytes[i]!))) return last;
    const [cert, key, ca, crl] = bytes as [Buffer, Buffer, Buffer, Buffer];
    // An encrypted key would make OpenSSL ask for a passphrase; etcd takes none either.
    if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(key.toString("latin1"))) {
      throw new CredentialsError(`Cannot load --${p}key-file ${f.keyFile}: the key is encrypted; keys must be unencrypted`);
    }
    const options: SecureContextOptions = {
      cert,
      key,
      minVersion: this.#ciphers?.minVersion ?? "TLSv1.2",
      ...(ca.length > 0 ? { ca } : {}),
      ...(crl.length > 0 ? { crl } : {}),
      ...(this.#ciphers !== undefined ? { ciphers: this.#ciphers.ciphers, honorCipherOrder: true } : {}),
    };
    try {
      return { bytes, context: createSecureContext(options) };
    } catch (err) {
      throw new CredentialsError(`Cannot load --${p}cert-file ${f.certFile} and --${p}key-file ${f.keyFile}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
