// The unary v3 routes: body fields -> typed request -> etcd's v3rpc edge checks -> ONE
// backend call -> the response object. The checks run in etcd's order: the gRPC receive
// limit, v3rpc's request checks, then (for what goes through Raft) the raft request size.
import { V3Errors } from "../../api/v3-errors.ts";
import { checkDeleteRangeRequest, checkPutRequest, checkRangeRequest, isReadOnlyTxn, validateTxn } from "../../store/v3/index.ts";
import type { V3Backend, V3CallContext, V3GatewayContext, V3Header } from "./v3-backend.ts";
import {
  decodeAlarm,
  decodeCompaction,
  decodeDeleteRange,
  decodeLeaseGrant,
  decodeLeaseId,
  decodeLeaseTimeToLive,
  decodeMemberAdd,
  decodeMemberId,
  decodeMemberUpdate,
  decodeMoveLeader,
  decodePut,
  decodeRange,
  decodeRoleGrantPermission,
  decodeRoleRevokePermission,
  decodeStrings,
  decodeTxn,
  decodeUserAdd,
} from "./v3-decode.ts";
import {
  encodeAlarms,
  encodeDeleteRange,
  encodeHash,
  encodeHeaderOnly,
  encodeLeaseGrant,
  encodeLeases,
  encodeMembers,
  encodeNames,
  encodePut,
  encodeRange,
  encodeRolePerms,
  encodeStatus,
  encodeTimeToLive,
  encodeToken,
  encodeTxn,
  type JsonObject,
} from "./v3-encode.ts";
import { GRPC_OVERHEAD_BYTES, RaftField, deleteRangeRequestSize, putRequestSize, raftRequestSize, rangeRequestSize, txnRequestSize } from "./v3-proto-size.ts";
import type { Fields } from "./v3-wire.ts";

/** What a handler gets besides the body. */
export interface V3Call {
  backend: V3Backend;
  ctx: V3CallContext;
  gw: V3GatewayContext;
}

export type UnaryHandler = (f: Fields | undefined, call: V3Call) => Promise<JsonObject>;

/** The gRPC server's receive limit: --max-request-bytes + 512 KiB. */
export function grpcRecvLimit(gw: V3GatewayContext): number {
  return gw.maxRequestBytes + GRPC_OVERHEAD_BYTES;
}

function checkRecvSize(size: number, gw: V3GatewayContext): void {
  const limit = grpcRecvLimit(gw);
  if (size > limit) throw V3Errors.messageTooLarge(size, limit);
}

/** etcd checks the encoded raft request against --max-request-bytes before proposing it. */
function checkRaftSize(field: number, size: number, gw: V3GatewayContext): void {
  if (raftRequestSize(field, size) > gw.maxRequestBytes) throw V3Errors.requestTooLarge();
}

/** The header of a response: the result's revision, or the current one when it has none. */
function hdr(b: V3Backend, revision?: number): V3Header {
  return revision !== undefined && revision > 0 ? b.header(revision) : b.header();
}

const kv: Record<string, UnaryHandler> = {
  "kv/range": async (f, { backend, ctx, gw }) => {
    const req = decodeRange(f);
    checkRecvSize(rangeRequestSize(req), gw);
    checkRangeRequest(req);
    const r = await backend.range(req, ctx);
    return encodeRange(hdr(backend, r.revision), r);
  },
  "kv/put": async (f, { backend, ctx, gw }) => {
    const req = decodePut(f);
    const size = putRequestSize(req);
    checkRecvSize(size, gw);
    checkPutRequest(req);
    checkRaftSize(RaftField.put, size, gw);
    const r = await backend.put(req, ctx);
    return encodePut(hdr(backend, r.revision), r);
  },
  "kv/deleterange": async (f, { backend, ctx, gw }) => {
    const req = decodeDeleteRange(f);
    const size = deleteRangeRequestSize(req);
    checkRecvSize(size, gw);
    checkDeleteRangeRequest(req);
    checkRaftSize(RaftField.deleteRange, size, gw);
    const r = await backend.deleteRange(req, ctx);
    return encodeDeleteRange(hdr(backend, r.revision), r);
  },
  "kv/txn": async (f, { backend, ctx, gw }) => {
    const req = decodeTxn(f);
    const size = txnRequestSize(req);
    checkRecvSize(size, gw);
    validateTxn(req, gw.maxTxnOps);
    if (!isReadOnlyTxn(req)) checkRaftSize(RaftField.txn, size, gw);
    const r = await backend.txn(req, ctx);
    return encodeTxn(hdr(backend, r.revision), r);
  },
  "kv/compaction": async (f, { backend, ctx }) => {
    const r = await backend.compact(decodeCompaction(f), ctx);
    return encodeHeaderOnly(hdr(backend, r.revision));
  },
};

const leaseRevoke: UnaryHandler = async (f, { backend, ctx }) => {
  const r = await backend.leaseRevoke(decodeLeaseId(f), ctx);
  return encodeHeaderOnly(hdr(backend, r.revision));
};
const leaseTimeToLive: UnaryHandler = async (f, { backend, ctx }) => {
  const req = decodeLeaseTimeToLive(f);
  const r = await backend.leaseTimeToLive(req, ctx);
  return encodeTimeToLive(hdr(backend, r?.revision), req.id, r);
};
const leaseLeases: UnaryHandler = async (_f, { backend, ctx }) => encodeLeases(hdr(backend), await backend.leaseLeases(ctx));

const lease: Record<string, UnaryHandler> = {
  "lease/grant": async (f, { backend, ctx }) => {
    const r = await backend.leaseGrant(decodeLeaseGrant(f), ctx);
    return encodeLeaseGrant(hdr(backend, r.revision), r);
  },
  "lease/revoke": leaseRevoke,
  "kv/lease/revoke": leaseRevoke,
  "lease/timetolive": leaseTimeToLive,
  "kv/lease/timetolive": leaseTimeToLive,
  "lease/leases": leaseLeases,
  "kv/lease/leases": leaseLeases,
};

const cluster: Record<string, UnaryHandler> = {
  "cluster/member/add": async (f, { backend, ctx }) => {
    const r = await backend.memberAdd(decodeMemberAdd(f), ctx);
    return encodeMembers(hdr(backend), r.members, r.member);
  },
  "cluster/member/remove": async (f, { backend, ctx }) => encodeMembers(hdr(backend), await backend.memberRemove(decodeMemberId(f), ctx)),
  "cluster/member/update": async (f, { backend, ctx }) => encodeMembers(hdr(backend), await backend.memberUpdate(decodeMemberUpdate(f), ctx)),
  "cluster/member/promote": async (f, { backend, ctx }) => encodeMembers(hdr(backend), await backend.memberPromote(decodeMemberId(f), ctx)),
  "cluster/member/list": async (_f, { backend, ctx }) => encodeMembers(hdr(backend), await backend.memberList({ linearizable: false }, ctx)),
};

const maintenance: Record<string, UnaryHandler> = {
  "maintenance/alarm": async (f, { backend, ctx }) => encodeAlarms(await backend.alarm(decodeAlarm(f), ctx)),
  "maintenance/status": async (_f, { backend, ctx }) => {
    const s = await backend.status(ctx);
    return encodeStatus(hdr(backend), s);
  },
  "maintenance/defragment": async (_f, { backend, ctx }) => {
    await backend.defragment(ctx);
    return {};
  },
  // etcd 3.4 maps /v3/maintenance/hash to Hash (HashKV has the same path and loses).
  "maintenance/hash": async (_f, { backend, ctx }) => {
    const r = await backend.hash(ctx);
    return encodeHash(hdr(backend, r.revision), r.hash);
  },
  "maintenance/transfer-leadership": async (f, { backend, ctx }) => {
    await backend.moveLeader(decodeMoveLeader(f), ctx);
    return {};
  },
};

/** An auth call that answers only a header (the current revision). */
const done =
  (run: (f: Fields | undefined, b: V3Backend, ctx: V3CallContext) => Promise<void>): UnaryHandler =>
  async (f, { backend, ctx }) => {
    await run(f, backend, ctx);
    return encodeHeaderOnly(hdr(backend));
  };

const auth: Record<string, UnaryHandler> = {
  "auth/enable": done((_f, b, ctx) => b.authEnable(ctx)),
  "auth/disable": done((_f, b, ctx) => b.authDisable(ctx)),
  "auth/authenticate": async (f, { backend, ctx }) => {
    const { name, password } = decodeStrings(f, ["name", "password"]);
    const token = await backend.authenticate(name, password, ctx);
    return encodeToken(hdr(backend), token);
  },
  "auth/user/add": done((f, b, ctx) => b.userAdd(decodeUserAdd(f), ctx)),
  "auth/user/get": async (f, { backend, ctx }) => encodeNames(hdr(backend), "roles", await backend.userGet(decodeStrings(f, ["name"]).name, ctx)),
  "auth/user/list": async (_f, { backend, ctx }) => encodeNames(hdr(backend), "users", await backend.userList(ctx)),
  "auth/user/delete": done((f, b, ctx) => b.userDelete(decodeStrings(f, ["name"]).name, ctx)),
  "auth/user/changepw": done((f, b, ctx) => {
    const { name, password } = decodeStrings(f, ["name", "password"]);
    return b.userChangePassword(name, password, ctx);
  }),
  "auth/user/grant": done((f, b, ctx) => b.userGrantRole(decodeStrings(f, ["user", "role"]), ctx)),
  "auth/user/revoke": done((f, b, ctx) => b.userRevokeRole(decodeStrings(f, ["name", "role"]), ctx)),
  "auth/role/add": done((f, b, ctx) => b.roleAdd(decodeStrings(f, ["name"]).name, ctx)),
  "auth/role/get": async (f, { backend, ctx }) => encodeRolePerms(hdr(backend), await backend.roleGet(decodeStrings(f, ["role"]).role, ctx)),
  "auth/role/list": async (_f, { backend, ctx }) => encodeNames(hdr(backend), "roles", await backend.roleList(ctx)),
  "auth/role/delete": done((f, b, ctx) => b.roleDelete(decodeStrings(f, ["role"]).role, ctx)),
  "auth/role/grant": done((f, b, ctx) => b.roleGrantPermission(decodeRoleGrantPermission(f), ctx)),
  "auth/role/revoke": done((f, b, ctx) => b.roleRevokePermission(decodeRoleRevokePermission(f), ctx)),
};

/** Every unary route (path after /v3/). */
export const UNARY_ROUTES: ReadonlyMap<string, UnaryHandler> = new Map(Object.entries({ ...kv, ...lease, ...cluster, ...maintenance, ...auth }));
