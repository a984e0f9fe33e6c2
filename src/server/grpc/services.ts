// etcd 3.4's v3 RPCs (rpc.proto: KV, Watch, Lease, Cluster, Maintenance, Auth), its Lock
// and Election services (concurrency.ts) and grpc.health.v1, each mapped onto ONE call of
// the V3Backend the JSON gateway uses (Lock and Election: onto a few). The checks run in
// etcd's order, as the gateway's (http/v3-handlers.ts): the gRPC receive limit (server.ts,
// on the raw message), v3rpc's request checks, the raft request size for writes, then the
// backend (token, permission, propose/apply).
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import type { DescMethodBiDiStreaming, DescMethodServerStreaming, DescMethodUnary } from "@bufbuild/protobuf";
import { GrpcCode, V3Error, V3Errors } from "../../api/v3-errors.ts";
import { checkDeleteRangeRequest, checkPutRequest, checkRangeRequest, isReadOnlyTxn, validateTxn, type PutResponse, type RangeResponse } from "../../store/v3/index.ts";
import type { V3Backend, V3GatewayContext, V3Header, V3Snapshot } from "../http/v3-backend.ts";
import { GRPC_OVERHEAD_BYTES, RaftField, raftRequestSize } from "../http/v3-proto-size.ts";
import { snapshotBlobs } from "../http/v3-streams.ts";
import * as cv from "./convert.ts";
import { decodePutRequest, decodeRangeRequest, encodePutResponse, encodeRangeResponse, headerFields, type HeaderFields } from "./fast-codec.ts";
import { MESSAGE_PREFIX_BYTES, prefixInPlace } from "./frames.ts";
import { Auth, Cluster, KV, Lease, Maintenance, Watch } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { Health, HealthCheckResponse_ServingStatus } from "./gen/grpc/health/v1/health_pb.ts";
import type { GrpcCall, Rpc, RpcStream } from "./server.ts";
import { statusOf } from "./server.ts";
import { installRawStrings, isValidUtf8 } from "./raw-strings.ts";
import { gogoAccepts, gogoUnmarshalError, streamUnmarshalError, unmarshalError } from "./unmarshal-error.ts";
import { serveWatch } from "./watch.ts";
import { registerConcurrency } from "./concurrency.ts";
import { RANGE_METHOD, learnerRefusal, learnerRefuses } from "../learner-calls.ts";

export type RpcTable = Map<string, Rpc>;

function pathOf(m: { parent: { typeName: string }; name: string }): string {
  return `/${m.parent.typeName}/${m.name}`;
}

/** grpc-go's answer to bytes that are not the request message, in gogoproto's words (unmarshal-error.ts). */
export function decodeRequest<I extends DescMessage>(schema: I, bytes: Uint8Array, wording = unmarshalError): MessageShape<I> {
  // @bufbuild takes a scalar in another wire type than its field's; gogoproto does not.
  if (!gogoAccepts(schema, bytes)) {
    const text = gogoUnmarshalError(schema, bytes);
    if (text !== undefined) throw wording(text);
  }
  try {
    return fromBinary(schema, bytes);
  } catch (err) {
    throw wording(gogoUnmarshalError(schema, bytes) ?? (err instanceof Error ? err.message : String(err)));
  }
}

type UnaryHandler<I extends DescMessage, O extends DescMessage> = (req: MessageShape<I>, call: GrpcCall, size: number) => Promise<MessageInitShape<O>>;

function unary<I extends DescMessage, O extends DescMessage>(table: RpcTable, m: DescMethodUnary<I, O>, handle: UnaryHandler<I, O>): void {
  table.set(pathOf(m), {
    kind: "unary",
    // Decoded before the promise: a request that does not decode throws (UnaryRpc.run).
    run: (bytes, call) => {
      const req = decodeRequest(m.input, bytes);
      return handle(req, call, bytes.length).then((r) => toBinary(m.output, create(m.output, r)));
    },
  });
}

/** A streaming RPC whose messages are typed; `send` encodes. */
export interface TypedStream<I extends DescMessage, O extends DescMessage> {
  readonly raw: RpcStream;
  onMessage(cb: (msg: MessageShape<I>) => void): void;
  send(msg: MessageInitShape<O>): boolean;
}

function streaming<I extends DescMessage, O extends DescMessage>(
  table: RpcTable,
  m: DescMethodBiDiStreaming<I, O> | DescMethodServerStreaming<I, O>,
  open: (s: TypedStream<I, O>, call: GrpcCall) => void,
): void {
  table.set(pathOf(m), {
    kind: "stream",
    open(raw, call) {
      open(
        {
          raw,
          onMessage(cb) {
            raw.onMessage = (bytes) => {
              let msg: MessageShape<I>;
              try {
                msg = decodeRequest(m.input, bytes, streamUnmarshalError);
              } catch (err) {
                raw.finish(statusOf(err));
                return;
              }
              cb(msg);
            };
          },
          send: (msg) => raw.send(toBinary(m.output, create(m.output, msg))),
        },
        call,
      );
    },
  });
}

/** The response header: the result's revision, or the current one when it has none. */
function hdr(b: V3Backend, revision?: number): ReturnType<typeof cv.header> {
  const h: V3Header = revision !== undefined && revision > 0 ? b.header(revision) : b.header();
  return cv.header(h);
}

/** etcd checks the encoded raft request against --max-request-bytes before proposing it. */
function checkRaftSize(field: number, size: number, gw: V3GatewayContext): void {
  if (raftRequestSize(field, size) > gw.maxRequestBytes) throw V3Errors.requestTooLarge();
}

/** grpc-go's receive limit in etcd: --max-request-bytes + 512 KiB. */
export function grpcRecvLimit(gw: V3GatewayContext): number {
  return gw.maxRequestBytes + GRPC_OVERHEAD_BYTES;
}

export function createRpcTable(gw: V3GatewayContext): RpcTable {
  // Strings carry any bytes, as gogoproto's (raw-strings.ts): before any message is read.
  installRawStrings();
  const t: RpcTable = new Map();
  const b = gw.backend;

  // --- KV ---
  // Range and Put read and answer through fast-codec.ts: the same values and bytes as the
  // generated code's (which still decodes anything the fast reader does not take).
  // Not async functions: one `then` per call instead of an async frame and its await (a
  // synchronous throw is the call's error: UnaryCall catches it as a rejection).
  const fastHdr = (revision: number): HeaderFields => headerFields(revision > 0 ? b.header(revision) : b.header());
  const rangeAnswer = (r: RangeResponse): Uint8Array => prefixInPlace(encodeRangeResponse(fastHdr(r.revision), r, MESSAGE_PREFIX_BYTES));
  const putAnswer = (r: PutResponse): Uint8Array => prefixInPlace(encodePutResponse(fastHdr(r.revision), r, MESSAGE_PREFIX_BYTES));
  t.set(pathOf(KV.method.range), {
    kind: "unary",
    framed: true,
    run: (bytes, { ctx }) => {
      const req = decodeRangeRequest(bytes) ?? cv.rangeRequest(decodeRequest(KV.method.range.input, bytes));
      checkRangeRequest(req);
      return b.range(req, ctx).then(rangeAnswer);
    },
  });
  t.set(pathOf(KV.method.put), {
    kind: "unary",
    framed: true,
    run: (bytes, { ctx }) => {
      const req = decodePutRequest(bytes) ?? cv.putRequest(decodeRequest(KV.method.put.input, bytes));
      checkPutRequest(req);
      checkRaftSize(RaftField.put, bytes.length, gw);
      return b.put(req, ctx).then(putAnswer);
    },
  });
  unary(t, KV.method.deleteRange, async (m, { ctx }, size) => {
    const req = cv.deleteRangeRequest(m);
    checkDeleteRangeRequest(req);
    checkRaftSize(RaftField.deleteRange, size, gw);
    const r = await b.deleteRange(req, ctx);
    return cv.deleteRangeResponse(hdr(b, r.revision), r);
  });
  unary(t, KV.method.txn, async (m, { ctx }, size) => {
    const req = cv.txnRequest(m);
    validateTxn(req, gw.maxTxnOps);
    if (!isReadOnlyTxn(req)) checkRaftSize(RaftField.txn, size, gw);
    const r = await b.txn(req, ctx);
    return cv.txnResponse(hdr(b, r.revision), r);
  });
  unary(t, KV.method.compact, async (m, { ctx }) => {
    const r = await b.compact({ revision: cv.num(m.revision), physical: m.physical }, ctx);
    return { header: hdr(b, r.revision) };
  });

  // --- Watch ---
  streaming(t, Watch.method.watch, (s, call) => serveWatch(s, gw, call.ctx));

  // --- Lease ---
  unary(t, Lease.method.leaseGrant, async (m, { ctx }) => {
    const r = await b.leaseGrant({ id: m.ID, ttl: cv.num(m.TTL) }, ctx);
    return { header: hdr(b, r.revision), ID: r.id, TTL: BigInt(r.ttl) };
  });
  unary(t, Lease.method.leaseRevoke, async (m, { ctx }) => {
    const r = await b.leaseRevoke(m.ID, ctx);
    return { header: hdr(b, r.revision) };
  });
  unary(t, Lease.method.leaseTimeToLive, async (m, { ctx }) => {
    const r = await b.leaseTimeToLive({ id: m.ID, keys: m.keys }, ctx);
    // A lease that does not exist: TTL -1, as etcd answers it.
    if (r === undefined) return { header: hdr(b), ID: m.ID, TTL: -1n };
    return { header: hdr(b, r.revision), ID: r.id, TTL: BigInt(r.ttl), grantedTTL: BigInt(r.grantedTtl), keys: r.keys };
  });
  unary(t, Lease.method.leaseLeases, async (_m, { ctx }) => {
    const leases = await b.leaseLeases(ctx);
    return { header: hdr(b), leases: leases.map((l) => ({ ID: l.id })) };
  });
  streaming(t, Lease.method.leaseKeepAlive, (s, { ctx }) => {
    // Each renewal starts as it arrives (on a follower, forwarded to the leader: pipelined
    // keepalives do not wait for each other's round trip); the answers still go out in
    // arrival order. The header is taken before the renewal (etcd).
    let queue: Promise<void> = Promise.resolve();
    s.onMessage((m) => {
      const h = hdr(b);
      const renewed = b.leaseKeepAlive(m.ID, ctx).then(
        (ttl) => ({ ttl }),
        (err: unknown) => ({ err }),
      );
      queue = queue.then(async () => {
        const r = await renewed;
        if (s.raw.closed) return;
        // etcd answers an unknown lease with TTL 0 and keeps the stream.
        if ("ttl" in r) s.send({ header: h, ID: m.ID, TTL: BigInt(r.ttl ?? 0) });
        else s.raw.finish(statusOf(r.err));
      });
    });
    s.raw.onEnd = () => {
      queue = queue.then(() => s.raw.finish());
    };
  });

  // --- Cluster ---
  // etcd's cluster server fills its headers without a revision.
  const clusterHdr = (): ReturnType<typeof cv.header> => ({ ...hdr(b), revision: 0n });
  unary(t, Cluster.method.memberAdd, async (m, { ctx }) => {
    const r = await b.memberAdd({ peerUrls: m.peerURLs, isLearner: m.isLearner }, ctx);
    return { header: clusterHdr(), member: cv.member(r.member), members: r.members.map(cv.member) };
  });
  unary(t, Cluster.method.memberRemove, async (m, { ctx }) => ({ header: clusterHdr(), members: (await b.memberRemove(m.ID.toString(), ctx)).map(cv.member) }));
  unary(t, Cluster.method.memberUpdate, async (m, { ctx }) => ({
    header: clusterHdr(),
    members: (await b.memberUpdate({ id: m.ID.toString(), peerUrls: m.peerURLs }, ctx)).map(cv.member),
  }));
  unary(t, Cluster.method.memberList, async (_m, { ctx }) => ({ header: clusterHdr(), members: (await b.memberList({ linearizable: false }, ctx)).map(cv.member) }));
  unary(t, Cluster.method.memberPromote, async (m, { ctx }) => ({ header: clusterHdr(), members: (await b.memberPromote(m.ID.toString(), ctx)).map(cv.member) }));

  // --- Maintenance ---
  unary(t, Maintenance.method.alarm, async (m, { ctx }) => {
    const action = cv.alarmAction(m.action);
    // A type etcd does not know is raised, listed (GET of it or of NONE) and cleared like the others.
    const alarms = await b.alarm({ action, memberId: m.memberID.toString(), alarm: cv.alarmType(m.alarm) }, ctx);
    // etcd answers the alarm RPC without a header.
    return { alarms: alarms.map((a) => ({ memberID: BigInt(a.memberId), alarm: a.alarm })) };
  });
  unary(t, Maintenance.method.status, async (_m, { ctx }) => {
    const s = await b.status(ctx);
    return {
      header: hdr(b),
      version: s.version,
      dbSize: BigInt(s.dbSize),
      leader: BigInt(s.leader),
      raftIndex: BigInt(s.raftIndex),
      raftTerm: BigInt(s.raftTerm),
      raftAppliedIndex: BigInt(s.raftAppliedIndex),
      errors: s.errors,
      dbSizeInUse: BigInt(s.dbSizeInUse),
      isLearner: s.isLearner,
    };
  });
  unary(t, Maintenance.method.defragment, async (_m, { ctx }) => {
    await b.defragment(ctx);
    return {};
  });
  unary(t, Maintenance.method.hash, async (_m, { ctx }) => {
    const r = await b.hash(ctx);
    return { header: hdr(b, r.revision), hash: r.hash };
  });
  unary(t, Maintenance.method.hashKV, async (m, { ctx }) => {
    const r = await b.hashKV(cv.num(m.revision), ctx);
    return { header: hdr(b, r.revision), hash: r.hash, compactRevision: BigInt(r.compactRevision) };
  });
  unary(t, Maintenance.method.moveLeader, async (m, { ctx }) => {
    await b.moveLeader(m.targetID.toString(), ctx);
    // etcd 3.4 answers an empty MoveLeaderResponse (no header), as it does Defragment.
    return {};
  });
  streaming(t, Maintenance.method.snapshot, (s, { ctx }) => {
    s.onMessage(() => {
      void sendSnapshot(s, b, ctx);
    });
  });

  // --- Auth ---
  const done = async (p: Promise<void>): Promise<{ header: ReturnType<typeof cv.header> }> => {
    await p;
    return { header: hdr(b) };
  };
  unary(t, Auth.method.authEnable, (_m, { ctx }) => done(b.authEnable(ctx)));
  unary(t, Auth.method.authDisable, (_m, { ctx }) => done(b.authDisable(ctx)));
  unary(t, Auth.method.authenticate, async (m, { ctx }) => {
    const token = await b.authenticate(m.name, m.password, ctx);
    return { header: hdr(b), token };
  });
  unary(t, Auth.method.userAdd, (m, { ctx }) => done(b.userAdd({ name: m.name, password: m.password, noPassword: m.options?.noPassword ?? false }, ctx)));
  unary(t, Auth.method.userGet, async (m, { ctx }) => ({ header: hdr(b), roles: await b.userGet(m.name, ctx) }));
  unary(t, Auth.method.userList, async (_m, { ctx }) => ({ header: hdr(b), users: await b.userList(ctx) }));
  unary(t, Auth.method.userDelete, (m, { ctx }) => done(b.userDelete(m.name, ctx)));
  unary(t, Auth.method.userChangePassword, (m, { ctx }) => done(b.userChangePassword(m.name, m.password, ctx)));
  unary(t, Auth.method.userGrantRole, (m, { ctx }) => done(b.userGrantRole({ user: m.user, role: m.role }, ctx)));
  unary(t, Auth.method.userRevokeRole, (m, { ctx }) => done(b.userRevokeRole({ name: m.name, role: m.role }, ctx)));
  unary(t, Auth.method.roleAdd, (m, { ctx }) => done(b.roleAdd(m.name, ctx)));
  unary(t, Auth.method.roleGet, async (m, { ctx }) => ({ header: hdr(b), perm: (await b.roleGet(m.role, ctx)).map(cv.permissionOut) }));
  unary(t, Auth.method.roleList, async (_m, { ctx }) => ({ header: hdr(b), roles: await b.roleList(ctx) }));
  unary(t, Auth.method.roleDelete, (m, { ctx }) => done(b.roleDelete(m.role, ctx)));
  unary(t, Auth.method.roleGrantPermission, (m, { ctx }) => done(b.roleGrantPermission({ name: m.name, perm: cv.permission(m.perm) }, ctx)));
  unary(t, Auth.method.roleRevokePermission, (m, { ctx }) => done(b.roleRevokePermission({ role: m.role, key: cv.buf(m.key), rangeEnd: cv.buf(m.rangeEnd) }, ctx)));

  // --- v3lockpb.Lock, v3electionpb.Election (concurrency.ts) ---
  registerConcurrency(t, gw, decodeRequest);

  // --- grpc.health.v1: etcd registers the empty service name as SERVING ---
  const healthOf = (service: string): HealthCheckResponse_ServingStatus => {
    if (service !== "") throw new V3Error(GrpcCode.NotFound, "unknown service");
    return HealthCheckResponse_ServingStatus.SERVING;
  };
  // grpc-go's health messages go through golang/protobuf, which checks UTF-8 (etcd's own do not).
  const invalidService = 'proto: field "grpc.health.v1.HealthCheckRequest.service" contains invalid UTF-8';
  unary(t, Health.method.check, async (m) => {
    if (!isValidUtf8(m.service)) throw unmarshalError(invalidService);
    return { status: healthOf(m.service) };
  });
  streaming(t, Health.method.watch, (s) => {
    s.onMessage((m) => {
      if (!isValidUtf8(m.service)) {
        s.raw.finish(statusOf(streamUnmarshalError(invalidService)));
        return;
      }
      // grpc-go's Watch answers an unknown service SERVICE_UNKNOWN and keeps the stream.
      s.send({ status: m.service === "" ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN });
    });
  });
  guardLearner(t, b);
  return t;
}

/**
 * etcd's interceptors on a learner (learner-calls.ts), on every RPC of the table: Lock,
 * Election and health included, as etcd registers them on the same server. Off a learner
 * the cost is one flag read per call.
 */
function guardLearner(t: RpcTable, b: V3Backend): void {
  const refused = statusOf(learnerRefusal());
  const inputs = new Map<string, DescMessage>();
  for (const svc of [KV, Lease, Cluster, Maintenance, Auth, Health]) {
    for (const m of svc.methods) inputs.set(pathOf(m), m.input);
  }
  for (const [path, rpc] of t) {
    if (rpc.kind === "stream") {
      rpc.refuse = () => (b.isLearner === true ? refused : undefined);
      continue;
    }
    const input = inputs.get(path);
    rpc.refuse = (bytes) => {
      if (b.isLearner !== true) return undefined;
      // etcd's interceptors see the decoded request: one that does not decode is refused
      // by grpc-go first (code 13), as `run` answers it.
      let serializable = false;
      try {
        if (path === RANGE_METHOD) serializable = (decodeRangeRequest(bytes) ?? cv.rangeRequest(decodeRequest(KV.method.range.input, bytes))).serializable;
        else if (input !== undefined) decodeRequest(input, bytes);
      } catch {
        return undefined;
      }
      return learnerRefuses(path, serializable) ? refused : undefined;
    };
  }
}

/** etcd's snapshot stream: 32 KiB blobs with the bytes remaining, then the snapshot's sha256. */
async function sendSnapshot(s: TypedStream<DescMessage, typeof Maintenance.method.snapshot.output>, b: V3Backend, ctx: GrpcCall["ctx"]): Promise<void> {
  let snap: V3Snapshot;
  try {
    snap = await b.snapshot(ctx);
  } catch (err) {
    s.raw.finish(statusOf(err));
    return;
  }
  try {
    for await (const { remaining, blob } of snapshotBlobs(snap)) {
      if (s.raw.closed) return;
      if (!s.send({ remainingBytes: BigInt(remaining), blob })) await s.raw.drained();
    }
    s.raw.finish();
  } catch (err) {
    s.raw.finish(statusOf(err));
  } finally {
    snap.release();
  }
}
