// The wire of lease requests between members, on the peer port: etcd's leasehttp paths and
// protobuf bodies (POST /leases: a LeaseKeepAliveRequest; /leases/internal: a
// LeaseTimeToLiveRequest inside etcd's LeaseInternalRequest), their answers and error
// texts, and kvctl's own /leases/batch. The follower's side is lease-keeper.ts (it forwards
// to the leader), the leader's side http/peer-leases.ts: both read and write them here.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { LeaseId, LeaseTimeToLiveResponse } from "../store/v3/index.ts";
import {
  LeaseKeepAliveRequestSchema,
  LeaseKeepAliveResponseSchema,
  LeaseTimeToLiveRequestSchema,
  LeaseTimeToLiveResponseSchema,
} from "./grpc/gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";

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
  const len: number[] = [];
  let n = inner.length;
  while (n >= 0x80) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  return Buffer.concat([Buffer.from([0x0a, ...len]), inner]);
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

/** Appends `v` (an int64, two's complement when negative) as a protobuf varint. */
function pushVarint(out: number[], v: bigint): void {
  let u = BigInt.asUintN(64, v);
  while (u >= 0x80n) {
    out.push(Number(u & 0x7fn) | 0x80);
    u >>= 7n;
  }
  out.push(Number(u));
}

/** A message of one packed repeated int64, field 1. */
function encodePacked(values: readonly bigint[]): Buffer {
  const inner: number[] = [];
  for (const v of values) pushVarint(inner, v);
  const head = [0x0a];
  pushVarint(head, BigInt(inner.length));
  return Buffer.from([...head, ...inner]);
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

// /leases
export const encodeRenewRequest = (id: LeaseId): Uint8Array => toBinary(LeaseKeepAliveRequestSchema, create(LeaseKeepAliveRequestSchema, { ID: id }));
export const decodeRenewRequest = (body: Uint8Array): LeaseId => fromBinary(LeaseKeepAliveRequestSchema, body).ID;
export const encodeRenewResponse = (id: LeaseId, ttl: number): Uint8Array =>
  toBinary(LeaseKeepAliveResponseSchema, create(LeaseKeepAliveResponseSchema, { ID: id, TTL: BigInt(ttl) }));
export function decodeRenewResponse(body: Uint8Array): { id: LeaseId; ttl: number } {
  const r = fromBinary(LeaseKeepAliveResponseSchema, body);
  return { id: r.ID, ttl: Number(r.TTL) };
}

// /leases/internal
export const encodeTimeToLiveRequest = (id: LeaseId, keys: boolean): Buffer =>
  wrapField1(toBinary(LeaseTimeToLiveRequestSchema, create(LeaseTimeToLiveRequestSchema, { ID: id, keys })));
export function decodeTimeToLiveRequest(body: Uint8Array): { id: LeaseId; keys: boolean } {
  const inner = fromBinary(LeaseTimeToLiveRequestSchema, unwrapField1(body));
  return { id: inner.ID, keys: inner.keys };
}
/** The answer carries no header (etcd fills the asking member's after the forward). */
export function encodeTimeToLiveResponse(t: LeaseTimeToLiveResponse): Buffer {
  return wrapField1(
    toBinary(LeaseTimeToLiveResponseSchema, create(LeaseTimeToLiveResponseSchema, { header: {}, ID: t.id, TTL: BigInt(t.ttl), grantedTTL: BigInt(t.grantedTtl), keys: t.keys })),
  );
}
export function decodeTimeToLiveResponse(body: Uint8Array): LeaseTimeToLiveResponse {
  const r = fromBinary(LeaseTimeToLiveResponseSchema, unwrapField1(body));
  return { revision: 0, id: r.ID, ttl: Number(r.TTL), grantedTtl: Number(r.grantedTTL), keys: r.keys.map((k) => Buffer.from(k)) };
}
