// The peer port: Raft messages between members (the transport's endpoints under /raft),
// the membership a joining member reads before it starts (bootstrap.ts), lease keepalives
// and TTL questions forwarded to the leader (etcd's /leases, peer-leases.ts), and a hash of
// the replicated state for checking that members converged (fault tests, operators), and
// member promotions forwarded to the leader (etcd's /members/promote/<id>: only the leader
// knows whether the learner caught up; member-promote-wire.ts). Nothing else is served there.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { PeerTransport } from "../../transport/index.ts";
import type { Membership } from "../membership.ts";
import { PEER_MEMBERS_PATH } from "../bootstrap.ts";
import { Header } from "../../api/headers.ts";
import { PEER_LEASE_PATH } from "../lease-peer-wire.ts";
import { handlePeerLeases, type PeerLeaseHost } from "./peer-leases.ts";
import type { MemberAdmin } from "../member-admin.ts";
import { MemberError, MemberErrorKind } from "../errors.ts";
import { PEER_PROMOTE_PREFIX, encodeMembers, promoteErrorAnswer } from "../member-promote-wire.ts";

/** GET: `{ appliedIndex, storeIndex, hash }` of this member's replicated state. */
export const PEER_HASH_PATH = "/hash";

/** What the peer port serves of the member. */
export interface PeerRouterHost {
  readonly transport: Pick<PeerTransport, "handler">;
  readonly leases: PeerLeaseHost;
  readonly membership: Pick<Membership, "knownJSON">;
  readonly clusterId: number;
  readonly members: Pick<MemberAdmin, "promote">;
  stateHash(): { appliedIndex: number; storeIndex: number; hash: string };
}

export function createPeerRouter(server: PeerRouterHost): (req: IncomingMessage, res: ServerResponse) => void {
  const raft = server.transport.handler();
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (path === "/raft" || path.startsWith("/raft/")) {
      raft(req, res);
      return;
    }
    if (path === PEER_LEASE_PATH || path.startsWith(PEER_LEASE_PATH + "/")) {
      handlePeerLeases(req, res, server.leases);
      return;
    }
    req.resume();
    if (path === PEER_MEMBERS_PATH && req.method === "GET") {
      const body = JSON.stringify(server.membership.knownJSON());
      res.writeHead(200, { "Content-Type": "application/json", [Header.kvClusterId]: server.clusterId.toString(16), "Content-Length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (path.startsWith(PEER_PROMOTE_PREFIX)) {
      void promote(server, path.slice(PEER_PROMOTE_PREFIX.length), req, res);
      return;
    }
    if (path === PEER_HASH_PATH && req.method === "GET") {
      let body: string;
      try {
        body = JSON.stringify(server.stateHash());
      } catch (err) {
        // While a leader's snapshot is installed the old database is closed before the new
        // one opens, and hashing reads every live value: the member answers 503 then (ask
        // again), instead of the exception ending the process.
        const text = `state hash unavailable: ${err instanceof Error ? err.message : String(err)}`;
        res.writeHead(503, { "Content-Type": "text/plain; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" });
    res.end("404 page not found\n");
  };
}

function text(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

/** etcd's peerMemberPromoteHandler: the promotion decided here (or forwarded on, should this member not lead). */
async function promote(server: PeerRouterHost, idText: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== "POST") {
    text(res, 405, "Method Not Allowed\n", { Allow: "POST" });
    return;
  }
  const cluster = { [Header.kvClusterId]: server.clusterId.toString(16) };
  // Go's ParseUint(s, 10, 64); ids past 2^53 name no kvctl member (apply would refuse them alike).
  if (!/^[0-9]{1,20}$/.test(idText) || BigInt(idText) >= 1n << 64n) {
    text(res, 404, `member ${idText} not found in cluster\n`, cluster);
    return;
  }
  const id = Number(idText);
  try {
    if (!Number.isSafeInteger(id)) throw new MemberError(MemberErrorKind.notFound, "membership: ID not found");
    const body = encodeMembers(await server.members.promote(id)) + "\n";
    res.writeHead(200, { ...cluster, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  } catch (err) {
    const answer = promoteErrorAnswer(err);
    text(res, answer.status, answer.body, cluster);
  }
}
