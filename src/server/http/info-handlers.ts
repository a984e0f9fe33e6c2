// Cluster information endpoints: /version, /health, /v2/stats/*, /v2/machines, /v2/members.
// Shapes and statuses as etcd 3.4 answers them (REFERENCE.md "Stats and cluster info").
import type { IncomingMessage, ServerResponse } from "node:http";
import { Header } from "../../api/headers.ts";
import type { V2MemberJSON } from "../../api/v2-types.ts";
import type { KvServer } from "../kv-server.ts";
import type { Member } from "../membership.ts";
import { HttpMessageError, HttpTextError, corsHeaders, methodNotAllowed, notFound, writeJson } from "./respond.ts";
import { goJsonSyntaxError, goJsonKind } from "./go-json.ts";
import type { OutgoingHttpHeaders } from "node:http";
import { readBody, mediaType } from "./body.ts";
import { KVCTL_VERSION, ETCD_CLUSTER_VERSION, ETCD_SERVER_VERSION } from "../version.ts";

export interface InfoContext {
  server: KvServer;
  clusterId: string;
}

function onlyGet(req: IncomingMessage): void {
  if (req.method !== "GET") throw methodNotAllowed("GET");
}

export function handleVersion(req: IncomingMessage, res: ServerResponse): void {
  onlyGet(req);
  writeJson(res, 200, {}, JSON.stringify({ etcdserver: ETCD_SERVER_VERSION, etcdcluster: ETCD_CLUSTER_VERSION, kvctl: KVCTL_VERSION }));
}

/** etcd 3.4's health read (a QGET through the log) waits this long. */
const HEALTH_READ_TIMEOUT_MS = 1000;

/**
 * etcd 3.4's checkHealth: unhealthy with an active alarm, without a leader, or when a
 * linearizable read does not complete within a second; each answer counts in
 * etcd_server_health_success / etcd_server_health_failures.
 */
export async function checkHealth(server: KvServer): Promise<boolean> {
  let healthy = server.v3.alarms().length === 0 && server.leaderId !== 0;
  if (healthy) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("health read timed out")), HEALTH_READ_TIMEOUT_MS);
    });
    try {
      await Promise.race([server.linearizableRead(), timeout]);
    } catch {
      healthy = false;
    } finally {
      clearTimeout(timer);
    }
  }
  (healthy ? server.metrics.healthSuccess : server.metrics.healthFailures).inc();
  return healthy;
}

export async function handleHealth(req: IncomingMessage, res: ServerResponse, ctx: InfoContext): Promise<void> {
  onlyGet(req);
  const healthy = await checkHealth(ctx.server);
  const body = JSON.stringify({ health: healthy ? "true" : "false" });
  res.writeHead(healthy ? 200 : 503, { ...corsHeaders, "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

export function handleStats(req: IncomingMessage, res: ServerResponse, which: "store" | "self" | "leader", ctx: InfoContext): void {
  onlyGet(req);
  const s = ctx.server;
  const body = which === "store" ? s.store.statsJSON() : which === "self" ? s.stats.self(s.transport.selfStats()) : s.stats.leader(s.transport.stats());
  if (which === "leader" && !s.isLeader) throw new HttpMessageError(403, "not current leader");
  writeJson(res, 200, {}, JSON.stringify(body));
}

export function handleMachines(req: IncomingMessage, res: ServerResponse, ctx: InfoContext): void {
  if (req.method !== "GET" && req.method !== "HEAD") throw methodNotAllowed("GET,HEAD");
  const urls = ctx.server.membership.list().flatMap((m) => m.clientUrls);
  res.writeHead(200, { ...corsHeaders, "Content-Type": "text/plain; charset=utf-8" });
  res.end(urls.join(", "));
}

export function memberJSON(m: Member): V2MemberJSON {
  return { id: m.id.toString(16), name: m.name, peerURLs: m.peerUrls, clientURLs: m.clientUrls };
}

/** Validates a members write body as etcd's httptypes.MemberCreateRequest: JSON with peerURLs. */
async function readMemberRequest(req: IncomingMessage, headers: OutgoingHttpHeaders): Promise<string[]> {
  const ct = req.headers["content-type"];
  if (mediaType(ct) !== "application/json") {
    req.resume();
    throw new HttpMessageError(415, `Bad Content-Type ${ct ?? ""}, accept application/json`, headers);
  }
  const body = await readBody(req, 1 << 20);
  const syntax = goJsonSyntaxError(body);
  if (syntax !== undefined) throw new HttpMessageError(400, syntax, headers);
  const parsed: unknown = JSON.parse(body.toString("utf8"));
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new HttpMessageError(400, `json: cannot unmarshal ${goJsonKind(parsed)} into Go value of type httptypes.MemberCreateRequest`, headers);
  }
  const urls = (parsed as { peerURLs?: unknown }).peerURLs ?? [];
  if (!Array.isArray(urls)) {
    throw new HttpMessageError(400, `json: cannot unmarshal ${goJsonKind(urls)} into Go struct field MemberCreateRequest.peerURLs of type []string`, headers);
  }
  for (const u of urls) {
    if (typeof u !== "string") {
      throw new HttpMessageError(400, `json: cannot unmarshal ${goJsonKind(u)} into Go struct field MemberCreateRequest.peerURLs of type string`, headers);
    }
    let parsedUrl: URL | undefined;
    try {
      parsedUrl = new URL(u);
    } catch {
      parsedUrl = undefined;
    }
    if (!parsedUrl || !["http:", "https:", "unix:", "unixs:"].includes(parsedUrl.protocol)) {
      throw new HttpMessageError(400, `URL scheme must be http, https, unix, or unixs: ${u}`, headers);
    }
  }
  if (urls.length === 0) throw new HttpMessageError(400, "no valid URLs given", headers);
  return urls as string[];
}

export async function handleMembers(req: IncomingMessage, res: ServerResponse, subPath: string, ctx: InfoContext): Promise<void> {
  const headers = { [Header.kvClusterId]: ctx.clusterId, [Header.etcdClusterId]: ctx.clusterId };
  const s = ctx.server;
  const method = req.method ?? "GET";
  if (!["GET", "POST", "DELETE", "PUT"].includes(method)) {
    req.resume();
    throw methodNotAllowed("GET,POST,DELETE,PUT");
  }
  const id = subPath.replace(/^\//, "");
  if (method === "GET") {
    if (id === "") {
      writeJson(res, 200, headers, JSON.stringify({ members: s.membership.list().map(memberJSON) }));
      return;
    }
    if (id === "leader") {
      const lead = s.membership.get(s.leaderId);
      if (!lead) throw new HttpMessageError(503, "During leader election");
      writeJson(res, 200, headers, JSON.stringify(memberJSON(lead)));
      return;
    }
    throw new HttpMessageError(404, "Not found", headers);
  }
  if (method === "POST") {
    if (id !== "") throw new HttpMessageError(404, "Not found", headers);
    const urls = await readMemberRequest(req, headers);
    const m = await withHeaders(s.addMember(urls), headers);
    writeJson(res, 201, headers, JSON.stringify(memberJSON(m)));
    return;
  }
  if (id === "") {
    // etcd answers a DELETE/PUT without an id with a bare 405 (no Allow header).
    req.resume();
    throw new HttpTextError(405, "Method Not Allowed", headers);
  }
  const numeric = /^[0-9a-fA-F]{1,16}$/.test(id) ? parseInt(id, 16) : NaN;
  const urls = method === "PUT" ? await readMemberRequest(req, headers) : (req.resume(), []);
  if (Number.isNaN(numeric) || !s.membership.get(numeric)) throw new HttpMessageError(404, `No such member: ${id}`, headers);
  if (method === "DELETE") await withHeaders(s.removeMember(numeric), headers);
  else await withHeaders(s.updateMember(numeric, urls), headers);
  res.writeHead(204, { ...corsHeaders, ...headers });
  res.end();
}

/** Member writes answer their errors with the cluster id header, as etcd's members handler does. */
async function withHeaders<T>(p: Promise<T>, headers: OutgoingHttpHeaders): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof HttpMessageError) throw new HttpMessageError(err.status, err.message, { ...headers, ...err.headers });
    throw err;
  }
}

export { notFound };
