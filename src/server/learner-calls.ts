// Which client calls a learner member serves, as etcd 3.4's v3rpc interceptors decide it
// (interceptor.go newUnaryInterceptor / newStreamInterceptor, util.go
// isRPCSupportedForLearner). A learner holds the data but takes no part in quorum, so it
// cannot confirm a linearizable read, and etcd does not let it accept writes either: it
// serves Status and serializable Range only. Every other unary call and every stream
// (Watch, LeaseKeepAlive, Snapshot, Election Observe, health Watch) is refused with
// Unavailable, before the call is counted (etcd_server_client_requests_total, grpc_server_*)
// and before auth. The JSON gateway is a gRPC client of its member in etcd, so its calls
// are refused the same way (HTTP 503).
//
// Pure: the callers hold the member's learner flag and ask only when it is set.
import { GrpcCode, V3Error } from "../api/v3-errors.ts";

/** The gRPC paths of the two calls a learner serves. */
export const STATUS_METHOD = "/etcdserverpb.Maintenance/Status";
export const RANGE_METHOD = "/etcdserverpb.KV/Range";

/** The gateway routes (after /v3/) of those two calls. */
const ROUTE_METHODS: ReadonlyMap<string, string> = new Map([
  ["maintenance/status", STATUS_METHOD],
  ["kv/range", RANGE_METHOD],
]);

/** etcd's rpctypes.ErrGPRCNotSupportedForLearner. */
export const LEARNER_REFUSAL_MESSAGE = "etcdserver: rpc not supported for learner";

export function learnerRefusal(): V3Error {
  return new V3Error(GrpcCode.Unavailable, LEARNER_REFUSAL_MESSAGE);
}

/**
 * Whether a learner refuses a call of gRPC method `path` ("/etcdserverpb.KV/Put");
 * `serializable` is the RangeRequest's field (ignored for other methods). Streams are
 * never Status or Range, so every stream is refused.
 */
export function learnerRefuses(path: string, serializable: boolean): boolean {
  if (path === STATUS_METHOD) return false;
  if (path === RANGE_METHOD) return !serializable;
  return true;
}

/** learnerRefuses for a gateway route (after /v3/ or /v3beta/): by the gRPC method it calls, when a learner may serve it. */
export function learnerRefusesRoute(route: string, serializable: boolean): boolean {
  return learnerRefuses(ROUTE_METHODS.get(route) ?? route, serializable);
}
