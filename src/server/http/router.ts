// Routing as etcd's Go ServeMux does it: the path is percent-decoded, a path that is not
// clean is redirected (301) without being executed, then matched against the handlers.
// Every response carries etcd's CORS headers; OPTIONS answers 200 with them and nothing else.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { unescape } from "./form.ts";
import { muxCleanPath, escapePath, originForm } from "./path.ts";
import { corsHeaders, notFound, writeError, writeText, HttpTextError } from "./respond.ts";
import { handleKeys, type V2KeysHost } from "./keys-handler.ts";
import { BAD_REQUEST, goHeadRefusal } from "./client-error.ts";
import { handleAuth, requireRootForWrite, type AuthAdminHost } from "./auth-handlers.ts";
import { handleV3, v3Route } from "./v3-routes.ts";
import type { V3GatewayContext } from "./v3-backend.ts";
import { refuseUnlistedHost } from "./host-whitelist.ts";
import { refuseGatewayCommonName } from "./gateway-cn.ts";
import { checkMembersMethod, handleHealth, handleMachines, handleMembers, handleStats, handleVersion, type InfoHost } from "./info-handlers.ts";
import { allowsAnyOrigin, restrictCors } from "./cors.ts";
import type { MemberMetrics } from "../metrics/member-metrics.ts";
import { handleDebugVars, handleMetrics, type DebugVarsHost } from "../metrics/http.ts";

/** etcd (cmux) resets requests whose request line exceeds this; kvctl answers 414 instead. */
export const MAX_REQUEST_LINE = 4096;

/** Is this request line (method, target, version) longer than MAX_REQUEST_LINE? */
export function requestLineTooLong(method: string, target: string): boolean {
  return method.length + target.length + 10 > MAX_REQUEST_LINE;
}

/**
 * The key a decoded, clean `/v2/keys` path names, or undefined for any other path. Key
 * paths are cleaned once more without the trailing slash: "/v2/keys/a/" is the key "/a".
 */
export function keyOfPath(path: string): string | undefined {
  if (path !== "/v2/keys" && !path.startsWith("/v2/keys/")) return undefined;
  const key = path.slice("/v2/keys".length);
  return key === "" ? "/" : key;
}

/** A request target's raw path and raw query (without the "?"). */
export function splitTarget(target: string): { rawPath: string; rawQuery: string | undefined } {
  const q = target.indexOf("?");
  return q < 0 ? { rawPath: target, rawQuery: undefined } : { rawPath: target.slice(0, q), rawQuery: target.slice(q + 1) };
}

/**
 * The key a raw path names when route() would hand it to the keys handler as it stands:
 * nothing to percent-decode, and clean, so no redirect. Undefined for anything else (which
 * may still be a key path, after decoding or a redirect): the fast lane declines those.
 */
export function plainKeyOfPath(rawPath: string): string | undefined {
  return rawPath.includes("%") || muxCleanPath(rawPath) !== rawPath ? undefined : keyOfPath(rawPath);
}

/**
 * What the client port uses of the member: each handler's view, and the router's own gates.
 * It also covers what keys-fast-get.ts needs, so one context serves the lane and the router.
 */
export type RouterHost = V2KeysHost &
  InfoHost &
  AuthAdminHost &
  DebugVarsHost & {
    readonly config: {
      readonly hostWhitelist: readonly string[];
      readonly cors: readonly string[];
      readonly enableV2: boolean;
      readonly enableGrpcGateway: boolean;
      readonly clientTls: { readonly clientCertAuth: boolean };
    };
    /** The gateway's certificate rule applies only with v3 auth on. */
    readonly v3auth: { readonly enabled: boolean };
    /** Every request begun counts as a client request (disk-wait.ts). */
    noteClientRequest(): void;
  };

export interface RouterContext {
  server: RouterHost;
  clusterId: string;
  watches: Set<ServerResponse>;
  /** The v3 JSON gateway: its backend, limits and open streams. */
  v3Gateway: V3GatewayContext;
  /** /metrics; absent: 404, as before. */
  metrics?: MemberMetrics;
}

function redirect(req: IncomingMessage, res: ServerResponse, location: string): void {
  if (req.method === "GET" || req.method === "HEAD") {
    const body = `<a href="${location.replace(/&/g, "&amp;").replace(/"/g, "&#34;")}">Moved Permanently</a>.\n\n`;
    res.writeHead(301, { ...corsHeaders, Location: location, "Content-Type": "text/html; charset=utf-8", "Content-Length": String(Buffer.byteLength(body)) });
    res.end(body);
  } else {
    res.writeHead(301, { ...corsHeaders, Location: location, "Content-Length": "0" });
    res.end();
  }
  req.resume();
}

export function createRouter(ctx: RouterContext): (req: IncomingMessage, res: ServerResponse) => void {
  // Requests pipelined on one connection are handled one after another, as Go's server
  // handles them: node:http would start them all at once, and a GET sent after a PUT on
  // the same connection could then be answered before the PUT is applied.
  const busy = new WeakMap<Socket, Promise<void>>();
  return (req, res) => {
    ctx.server.noteClientRequest();
    const socket = req.socket;
    const run = (): Promise<void> => route(req, res, ctx).catch((err: unknown) => writeError(req, res, err, ctx));
    const before = busy.get(socket);
    const done = before === undefined ? run() : before.then(run);
    busy.set(socket, done);
    void done.then(() => {
      if (busy.get(socket) === done) busy.delete(socket);
    });
  };
}

export { originForm } from "./path.ts";

/** Go's answer to a request for `*` that is not OPTIONS: 400, no body, and the connection closed. */
function asteriskTarget(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  res.shouldKeepAlive = false;
  res.writeHead(400, { ...corsHeaders, "Content-Length": "0" });
  res.end();
}

/** Go's refusals of a head it read, after its target (client-error.ts goHeadRefusal). */
function refuseHead(req: IncomingMessage): boolean {
  const refusal = goHeadRefusal(req.rawHeaders, req.httpVersion);
  if (refusal === undefined) return false;
  req.resume();
  req.socket.end(refusal);
  return true;
}

async function route(req: IncomingMessage, res: ServerResponse, ctx: RouterContext): Promise<void> {
  let url = req.url ?? "/";
  const method = req.method ?? "GET";
  if (url === "*") {
    if (refuseHead(req)) return;
    // Go's server answers `OPTIONS *` itself (globalOptionsHandler): no handler, no CORS.
    if (method !== "OPTIONS") return asteriskTarget(req, res);
    req.resume();
    res.writeHead(200, { "Content-Length": "0" });
    res.end();
    return;
  }
  const absolute = originForm(url);
  if (absolute !== undefined) {
    url = absolute.target;
    req.headers.host = absolute.host;
  }
  if (requestLineTooLong(method, url)) {
    req.resume();
    throw new HttpTextError(414, "Request-URI Too Long: the request line exceeds 4096 bytes");
  }
  // Go's server refuses a target it cannot parse before any handler, OPTIONS included: no
  // CORS, and the connection closes. Written raw, as Go does: the body goes out even for HEAD.
  const { rawPath, rawQuery: query } = splitTarget(url);
  const rawQuery = query ?? "";
  const decoded = unescape(rawPath, false);
  if ("error" in decoded || !rawPath.startsWith("/")) {
    req.resume();
    req.socket.end(BAD_REQUEST);
    return;
  }
  if (refuseHead(req)) return;
  if (refuseUnlistedHost(req, res, ctx.server.config.hostWhitelist)) return; // before CORS, routing, auth
  // The v3 gateway never takes a user from a certificate's Common Name (etcd says so with a 400).
  const gatewayCn = { clientCertAuth: ctx.server.config.clientTls.clientCertAuth, v3AuthEnabled: ctx.server.v3auth.enabled };
  if (refuseGatewayCommonName(req, res, gatewayCn)) return;
  const config = ctx.server.config;
  if (!allowsAnyOrigin(config.cors)) restrictCors(req, res, config.cors); // --cors
  if (method === "OPTIONS") {
    req.resume();
    res.writeHead(200, { ...corsHeaders, "Content-Length": "0" });
    res.end();
    return;
  }
  const path = decoded.value;
  const clean = muxCleanPath(path);
  if (clean !== path) {
    redirect(req, res, escapePath(clean) + (query === undefined ? "" : "?" + query));
    return;
  }

  // --enable-v2=false leaves etcd's basic handlers (/version, /health) and the v3 gateway.
  if (!config.enableV2 && (path === "/v2" || path.startsWith("/v2/"))) {
    req.resume();
    throw notFound();
  }
  const key = keyOfPath(path);
  if (key !== undefined) {
    await handleKeys(req, res, key, rawQuery, ctx);
    return;
  }
  switch (path) {
    case "/version":
      return handleVersion(req, res, ctx.server);
    case "/health":
      return handleHealth(req, res, ctx.server);
    case "/metrics":
      if (ctx.metrics === undefined) break;
      return handleMetrics(req, res, ctx.metrics);
    case "/debug/vars":
      return handleDebugVars(req, res, ctx.server);
    case "/v2/stats/store":
      return handleStats(req, res, "store", ctx);
    case "/v2/stats/self":
      return handleStats(req, res, "self", ctx);
    case "/v2/stats/leader":
      return handleStats(req, res, "leader", ctx);
    case "/v2/machines":
      return handleMachines(req, res, ctx);
    case "/v2/members":
      checkMembersMethod(req);
      await requireRootForWrite(req, ctx.server); // member writes need root when auth is on
      return handleMembers(req, res, "", ctx);
  }
  if (path.startsWith("/v2/members/")) {
    checkMembersMethod(req);
    await requireRootForWrite(req, ctx.server);
    return handleMembers(req, res, path.slice("/v2/members".length), ctx);
  }
  if (path.startsWith("/v2/auth/")) return handleAuth(req, res, path, rawQuery, ctx);
  const v3 = config.enableGrpcGateway ? v3Route(path) : undefined; // --enable-grpc-gateway
  if (v3 !== undefined) return handleV3(req, res, v3, ctx);
  req.resume();
  throw notFound();
}

export { writeText };
