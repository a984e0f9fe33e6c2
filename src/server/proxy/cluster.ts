// Where the proxy learns the cluster: the peer URLs it starts from (the cluster file of an
// earlier run, else --initial-cluster or --discovery-srv), and the members' client URLs,
// read from a member's peer port (GET /members, as etcd's GetClusterFromRemotePeers). The
// peer URLs learnt at each refresh are kept in <data-dir>/proxy/cluster, etcd's file and
// format ({"PeerURLs":[...]}), so a restarted proxy finds a cluster that has moved.
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Agent } from "node:http";
import { peerGet } from "../../transport/index.ts";
import { PEER_MEMBERS_PATH } from "../bootstrap.ts";
import type { Logger } from "../logger.ts";

export interface ClusterView {
  peerUrls: string[];
  clientUrls: string[];
}

/** <data-dir>/proxy: its presence makes a data dir a proxy's (etcd's dirProxy). */
export const proxyDir = (dataDir: string): string => join(dataDir, "proxy");
export const clusterFile = (dataDir: string): string => join(proxyDir(dataDir), "cluster");

/** The peer URLs of an earlier run, or undefined when there is no cluster file. */
export async function readClusterFile(dataDir: string): Promise<string[] | undefined> {
  let text: string;
  try {
    text = await readFile(clusterFile(dataDir), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  const j = JSON.parse(text) as { PeerURLs?: unknown };
  if (!Array.isArray(j.PeerURLs) || !j.PeerURLs.every((u) => typeof u === "string")) {
    throw new Error(`Cannot parse ${clusterFile(dataDir)}: PeerURLs must be a list of URLs`);
  }
  return j.PeerURLs as string[];
}

/** Writes the cluster file as etcd does: a .bak file, then a rename over the old one. */
export async function writeClusterFile(dataDir: string, peerUrls: readonly string[]): Promise<void> {
  await mkdir(proxyDir(dataDir), { recursive: true, mode: 0o700 });
  const file = clusterFile(dataDir);
  await writeFile(`${file}.bak`, JSON.stringify({ PeerURLs: peerUrls }), { mode: 0o600, flush: true });
  await rename(`${file}.bak`, file);
}

interface AnyMember {
  peerUrls?: unknown;
  clientUrls?: unknown;
  peerURLs?: unknown;
  clientURLs?: unknown;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/**
 * The URLs of a /members answer: kvctl's `{clusterId, members: [{peerUrls, clientUrls}]}`
 * or etcd's `[{peerURLs, clientURLs}]` (so a kvctl proxy can front etcd members too).
 * Sorted, as etcd's RaftCluster.PeerURLs / ClientURLs are.
 */
export function parseMembers(body: string): ClusterView {
  const j = JSON.parse(body) as unknown;
  const list: AnyMember[] | undefined = Array.isArray(j)
    ? (j as AnyMember[])
    : typeof j === "object" && j !== null && Array.isArray((j as { members?: unknown }).members)
      ? (j as { members: AnyMember[] }).members
      : undefined;
  if (list === undefined) throw new Error("Cannot parse the member list: no members");
  const peerUrls = list.flatMap((m) => strings(m.peerUrls ?? m.peerURLs)).sort();
  const clientUrls = list.flatMap((m) => strings(m.clientUrls ?? m.clientURLs)).sort();
  return { peerUrls, clientUrls };
}

/** Asks each peer URL in turn; the first good answer wins. Undefined when none answered. */
export async function clusterFromPeers(o: { peerUrls: readonly string[]; agents: { http: Agent; https: Agent }; timeoutMs: number; log: Logger }): Promise<ClusterView | undefined> {
  for (const u of o.peerUrls) {
    const address = new URL(PEER_MEMBERS_PATH, u);
    try {
      const res = await peerGet(address, { agent: address.protocol === "https:" ? o.agents.https : o.agents.http, timeoutMs: o.timeoutMs });
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      return parseMembers(res.body);
    } catch (err) {
      o.log.warn("failed to get cluster response", { address: address.href, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return undefined;
}
