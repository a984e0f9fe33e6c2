// v3 gateway responses as etcd 3.4's grpc-gateway prints them (jsonpb, OrigName, no
// defaults): proto field names (snake_case, or the proto's own camelCase such as `ID`,
// `TTL`, `grantedTTL`, `dbSize`, `peerURLs`), fields in proto order, zero values omitted
// (0, false, "", empty bytes, empty lists, enum value 0), 64-bit integers as decimal
// strings, bytes as standard base64, enums by name. Nested txn responses carry a header
// with the revision only. The objects built here go through JSON.stringify unchanged.
import type {
  DeleteRangeResponse,
  KeyValue,
  LeaseGrantResponse,
  LeaseId,
  LeaseStatus,
  LeaseTimeToLiveResponse,
  PutResponse,
  RangeResponse,
  ResponseOp,
  TxnResponse,
  V3Event,
} from "../../store/v3/index.ts";
import type { V3AlarmMember, V3Header, V3Member, V3Permission, V3Status } from "./v3-backend.ts";

export type JsonObject = { [k: string]: JsonValue };
export type JsonValue = string | number | boolean | JsonValue[] | JsonObject;

const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64");

/** Sets `name` only for a non-zero value (proto3 JSON without defaults). */
function put(o: JsonObject, name: string, v: number | bigint | boolean | string | Uint8Array | JsonValue[] | JsonObject | undefined): void {
  if (v === undefined || v === 0 || v === 0n || v === false || v === "") return;
  if (typeof v === "number" || typeof v === "bigint") o[name] = String(v);
  else if (v instanceof Uint8Array) {
    if (v.length > 0) o[name] = b64(v);
  } else if (Array.isArray(v)) {
    if (v.length > 0) o[name] = v;
  } else o[name] = v;
}

/** ResponseHeader. `revision` 0 is omitted (cluster responses have none). */
export function header(h: V3Header): JsonObject {
  const o: JsonObject = {};
  if (h.clusterId !== "0") o.cluster_id = h.clusterId;
  if (h.memberId !== "0") o.member_id = h.memberId;
  put(o, "revision", h.revision);
  put(o, "raft_term", h.raftTerm);
  return o;
}

/** The header of a response nested in a txn: only the revision. */
function nestedHeader(revision: number): JsonObject {
  const o: JsonObject = {};
  put(o, "revision", revision);
  return o;
}

export function keyValue(kv: KeyValue): JsonObject {
  const o: JsonObject = {};
  put(o, "key", kv.key);
  put(o, "create_revision", kv.createRevision);
  put(o, "mod_revision", kv.modRevision);
  put(o, "version", kv.version);
  put(o, "value", kv.value);
  put(o, "lease", kv.lease);
  return o;
}

export function event(e: V3Event): JsonObject {
  const o: JsonObject = {};
  if (e.type === 1) o.type = "DELETE";
  o.kv = keyValue(e.kv);
  if (e.prevKv !== undefined) o.prev_kv = keyValue(e.prevKv);
  return o;
}

function rangeBody(h: JsonObject, r: RangeResponse): JsonObject {
  const o: JsonObject = { header: h };
  put(o, "kvs", r.kvs.map(keyValue));
  put(o, "more", r.more);
  put(o, "count", r.count);
  return o;
}

function putBody(h: JsonObject, r: PutResponse): JsonObject {
  const o: JsonObject = { header: h };
  if (r.prevKv !== undefined) o.prev_kv = keyValue(r.prevKv);
  return o;
}

function deleteRangeBody(h: JsonObject, r: DeleteRangeResponse): JsonObject {
  const o: JsonObject = { header: h };
  put(o, "deleted", r.deleted);
  put(o, "prev_kvs", r.prevKvs.map(keyValue));
  return o;
}

function txnBody(h: JsonObject, r: TxnResponse): JsonObject {
  const o: JsonObject = { header: h };
  put(o, "succeeded", r.succeeded);
  put(o, "responses", r.responses.map(responseOp));
  return o;
}

function responseOp(op: ResponseOp): JsonObject {
  if ("range" in op) return { response_range: rangeBody(nestedHeader(op.range.revision), op.range) };
  if ("put" in op) return { response_put: putBody(nestedHeader(op.put.revision), op.put) };
  if ("deleteRange" in op) return { response_delete_range: deleteRangeBody(nestedHeader(op.deleteRange.revision), op.deleteRange) };
  return { response_txn: txnBody(nestedHeader(op.txn.revision), op.txn) };
}

export const encodeRange = (h: V3Header, r: RangeResponse): JsonObject => rangeBody(header(h), r);
export const encodePut = (h: V3Header, r: PutResponse): JsonObject => putBody(header(h), r);
export const encodeDeleteRange = (h: V3Header, r: DeleteRangeResponse): JsonObject => deleteRangeBody(header(h), r);
export const encodeTxn = (h: V3Header, r: TxnResponse): JsonObject => txnBody(header(h), r);

/** Responses that are only a header (compaction, lease revoke, auth changes). */
export const encodeHeaderOnly = (h: V3Header): JsonObject => ({ header: header(h) });

// --- Lease ---------------------------------------------------------------------------------

export function encodeLeaseGrant(h: V3Header, r: LeaseGrantResponse): JsonObject {
  const o: JsonObject = { header: header(h) };
  put(o, "ID", r.id);
  put(o, "TTL", r.ttl);
  return o;
}

/** A keepalive answer; `ttl` undefined (unknown lease) leaves TTL out. */
export function encodeKeepAlive(h: V3Header, id: LeaseId, ttl: number | undefined): JsonObject {
  const o: JsonObject = { header: header(h) };
  put(o, "ID", id);
  put(o, "TTL", ttl);
  return o;
}

/** TimeToLive; an unknown lease answers TTL -1 (etcd: 200, not an error). */
export function encodeTimeToLive(h: V3Header, id: LeaseId, r: LeaseTimeToLiveResponse | undefined): JsonObject {
  const o: JsonObject = { header: header(h) };
  put(o, "ID", id);
  put(o, "TTL", r === undefined ? -1 : r.ttl);
  if (r !== undefined) {
    put(o, "grantedTTL", r.grantedTtl);
    put(o, "keys", r.keys.map(b64));
  }
  return o;
}

export function encodeLeases(h: V3Header, leases: LeaseStatus[]): JsonObject {
  const o: JsonObject = { header: header(h) };
  put(
    o,
    "leases",
    leases.map((l) => {
      const s: JsonObject = {};
      put(s, "ID", l.id);
      return s;
    }),
  );
  return o;
}

// --- Cluster and maintenance ---------------------------------------------------------------

export function member(m: V3Member): JsonObject {
  const o: JsonObject = {};
  if (m.id !== "0") o.ID = m.id;
  put(o, "name", m.name);
  put(o, "peerURLs", m.peerUrls);
  put(o, "clientURLs", m.clientUrls);
  put(o, "isLearner", m.isLearner);
  return o;
}

/** Cluster responses: etcd's ClusterServer fills no revision. */
export function encodeMembers(h: V3Header, members: V3Member[], added?: V3Member): JsonObject {
  const o: JsonObject = { header: header({ ...h, revision: 0 }) };
  if (added !== undefined) o.member = member(added);
  put(o, "members", members.map(member));
  return o;
}

export function encodeStatus(h: V3Header, s: V3Status): JsonObject {
  const o: JsonObject = { header: header(h) };
  put(o, "version", s.version);
  put(o, "dbSize", s.dbSize);
  if (s.leader !== "0") o.leader = s.leader;
  put(o, "raftIndex", s.raftIndex);
  put(o, "raftTerm", s.raftTerm);
  put(o, "raftAppliedIndex", s.raftAppliedIndex);
  put(o, "errors", s.errors);
  put(o, "dbSizeInUse", s.dbSizeInUse);
  put(o, "isLearner", s.isLearner);
  return o;
}

const ALARM_NAMES = ["NONE", "NOSPACE", "CORRUPT"] as const;

/** grpc-gateway's jsonpb: a known enum value by name, one the proto does not know as its bare number. */
function enumName(names: readonly string[], v: number): string | number {
  return names[v] ?? v;
}

/** AlarmResponse: etcd answers it without a header. */
export function encodeAlarms(alarms: V3AlarmMember[]): JsonObject {
  const o: JsonObject = {};
  put(
    o,
    "alarms",
    alarms.map((a) => {
      const m: JsonObject = {};
      if (a.memberId !== "0") m.memberID = a.memberId;
      if (a.alarm !== 0) m.alarm = enumName(ALARM_NAMES, a.alarm);
      return m;
    }),
  );
  return o;
}

/** HashResponse: the hash is a uint32, a JSON number. */
export function encodeHash(h: V3Header, hash: number): JsonObject {
  const o: JsonObject = { header: header(h) };
  if (hash !== 0) o.hash = hash;
  return o;
}

// --- Auth ----------------------------------------------------------------------------------

export function encodeToken(h: V3Header, token: string): JsonObject {
  const o: JsonObject = { header: header(h) };
  put(o, "token", token);
  return o;
}

/** User get/list, role list: a header and one list of names. */
export function encodeNames(h: V3Header, field: "roles" | "users", names: string[]): JsonObject {
  const o: JsonObject = { header: header(h) };
  put(o, field, names);
  return o;
}

const PERM_NAMES = ["READ", "WRITE", "READWRITE"] as const;

export function encodeRolePerms(h: V3Header, perms: V3Permission[]): JsonObject {
  const o: JsonObject = { header: header(h) };
  put(
    o,
    "perm",
    perms.map((p) => {
      const m: JsonObject = {};
      if (p.permType !== 0) m.permType = enumName(PERM_NAMES, p.permType);
      put(m, "key", p.key);
      put(m, "range_end", p.rangeEnd);
      return m;
    }),
  );
  return o;
}

// --- Streams -------------------------------------------------------------------------------

/** One watch response (WatchResponse). */
export interface WatchResponseFields {
  header: V3Header;
  watchId: number;
  created?: boolean;
  canceled?: boolean;
  compactRevision?: number;
  cancelReason?: string;
  fragment?: boolean;
  events?: readonly V3Event[];
}

export function encodeWatchResponse(w: WatchResponseFields): JsonObject {
  const o: JsonObject = { header: header(w.header) };
  put(o, "watch_id", w.watchId);
  put(o, "created", w.created);
  put(o, "canceled", w.canceled);
  put(o, "compact_revision", w.compactRevision);
  put(o, "cancel_reason", w.cancelReason);
  put(o, "fragment", w.fragment);
  if (w.events !== undefined) put(o, "events", w.events.map(event));
  return o;
}

/** A SnapshotResponse: one blob and the bytes still to come (no header, as etcd). */
export function encodeSnapshotChunk(remaining: number, blob: Uint8Array): JsonObject {
  const o: JsonObject = {};
  put(o, "remaining_bytes", remaining);
  put(o, "blob", blob);
  return o;
}

/** A line of a response stream: `{"result":...}` and a newline (grpc-gateway's delimiter). */
export function streamLine(result: JsonObject): string {
  return `{"result":${JSON.stringify(result)}}\n`;
}
