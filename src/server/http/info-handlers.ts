// Cluster information endpoints: /version, /health, /v2/stats/*, /v2/machines, /v2/members.
// Shapes and statuses as etcd 3.4 answers them (REFERENCE.md "Stats and cluster info").
import type { IncomingMessage, ServerResponse } from "node:http";
import { Header } from "../../api/headers.ts";
import type { V2MemberJSON } from "../../api/v2-types.ts";
import type { V2Store } from "../../store/v2/store.ts";
import type { V3KeySpace } from "../../store/v3/index.ts";
import type { PeerTransport } from "../../transport/index.ts";
import type { Member, Membership } from "../membership.ts";
import type { MemberAdmin } from "../member-admin.ts";
import type { ServerStats } from "../stats.ts";
import type { ServerMetrics } from "../metrics/server-metrics.ts";
import { ReconfigCheckError } from "../reconfig-check.ts";
import { MemberError, MemberErrorKind, ServerUnavailableError } from "../errors.ts";
import { HttpMessageError, HttpTextError, corsHeaders, methodNotAllowed, notFound, writeJson } from "./respond.ts";
import { goJsonSyntaxError, goJsonKind } from "./go-json.ts";
import type { OutgoingHttpHeaders } from "node:http";
import { BodyReadError, readBody } from "./body.ts";
import { KVCTL_VERSION, ETCD_SERVER_VERSION } from "../version.ts";

/** What the cluster information endpoints use of the member. */
export interface InfoHost {
  readonly leaderId: number;
  readonly isLeader: boolean;
  /** Health: active alarms make the member unhealthy, and a linearizable read must complete. */
  readonly v3: Pick<V3KeySpace, "alarms">;
  linearizableRead(): Promise<void>;
  readonly metrics: Pick<ServerMetrics, "healthSuccess" | "healthFailures">;
  readonly store: Pick<V2Store, "statsJSON">;
  readonly stats: Pick<ServerStats, "self" | "leader">;
  readonly transport: Pick<PeerTransport, "selfStats" | "stats">;
  /** `version`: the cluster version the leader recorded, undefined until it has (cluster-version.ts). */
  readonly membership: Pick<Membership, "list" | "get" | "version">;
  /** Member writes go through the log (member-admin.ts). */
  readonly members: Pick<MemberAdmin, "add" | "remove" | "update">;
}

/** What /health uses: the alarms, the leader, a linearizable read, and its two counters. */
export type HealthHost = Pick<InfoHost, "leaderId" | "v3" | "linearizableRead" | "metrics">;

export interface InfoContext {
  server: InfoHost;
  clusterId: string;
}

function onlyGet(req: IncomingMessage): void {
  if (req.method !== "GET") throw methodNotAllowed("GET");
}

/** etcd's version handler: the cluster version is the recorded one, "not_decided" before the first leader records it. */
export function handleVersion(req: IncomingMessage, res: ServerResponse, server: Pick<InfoHost, "membership">): void {
  onlyGet(req);
  const etcdcluster = server.membership.version ?? "not_decided";
  writeJson(res, 200, {}, JSON.stringify({ etcdserver: ETCD_SERVER_VERSION, etcdcluster, kvctl: KVCTL_VERSION }));
}

/** etcd 3.4's health read (a QGET through the log) waits this long. */
const HEALTH_READ_TIMEOUT_MS = 1000;

/**
 * etcd 3.4's checkHealth: unhealthy with an active alarm, without a leader, or when a
 * linearizable read does not complete within a second; each answer counts in
 * etcd_server_health_success / etcd_server_health_failures.
 */
export async function checkHealth(server: HealthHost): Promise<boolean> {
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

export async function handleHealth(req: IncomingMessage, res: ServerResponse, server: HealthHost): Promise<void> {
  onlyGet(req);
  const healthy = await checkHealth(server);
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
  // etcd's RaftCluster.ClientURLs: every member's URLs, sorted as strings.
  const body = ctx.server.membership.list().flatMap((m) => m.clientUrls).sort(compareBytes).join(", ");
  res.writeHead(200, { ...corsHeaders, "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

/** Go's string order (bytes), which localeCompare is not. */
function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

export function memberJSON(m: Member): V2MemberJSON {
  return { id: m.id.toString(16), name: m.name, peerURLs: m.peerUrls, clientURLs: m.clientUrls };
}

/** The anonymous struct etcd's MemberCreateRequest.UnmarshalJSON decodes into, as Go names it. */
const MEMBER_REQUEST_TYPE = 'struct { PeerURLs []string "json:\\"peerURLs\\"" }';

/**
 * etcd's types.NewURLs: each URL trimmed, parsed (Go's url.Parse errors), of scheme http,
 * https, unix or unixs, with a host:port and no path; the list sorted. An error's text is Go's.
 */
export function parsePeerUrls(strs: readonly string[]): string[] | { error: string } {
  if (strs.length === 0) return { error: "no valid URLs given" };
  const out: string[] = [];
  for (const raw of strs) {
    const input = raw.replace(/^[\t\n\v\f\r \u0085\u00a0]+|[\t\n\v\f\r \u0085\u00a0]+$/g, "");
    if (/[\x00-\x1f\x7f]/.test(input)) return { error: `parse ${JSON.stringify(input)}: net/url: invalid control character in URL` };
    if (input.startsWith(":")) return { error: `parse ${JSON.stringify(input)}: missing protocol scheme` };
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(input);
    const lower = scheme?.[1]?.toLowerCase() ?? "";
    if (!["http", "https", "unix", "unixs"].includes(lower)) return { error: `URL scheme must be http, https, unix, or unixs: ${input}` };
    const rest = input.slice(lower.length + 1).replace(/#.*$/, "").replace(/\?.*$/, "");
    const authority = rest.startsWith("//") ? /^\/\/([^/]*)(.*)$/.exec(rest) : null;
    const host = authority?.[1]?.replace(/^.*@/, "") ?? "";
    const path = authority === null ? rest : authority[2] ?? "";
    const port = /^(\[[^\]]*\]|[^:]*)(:.*)?$/.exec(host)?.[2];
    if (port !== undefined && !/^:[0-9]*$/.test(port)) return { error: `parse ${JSON.stringify(input)}: invalid port ${JSON.stringify(port)} after host` };
    if (port === undefined || /^[^[].*:.*:/.test(host)) return { error: `URL address does not have the form "host:port": ${input}` };
    if (path !== "") return { error: `URL must not contain a path: ${input}` };
    out.push(lower + input.slice(lower.length));
  }
  return out.sort(compareBytes);
}

/** Validates a members write body as etcd's unmarshalRequest + MemberCreateRequest.UnmarshalJSON. */
async function readMemberRequest(req: IncomingMessage, headers: OutgoingHttpHeaders): Promise<string[]> {
  // etcd lower-cases and trims the media type only when parameters follow it.
  let ct = req.headers["content-type"] ?? "";
  const semi = ct.indexOf(";");
  if (semi >= 0) ct = ct.slice(0, semi).trim().toLowerCase();
  if (ct !== "application/json") {
    req.resume();
    throw new HttpMessageError(415, `Bad Content-Type ${ct}, accept application/json`, headers);
  }
  let body: Buffer;
  try {
    body = await readBody(req, 1 << 30);
  } catch (err) {
    if (err instanceof BodyReadError) throw new HttpMessageError(400, err.message, headers);
    throw err;
  }
  const syntax = goJsonSyntaxError(body);
  if (syntax !== undefined) throw new HttpMessageError(400, syntax, headers);
  const parsed: unknown = JSON.parse(body.toString("utf8"));
  if (parsed === null) throw new HttpMessageError(400, "no valid URLs given", headers);
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new HttpMessageError(400, `json: cannot unmarshal ${goJsonKind(parsed)} into Go value of type ${MEMBER_REQUEST_TYPE}`, headers);
  }
  // encoding/json matches field names case-insensitively.
  const key = Object.keys(parsed).filter((k) => k.toLowerCase() === "peerurls").pop();
  const urls = key === undefined ? null : (parsed as Record<string, unknown>)[key];
  if (urls !== null && !Array.isArray(urls)) {
    throw new HttpMessageError(400, `json: cannot unmarshal ${goJsonKind(urls)} into Go struct field .peerURLs of type []string`, headers);
  }
  for (const u of urls ?? []) {
    if (typeof u !== "string" && u !== null) {
      throw new HttpMessageError(400, `json: cannot unmarshal ${goJsonKind(u)} into Go struct field .peerURLs of type string`, headers);
    }
  }
  const checked = parsePeerUrls(((urls ?? []) as (string | null)[]).map((u) => u ?? ""));
  if ("error" in checked) throw new HttpMessageError(400, checked.error, headers);
  return checked;
}

/** etcd's types.IDFromString: hex, at most 64 bits; undefined for anything else. */
export function memberIdOf(text: string): bigint | undefined {
  if (!/^[0-9a-fA-F]+$/.test(text)) return undefined;
  const id = BigInt("0x" + text);
  return id < 1n << 64n ? id : undefined;
}

/** etcd's members handler checks the method before anything else, access included. */
export function checkMembersMethod(req: IncomingMessage): void {
  if (!["GET", "POST", "DELETE", "PUT"].includes(req.method ?? "")) {
    req.resume();
    throw methodNotAllowed("GET,POST,DELETE,PUT");
  }
}

export async function handleMembers(req: IncomingMessage, res: ServerResponse, subPath: string, ctx: InfoContext): Promise<void> {
  const headers = { [Header.kvClusterId]: ctx.clusterId, [Header.etcdClusterId]: ctx.clusterId };
  const s = ctx.server;
  const method = req.method ?? "GET";
  const id = subPath.replace(/^\//, "");
  if (method === "GET") {
    // encoding/json's Encoder ends each value with a newline.
    if (id === "") {
      writeJson(res, 200, headers, JSON.stringify({ members: s.membership.list().map(memberJSON) }) + "\n");
      return;
    }
    if (id === "leader") {
      const lead = s.membership.get(s.leaderId);
      if (!lead) throw new HttpMessageError(503, "During election", headers);
      writeJson(res, 200, headers, JSON.stringify(memberJSON(lead)) + "\n");
      return;
    }
    throw new HttpMessageError(404, "Not found", headers);
  }
  if (method === "POST") {
    const urls = await readMemberRequest(req, headers);
    const m = await withHeaders(s.members.add(urls), headers);
    writeJson(res, 201, headers, JSON.stringify(memberJSON(m)) + "\n");
    return;
  }
  if (id === "") {
    // etcd answers a DELETE/PUT without an id with a bare 405 (no Allow header).
    req.resume();
    throw new HttpTextError(405, "Method Not Allowed", headers);
  }
  // etcd's order: the id is parsed first (404 with the text as sent), then the body, then the member looked up (404 with the id in hex).
  const parsedId = memberIdOf(id);
  if (parsedId === undefined) {
    req.resume();
    throw new HttpMessageError(404, `No such member: ${id}`, headers);
  }
  const urls = method === "PUT" ? await readMemberRequest(req, headers) : (req.resume(), []);
  // An id past 2^53 names no member (kvctl's ids are below it): NaN looks up nothing, and
  // a removal still runs the quorum check first, as etcd's.
  const numeric = BigInt(Number(parsedId)) === parsedId ? Number(parsedId) : Number.NaN;
  const hexId = parsedId.toString(16);
  if (method === "DELETE") await withHeaders(s.members.remove(numeric), headers, hexId);
  else await withHeaders(s.members.update(numeric, urls), headers, hexId, { removedIsUnexpected: true });
  res.writeHead(204, { ...corsHeaders, ...headers });
  res.end();
}

/** etcd's members handler's statuses for a refused change. */
const MEMBER_ERROR_STATUS: Record<MemberErrorKind, number> = { notFound: 404, removed: 410, idExists: 409, peerUrlExists: 409, notLearner: 412, tooManyLearners: 500 };

/**
 * Member writes answer their errors with the cluster id header, as etcd's members handler
 * does; `hexId` names the member as the request did (etcd prints the id it parsed).
 * `removedIsUnexpected`: etcd's PUT has no case for a removed id (only its DELETE answers
 * 410 Gone), so the update of one falls through to its 500 for any unexpected error.
 */
async function withHeaders<T>(p: Promise<T>, headers: OutgoingHttpHeaders, hexId?: string, opts: { removedIsUnexpected?: boolean } = {}): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof MemberError) {
      if (err.kind === MemberErrorKind.removed && opts.removedIsUnexpected === true) throw new HttpMessageError(500, "Internal Server Error", headers);
      const named = hexId !== undefined && (err.kind === MemberErrorKind.notFound || err.kind === MemberErrorKind.removed);
      const message = named ? (err.kind === MemberErrorKind.notFound ? `No such member: ${hexId}` : `Member permanently removed: ${hexId}`) : err.message;
      throw new HttpMessageError(MEMBER_ERROR_STATUS[err.kind], message, headers);
    }
    if (err instanceof HttpMessageError) throw new HttpMessageError(err.status, err.message, { ...headers, ...err.headers });
    // etcd's v2 members API answers a refused change (--strict-reconfig-check) as any unexpected error.
    if (err instanceof ReconfigCheckError) throw new HttpMessageError(500, "Internal Server Error", headers);
    // A timeout too (a second change proposed while one is pending is dropped by Raft): only
    // the keys API answers these as a v2 error 300.
    if (err instanceof ServerUnavailableError) throw new HttpMessageError(500, "Internal Server Error", headers);
    throw err;
  }
}

export { notFound };
