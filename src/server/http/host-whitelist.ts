// --host-whitelist (spec 5.2 rule 6; etcd's accessController, CVE-2018-5702): on a
// connection that is not TLS, a non-empty whitelist admits only requests whose Host (port
// removed) is listed exactly; "*" admits all. HTTPS admits any Host. Loopback names are not
// implicit. The check comes before routing, CORS and authentication, as in etcd, so the
// refusal carries none of their headers.
import type { IncomingMessage, ServerResponse } from "node:http";

/** Go's httputil.GetHostname: the Host without its port; the Host itself if it has none. */
export function requestHostname(host: string): string {
  const bracketed = /^\[([^\]]*)\]:[^:]*$/.exec(host);
  if (bracketed !== null) return bracketed[1]!;
  const colon = host.indexOf(":");
  if (colon >= 0 && colon === host.lastIndexOf(":") && !host.startsWith("[")) return host.slice(0, colon);
  return host;
}

export function isHostWhitelisted(whitelist: readonly string[], hostname: string): boolean {
  return whitelist.length === 0 || whitelist.includes("*") || whitelist.includes(hostname);
}

/** etcd's errCVE20185702 text, answered with 421 Misdirected Request. */
export function hostRefusalText(hostname: string): string {
  return `
etcd received your request, but the Host header was unrecognized.

To fix this, choose one of the following options:
- Enable TLS, then any HTTPS request will be allowed.
- Add the hostname you want to use to the whitelist in settings.
  - e.g. etcd --host-whitelist ${JSON.stringify(hostname)}

This requirement has been added to help prevent "DNS Rebinding" attacks (CVE-2018-5702).
`;
}

/**
 * Answers 421 and returns true when the request must be refused; false lets it through.
 * Synchronous and allocation-free when the whitelist is empty (the default).
 */
export function refuseUnlistedHost(req: IncomingMessage, res: ServerResponse, whitelist: readonly string[]): boolean {
  if (whitelist.length === 0) return false;
  if ((req.socket as { encrypted?: boolean }).encrypted === true) return false;
  const hostname = requestHostname(req.headers.host ?? "");
  if (isHostWhitelisted(whitelist, hostname)) return false;
  req.resume();
  res.writeHead(421, { "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff" });
  res.end(hostRefusalText(hostname) + "\n");
  return true;
}
