// The v2 members API (/v2/members), with etcd Go client's status checks and messages.

import type { V2MemberJSON } from "../api/v2-types.ts";
import type { ClusterClient } from "./cluster.ts";
import { ClientError, invalidJsonError } from "./errors.ts";
import { joinPath } from "./go-url.ts";
import type { HttpResponse } from "./transport.ts";

const membersPrefix = "/v2/members";

export interface MemberCallOptions {
  signal?: AbortSignal;
}

function opts(o: MemberCallOptions): { signal?: AbortSignal } {
  return o.signal !== undefined ? { signal: o.signal } : {};
}

/** `unexpected status code N`, the Go client's assertStatusCode. */
function assertStatus(res: HttpResponse, ...want: number[]): void {
  if (!want.includes(res.status)) throw new ClientError("UNEXPECTED_STATUS", `unexpected status code ${res.status}`);
}

function json(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw invalidJsonError();
  }
}

/** A member error body `{"message": "..."}` (409 on add/update, 404 on update). */
function membersError(res: HttpResponse): ClientError {
  const parsed = json(res.body) as { message?: unknown } | null;
  const message = typeof parsed?.message === "string" ? parsed.message : "";
  return new ClientError("MEMBERS_ERROR", message);
}

function toMember(v: unknown): V2MemberJSON {
  const o = (typeof v === "object" && v !== null ? v : {}) as Record<string, unknown>;
  const strings = (x: unknown): string[] => (Array.isArray(x) ? x.filter((s): s is string => typeof s === "string") : []);
  return {
    id: typeof o["id"] === "string" ? o["id"] : "",
    name: typeof o["name"] === "string" ? o["name"] : "",
    peerURLs: strings(o["peerURLs"]),
    clientURLs: strings(o["clientURLs"]),
  };
}

export async function listMembers(cluster: ClusterClient, o: MemberCallOptions = {}): Promise<V2MemberJSON[]> {
  const res = await cluster.do({ method: "GET", path: (base) => joinPath(base, membersPrefix) }, opts(o));
  assertStatus(res, 200);
  const parsed = json(res.body) as { members?: unknown } | null;
  return Array.isArray(parsed?.members) ? parsed.members.map(toMember) : [];
}

export async function getLeader(cluster: ClusterClient, o: MemberCallOptions = {}): Promise<V2MemberJSON> {
  const res = await cluster.do({ method: "GET", path: (base) => joinPath(base, membersPrefix, "leader") }, opts(o));
  assertStatus(res, 200);
  return toMember(json(res.body));
}

/**
 * pkg/types NewURLs, which the Go client's member Add and Update run before any request:
 * each URL trimmed, parsed, its scheme http, https, unix or unixs, its host `host:port`, no
 * path; the list sorted (so the body etcdctl sends is sorted too). Throws its messages.
 */
export function goPeerURLs(given: readonly string[]): string[] {
  if (given.length === 0) throw new ClientError("BAD_PEER_URL", "no valid URLs given");
  const out: string[] = [];
  for (const raw of given) {
    const text = raw.trim();
    const bad = (message: string): ClientError => new ClientError("BAD_PEER_URL", message);
    // url.Parse: a scheme, or else a first segment without a colon.
    const m = /^([A-Za-z][A-Za-z0-9+.-]*):(.*)$/s.exec(text);
    if (m === null) {
      if (text.startsWith(":")) throw bad(`parse ${JSON.stringify(text)}: missing protocol scheme`);
      if ((text.split("/")[0] ?? "").includes(":")) throw bad(`parse ${JSON.stringify(text)}: first path segment in URL cannot contain colon`);
    }
    const scheme = (m?.[1] ?? "").toLowerCase();
    if (!["http", "https", "unix", "unixs"].includes(scheme)) throw bad(`URL scheme must be http, https, unix, or unixs: ${text}`);
    const rest = (m?.[2] ?? "").replace(/[?#].*$/s, "");
    const authority = rest.startsWith("//") ? rest.slice(2) : undefined;
    const slash = authority === undefined ? -1 : authority.indexOf("/");
    const host = authority === undefined ? "" : slash === -1 ? authority : authority.slice(0, slash);
    const hostPart = host.replace(/^.*@/, "");
    if (hostPart.startsWith("[") && !hostPart.includes("]")) throw bad(`parse ${JSON.stringify(text)}: missing ']' in host`);
    if (!splitsHostPort(hostPart)) throw bad(`URL address does not have the form "host:port": ${text}`);
    const path = authority === undefined ? rest : slash === -1 ? "" : authority.slice(slash);
    if (path !== "") throw bad(`URL must not contain a path: ${text}`);
    out.push(`${scheme}://${host}`);
  }
  return out.sort();
}

/** Whether Go's net.SplitHostPort accepts `hostport` (a port, maybe empty, after the last colon). */
function splitsHostPort(hostport: string): boolean {
  const colon = hostport.lastIndexOf(":");
  if (colon === -1) return false;
  const host = hostport.slice(0, colon);
  if (host.startsWith("[")) return host.endsWith("]") && !host.slice(1, -1).includes("[") && !host.slice(1, -1).includes("]");
  return !host.includes(":") && !host.includes("[") && !host.includes("]");
}

export async function addMember(
  cluster: ClusterClient,
  peerURL: string,
  o: MemberCallOptions = {},
): Promise<V2MemberJSON> {
  const peerURLs = goPeerURLs([peerURL]);
  const res = await cluster.do(
    {
      method: "POST",
      path: (base) => joinPath(base, membersPrefix),
      body: JSON.stringify({ peerURLs }),
      contentType: "application/json",
    },
    opts(o),
  );
  assertStatus(res, 201, 409);
  if (res.status !== 201) throw membersError(res);
  return toMember(json(res.body));
}

export async function removeMember(cluster: ClusterClient, id: string, o: MemberCallOptions = {}): Promise<void> {
  const res = await cluster.do({ method: "DELETE", path: (base) => joinPath(base, membersPrefix, id) }, opts(o));
  assertStatus(res, 204, 410);
}

export async function updateMember(
  cluster: ClusterClient,
  id: string,
  peerURLs: readonly string[],
  o: MemberCallOptions = {},
): Promise<void> {
  const checked = goPeerURLs(peerURLs);
  const res = await cluster.do(
    {
      method: "PUT",
      path: (base) => joinPath(base, membersPrefix, id),
      body: JSON.stringify({ peerURLs: checked }),
      contentType: "application/json",
    },
    opts(o),
  );
  assertStatus(res, 204, 404, 409);
  if (res.status !== 204) throw membersError(res);
}

/**
 * etcd client's Sync: replace the endpoints with every member's client URLs. With no
 * published client URL at all the endpoints are left alone and NO_ENDPOINTS is thrown.
 */
export async function syncEndpoints(cluster: ClusterClient, o: MemberCallOptions = {}): Promise<void> {
  const members = await listMembers(cluster, o);
  const eps = members.flatMap((m) => m.clientURLs);
  if (eps.length === 0) throw new ClientError("NO_ENDPOINTS", "client: no endpoints available");
  const current = cluster.endpoints();
  // Same set as before: keep the order the user gave (and the pinned endpoint).
  if (eps.length === current.length && [...eps].sort().join(",") === [...current].sort().join(",")) return;
  cluster.setEndpoints(eps);
}
