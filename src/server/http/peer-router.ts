// The peer port: Raft messages between members (the transport's endpoints under /raft),
// the membership a joining member reads before it starts (bootstrap.ts), lease keepalives
// and TTL questions forwarded to the leader (etcd's /leases, peer-leases.ts), and a hash of
// the replicated state for checking that members converged (fault tests, operators).
// Nothing else is served there.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { PeerTransport } from "../../transport/index.ts";
import type { Membership } from "../membership.ts";
import { PEER_MEMBERS_PATH } from "../bootstrap.ts";
import { Header } from "../../api/headers.ts";
import { PEER_LEASE_PATH } from "../lease-peer-wire.ts";
import { handlePeerLeases, type PeerLeaseHost } from "./peer-leases.ts";

/** GET: `{ appliedIndex, storeIndex, hash }` of this member's replicated state. */
export const PEER_HASH_PATH = "/hash";

/** What the peer port serves of the member. */
export interface PeerRouterHost {
  readonly transport: Pick<PeerTransport, "handler">;
  readonly leases: PeerLeaseHost;
  readonly membership: Pick<Membership, "toJSON">;
  readonly clusterId: number;
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
      const body = JSON.stringify(server.membership.toJSON());
      res.writeHead(200, { "Content-Type": "application/json", [Header.kvClusterId]: server.clusterId.toString(16), "Content-Length": Buffer.byteLength(body) });
      res.end(body);
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
