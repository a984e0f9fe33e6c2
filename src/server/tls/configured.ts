// Whether a side of a member has TLS at all, decided from the flags alone so that a member
// without TLS does not load server-tls.ts and the modules behind it at start-up.
import type { TlsFlags } from "../config.ts";

/** A certificate is given, or auto TLS makes one: exactly when server-tls.ts prepares that side. */
export function tlsConfigured(flags: Pick<TlsFlags, "certFile" | "autoTls">): boolean {
  return flags.certFile !== "" || flags.autoTls;
}
