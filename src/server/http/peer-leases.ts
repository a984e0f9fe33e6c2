// The leader's side of lease requests forwarded by the other members, on the peer port
// (etcd's leasehttp handler): POST /leases (a keepalive), /leases/internal (a TTL
// question) and kvctl's /leases/batch (keepalives together). The body is read capped
// and decoded here; the lease keeper answers as the primary lessor, and its answer and
// refusals become etcd's statuses and texts here. The wire is lease-peer-wire.ts.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { LeaseKeeper } from "../lease-keeper.ts";
import {
  APPLY_TIMEOUT_TEXT,
  LEASE_NOT_FOUND_TEXT,
  NOT_PRIMARY_TEXT,
  PEER_LEASE_BATCH_PATH,
  PEER_LEASE_INTERNAL_PATH,
  PEER_LEASE_PATH,
  UNKNOWN_PATH_TEXT,
  decodeLeaseIds,
  decodeRenewRequest,
  decodeTimeToLiveRequest,
  encodeRenewResponse,
  encodeTimeToLiveResponse,
  encodeTtls,
} from "../lease-peer-wire.ts";
import { BodyTooLargeError, readBody } from "./body.ts";

/** What the peer lease endpoints use of the member: its lease keeper as the primary lessor. */
export type PeerLeaseHost = Pick<LeaseKeeper, "renewForPeer" | "timeToLiveForPeer">;

/**
 * The largest body read: a full batch is at most 1024 varints of 10 bytes; anything near
 * this is not a lease request.
 */
export const PEER_LEASE_BODY_LIMIT = 1 << 20;

type Answer = { status: number; body: Uint8Array | string };

const refusal = (why: "notPrimary" | "catchingUp"): Answer => (why === "catchingUp" ? { status: 408, body: APPLY_TIMEOUT_TEXT } : { status: 400, body: NOT_PRIMARY_TEXT });
const unmarshalError: Answer = { status: 400, body: "error unmarshalling request" };

export function handlePeerLeases(req: IncomingMessage, res: ServerResponse, leases: PeerLeaseHost): void {
  const answer = (a: Answer): void => {
    if (res.headersSent || res.destroyed) return;
    const bytes = typeof a.body === "string" ? Buffer.from(a.body + "\n") : a.body;
    const type = typeof a.body === "string" ? "text/plain; charset=utf-8" : "application/protobuf";
    res.writeHead(a.status, { "Content-Type": type, "Content-Length": bytes.length });
    res.end(bytes);
  };
  if (req.method !== "POST") {
    req.resume();
    return answer({ status: 405, body: "Method Not Allowed" });
  }
  const path = (req.url ?? "/").split("?")[0];
  readBody(req, PEER_LEASE_BODY_LIMIT).then(
    (body) =>
      serve(path, body, leases).then(answer, (err: unknown) => answer({ status: 500, body: String(err) })),
    // etcd's leasehttp answers a body it cannot read 400 "error reading body".
    (err: unknown) =>
      answer(err instanceof BodyTooLargeError ? { status: 413, body: `request body larger than ${PEER_LEASE_BODY_LIMIT} bytes` } : { status: 400, body: "error reading body" }),
  );
}

async function serve(path: string | undefined, body: Buffer, leases: PeerLeaseHost): Promise<Answer> {
  switch (path) {
    case PEER_LEASE_BATCH_PATH: {
      let ids;
      try {
        ids = decodeLeaseIds(body);
      } catch {
        return unmarshalError;
      }
      const r = await leases.renewForPeer(ids);
      return "refused" in r ? refusal(r.refused) : { status: 200, body: encodeTtls(r.value) };
    }
    case PEER_LEASE_PATH: {
      let id;
      try {
        id = decodeRenewRequest(body);
      } catch {
        return unmarshalError;
      }
      const r = await leases.renewForPeer([id]);
      if ("refused" in r) return refusal(r.refused);
      const ttl = r.value[0];
      return ttl === undefined ? { status: 404, body: LEASE_NOT_FOUND_TEXT } : { status: 200, body: encodeRenewResponse(id, ttl) };
    }
    case PEER_LEASE_INTERNAL_PATH: {
      let q;
      try {
        q = decodeTimeToLiveRequest(body);
      } catch {
        return unmarshalError;
      }
      const r = await leases.timeToLiveForPeer(q.id, q.keys);
      if ("refused" in r) return refusal(r.refused);
      return r.value === undefined ? { status: 404, body: LEASE_NOT_FOUND_TEXT } : { status: 200, body: encodeTimeToLiveResponse(r.value) };
    }
    default:
      return { status: 400, body: `${UNKNOWN_PATH_TEXT} ${JSON.stringify(path)}` };
  }
}
