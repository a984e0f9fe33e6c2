// The fast lane's handler for the v3 JSON gateway's hot calls (fast-lane.ts): `POST
// /v3/kv/put` and `POST /v3/kv/range` (and their `/v3beta/` alias) answered without
// node:http. For a one-connection writer node:http's request and response objects, header
// maps, body stream and outgoing-message machinery cost more than the gateway's own work,
// between the socket read and the proposal and again between the apply and the answer.
//
// Nothing of the call is done twice: the body goes through the gateway's own steps
// (v3-routes.ts unaryFields, the route's handler in v3-handlers.ts: decode, size limits,
// v3rpc checks, ONE backend call, encode), and its outcome, success or error, is rendered
// by v3-respond.ts's parts, as the router renders it. So every answer, errors included
// (decoding, limits, a lease not found, no leader, a timeout, NOSPACE, a compacted
// revision), is the router's; a server error keeps its gRPC trailer (sent chunked).
//
// Declined before anything runs, and so answered by the router: another method or route,
// a target the router would decode or redirect (escapes, an unclean path), a host not
// whitelisted, --cors restricted, --enable-grpc-gateway=false, a learner member, a caller's token
// (Grpc-Metadata-Token or Authorization) or v3 auth enabled (the token checks stay with the
// router). Once the handler ran, the request is answered here whatever happens (a put may
// have been proposed: the router would propose it again).
import type { FastHandler, FastResponse, RequestHead } from "./fast-lane.ts";
import { jsonBase } from "./respond.ts";
import { requestLineTooLong, splitTarget } from "./router.ts";
import { muxCleanPath } from "./path.ts";
import { allowsAnyOrigin } from "./cors.ts";
import { isHostWhitelisted, requestHostname } from "./host-whitelist.ts";
import type { V3CallContext, V3GatewayContext } from "./v3-backend.ts";
import { UNARY_ROUTES, type UnaryHandler } from "./v3-handlers.ts";
import { asV3Error, maxUnaryBodyBytes, reachedGrpc, unaryFields, v3Route } from "./v3-routes.ts";
import { v3ErrorParts, v3SuccessParts, type V3AnswerParts } from "./v3-respond.ts";
import type { JsonObject } from "./v3-encode.ts";
import type { WriteTracer } from "../write-trace.ts";

/** What the lane needs of the member besides the gateway: the router's gates and its request count. */
export interface V3FastHost {
  readonly config: {
    readonly enableGrpcGateway: boolean;
    readonly cors: readonly string[];
    readonly hostWhitelist: readonly string[];
  };
  /** With v3 auth on the router checks the token (and refuses a gateway client certificate's name). */
  readonly v3auth: { readonly enabled: boolean };
  /** Every request the lane answers counts as a client request (disk-wait.ts). */
  noteClientRequest(): void;
}

export interface V3FastContext {
  server: V3FastHost;
  v3Gateway: V3GatewayContext;
}

/** The routes the lane serves (after /v3/ or /v3beta/). */
export const V3_FAST_ROUTES: ReadonlySet<string> = new Set(["kv/put", "kv/range"]);

/** No token: the lane takes only calls of callers without one, with v3 auth off. */
const NO_TOKEN: V3CallContext = { token: undefined };

/**
 * The unary handler that serves this request as the router would, or undefined when the
 * lane must leave it to the router. Pure: reads the head and the gates it is given.
 */
export function fastV3Route(head: RequestHead, whitelist: readonly string[]): UnaryHandler | undefined {
  if (head.method !== "POST" || head.grpcToken !== undefined || head.authorization !== undefined) return undefined;
  const target = head.target;
  if (requestLineTooLong(head.method, target)) return undefined;
  const { rawPath } = splitTarget(target);
  // Escapes are decoded, and an unclean path redirected, by the router.
  if (rawPath.includes("%") || muxCleanPath(rawPath) !== rawPath) return undefined;
  const route = v3Route(rawPath);
  if (route === undefined || !V3_FAST_ROUTES.has(route)) return undefined;
  if (whitelist.length > 0 && !isHostWhitelisted(whitelist, requestHostname(head.host))) return undefined;
  return UNARY_ROUTES.get(route);
}

function response(p: V3AnswerParts): FastResponse {
  const res: FastResponse = { status: p.status, headers: jsonBase.concat(p.extra), body: p.body };
  if (p.trailer !== undefined) res.trailer = p.trailer;
  return res;
}

const failure = (err: unknown): FastResponse => response(v3ErrorParts(asV3Error(err)));
/** Never throws: the lane would hand a settled-to-nothing request to the router, which would run it again. */
const success = (out: JsonObject): FastResponse => {
  try {
    return response(v3SuccessParts(out));
  } catch (err) {
    return failure(err);
  }
};

export function v3FastKv(ctx: V3FastContext, tracer?: WriteTracer): FastHandler {
  // --enable-grpc-gateway=false and a restricted --cors change every answer: the router gives those.
  const { enableGrpcGateway, cors } = ctx.server.config;
  if (!enableGrpcGateway || !allowsAnyOrigin(cors)) return () => undefined;
  const gw = ctx.v3Gateway;
  const call = { backend: gw.backend, ctx: NO_TOKEN, gw };
  const maxBody = maxUnaryBodyBytes(gw);
  // Counted as the router counts a gateway call (v3-routes.ts countedUnary), in the same
  // steps as the answer. The lane takes no request with a client-api-version header.
  const count = gw.clientRequests;
  const succeeded = (o: JsonObject): FastResponse => {
    count?.("unary", undefined);
    return success(o);
  };
  const failed = (err: unknown): FastResponse => {
    if (count !== undefined && reachedGrpc(err)) count("unary", undefined);
    return failure(err);
  };
  return (head): ReturnType<FastHandler> => {
    const server = ctx.server;
    // A cheap first test: nearly every request the lane sees is not for the gateway.
    if (!head.target.startsWith("/v3")) return undefined;
    const handler = fastV3Route(head, server.config.hostWhitelist);
    // A learner refuses most calls (v3-routes.ts refuseOnLearner): the router answers them.
    if (handler === undefined || server.v3auth.enabled || gw.backend.isLearner === true) return undefined;
    const body = Buffer.from(head.body ?? "", "latin1");
    if (body.length > maxBody) return undefined;
    server.noteClientRequest();
    const trace = tracer?.begin(head.method, head.target);
    // A traced call's answer is marked "answered" when built, in the same step (a trace
    // then has as many promise steps as an untraced call between the apply and the write).
    const traced =
      trace === undefined || tracer === undefined
        ? undefined
        : (res: FastResponse): FastResponse => {
            tracer.note("answered");
            res.written = () => tracer.end(trace);
            return res;
          };
    const run = (): Promise<FastResponse> => {
      let out: Promise<JsonObject>;
      try {
        out = handler(unaryFields(body), call);
      } catch (err) {
        out = Promise.reject(err);
      }
      return traced === undefined ? out.then(succeeded, failed) : out.then((o) => traced(succeeded(o)), (e: unknown) => traced(failed(e)));
    };
    return trace === undefined || tracer === undefined ? run() : tracer.within(trace, run);
  };
}
