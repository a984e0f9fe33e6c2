// The v3 JSON gateway's routes, as etcd 3.4's grpc-gateway serves them: POST only;
// `/v3beta/` is an alias of `/v3/` (etcd rewrites it); `/v3alpha/` is not served (the
// router's plain 404). An unknown route is "Not Found", a known route with another method
// "Method Not Allowed" (the gateway's own texts, which clients probing for v3 rely on).
// Everything in a body is read as the protobuf JSON mapping (v3-wire.ts); query strings and
// the content type are ignored, as etcd ignores them.
import type { IncomingMessage, ServerResponse } from "node:http";
import { V3Error, V3Errors, GrpcCode, isMessageTooLarge } from "../../api/v3-errors.ts";
import { HttpTextError } from "./respond.ts";
import type { V3Backend, V3CallContext, V3GatewayContext } from "./v3-backend.ts";
import { UNARY_ROUTES, grpcRecvLimit } from "./v3-handlers.ts";
import { BodyTooLargeError, readBody } from "./body.ts";
import { readRequestBody } from "./v3-json.ts";
import { V3StreamWriter, sendV3Json, streamErrorChunk } from "./v3-respond.ts";
import { serveKeepAlive, serveSnapshot } from "./v3-streams.ts";
import { serveWatch } from "./v3-watch-stream.ts";
import { CONCURRENCY_ROUTES, serveConcurrency, serveObserve } from "./v3-concurrency-handlers.ts";
import { GatewayDecodeError, GatewayError, goBase64Decode, messageFields, type Fields } from "./v3-wire.ts";
import { jsonBase } from "./respond.ts";
import { decodeRange } from "./v3-decode.ts";
import { learnerRefusal, learnerRefusesRoute } from "../learner-calls.ts";
import { CallDeadline } from "../grpc/deadline.ts";

const STREAM_ROUTES = ["watch", "lease/keepalive", "maintenance/snapshot"] as const;

/**
 * Every route etcd 3.4's gateway serves under /v3/ (KV, Watch, Lease, Cluster, Maintenance,
 * Auth, and the Lock and Election services: `lock/*`, `election/*`). Not here, as in etcd:
 * `maintenance/hashkv` (its pattern duplicates `maintenance/hash`, which wins),
 * `auth/status` (3.5).
 */
export const V3_ROUTES: ReadonlySet<string> = new Set([...UNARY_ROUTES.keys(), ...STREAM_ROUTES, ...CONCURRENCY_ROUTES]);

/** The gateway route of a path under /v3/ or /v3beta/, or undefined when it is not a v3 path. */
export function v3Route(path: string): string | undefined {
  if (path.startsWith("/v3/")) return path.slice(4);
  if (path.startsWith("/v3beta/")) return path.slice(8);
  return undefined;
}

/** What handleV3 needs of the router's context (RouterContext satisfies it). */
export interface V3RouteContext {
  clusterId: string;
  /** Absent: the server does not serve v3 (answered 501, code 12). */
  v3Gateway?: V3GatewayContext;
}

/** The caller's token as etcd reads it: the `token` metadata first, then `authorization`. */
export function callContext(req: IncomingMessage): V3CallContext {
  const t = req.headers["grpc-metadata-token"];
  const token = (Array.isArray(t) ? t[0] : t) ?? req.headers.authorization;
  return { token };
}

/** grpc-gateway's timeoutUnitToDuration, in milliseconds. */
const GATEWAY_TIMEOUT_UNITS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/**
 * The Grpc-Timeout header as grpc-gateway's AnnotateContext reads it (timeoutDecode),
 * first of all for every route: a value it cannot read is refused with InvalidArgument
 * 'invalid grpc-timeout: <value>'. Milliseconds; 0 when absent (no deadline, as a 0 value).
 */
export function gatewayTimeoutMs(req: IncomingMessage): number {
  const raw = req.headers["grpc-timeout"];
  const tm = (Array.isArray(raw) ? raw[0] : raw) ?? "";
  if (tm === "") return 0;
  const perUnit = GATEWAY_TIMEOUT_UNITS[tm[tm.length - 1]!];
  const digits = tm.slice(0, -1);
  const int64 = /^[+-]?[0-9]+$/.test(digits) && BigInt(digits) >= -(2n ** 63n) && BigInt(digits) < 2n ** 63n;
  if (tm.length < 2 || perUnit === undefined || !int64) throw new GatewayError(GrpcCode.InvalidArgument, `invalid grpc-timeout: ${tm}`);
  return Number(digits) * perUnit;
}

/** Go's textproto.CanonicalMIMEHeaderKey for a header name of token characters. */
function canonicalHeaderKey(name: string): string {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

const isStdSymbol = (c: number): boolean => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f;

/**
 * grpc-gateway's decodeBinHeader: standard base64, padded when the length is a multiple
 * of 4, else unpadded (RawStdEncoding). The byte offset Go's decoder blames, or undefined.
 */
export function binHeaderError(v: string): number | undefined {
  const src = Buffer.from(v, "utf8");
  if (src.length % 4 === 0) {
    const r = goBase64Decode(v);
    return typeof r === "number" ? r : undefined;
  }
  let j = 0;
  for (let si = 0; si < src.length; si++) {
    const c = src[si]!;
    if (c === 0x0a || c === 0x0d) continue;
    if (!isStdSymbol(c)) return si;
    j = (j + 1) % 4;
  }
  // One symbol cannot end a quantum: Go blames where that quantum began.
  return j === 1 ? src.length - 1 : undefined;
}

/**
 * What grpc-gateway's AnnotateContext refuses before anything else of a request: an
 * unreadable Grpc-Timeout (gatewayTimeoutMs), then a `Grpc-Metadata-*-Bin` header that is
 * not base64 ('invalid binary header <Key>: illegal base64 data at input byte N').
 */
export function annotateContext(req: IncomingMessage): number {
  const timeoutMs = gatewayTimeoutMs(req);
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    // Every gateway request comes here: canonicalize only the few names that can match.
    if (raw[i]!.length < 18 || raw[i]!.slice(0, 14).toLowerCase() !== "grpc-metadata-") continue;
    const key = canonicalHeaderKey(raw[i]!);
    if (!key.startsWith("Grpc-Metadata-") || !key.endsWith("-Bin")) continue;
    const at = binHeaderError(raw[i + 1]!);
    if (at !== undefined) throw new GatewayError(GrpcCode.InvalidArgument, `invalid binary header ${key}: illegal base64 data at input byte ${at}`);
  }
  return timeoutMs;
}

/** The longest unary body read: one that cannot hold a message under the gRPC receive limit is refused. */
export function maxUnaryBodyBytes(gw: V3GatewayContext): number {
  return 2 * grpcRecvLimit(gw) + 64 * 1024;
}

/**
 * Reads a unary body. etcd's gateway reads any size; here a body that cannot hold a message
 * under the gRPC receive limit (twice the limit, base64 and names included) is refused as
 * the gRPC server would refuse the message, after draining it.
 */
async function readUnaryBody(req: IncomingMessage, gw: V3GatewayContext): Promise<Buffer> {
  const limit = grpcRecvLimit(gw);
  try {
    return await readBody(req, maxUnaryBodyBytes(gw));
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw V3Errors.messageTooLarge(err.size, limit);
    throw err;
  }
}

/** The fields of a unary request's body (its one JSON value), or a GatewayDecodeError. */
export function unaryFields(body: Buffer): Fields | undefined {
  const parsed = readRequestBody(body);
  if ("error" in parsed) throw new GatewayDecodeError(parsed.error);
  return messageFields(parsed.node);
}

/** The client-api-version metadata grpc-gateway forwards from a Grpc-Metadata-Client-Api-Version header. */
function apiVersion(req: IncomingMessage): string | undefined {
  const v = req.headers["grpc-metadata-client-api-version"];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Whether a failed call had reached etcd's gRPC server, whose interceptors count it in
 * etcd_server_client_requests_total: not the gateway's own refusals (a body it cannot
 * decode), nor a message above grpc-go's receive limit (refused before the interceptors).
 */
export function reachedGrpc(err: unknown): boolean {
  if (err instanceof GatewayError) return false;
  return !isMessageTooLarge(err);
}

/** Runs a unary call and counts it as etcd counts the gateway's call, by its outcome. */
async function countedUnary<T>(req: IncomingMessage, gw: V3GatewayContext, run: () => Promise<T>): Promise<T> {
  const count = gw.clientRequests;
  if (count === undefined) return run();
  let out: T;
  try {
    out = await run();
  } catch (err) {
    if (reachedGrpc(err)) count("unary", apiVersion(req));
    throw err;
  }
  count("unary", apiVersion(req));
  return out;
}

/** The error a failed v3 call is answered with: whatever is not a V3Error is gRPC code Unknown (500), as in etcd. */
export function asV3Error(err: unknown): V3Error {
  return err instanceof V3Error ? err : new V3Error(GrpcCode.Unknown, err instanceof Error ? err.message : String(err));
}

/** A backend every call of which is the learner's refusal (refuseOnLearner). */
const REFUSING_BACKEND = new Proxy({} as V3Backend, {
  get: () => () => {
    throw learnerRefusal();
  },
});

/**
 * A learner's refusal of a unary call (learner-calls.ts). etcd's gateway calls its member,
 * whose interceptor refuses the call before counting it and before the v3rpc checks; what
 * the gateway refuses itself (a body it cannot decode, a message above grpc-go's receive
 * limit) is answered first: the route's handler runs against a backend that refuses.
 */
async function refuseOnLearner(gw: V3GatewayContext, route: string, fields: Fields | undefined, handler: (backend: V3Backend) => Promise<unknown>): Promise<void> {
  if (gw.backend.isLearner !== true) return;
  let serializable = false;
  if (route === "kv/range") {
    try {
      serializable = decodeRange(fields).serializable;
    } catch {
      // The gateway's own refusal of the body: the handler answers it.
      return;
    }
  }
  if (!learnerRefusesRoute(route, serializable)) return;
  try {
    await handler(REFUSING_BACKEND);
  } catch (err) {
    if (!reachedGrpc(err)) throw err;
  }
  throw learnerRefusal();
}

/**
 * A stream etcd's member accepts: counted as its interceptors count it, and false once
 * answered when refused. A learner refuses every stream; etcd's gateway gets the refusal as
 * the stream's first answer: the status of its code, with grpc-gateway's stream error chunk
 * as the body.
 */
function streamOpens(req: IncomingMessage, res: ServerResponse, gw: V3GatewayContext): boolean {
  if (gw.backend.isLearner !== true) {
    gw.clientRequests?.("stream", apiVersion(req));
    return true;
  }
  req.resume();
  const chunk = streamErrorChunk(learnerRefusal());
  res.writeHead(chunk.status, jsonBase.concat());
  res.end(chunk.body);
  return false;
}

/** Fires once the connection closed before the answer was written (grpc-gateway's context is then canceled). */
function clientGone(req: IncomingMessage, res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  const abort = (): void => gone.abort(new V3Error(GrpcCode.Cancelled, "context canceled"));
  // Closed while the body was read: no 'close' is coming any more.
  if (req.socket.destroyed) abort();
  else {
    res.once("close", () => {
      if (!res.writableFinished) abort();
    });
  }
  return gone.signal;
}

async function serveUnary(req: IncomingMessage, res: ServerResponse, route: string, gw: V3GatewayContext, timeout: GatewayTimeout): Promise<void> {
  const handler = UNARY_ROUTES.get(route);
  if (handler === undefined) throw new HttpTextError(404, "Not Found");
  const expired = expiredAtOnce(timeout.ms);
  const body = await readUnaryBody(req, gw);
  const fields = unaryFields(body);
  // The request still decodes in full (its errors first), then its call fails.
  const backend = expired ? expiredBackend(gw.backend) : gw.backend;
  await refuseOnLearner(gw, route, fields, (b) => handler(fields, { backend: expired ? backend : b, ctx: { token: undefined }, gw }));
  const { deadline, ctx } = callWithin(req, timeout);
  // A password check still queued for bcrypt is dropped once its client is gone.
  if (route === "auth/authenticate") ctx.signal = clientGone(req, res);
  const call = (): ReturnType<typeof handler> => handler(fields, { backend, ctx, gw });
  // Expired: whatever etcd's server would have said (its v3rpc checks included) is never
  // asked; only the gateway's own refusals (decoding) come first.
  const expiredCall = async (): Promise<Awaited<ReturnType<typeof handler>>> => {
    try {
      return await call();
    } catch (err) {
      throw err instanceof GatewayError ? err : DEADLINE_PASSED();
    }
  };
  const out = await withinDeadline(countedUnary(req, gw, expired ? expiredCall : call), deadline);
  sendV3Json(res, out);
}

/**
 * The call's answer, or, once its deadline passes, what grpc-gateway's gRPC client says
 * whatever the server is still doing: code 4 'context deadline exceeded' (504). etcd 3.4.23:
 * a linearizable range or a put on a member that lost its quorum, Grpc-Timeout 500m, is
 * answered that at 0.50 s.
 */
function withinDeadline<T>(p: Promise<T>, deadline: CallDeadline | undefined): Promise<T> {
  if (deadline === undefined) return p;
  return new Promise<T>((resolve, reject) => {
    deadline.onExpire(() => reject(DEADLINE_PASSED()));
    p.then(resolve, reject).finally(() => deadline.cancel());
  });
}

/** The request's Grpc-Timeout (ms, 0: none), read once, and when the request arrived. */
interface GatewayTimeout {
  ms: number;
  arrived: number;
}

/**
 * grpc-gateway turns a positive Grpc-Timeout into its gRPC call's deadline, counted from
 * the request's arrival; the backend's waits end at it as they do for grpc-timeout.
 */
function callWithin(req: IncomingMessage, timeout: GatewayTimeout): { deadline: CallDeadline | undefined; ctx: V3CallContext } {
  const deadline = timeout.ms >= 1 ? new CallDeadline(timeout.ms - (performance.now() - timeout.arrived)) : undefined;
  return { deadline, ctx: deadline === undefined ? callContext(req) : { ...callContext(req), deadline } };
}

/**
 * A stream's call context. A positive Grpc-Timeout ends the stream at its deadline as
 * grpc-gateway's gRPC client ends it (etcd 3.4.23, Grpc-Timeout 1S): a watch that answered
 * `created` gets the error chunk `{"error":{"grpc_code":4,"http_code":504,...}}` at 1.0 s
 * and the response ends (status 200 sent already); an election/observe that sent nothing is
 * answered 504 `{"error":"context deadline exceeded",...,"code":4}`. Ending the response
 * ends the call (watchers cancelled, no more keepalives, observe and snapshot stop).
 * etcd's gateway sometimes gets the server's own error first (code 2, 500): a race there.
 */
function streamWithin(req: IncomingMessage, res: ServerResponse, timeout: GatewayTimeout): V3CallContext {
  const { deadline, ctx } = callWithin(req, timeout);
  if (deadline === undefined) return ctx;
  // Before the backend's own waits on ctx: the stream's answer at the deadline is this one.
  deadline.onExpire(() => new V3StreamWriter(res).fail(DEADLINE_PASSED()));
  res.once("close", () => deadline.cancel());
  return ctx;
}

/**
 * A Grpc-Timeout the gateway's gRPC call cannot outlive: negative, or under a millisecond
 * (etcd 3.4.23: -5S and 10n are answered 504 'context deadline exceeded'). Longer ones
 * are the call's deadline (withinDeadline).
 */
function expiredAtOnce(timeoutMs: number): boolean {
  return timeoutMs < 0 || (timeoutMs > 0 && timeoutMs < 1);
}

const DEADLINE_PASSED = (): GatewayError => new GatewayError(GrpcCode.DeadlineExceeded, "context deadline exceeded");

/** The backend as an expired call sees it: its first call fails with the client's deadline. */
function expiredBackend(backend: V3Backend): V3Backend {
  return new Proxy(backend, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v !== "function"
        ? v
        : () => {
            throw DEADLINE_PASSED();
          };
    },
  });
}

/**
 * Serves a /v3/ (or /v3beta/) route. Unary answers are complete JSON responses; errors are
 * thrown to the router's writeError (V3Error -> etcd's body and status). Streams answer on
 * their own and stay open after this returns.
 */
export async function handleV3(req: IncomingMessage, res: ServerResponse, route: string, ctx: V3RouteContext): Promise<void> {
  if (!V3_ROUTES.has(route)) {
    req.resume();
    throw new HttpTextError(404, "Not Found");
  }
  if (req.method !== "POST") {
    req.resume();
    throw new HttpTextError(405, "Method Not Allowed");
  }
  const gw = ctx.v3Gateway;
  if (gw === undefined) {
    req.resume();
    throw new V3Error(GrpcCode.Unimplemented, `the v3 API (/v3/${route}) is not served by this server`);
  }
  try {
    const arrived = performance.now();
    await dispatch(req, res, route, gw, { ms: annotateContext(req), arrived });
  } catch (err) {
    if (err instanceof HttpTextError) throw err;
    throw asV3Error(err);
  }
}

async function dispatch(req: IncomingMessage, res: ServerResponse, route: string, gw: V3GatewayContext, timeout: GatewayTimeout): Promise<void> {
  switch (route) {
    // grpc-gateway opens a bidirectional stream before reading the body, a server stream
    // once it decoded its one request: that is when etcd's interceptors count them.
    case "watch":
      if (expiredAtOnce(timeout.ms)) throw DEADLINE_PASSED();
      if (!streamOpens(req, res, gw)) return;
      serveWatch(req, res, gw, streamWithin(req, res, timeout));
      return;
    case "lease/keepalive":
      if (expiredAtOnce(timeout.ms)) throw DEADLINE_PASSED();
      if (!streamOpens(req, res, gw)) return;
      serveKeepAlive(req, res, gw, streamWithin(req, res, timeout));
      return;
    case "maintenance/snapshot": {
      // A server-streaming call: the request is one message (ignored: it has no fields).
      unaryFields(await readUnaryBody(req, gw));
      if (!streamOpens(req, res, gw)) return;
      await serveSnapshot(res, gw, streamWithin(req, res, timeout));
      return;
    }
    case "election/observe": {
      // A server-streaming call: its one request message, then its answers as they come.
      const fields = unaryFields(await readUnaryBody(req, gw));
      if (!streamOpens(req, res, gw)) return;
      await serveObserve(fields, res, gw, streamWithin(req, res, timeout));
      return;
    }
    default:
      if (CONCURRENCY_ROUTES.has(route)) {
        const fields = unaryFields(await readUnaryBody(req, gw));
        await refuseOnLearner(gw, route, fields, (backend) => serveConcurrency(route, fields, res, { ...gw, backend }, { token: undefined }));
        // A lock or campaign still waiting at the deadline is answered 504 code 4; answering
        // ends the call, whose clean-up removes its key (etcd 3.4.23 alike: lock/lock and
        // election/campaign on a held name with Grpc-Timeout 500m, 504 at 0.50 s, the
        // waiter's key gone).
        const { deadline, ctx } = callWithin(req, timeout);
        const out = await withinDeadline(countedUnary(req, gw, () => serveConcurrency(route, fields, res, gw, ctx)), deadline);
        if (out !== undefined) sendV3Json(res, out);
        return;
      }
      await serveUnary(req, res, route, gw, timeout);
  }
}
