// etcd's v3lockpb.Lock and v3electionpb.Election on gRPC, over ../http/v3-concurrency.ts. The
// unary calls are served as streams of one message each way: the server's unary path has
// no word of a client that resets the call, and a Lock or Campaign that waits must learn
// it, to take its key back (etcd's handlers see their context canceled). As grpc-go's
// unary path: the call runs at its first message, later ones are ignored, a request that
// ends before a message is code 2 `EOF`, one that does not decode has the unary wording.
// At the deadline the call ends with code 4 (etcd's handler answers 2 "context deadline
// exceeded", after the client's own deadline has already ended the call for it).
import { create, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import type { DescMethodServerStreaming, DescMethodUnary } from "@bufbuild/protobuf";
import { GrpcCode } from "../../api/v3-errors.ts";
import type { V3GatewayContext } from "../http/v3-backend.ts";
import { V3Concurrency, type ConcurrencyCall, type LeaderKey } from "../http/v3-concurrency.ts";
import * as cv from "./convert.ts";
import { Election, type LeaderKey as PbLeaderKey } from "./gen/etcd/etcdserver/api/v3election/v3electionpb/v3election_pb.ts";
import { Lock } from "./gen/etcd/etcdserver/api/v3lock/v3lockpb/v3lock_pb.ts";
import type { GrpcCall, Rpc, RpcStream } from "./server.ts";
import { statusOf } from "./server.ts";
import { unmarshalError } from "./unmarshal-error.ts";

/** services.ts's request decoder (gogoproto's refusals in grpc-go's words). */
export type DecodeRequest = <I extends DescMessage>(schema: I, bytes: Uint8Array, wording?: typeof unmarshalError) => MessageShape<I>;

type Method<I extends DescMessage, O extends DescMessage> = DescMethodUnary<I, O> | DescMethodServerStreaming<I, O>;

/**
 * A call that learns when it ends: `run` gets the request, the call, and the signal fired
 * when the client resets it, the connection goes, or the deadline passes.
 */
function endable<I extends DescMessage, O extends DescMessage>(
  table: Map<string, Rpc>,
  m: Method<I, O>,
  decode: DecodeRequest,
  run: (req: MessageShape<I>, call: ConcurrencyCall, s: RpcStream) => Promise<MessageInitShape<O> | undefined>,
): void {
  table.set(`/${m.parent.typeName}/${m.name}`, {
    kind: "stream",
    open(s: RpcStream, grpcCall: GrpcCall) {
      const ended = new AbortController();
      s.onClose = () => ended.abort();
      let started = false;
      s.onMessage = (bytes) => {
        if (started) return;
        started = true;
        let req: MessageShape<I>;
        try {
          req = decode(m.input, bytes);
        } catch (err) {
          s.finish(statusOf(err));
          return;
        }
        run(req, { ctx: grpcCall.ctx, signal: ended.signal }, s).then(
          (answer) => {
            if (answer !== undefined) s.send(toBinary(m.output, create(m.output, answer)));
            s.finish();
          },
          (err: unknown) => s.finish(statusOf(err)),
        );
      };
      s.onEnd = () => {
        if (!started) s.finish({ code: GrpcCode.Unknown, message: "EOF" });
      };
    },
  });
}

function leaderKey(k: PbLeaderKey | undefined): LeaderKey | undefined {
  if (k === undefined) return undefined;
  return { name: cv.buf(k.name), key: cv.buf(k.key), rev: cv.num(k.rev), lease: k.lease };
}

/** Adds Lock's and Election's methods to the RPC table. */
export function registerConcurrency(table: Map<string, Rpc>, gw: V3GatewayContext, decode: DecodeRequest): void {
  const b = gw.backend;
  const svc = new V3Concurrency(b, { maxTxnOps: gw.maxTxnOps, maxRequestBytes: gw.maxRequestBytes });
  const hdr = (revision: number): ReturnType<typeof cv.header> => cv.header(revision > 0 ? b.header(revision) : b.header());

  endable(table, Lock.method.lock, decode, async (m, call) => {
    const r = await svc.lock({ name: cv.buf(m.name), lease: m.lease }, call);
    return { header: hdr(r.revision), key: r.key };
  });
  endable(table, Lock.method.unlock, decode, async (m, call) => ({ header: hdr((await svc.unlock(cv.buf(m.key), call)).revision) }));

  endable(table, Election.method.campaign, decode, async (m, call) => {
    const r = await svc.campaign({ name: cv.buf(m.name), lease: m.lease, value: cv.buf(m.value) }, call);
    const l = r.leader;
    return { header: hdr(r.revision), leader: { name: l.name, key: l.key, rev: BigInt(l.rev), lease: l.lease } };
  });
  endable(table, Election.method.proclaim, decode, async (m, call) => ({ header: hdr((await svc.proclaim(leaderKey(m.leader), cv.buf(m.value), call)).revision) }));
  endable(table, Election.method.resign, decode, async (m, call) => ({ header: hdr((await svc.resign(leaderKey(m.leader), call)).revision) }));
  endable(table, Election.method.leader, decode, async (m, call) => {
    const r = await svc.leader(cv.buf(m.name), call);
    return { header: hdr(r.revision), kv: cv.keyValue(r.kv) };
  });
  endable(table, Election.method.observe, decode, async (m, call, s) => {
    const out = Election.method.observe.output;
    await svc.observe(cv.buf(m.name), call, {
      send: (r) => s.send(toBinary(out, create(out, { header: hdr(r.revision), kv: cv.keyValue(r.kv) }))),
      drained: () => s.drained(),
    });
    return undefined;
  });
}
