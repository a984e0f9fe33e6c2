// The v3 JSON gateway's wire shapes (grpc-gateway's jsonpb of etcdserverpb): snake_case
// field names, bytes as base64, int64/uint64 as decimal strings (a kvctl server may send
// numbers; both are accepted), zero values omitted, enums by name. The client passes
// these through untouched so that 64-bit IDs never lose precision in a JS number.

/** An int64/uint64 field: a decimal string from etcd's gateway, maybe a number elsewhere. */
export type WireInt = string | number;

export interface WireHeader {
  cluster_id?: WireInt;
  member_id?: WireInt;
  revision?: WireInt;
  raft_term?: WireInt;
}

export interface WireKeyValue {
  key?: string;
  create_revision?: WireInt;
  mod_revision?: WireInt;
  version?: WireInt;
  value?: string;
  lease?: WireInt;
}

export interface WireRangeRequest {
  key: string;
  range_end?: string;
  limit?: number;
  revision?: number;
  sort_order?: "NONE" | "ASCEND" | "DESCEND";
  sort_target?: "KEY" | "VERSION" | "CREATE" | "MOD" | "VALUE";
  serializable?: boolean;
  keys_only?: boolean;
  count_only?: boolean;
}

export interface WireRangeResponse {
  header?: WireHeader;
  kvs?: WireKeyValue[];
  more?: boolean;
  count?: WireInt;
}

export interface WirePutRequest {
  key: string;
  value?: string;
  lease?: string;
  prev_kv?: boolean;
  ignore_value?: boolean;
  ignore_lease?: boolean;
}

export interface WirePutResponse {
  header?: WireHeader;
  prev_kv?: WireKeyValue;
}

export interface WireDeleteRangeRequest {
  key: string;
  range_end?: string;
  prev_kv?: boolean;
}

export interface WireDeleteRangeResponse {
  header?: WireHeader;
  deleted?: WireInt;
  prev_kvs?: WireKeyValue[];
}

export type WireCompareTarget = "VERSION" | "CREATE" | "MOD" | "VALUE" | "LEASE";
export type WireCompareResult = "EQUAL" | "GREATER" | "LESS" | "NOT_EQUAL";

export interface WireCompare {
  result?: WireCompareResult;
  target?: WireCompareTarget;
  key: string;
  range_end?: string;
  version?: WireInt;
  create_revision?: WireInt;
  mod_revision?: WireInt;
  value?: string;
  lease?: WireInt;
}

export interface WireRequestOp {
  request_range?: WireRangeRequest;
  request_put?: WirePutRequest;
  request_delete_range?: WireDeleteRangeRequest;
  request_txn?: WireTxnRequest;
}

export interface WireTxnRequest {
  compare?: WireCompare[];
  success?: WireRequestOp[];
  failure?: WireRequestOp[];
}

export interface WireResponseOp {
  response_range?: WireRangeResponse;
  response_put?: WirePutResponse;
  response_delete_range?: WireDeleteRangeResponse;
  response_txn?: WireTxnResponse;
}

export interface WireTxnResponse {
  header?: WireHeader;
  succeeded?: boolean;
  responses?: WireResponseOp[];
}

export interface WireEvent {
  /** "PUT" is the zero value: omitted. */
  type?: "PUT" | "DELETE" | number;
  kv?: WireKeyValue;
  prev_kv?: WireKeyValue;
}

export interface WireWatchResponse {
  header?: WireHeader;
  watch_id?: WireInt;
  created?: boolean;
  canceled?: boolean;
  compact_revision?: WireInt;
  cancel_reason?: string;
  fragment?: boolean;
  events?: WireEvent[];
}

export interface WireLeaseGrantResponse {
  header?: WireHeader;
  ID?: WireInt;
  TTL?: WireInt;
  error?: string;
}

export interface WireLeaseKeepAliveResponse {
  header?: WireHeader;
  ID?: WireInt;
  TTL?: WireInt;
}

export interface WireLeaseTimeToLiveResponse {
  header?: WireHeader;
  ID?: WireInt;
  TTL?: WireInt;
  grantedTTL?: WireInt;
  keys?: string[];
}

export interface WireLeaseLeasesResponse {
  header?: WireHeader;
  leases?: { ID?: WireInt }[];
}

/** Responses that carry nothing but the header (revoke, compaction, user add …). */
export interface WireHeaderResponse {
  header?: WireHeader;
}

export interface WireAuthenticateResponse {
  header?: WireHeader;
  token?: string;
}

export interface WireUserGetResponse {
  header?: WireHeader;
  roles?: string[];
}

export interface WireUserListResponse {
  header?: WireHeader;
  users?: string[];
}

export interface WireRoleListResponse {
  header?: WireHeader;
  roles?: string[];
}

export interface WirePermission {
  /** "READ" is the zero value: omitted. */
  permType?: "READ" | "WRITE" | "READWRITE" | number;
  key?: string;
  range_end?: string;
}

export interface WireRoleGetResponse {
  header?: WireHeader;
  perm?: WirePermission[];
}

/** Text or bytes to the gateway's base64. */
export function b64(data: string | Buffer): string {
  return (typeof data === "string" ? Buffer.from(data, "utf8") : data).toString("base64");
}

/** The gateway's base64 (absent = empty) to bytes. */
export function unb64(data: string | undefined): Buffer {
  return data === undefined ? Buffer.alloc(0) : Buffer.from(data, "base64");
}

/** A wire int as a JS number (revisions, TTLs, counts: far below 2^53). */
export function wireNumber(v: WireInt | undefined): number {
  return v === undefined ? 0 : Number(v);
}
