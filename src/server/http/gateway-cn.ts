// The v3 gateway never takes a user from a client certificate (spec 5.1 rule 4). etcd
// makes that explicit in its accessController: with --client-cert-auth on and v3
// authentication enabled, a /v3/ request over TLS whose verified certificate has a Common
// Name is refused with 400, so nobody believes the CN authenticated them.
// The router calls it right after the host whitelist check.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";

export const GATEWAY_CN_MESSAGE = "CommonName of client sending a request against gateway will be ignored and not used as expected";

/** Answers 400 and returns true when etcd would refuse this gateway request; false otherwise. */
export function refuseGatewayCommonName(req: IncomingMessage, res: ServerResponse, opts: { clientCertAuth: boolean; v3AuthEnabled: boolean }): boolean {
  if (!opts.clientCertAuth || !opts.v3AuthEnabled) return false;
  const path = req.url ?? "";
  if (!path.startsWith("/v3/") && !path.startsWith("/v3beta/")) return false;
  const socket = req.socket as Partial<TLSSocket>;
  if (socket.encrypted !== true || typeof socket.getPeerX509Certificate !== "function") return false;
  const cert = socket.getPeerX509Certificate();
  if (cert === undefined || !/(?:^|\n)CN=[^\n]/.test(cert.subject)) return false;
  req.resume();
  res.writeHead(400, { "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff" });
  res.end(GATEWAY_CN_MESSAGE + "\n");
  return true;
}
