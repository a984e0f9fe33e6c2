// The v3 JSON gateway's route table (etcd 3.4's grpc-gateway): POST only; `/v3beta/` is an
// alias of `/v3/`; `/v3alpha/` is not served. The gateway's own answers for unknown routes
// and wrong methods ("Not Found", "Method Not Allowed") differ from the v2 mux's, and
// clients probing for v3 rely on them, so routing is exact even before every route is served.
import type { IncomingMessage } from "node:http";
import { HttpTextError } from "./respond.ts";

export const V3_ROUTES: ReadonlySet<string> = new Set([
  "kv/range", "kv/put", "kv/deleterange", "kv/txn", "kv/compaction",
  "watch",
  "lease/grant", "lease/revoke", "lease/keepalive", "lease/timetolive", "lease/leases",
  "kv/lease/revoke", "kv/lease/timetolive", "kv/lease/leases",
  "cluster/member/add", "cluster/member/remove", "cluster/member/update", "cluster/member/list", "cluster/member/promote",
  "maintenance/alarm", "maintenance/status", "maintenance/defragment", "maintenance/hash", "maintenance/hashkv",
  "maintenance/snapshot", "maintenance/transfer-leadership",
  "auth/enable", "auth/disable", "auth/authenticate",
  "auth/user/add", "auth/user/get", "auth/user/list", "auth/user/delete", "auth/user/changepw", "auth/user/grant", "auth/user/revoke",
  "auth/role/add", "auth/role/get", "auth/role/list", "auth/role/delete", "auth/role/grant", "auth/role/revoke",
]);

/** The gateway route of a path under /v3/ or /v3beta/, or undefined when it is not a v3 path. */
export function v3Route(path: string): string | undefined {
  if (path.startsWith("/v3/")) return path.slice(4);
  if (path.startsWith("/v3beta/")) return path.slice(8);
  return undefined;
}

/** A v3 gateway error body: {error, message, code} with the gRPC code. */
export class GatewayError extends Error {
  override name = "GatewayError";
  readonly grpcCode: number;
  readonly status: number;
  constructor(grpcCode: number, status: number, message: string) {
    super(message);
    this.grpcCode = grpcCode;
    this.status = status;
  }
}

/**
 * Routes a v3 request. The v3 API itself is not served by this version: a known route
 * answers gRPC code 12 (Unimplemented) in the gateway's error shape, so clients get a clear
 * answer instead of a hang or a misleading 404.
 */
export function handleV3(req: IncomingMessage, route: string): never {
  req.resume();
  if (!V3_ROUTES.has(route)) throw new HttpTextError(404, "Not Found");
  if (req.method !== "POST") throw new HttpTextError(405, "Method Not Allowed");
  throw new GatewayError(12, 501, `the v3 API (/v3/${route}) is not served by this kvctl version yet; use the v2 API`);
}
