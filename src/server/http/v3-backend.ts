// What the v3 JSON gateway needs from the server (types only). The gateway decodes and
// validates requests (JSON, base64, etcd's v3rpc edge checks, request size), calls ONE
// method, and encodes the result; the server behind this interface does the rest: auth
// from the caller's token, proposing through Raft, ReadIndex, apply, the watch hub.
//
// Contract for every method:
// - failures are thrown as V3Error (src/api/v3-errors.ts): the gateway answers them with
//   etcd's body and the HTTP status of the gRPC code; anything else becomes code 2 (500);
// - requests arrive fully populated and already checked as etcd's v3rpc checks them
//   (empty key, ignore_value/ignore_lease, txn size/overlaps/empty ops, --max-request-bytes);
// - results are in store form (Buffers, bigint lease IDs, numeric revisions); member and
//   cluster IDs are decimal strings (uint64 as the gateway prints them);
// - the response header is `header(result revision)`; a result revision of 0 or none means
//   "the current revision" (etcd's header.fill).
import type { WatchStreamCounts } from "../metrics/watch-metrics.ts";
import type {
  CompactionRequest,
  DeleteRangeRequest,
  DeleteRangeResponse,
  HashKvResult,
  LeaseGrantResponse,
  LeaseId,
  LeaseStatus,
  LeaseTimeToLiveResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
  WatchCreate,
  WatchSink,
} from "../../store/v3/index.ts";
import type { ServerResponse } from "node:http";
import type { Deadline } from "../deadline.ts";
import type { V3Permission, V3PermTypeValue } from "../../auth/index.ts";

/** Who is calling: the Grpc-Metadata-Token header, else the Authorization header, verbatim. */
export interface V3CallContext {
  token: string | undefined;
  /** The client's deadline (gRPC's grpc-timeout): waits for a leader, an apply or a read end at it. */
  deadline?: Deadline;
  /** The client went away (the gateway's Authenticate only): a password check still queued is dropped. */
  signal?: AbortSignal;
}

/** etcdserverpb.ResponseHeader; IDs as decimal strings. */
export interface V3Header {
  clusterId: string;
  memberId: string;
  revision: number;
  raftTerm: number;
}

/** A registered watcher. `status` "canceled": the hub already sent its final (compacted) message. */
export interface V3WatchRegistration {
  id: number;
  status: "watching" | "canceled";
  cancel(): void;
  /** Its sink refused events (the stream held too much): catch it up from the store now. */
  resume(): void;
}

/** etcdserverpb.Member. `name` is empty for a member that has not started yet. */
export interface V3Member {
  id: string;
  name: string;
  peerUrls: string[];
  clientUrls: string[];
  isLearner: boolean;
}

/** etcdserverpb.StatusResponse without its header. */
export interface V3Status {
  version: string;
  dbSize: number;
  leader: string;
  raftIndex: number;
  raftTerm: number;
  raftAppliedIndex: number;
  errors: string[];
  dbSizeInUse: number;
  isLearner: boolean;
}

export const V3AlarmAction = { GET: 0, ACTIVATE: 1, DEACTIVATE: 2 } as const;
export type V3AlarmActionValue = (typeof V3AlarmAction)[keyof typeof V3AlarmAction];
export const V3AlarmType = { NONE: 0, NOSPACE: 1, CORRUPT: 2 } as const;
/** Any int32: etcd stores and lists alarm types it does not know (store/v3/alarms.ts). */
export type V3AlarmTypeValue = number;

export interface V3AlarmRequest {
  action: V3AlarmActionValue;
  /** 0 = every member (etcd's GET ignores it). */
  memberId: string;
  alarm: V3AlarmTypeValue;
}

export interface V3AlarmMember {
  memberId: string;
  alarm: V3AlarmTypeValue;
}

/** A snapshot being served: its size, its bytes a chunk at a time, then release(). */
export interface V3Snapshot {
  size: number;
  chunks(): AsyncIterable<Uint8Array>;
  /** Called once the snapshot was sent or the stream ended. */
  release(): void;
}

/** A snapshot held in memory (tests). */
export function snapshotOfBytes(bytes: Uint8Array): V3Snapshot {
  return {
    size: bytes.length,
    async *chunks() {
      yield bytes;
    },
    release: () => undefined,
  };
}

export interface V3Backend {
  /** Header of a response now; `revision` overrides the current store revision when non-zero. */
  header(revision?: number): V3Header;
  /**
   * This member is a learner: every call but Status and serializable Range is refused before
   * it reaches the backend (server/learner-calls.ts). Read on every call: must be cheap.
   */
  readonly isLearner?: boolean;

  // --- KV (etcdserverpb.KV) ---
  range(req: RangeRequest, ctx: V3CallContext): Promise<RangeResponse>;
  put(req: PutRequest, ctx: V3CallContext): Promise<PutResponse>;
  deleteRange(req: DeleteRangeRequest, ctx: V3CallContext): Promise<DeleteRangeResponse>;
  txn(req: TxnRequest, ctx: V3CallContext): Promise<TxnResponse>;
  compact(req: CompactionRequest, ctx: V3CallContext): Promise<{ revision: number }>;

  // --- Lease ---
  /** `id` 0n: the server picks one. `ttl` as requested (the server applies min 2 and max 9e9). */
  leaseGrant(req: { id: LeaseId; ttl: number }, ctx: V3CallContext): Promise<LeaseGrantResponse>;
  leaseRevoke(id: LeaseId, ctx: V3CallContext): Promise<{ revision: number }>;
  /** The renewed TTL, or undefined when the lease does not exist (the answer then has no TTL). */
  leaseKeepAlive(id: LeaseId, ctx: V3CallContext): Promise<number | undefined>;
  /** undefined when the lease does not exist (answered as TTL -1, status 200). */
  leaseTimeToLive(req: { id: LeaseId; keys: boolean }, ctx: V3CallContext): Promise<LeaseTimeToLiveResponse | undefined>;
  leaseLeases(ctx: V3CallContext): Promise<LeaseStatus[]>;

  // --- Watch ---
  /**
   * Registers one watcher in the hub; `sink` gets its messages (replayed history may arrive
   * before the promise resolves: the gateway holds them until `created` is sent). A V3Error
   * (no token, bad token, permission) is answered as etcd does: created + canceled with a
   * cancel_reason. The gateway owns watch_id numbering, filters' wire form, fragmenting,
   * slow-reader limits and progress_request answers; `cancel()` must be idempotent.
   */
  watch(create: Omit<WatchCreate, "id">, sink: WatchSink, ctx: V3CallContext): Promise<V3WatchRegistration>;

  // --- Cluster ---
  /** `linearizable` is always false from the 3.4 gateway (the field came with etcd 3.5). */
  memberList(req: { linearizable: boolean }, ctx: V3CallContext): Promise<V3Member[]>;
  memberAdd(req: { peerUrls: string[]; isLearner: boolean }, ctx: V3CallContext): Promise<{ member: V3Member; members: V3Member[] }>;
  memberRemove(id: string, ctx: V3CallContext): Promise<V3Member[]>;
  memberUpdate(req: { id: string; peerUrls: string[] }, ctx: V3CallContext): Promise<V3Member[]>;
  memberPromote(id: string, ctx: V3CallContext): Promise<V3Member[]>;

  // --- Maintenance ---
  status(ctx: V3CallContext): Promise<V3Status>;
  /** The alarms after the action (GET: all active alarms). Answered without a header, like etcd. */
  alarm(req: V3AlarmRequest, ctx: V3CallContext): Promise<V3AlarmMember[]>;
  /** Answered `{}` without a header, like etcd. */
  defragment(ctx: V3CallContext): Promise<void>;
  /** A hash of the key space (etcd's /v3/maintenance/hash answers a uint32) and its revision. */
  hash(ctx: V3CallContext): Promise<{ hash: number; revision: number }>;
  /**
   * etcd's HashKV: the records up to `revision` (0 = current) since the last compaction and
   * what it kept (store/v3/hash-kv.ts); compacted / future revisions fail as etcd's.
   */
  hashKV(revision: number, ctx: V3CallContext): Promise<HashKvResult>;
  /** A backup of the whole state (server/backup/); the gateway streams it in 32 KiB blobs and appends its sha256. */
  snapshot(ctx: V3CallContext): Promise<V3Snapshot>;
  moveLeader(targetId: string, ctx: V3CallContext): Promise<void>;

  // --- Auth ---
  authEnable(ctx: V3CallContext): Promise<void>;
  authDisable(ctx: V3CallContext): Promise<void>;
  /** The token for the caller (ctx: only its deadline, which drops a password check still queued). */
  authenticate(name: string, password: string, ctx?: V3CallContext): Promise<string>;
  userAdd(req: { name: string; password: string; noPassword: boolean }, ctx: V3CallContext): Promise<void>;
  /** The user's roles. */
  userGet(name: string, ctx: V3CallContext): Promise<string[]>;
  userList(ctx: V3CallContext): Promise<string[]>;
  userDelete(name: string, ctx: V3CallContext): Promise<void>;
  userChangePassword(name: string, password: string, ctx: V3CallContext): Promise<void>;
  userGrantRole(req: { user: string; role: string }, ctx: V3CallContext): Promise<void>;
  userRevokeRole(req: { name: string; role: string }, ctx: V3CallContext): Promise<void>;
  roleAdd(name: string, ctx: V3CallContext): Promise<void>;
  roleGet(role: string, ctx: V3CallContext): Promise<V3Permission[]>;
  roleList(ctx: V3CallContext): Promise<string[]>;
  roleDelete(role: string, ctx: V3CallContext): Promise<void>;
  /** A request without `perm` arrives as READ on the empty key (etcd 3.4 would dereference nil). */
  roleGrantPermission(req: { name: string; perm: V3Permission }, ctx: V3CallContext): Promise<void>;
  roleRevokePermission(req: { role: string; key: Buffer; rangeEnd: Buffer }, ctx: V3CallContext): Promise<void>;
}

export type { V3Permission, V3PermTypeValue };

/** What the gateway needs besides the backend (the lead builds it from the config). */
export interface V3GatewayContext {
  backend: V3Backend;
  /** --max-request-bytes (etcd default 1.5 MiB). */
  maxRequestBytes: number;
  /** --max-txn-ops (etcd default 128). */
  maxTxnOps: number;
  /**
   * Bytes a watch stream may hold unsent before its watchers stop taking events (they
   * are caught up from the store once it drains); twice this, in answers that cannot
   * wait (created, canceled, progress), closes the stream. Default 8 MiB.
   */
  streamBufferBytes?: number;
  /** Open stream responses (watch, keepalive, snapshot), so shutdown can end them. */
  streams?: Set<ServerResponse>;
  /** The member's watch families (etcd_debugging_mvcc_watch_stream_total and the rest). */
  watchMetrics?: WatchStreamCounts;
  /** Counts a call as etcd's gRPC interceptors count the gateway's (etcd_server_client_requests_total). */
  clientRequests?: (type: "unary" | "stream", apiVersion: string | undefined) => void;
}
