// Protobuf encoded sizes of v3 messages. etcd's limits are on these sizes, not on the JSON:
// the gRPC server refuses a request message over --max-request-bytes + 512 KiB (code 8),
// the server refuses a raft request (the request plus its header) over --max-request-bytes
// ("etcdserver: request is too large"), and a watcher asking for fragments gets its
// responses split at --max-request-bytes. The gateway reproduces the three.
import {
  bigVarintBytes,
  keyValueBytes,
  varintBytes,
  type Compare,
  type DeleteRangeRequest,
  type KeyValue,
  type PutRequest,
  type RangeRequest,
  type RequestOp,
  type TxnRequest,
  type V3Event,
} from "../../store/v3/index.ts";

/** etcd's grpcOverheadBytes: the gRPC receive limit is --max-request-bytes plus this. */
export const GRPC_OVERHEAD_BYTES = 512 * 1024;

/** Length of a varint; negative int64 values take 10 bytes. */
export function varintLen(v: number | bigint): number {
  if (typeof v === "bigint") return bigVarintBytes(v);
  return v >= 0 && Number.isSafeInteger(v) ? varintBytes(v) : bigVarintBytes(BigInt(Math.trunc(v)));
}

const tagLen = (field: number): number => varintLen(field << 3);
const intField = (field: number, v: number | bigint): number => (v === 0 || v === 0n ? 0 : tagLen(field) + varintLen(v));
const boolField = (field: number, v: boolean): number => (v ? tagLen(field) + 1 : 0);
const bytesField = (field: number, len: number): number => (len === 0 ? 0 : tagLen(field) + varintLen(len) + len);
/** A present sub-message is written even when empty. */
const msgField = (field: number, size: number): number => tagLen(field) + varintLen(size) + size;

export function rangeRequestSize(r: RangeRequest): number {
  return (
    bytesField(1, r.key.length) +
    bytesField(2, r.rangeEnd.length) +
    intField(3, r.limit) +
    intField(4, r.revision) +
    intField(5, r.sortOrder) +
    intField(6, r.sortTarget) +
    boolField(7, r.serializable) +
    boolField(8, r.keysOnly) +
    boolField(9, r.countOnly) +
    intField(10, r.minModRevision) +
    intField(11, r.maxModRevision) +
    intField(12, r.minCreateRevision) +
    intField(13, r.maxCreateRevision)
  );
}

export function putRequestSize(r: PutRequest): number {
  return (
    bytesField(1, r.key.length) +
    bytesField(2, r.value.length) +
    intField(3, r.lease) +
    boolField(4, r.prevKv) +
    boolField(5, r.ignoreValue) +
    boolField(6, r.ignoreLease)
  );
}

export function deleteRangeRequestSize(r: DeleteRangeRequest): number {
  return bytesField(1, r.key.length) + bytesField(2, r.rangeEnd.length) + boolField(3, r.prevKv);
}

/** A compare's target_union member: the one field of the oneof a sender set. */
export type CompareOperandGiven =
  | { version: number }
  | { createRevision: number }
  | { modRevision: number }
  | { value: Buffer }
  | { lease: bigint };

/**
 * A set oneof member is on the wire even when it holds 0 or nothing: its tag and a 0 varint
 * (or a 0 length), 2 bytes, as gogoproto writes it and etcd then counts it.
 */
function oneofSize(u: CompareOperandGiven): number {
  if ("version" in u) return tagLen(4) + varintLen(u.version);
  if ("createRevision" in u) return tagLen(5) + varintLen(u.createRevision);
  if ("modRevision" in u) return tagLen(6) + varintLen(u.modRevision);
  if ("value" in u) return tagLen(7) + varintLen(u.value.length) + u.value.length;
  return tagLen(8) + varintLen(u.lease);
}

/**
 * The target_union's bytes of the compares whose operand, as sent, is not what their shape
 * says: a Compare keeps the operand of its target only, and 0 for one not sent, so it cannot
 * tell an operand sent as 0 (on the wire) from none (absent), nor keep one of another kind
 * than its target (on the wire, compared as zero). Recorded by whoever read or built the
 * compare (givenOperand), read by compareSize; the compare objects themselves stay the
 * store's shape.
 */
const operandBytes = new WeakMap<Compare, number>();

/** `c`, whose sender set its target_union to `given` (undefined: set none): sized as sent from now on. */
export function givenOperand<C extends Compare>(c: C, given: CompareOperandGiven | undefined): C {
  const bytes = given === undefined ? 0 : oneofSize(given);
  if (bytes !== shapeOperandSize(c)) operandBytes.set(c, bytes);
  return c;
}

/** The operand's bytes as the shape says: its target's member, absent when 0. */
function shapeOperandSize(c: Compare): number {
  if ("version" in c) return intField(4, c.version);
  if ("createRevision" in c) return intField(5, c.createRevision);
  if ("modRevision" in c) return intField(6, c.modRevision);
  if ("value" in c) return bytesField(7, c.value.length);
  if ("lease" in c) return intField(8, c.lease);
  return 0;
}

function compareSize(c: Compare): number {
  const union = operandBytes.get(c) ?? shapeOperandSize(c);
  return intField(1, c.result) + intField(2, c.target) + bytesField(3, c.key.length) + union + bytesField(64, c.rangeEnd.length);
}

function requestOpSize(op: RequestOp): number {
  if ("range" in op) return msgField(1, rangeRequestSize(op.range));
  if ("put" in op) return msgField(2, putRequestSize(op.put));
  if ("deleteRange" in op) return msgField(3, deleteRangeRequestSize(op.deleteRange));
  if ("txn" in op) return msgField(4, txnRequestSize(op.txn));
  return 0;
}

export function txnRequestSize(r: TxnRequest): number {
  let size = 0;
  for (const c of r.compare) size += msgField(1, compareSize(c));
  for (const op of r.success) size += msgField(2, requestOpSize(op));
  for (const op of r.failure) size += msgField(3, requestOpSize(op));
  return size;
}

/**
 * An InternalRaftRequest carrying a request of `size` bytes in field `field`: the request
 * plus etcd's RequestHeader (field 100; a 64-bit request ID). The user name of an
 * authenticated caller, a few more bytes in etcd, is not counted.
 */
export function raftRequestSize(field: number, size: number): number {
  const header = tagLen(1) + 10;
  return msgField(100, header) + msgField(field, size);
}

/** InternalRaftRequest field numbers of the requests the gateway checks. */
export const RaftField = { put: 4, deleteRange: 5, txn: 6 } as const;

/** mvccpb.KeyValue's size: the store's encoder's (store/v3/keyvalue-proto.ts), which gRPC writes them with. */
export function keyValueSize(kv: KeyValue): number {
  return keyValueBytes(kv.modRevision, false, kv);
}

export function eventSize(e: V3Event): number {
  return intField(1, e.type) + msgField(2, keyValueSize(e.kv)) + (e.prevKv ? msgField(3, keyValueSize(e.prevKv)) : 0);
}
