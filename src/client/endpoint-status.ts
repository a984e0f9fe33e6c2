// One member's status over the v2 API, for `kvctl endpoint status` (etcdctl v3's
// `endpoint status`, which v2 lacks): its id and leader from GET /v2/stats/self, its Raft
// term and applied index from the X-Raft-Term / X-Raft-Index headers of GET /v2/keys/
// (a serializable read: the member answers from its own state, as v3's Status does).
//
// The cluster client must hold exactly the one endpoint to describe: asking another
// member would describe that member instead.

import { Header } from "../api/headers.ts";
import type { ClusterClient } from "./cluster.ts";
import { ClientError, invalidJsonError } from "./errors.ts";
import { joinPath } from "./go-url.ts";

export interface EndpointStatus {
  /** Member id as the member prints it (hex, no leading zeros). */
  id: string;
  name: string;
  /** The leader's id as this member knows it ("" when it knows none). */
  leader: string;
  isLeader: boolean;
  raftTerm: number;
  raftIndex: number;
}

export interface EndpointStatusOptions {
  signal?: AbortSignal;
}

function parse(body: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(body) as unknown;
  } catch {
    throw invalidJsonError();
  }
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The server's `message` (or v2 error `message`) for a refused request. */
function refusal(status: number, body: string): ClientError {
  let message = "";
  try {
    const m = (JSON.parse(body) as { message?: unknown } | null)?.message;
    message = typeof m === "string" ? m : "";
  } catch {
    // not JSON: fall back to the status
  }
  return new ClientError("STATUS_ERROR", message !== "" ? message : `unexpected status code ${status}`);
}

function headerNumber(headers: Readonly<Record<string, string>>, name: string): number {
  const raw = headers[name.toLowerCase()];
  const n = raw === undefined ? Number.NaN : Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new ClientError("MISSING_HEADER", `response has no valid ${name} header`);
  return n;
}

export async function getEndpointStatus(cluster: ClusterClient, o: EndpointStatusOptions = {}): Promise<EndpointStatus> {
  const opts = o.signal !== undefined ? { signal: o.signal } : {};
  const self = await cluster.do({ method: "GET", path: (base) => joinPath(base, "/v2/stats/self") }, opts);
  if (self.status !== 200) throw refusal(self.status, self.body);
  const stats = parse(self.body);
  const id = typeof stats["id"] === "string" ? stats["id"] : "";
  const info = stats["leaderInfo"];
  const leaderRaw = typeof info === "object" && info !== null ? (info as Record<string, unknown>)["leader"] : undefined;
  const leader = typeof leaderRaw === "string" ? leaderRaw : "";
  // The root directory always exists; its GET carries the Raft headers (errors do not).
  const keys = await cluster.do({ method: "GET", path: (base) => joinPath(base, "/v2/keys/") }, opts);
  if (keys.status !== 200) throw refusal(keys.status, keys.body);
  return {
    id,
    name: typeof stats["name"] === "string" ? stats["name"] : "",
    leader,
    isLeader: stats["state"] === "StateLeader" || (id !== "" && leader === id),
    raftTerm: headerNumber(keys.headers, Header.raftTerm),
    raftIndex: headerNumber(keys.headers, Header.raftIndex),
  };
}
