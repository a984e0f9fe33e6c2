// Read-only cluster endpoints: /v2/stats/{store,self,leader}, /health, /version.

import type { ClusterClient } from "./cluster.ts";
import { ClientError, invalidJsonError } from "./errors.ts";
import { joinPath } from "./go-url.ts";
import { parseEndpoint } from "./cluster.ts";
import type { Transport } from "./transport.ts";

export const statsKinds = ["store", "self", "leader"] as const;
export type StatsKind = (typeof statsKinds)[number];

export interface StatsOptions {
  signal?: AbortSignal;
}

/** The stats document as the server sent it (key order kept), parsed. */
export async function getStats(cluster: ClusterClient, kind: StatsKind, o: StatsOptions = {}): Promise<unknown> {
  const res = await cluster.do(
    { method: "GET", path: (base) => joinPath(base, "/v2/stats", kind) },
    o.signal !== undefined ? { signal: o.signal } : {},
  );
  const body = parseBody(res.body);
  if (res.status !== 200) {
    // e.g. 403 {"message":"not current leader"} for leader stats asked of a follower.
    const message = (body as { message?: unknown } | null)?.message;
    throw new ClientError("STATS_ERROR", typeof message === "string" ? message : `unexpected status code ${res.status}`);
  }
  return body;
}

export interface HealthResult {
  healthy: boolean;
}

/**
 * GET <clientURL>/health on one member, as etcdctl cluster-health does: `{"health":"true"}`
 * (etcd 3.4) or `{"health":true}` both count. Throws on network or JSON failure.
 */
export async function getHealth(transport: Transport, clientURL: string, o: StatsOptions = {}): Promise<HealthResult> {
  const ep = parseEndpoint(clientURL);
  const req = { method: "GET" as const, origin: ep.origin, path: joinPath(ep.basePath, "health") };
  const res = await transport.request(o.signal !== undefined ? { ...req, signal: o.signal } : req);
  const body = parseBody(res.body) as { health?: unknown } | null;
  if (typeof body !== "object" || body === null) throw invalidJsonError();
  return { healthy: body.health === true || body.health === "true" };
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidJsonError();
  }
}
