// Protobuf messages (generated, ./gen/) <-> the store's request and result shapes
// (store/v3/types.ts, http/v3-backend.ts). int64 fields arrive as bigint: lease IDs stay
// bigint end to end; revisions, counts and TTLs become numbers (they stay far below 2^53);
// member and cluster IDs are uint64 and travel as decimal strings on the backend side.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GenMessage } from "@bufbuild/protobuf/codegenv2";
import { GrpcCode, V3Error } from "../../api/v3-errors.ts";
import type { V3Permission, V3PermTypeValue } from "../../auth/index.ts";
import {
  CompareTarget,
  type Compare,
  type CompareResultValue,
  type DeleteRangeRequest,
  type DeleteRangeResponse,
  type KeyValue,
  type PutRequest,
  type PutResponse,
  type RangeRequest,
  type RangeResponse,
  type RequestOp,
  type ResponseOp,
  type TxnRequest,
  type TxnResponse,
  type V3Event,
  type WatchCreate,
  compareKnown,
  sortOrderOf,
  sortTargetOf,
  unknownCompare,
} from "../../store/v3/index.ts";
import type { V3AlarmActionValue, V3AlarmTypeValue, V3Header, V3Member } from "../http/v3-backend.ts";
import type * as pb from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import type * as mvccpb from "./gen/etcd/mvcc/mvccpb/kv_pb.ts";
import type * as authpb from "./gen/etcd/auth/authpb/auth_pb.ts";

const EMPTY = Buffer.alloc(0);

/** A Uint8Array from the decoder as a Buffer over the same memory (no copy). */
export function buf(b: Uint8Array): Buffer {
  return b.length === 0 ? EMPTY : Buffer.from(b.buffer, b.byteOffset, b.length);
}

/** An int64 revision/count/TTL as a number. Values beyond 2^53 saturate, never wrap. */
export function num(v: bigint): number {
  return Number(v);
}

function enumIn<T extends number>(v: number, max: number, name: string): T {
  if (Number.isInteger(v) && v >= 0 && v <= max) return v as T;
  throw new V3Error(GrpcCode.InvalidArgument, `etcdserver: unknown value ${v} for enum ${name}`);
}

// --- requests --------------------------------------------------------------------------------

export function rangeRequest(r: pb.RangeRequest): RangeRequest {
  return {
    key: buf(r.key),
    rangeEnd: buf(r.rangeEnd),
    limit: num(r.limit),
    revision: num(r.revision),
    sortOrder: sortOrderOf(r.sortOrder),
    sortTarget: sortTargetOf(r.sortOrder, r.sortTarget),
    serializable: r.serializable,
    keysOnly: r.keysOnly,
    countOnly: r.countOnly,
    minModRevision: num(r.minModRevision),
    maxModRevision: num(r.maxModRevision),
    minCreateRevision: num(r.minCreateRevision),
    maxCreateRevision: num(r.maxCreateRevision),
  };
}

export function putRequest(r: pb.PutRequest): PutRequest {
  return { key: buf(r.key), value: buf(r.value), lease: r.lease, prevKv: r.prevKv, ignoreValue: r.ignoreValue, ignoreLease: r.ignoreLease };
}

export function deleteRangeRequest(r: pb.DeleteRangeRequest): DeleteRangeRequest {
  return { key: buf(r.key), rangeEnd: buf(r.rangeEnd), prevKv: r.prevKv };
}

/** A Compare: an operand of another kind than `target` compares as zero, as in etcd. */
function compare(c: pb.Compare): Compare {
  const key = buf(c.key);
  const rangeEnd = buf(c.rangeEnd);
  if (!compareKnown(c.result, c.target)) return { ...unknownCompare(c.result, c.target), key, rangeEnd };
  const result = c.result as CompareResultValue;
  const target = c.target as Compare["target"];
  const u = c.targetUnion;
  switch (target) {
    case CompareTarget.VERSION:
      return { target, version: u.case === "version" ? num(u.value) : 0, result, key, rangeEnd };
    case CompareTarget.CREATE:
      return { target, createRevision: u.case === "createRevision" ? num(u.value) : 0, result, key, rangeEnd };
    case CompareTarget.MOD:
      return { target, modRevision: u.case === "modRevision" ? num(u.value) : 0, result, key, rangeEnd };
    case CompareTarget.VALUE:
      return { target, value: u.case === "value" ? buf(u.value) : EMPTY, result, key, rangeEnd };
    case CompareTarget.LEASE:
      return { target, lease: u.case === "lease" ? u.value : 0n, result, key, rangeEnd };
  }
}

/** An op naming none of the four requests passes as `{}`: validateTxn answers it as etcd. */
function requestOp(op: pb.RequestOp): RequestOp {
  const r = op.request;
  switch (r.case) {
    case "requestRange":
      return { range: rangeRequest(r.value) };
    case "requestPut":
      return { put: putRequest(r.value) };
    case "requestDeleteRange":
      return { deleteRange: deleteRangeRequest(r.value) };
    case "requestTxn":
      return { txn: txnRequest(r.value) };
    default:
      return {} as RequestOp;
  }
}

export function txnRequest(t: pb.TxnRequest): TxnRequest {
  return { compare: t.compare.map(compare), success: t.success.map(requestOp), failure: t.failure.map(requestOp) };
}

export function watchCreate(c: pb.WatchCreateRequest): Omit<WatchCreate, "id"> {
  return {
    key: buf(c.key),
    rangeEnd: buf(c.rangeEnd),
    startRevision: num(c.startRevision),
    prevKv: c.prevKv,
    // etcd ignores filter values it does not know.
    filters: { noPut: c.filters.includes(0), noDelete: c.filters.includes(1) },
    progressNotify: c.progressNotify,
  };
}

export function alarmAction(v: number): V3AlarmActionValue {
  return enumIn<V3AlarmActionValue>(v, 2, "etcdserverpb.AlarmRequest_AlarmAction");
}

/**
 * Any number, as etcd's applier takes it: an alarm type it does not know is raised, listed
 * and cleared like the others and changes nothing else (the decoder gives an int32).
 */
export function alarmType(v: number): V3AlarmTypeValue {
  return v;
}

/** A grant without `perm` is READ on the empty key (etcd 3.4 would dereference nil). */
export function permission(p: authpb.Permission | undefined): V3Permission {
  if (p === undefined) return { permType: 0, key: EMPTY, rangeEnd: EMPTY };
  // A type etcd does not know is stored as it came and grants nothing (auth/v3-permissions.ts).
  const permType: V3PermTypeValue = p.permType;
  return { permType, key: buf(p.key), rangeEnd: buf(p.rangeEnd) };
}

// --- responses -------------------------------------------------------------------------------

type Init<T> = T extends { $typeName: string } ? MessageInitShape<GenMessage<T>> : never;

export function header(h: V3Header): Hdr {
  return { clusterId: BigInt(h.clusterId), memberId: BigInt(h.memberId), revision: BigInt(h.revision), raftTerm: BigInt(h.raftTerm) };
}

export function keyValue(kv: KeyValue): Init<mvccpb.KeyValue> {
  return {
    key: kv.key,
    createRevision: BigInt(kv.createRevision),
    modRevision: BigInt(kv.modRevision),
    version: BigInt(kv.version),
    value: kv.value,
    lease: kv.lease,
  };
}

export function event(e: V3Event): Init<mvccpb.Event> {
  const out: Init<mvccpb.Event> = { type: e.type, kv: keyValue(e.kv) };
  if (e.prevKv !== undefined) out.prevKv = keyValue(e.prevKv);
  return out;
}

type Hdr = Init<pb.ResponseHeader>;

export function rangeResponse(header: Hdr, r: RangeResponse): Init<pb.RangeResponse> {
  return { header, kvs: r.kvs.map(keyValue), more: r.more, count: BigInt(r.count) };
}

export function putResponse(header: Hdr, r: PutResponse): Init<pb.PutResponse> {
  const out: Init<pb.PutResponse> = { header };
  if (r.prevKv !== undefined) out.prevKv = keyValue(r.prevKv);
  return out;
}

export function deleteRangeResponse(header: Hdr, r: DeleteRangeResponse): Init<pb.DeleteRangeResponse> {
  return { header, deleted: BigInt(r.deleted), prevKvs: r.prevKvs.map(keyValue) };
}

/** A txn's responses; a nested response's header holds its revision only, as in etcd. */
export function txnResponse(header: Hdr, r: TxnResponse): Init<pb.TxnResponse> {
  return { header, succeeded: r.succeeded, responses: r.responses.map(responseOp) };
}

function responseOp(op: ResponseOp): Init<pb.ResponseOp> {
  if ("range" in op) return { response: { case: "responseRange", value: rangeResponse({ revision: BigInt(op.range.revision) }, op.range) } };
  if ("put" in op) return { response: { case: "responsePut", value: putResponse({ revision: BigInt(op.put.revision) }, op.put) } };
  if ("deleteRange" in op) {
    return { response: { case: "responseDeleteRange", value: deleteRangeResponse({ revision: BigInt(op.deleteRange.revision) }, op.deleteRange) } };
  }
  return { response: { case: "responseTxn", value: txnResponse({ revision: BigInt(op.txn.revision) }, op.txn) } };
}

export function member(m: V3Member): Init<pb.Member> {
  return { ID: BigInt(m.id), name: m.name, peerURLs: m.peerUrls, clientURLs: m.clientUrls, isLearner: m.isLearner };
}

export function permissionOut(p: V3Permission): Init<authpb.Permission> {
  return { permType: p.permType, key: p.key, rangeEnd: p.rangeEnd };
}
