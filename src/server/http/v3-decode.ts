// v3 gateway request bodies -> fully populated requests (absent fields take the protobuf
// zero value). Fields are read in proto field order, so that among several bad fields the
// error is about the one etcd names; oneof members are read after the plain fields, as
// jsonpb does. Field names: proto name or lowerCamelCase JSON name (v3-wire.ts).
import {
  CompareResult,
  CompareTarget,
  SortOrder,
  SortTarget,
  type Compare,
  type CompactionRequest,
  type DeleteRangeRequest,
  type LeaseId,
  type PutRequest,
  type RangeRequest,
  type RequestOp,
  type TxnRequest,
  type WatchCreate,
  compareKnown,
  sortOrderOf,
  sortTargetOf,
  unknownCompare,
} from "../../store/v3/index.ts";
import { V3PermType, type V3Permission, type V3PermTypeValue } from "../../auth/index.ts";
import { V3AlarmAction, V3AlarmType, type V3AlarmActionValue, type V3AlarmRequest, type V3AlarmTypeValue } from "./v3-backend.ts";
import {
  GatewayDecodeError,
  bool,
  bytes,
  enumValue,
  int64,
  int64Number,
  messageFields,
  pick,
  repeated,
  repeatedEnum,
  string,
  strings,
  uint64,
  type EnumType,
  type Fields,
} from "./v3-wire.ts";
import type { JsonNode } from "./v3-json.ts";
import { givenOperand } from "./v3-proto-size.ts";

const enumType = (values: Readonly<Record<string, number>>, goType: string): EnumType => ({ values, goType, protoName: goType });

export const SORT_ORDER = enumType(SortOrder, "etcdserverpb.RangeRequest_SortOrder");
export const SORT_TARGET = enumType(SortTarget, "etcdserverpb.RangeRequest_SortTarget");
export const COMPARE_RESULT = enumType(CompareResult, "etcdserverpb.Compare_CompareResult");
export const COMPARE_TARGET = enumType(CompareTarget, "etcdserverpb.Compare_CompareTarget");
export const FILTER_TYPE = enumType({ NOPUT: 0, NODELETE: 1 }, "etcdserverpb.WatchCreateRequest_FilterType");
export const ALARM_ACTION = enumType(V3AlarmAction, "etcdserverpb.AlarmRequest_AlarmAction");
export const ALARM_TYPE = enumType(V3AlarmType, "etcdserverpb.AlarmType");
export const PERM_TYPE = enumType(V3PermType, "authpb.Permission_Type");

const isKnown = (v: number, t: EnumType): boolean => Object.values(t.values).includes(v);

/**
 * An enum number jsonpb accepts but the server does not act on as etcd would: an unknown
 * alarm action crashes etcd 3.4.23. Refused with the gateway's wording for enums.
 */
function known<T extends number>(v: number, t: EnumType): T {
  if (isKnown(v, t)) return v as T;
  throw new GatewayDecodeError(`unknown value ${v} for enum ${t.protoName}`);
}

// --- KV ------------------------------------------------------------------------------------

export function decodeRange(f: Fields | undefined): RangeRequest {
  const key = bytes(pick(f, "key"));
  const rangeEnd = bytes(pick(f, "range_end", "rangeEnd"));
  const limit = int64Number(pick(f, "limit"));
  const revision = int64Number(pick(f, "revision"));
  const order = enumValue(pick(f, "sort_order", "sortOrder"), SORT_ORDER);
  const target = enumValue(pick(f, "sort_target", "sortTarget"), SORT_TARGET);
  // etcd does not sort for an unknown order and crashes on an unknown target: key order.
  const sortOrder = sortOrderOf(order);
  const sortTarget = sortTargetOf(order, target);
  return {
    key,
    rangeEnd,
    // etcd reads limit <= 0 as "no limit" and revision <= 0 as "current".
    limit: Math.max(0, limit),
    revision: Math.max(0, revision),
    sortOrder: sortOrder as RangeRequest["sortOrder"],
    sortTarget: sortTarget as RangeRequest["sortTarget"],
    serializable: bool(pick(f, "serializable")),
    keysOnly: bool(pick(f, "keys_only", "keysOnly")),
    countOnly: bool(pick(f, "count_only", "countOnly")),
    minModRevision: int64Number(pick(f, "min_mod_revision", "minModRevision")),
    maxModRevision: int64Number(pick(f, "max_mod_revision", "maxModRevision")),
    minCreateRevision: int64Number(pick(f, "min_create_revision", "minCreateRevision")),
    maxCreateRevision: int64Number(pick(f, "max_create_revision", "maxCreateRevision")),
  };
}

export function decodePut(f: Fields | undefined): PutRequest {
  return {
    key: bytes(pick(f, "key")),
    value: bytes(pick(f, "value")),
    lease: int64(pick(f, "lease")),
    prevKv: bool(pick(f, "prev_kv", "prevKv")),
    ignoreValue: bool(pick(f, "ignore_value", "ignoreValue")),
    ignoreLease: bool(pick(f, "ignore_lease", "ignoreLease")),
  };
}

export function decodeDeleteRange(f: Fields | undefined): DeleteRangeRequest {
  return {
    key: bytes(pick(f, "key")),
    rangeEnd: bytes(pick(f, "range_end", "rangeEnd")),
    prevKv: bool(pick(f, "prev_kv", "prevKv")),
  };
}

function decodeCompare(node: JsonNode): Compare {
  const f = messageFields(node);
  const resultNumber = enumValue(pick(f, "result"), COMPARE_RESULT);
  const targetNumber = enumValue(pick(f, "target"), COMPARE_TARGET);
  const key = bytes(pick(f, "key"));
  const rangeEnd = bytes(pick(f, "range_end", "rangeEnd"));
  // jsonpb takes any int32 as a number: etcd then evaluates the Compare as gRPC's would.
  if (!compareKnown(resultNumber, targetNumber)) return { ...unknownCompare(resultNumber, targetNumber), key, rangeEnd };
  const result = resultNumber as Compare["result"];
  const target = targetNumber as Compare["target"];
  // target_union: the member given last in proto order wins; an operand of another kind
  // than `target` compares as zero, as in etcd (it reads the union only if it matches).
  let union: CompareUnion = { target: CompareTarget.VERSION, version: 0 };
  // The member as sent, 0 included: it is on the wire etcd sizes (v3-proto-size.ts).
  let given: CompareUnion | undefined;
  const version = pick(f, "version");
  if (version !== undefined) union = given = { target: CompareTarget.VERSION, version: int64Number(version) };
  const create = pick(f, "create_revision", "createRevision");
  if (create !== undefined) union = given = { target: CompareTarget.CREATE, createRevision: int64Number(create) };
  const mod = pick(f, "mod_revision", "modRevision");
  if (mod !== undefined) union = given = { target: CompareTarget.MOD, modRevision: int64Number(mod) };
  const value = pick(f, "value");
  if (value !== undefined) union = given = { target: CompareTarget.VALUE, value: bytes(value) };
  const lease = pick(f, "lease");
  if (lease !== undefined) union = given = { target: CompareTarget.LEASE, lease: int64(lease) };
  return givenOperand({ ...operandFor(target, union), result, key, rangeEnd }, given);
}

type CompareUnion = Compare extends infer C ? (C extends Compare ? Omit<C, "result" | "key" | "rangeEnd"> : never) : never;

function operandFor(target: Compare["target"], u: CompareUnion): CompareUnion {
  switch (target) {
    case CompareTarget.VERSION:
      return { target, version: "version" in u ? u.version : 0 };
    case CompareTarget.CREATE:
      return { target, createRevision: "createRevision" in u ? u.createRevision : 0 };
    case CompareTarget.MOD:
      return { target, modRevision: "modRevision" in u ? u.modRevision : 0 };
    case CompareTarget.VALUE:
      return { target, value: "value" in u ? u.value : Buffer.alloc(0) };
    case CompareTarget.LEASE:
      return { target, lease: "lease" in u ? u.lease : 0n };
  }
}

/**
 * A RequestOp. One that names none of the four requests (`{}`) is passed on as an empty
 * object: the txn check answers it "key not found" as etcd does (store/v3 validateTxn).
 */
function decodeRequestOp(node: JsonNode): RequestOp {
  const f = messageFields(node);
  let op: RequestOp | undefined;
  const range = pick(f, "request_range", "requestRange");
  if (range !== undefined) op = { range: decodeRange(messageFields(range)) };
  const put = pick(f, "request_put", "requestPut");
  if (put !== undefined) op = { put: decodePut(messageFields(put)) };
  const del = pick(f, "request_delete_range", "requestDeleteRange");
  if (del !== undefined) op = { deleteRange: decodeDeleteRange(messageFields(del)) };
  const txn = pick(f, "request_txn", "requestTxn");
  if (txn !== undefined) op = { txn: decodeTxn(messageFields(txn)) };
  return op ?? ({} as RequestOp);
}

export function decodeTxn(f: Fields | undefined): TxnRequest {
  return {
    compare: repeated(pick(f, "compare")).map(decodeCompare),
    success: repeated(pick(f, "success")).map(decodeRequestOp),
    failure: repeated(pick(f, "failure")).map(decodeRequestOp),
  };
}

export function decodeCompaction(f: Fields | undefined): CompactionRequest {
  return { revision: int64Number(pick(f, "revision")), physical: bool(pick(f, "physical")) };
}

// --- Watch ---------------------------------------------------------------------------------

/** A watch create request as the gateway handles it: the hub's request plus the stream's fields. */
export interface WatchCreateMsg {
  create: Omit<WatchCreate, "id">;
  /** 0 = let the stream pick (etcd's AutoWatchID). */
  watchId: number;
  fragment: boolean;
}

export type WatchRequestMsg = WatchCreateMsg | { cancel: number } | { progress: true } | { none: true };

export function decodeWatchRequest(f: Fields | undefined): WatchRequestMsg {
  let msg: WatchRequestMsg = { none: true };
  const create = pick(f, "create_request", "createRequest");
  if (create !== undefined) msg = decodeWatchCreate(messageFields(create));
  const cancel = pick(f, "cancel_request", "cancelRequest");
  if (cancel !== undefined) msg = { cancel: int64Number(pick(messageFields(cancel), "watch_id", "watchId")) };
  const progress = pick(f, "progress_request", "progressRequest");
  if (progress !== undefined) {
    messageFields(progress);
    msg = { progress: true };
  }
  return msg;
}

function decodeWatchCreate(f: Fields | undefined): WatchCreateMsg {
  let key = bytes(pick(f, "key"));
  const rangeEnd = bytes(pick(f, "range_end", "rangeEnd"));
  const startRevision = int64Number(pick(f, "start_revision", "startRevision"));
  const progressNotify = bool(pick(f, "progress_notify", "progressNotify"));
  // Unknown filter numbers are ignored, as etcd's FiltersFromRequest does.
  const filters = repeatedEnum(pick(f, "filters"), FILTER_TYPE);
  const prevKv = bool(pick(f, "prev_kv", "prevKv"));
  const watchId = int64Number(pick(f, "watch_id", "watchId"));
  const fragment = bool(pick(f, "fragment"));
  // etcd: an empty key watches from "\0", the smallest key.
  if (key.length === 0) key = Buffer.from([0]);
  return {
    create: {
      key,
      rangeEnd,
      startRevision,
      prevKv,
      filters: { noPut: filters.includes(0), noDelete: filters.includes(1) },
      progressNotify,
    },
    watchId,
    fragment,
  };
}

// --- Lease ---------------------------------------------------------------------------------

export function decodeLeaseGrant(f: Fields | undefined): { ttl: number; id: LeaseId } {
  return { ttl: int64Number(pick(f, "TTL")), id: int64(pick(f, "ID")) };
}

/** LeaseRevokeRequest and LeaseKeepAliveRequest: just the ID. */
export function decodeLeaseId(f: Fields | undefined): LeaseId {
  return int64(pick(f, "ID"));
}

export function decodeLeaseTimeToLive(f: Fields | undefined): { id: LeaseId; keys: boolean } {
  return { id: int64(pick(f, "ID")), keys: bool(pick(f, "keys")) };
}

// --- Cluster and maintenance ---------------------------------------------------------------

export function decodeMemberAdd(f: Fields | undefined): { peerUrls: string[]; isLearner: boolean } {
  return { peerUrls: strings(pick(f, "peerURLs")), isLearner: bool(pick(f, "isLearner")) };
}

/** MemberRemove/MemberPromote: the uint64 ID as a decimal string. */
export function decodeMemberId(f: Fields | undefined): string {
  return uint64(pick(f, "ID")).toString();
}

export function decodeMemberUpdate(f: Fields | undefined): { id: string; peerUrls: string[] } {
  return { id: uint64(pick(f, "ID")).toString(), peerUrls: strings(pick(f, "peerURLs")) };
}

export function decodeAlarm(f: Fields | undefined): V3AlarmRequest {
  const action = known<V3AlarmActionValue>(enumValue(pick(f, "action"), ALARM_ACTION), ALARM_ACTION);
  const memberId = uint64(pick(f, "memberID")).toString();
  // Any int32, as etcd's alarm store keeps any type (only NOSPACE and CORRUPT act).
  const alarm: V3AlarmTypeValue = enumValue(pick(f, "alarm"), ALARM_TYPE);
  return { action, memberId, alarm };
}

export function decodeMoveLeader(f: Fields | undefined): string {
  return uint64(pick(f, "targetID")).toString();
}

// --- Auth ----------------------------------------------------------------------------------

/** A message with string fields only (most auth requests): each named field, "" when absent. */
export function decodeStrings<K extends string>(f: Fields | undefined, names: readonly K[]): Record<K, string> {
  const out = {} as Record<K, string>;
  for (const n of names) out[n] = string(pick(f, n));
  return out;
}

export function decodeUserAdd(f: Fields | undefined): { name: string; password: string; noPassword: boolean } {
  const name = string(pick(f, "name"));
  const password = string(pick(f, "password"));
  const options = messageFields(pick(f, "options"));
  return { name, password, noPassword: bool(pick(options, "no_password", "noPassword")) };
}

export function decodeRoleGrantPermission(f: Fields | undefined): { name: string; perm: V3Permission } {
  const name = string(pick(f, "name"));
  const p = messageFields(pick(f, "perm"));
  // Any int32, as etcd stores it; a type it does not know grants nothing.
  const permType: V3PermTypeValue = enumValue(pick(p, "permType"), PERM_TYPE);
  return { name, perm: { permType, key: bytes(pick(p, "key")), rangeEnd: bytes(pick(p, "range_end", "rangeEnd")) } };
}

export function decodeRoleRevokePermission(f: Fields | undefined): { role: string; key: Buffer; rangeEnd: Buffer } {
  return { role: string(pick(f, "role")), key: bytes(pick(f, "key")), rangeEnd: bytes(pick(f, "range_end", "rangeEnd")) };
}
