// The wire of lease requests between members, on the peer port: etcd's leasehttp paths and
// protobuf bodies (POST /leases: a LeaseKeepAliveRequest; /leases/internal: a
// LeaseTimeToLiveRequest inside etcd's LeaseInternalRequest), their answers and error
// texts, and kvctl's own /leases/batch. The follower's side is lease-keeper.ts (it forwards
// to the leader), the leader's side http/peer-leases.ts: both read and write them here.
// The messages are encoded by hand (proto-writer.ts, read by lease-peer-proto.ts), byte for byte as @bufbuild
// encodes rpc.proto's (lease-peer-wire.test.ts compares them): a member serves its peers
// before it loads the gRPC code.
import type { LeaseId, LeaseTimeToLiveResponse } from "../store/v3/index.ts";
import { bytesOf, int64Of, readFields } from "./lease-peer-proto.ts";
import { ProtoWriter } from "./proto-writer.ts";

/** etcd's leasehttp paths on the peer port. */
export const PEER_LEASE_PATH = "/leases";
export const PEER_LEASE_INTERNAL_PATH = "/leases/internal";
/**
 * Keepalives forwarded together. The body is the lease IDs as a packed repeated int64
 * (field 1); the answer, their TTLs in the same order (field 1, packed), -1 for a lease
 * that does not exist.
 */
export const PEER_LEASE_BATCH_PATH = "/leases/batch";

/** etcd's lease.ErrLeaseNotFound text, answered with 404. */
export const LEASE_NOT_FOUND_TEXT = "lease not found";
/** Asked a member that does not lead (400). */
export const NOT_PRIMARY_TEXT = "not a primary lessor";
/** Asked a new leader not yet the primary lessor after etcd's applyTimeout (408). */
export const APPLY_TIMEOUT_TEXT = "waiting for node to catch up its applied index has timed out";
/** A path the leader does not serve (400): an older kvctl answers /leases/batch with it. */
export const UNKNOWN_PATH_TEXT = "unknown request path";

export function joinPath(base: string, path: string): string {
  return base.replace(/\/+$/, "") + path;
}

/** etcd's leasepb.LeaseInternalRequest/Response: the message as field 1 (length-delimited). */
function wrapField1(inner: Uint8Array): Buffer {
  return new ProtoWriter().bytesElement(1, inner).finish();
}

/** Field 1 of a message holding one length-delimited field 1 (an empty message when absent). */
function unwrapField1(outer: Uint8Array): Uint8Array {
  if (outer.length === 0) return outer;
  if (outer[0] !== 0x0a) throw new Error("expected field 1");
  let len = 0;
  let shift = 0;
  let i = 1;
  for (;;) {
    const b = outer[i++];
    if (b === undefined || shift > 28) throw new Error("bad length");
    len |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
    shift += 7;
  }
  if (i + len > outer.length) throw new Error("truncated");
  return outer.subarray(i, i + len);
}

/** A message of one packed repeated int64, field 1 (written even when empty). */
function encodePacked(values: readonly bigint[]): Buffer {
  const inner = new ProtoWriter();
  for (const v of values) inner.varint(v);
  return wrapField1(inner.finish());
}

/** The int64s of a packed repeated field 1 (empty message: none). */
function decodePacked(msg: Uint8Array): bigint[] {
  const inner = unwrapField1(msg);
  const out: bigint[] = [];
  let i = 0;
  while (i < inner.length) {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = inner[i++];
      if (b === undefined || shift > 63n) throw new Error("bad varint");
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) break;
      shift += 7n;
    }
    out.push(BigInt.asIntN(64, v));
  }
  return out;
}

// /leases/batch
export const encodeLeaseIds = (ids: readonly LeaseId[]): Buffer => encodePacked(ids);
export const decodeLeaseIds = (body: Uint8Array): LeaseId[] => decodePacked(body);
export const encodeTtls = (ttls: readonly (number | undefined)[]): Buffer => encodePacked(ttls.map((t) => BigInt(t ?? -1)));
export const decodeTtls = (body: Uint8Array): number[] => decodePacked(body).map(Number);

// /leases: LeaseKeepAliveRequest { int64 ID = 1 }, LeaseKeepAliveResponse { ResponseHeader header = 1; int64 ID = 2; int64 TTL = 3 }.
export const encodeRenewRequest = (id: LeaseId): Uint8Array => new ProtoWriter().int64(1, id).finish();
export function decodeRenewRequest(body: Uint8Array): LeaseId {
  let id = 0n;
  for (const f of readFields(body)) if (f.field === 1) id = int64Of(f);
  return id;
}
export const encodeRenewResponse = (id: LeaseId, ttl: number): Uint8Array => new ProtoWriter().int64(2, id).int64(3, BigInt(ttl)).finish();
export function decodeRenewResponse(body: Uint8Array): { id: LeaseId; ttl: number } {
  let id = 0n;
  let ttl = 0n;
  for (const f of readFields(body)) {
    if (f.field === 1) checkMessage(bytesOf(f));
    else if (f.field === 2) id = int64Of(f);
    else if (f.field === 3) ttl = int64Of(f);
  }
  return { id, ttl: Number(ttl) };
}

// /leases/internal: LeaseTimeToLiveRequest { int64 ID = 1; bool keys = 2 },
// LeaseTimeToLiveResponse { ResponseHeader header = 1; int64 ID = 2; int64 TTL = 3; int64 grantedTTL = 4; repeated bytes keys = 5 }.
export const encodeTimeToLiveRequest = (id: LeaseId, keys: boolean): Buffer => wrapField1(new ProtoWriter().int64(1, id).bool(2, keys).finish());
export function decodeTimeToLiveRequest(body: Uint8Array): { id: LeaseId; keys: boolean } {
  let id = 0n;
  let keys = false;
  for (const f of readFields(unwrapField1(body))) {
    if (f.field === 1) id = int64Of(f);
    else if (f.field === 2) keys = int64Of(f) !== 0n;
  }
  return { id, keys };
}
/** The answer carries an empty header (etcd fills the asking member's after the forward). */
export function encodeTimeToLiveResponse(t: LeaseTimeToLiveResponse): Buffer {
  const w = new ProtoWriter().bytesElement(1, new Uint8Array(0)).int64(2, t.id).int64(3, BigInt(t.ttl)).int64(4, BigInt(t.grantedTtl));
  for (const k of t.keys) w.bytesElement(5, k);
  return wrapField1(w.finish());
}
export function decodeTimeToLiveResponse(body: Uint8Array): LeaseTimeToLiveResponse {
  const r: LeaseTimeToLiveResponse = { revision: 0, id: 0n, ttl: 0, grantedTtl: 0, keys: [] };
  for (const f of readFields(unwrapField1(body))) {
    if (f.field === 1) checkMessage(bytesOf(f));
    else if (f.field === 2) r.id = int64Of(f);
    else if (f.field === 3) r.ttl = Number(int64Of(f));
    else if (f.field === 4) r.grantedTtl = Number(int64Of(f));
    else if (f.field === 5) r.keys.push(Buffer.from(bytesOf(f)));
  }
  return r;
}

/** A nested message we do not use (the header) is still read through, so a malformed one is refused as fromBinary refused it. */
function checkMessage(msg: Uint8Array): void {
  void [...readFields(msg)];
}
