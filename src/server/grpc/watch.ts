// etcd's Watch RPC (serverWatchStream) over gRPC. The watchers and every rule of the
// stream (IDs, order of answers, fragments, compaction and refusal answers, progress,
// slow readers) are the WatchSession's (../http/v3-watch-session.ts), which the JSON
// gateway drives too; this file is the gRPC wire: WatchRequest messages in, WatchResponse
// messages out, and the HTTP/2 stream's unsent bytes the session watches.
//
// Invariants: when the call ends (client cancel, connection gone, shutdown) every watcher
// of the stream is canceled; the client half-closing keeps the watchers, as etcd does.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { GrpcCode } from "../../api/v3-errors.ts";
import type { V3Event } from "../../store/v3/index.ts";
import type { V3CallContext, V3GatewayContext, V3Header } from "../http/v3-backend.ts";
import type { WatchRequestMsg } from "../http/v3-decode.ts";
import { WatchSession, slowReaderReason, type WatchControl, type WatchWire } from "../http/v3-watch-session.ts";
import * as cv from "./convert.ts";
import { WatchEventsFramer } from "./fast-codec.ts";
import type { WatchRequest, WatchRequestSchema, WatchResponseSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import type { TypedStream } from "./services.ts";

type Response = MessageInitShape<typeof WatchResponseSchema>;
type Stream = TypedStream<typeof WatchRequestSchema, typeof WatchResponseSchema>;

/** A WatchRequest as the session takes it (the gateway decodes its JSON into the same). */
export function watchRequestMsg(m: WatchRequest): WatchRequestMsg {
  const u = m.requestUnion;
  switch (u.case) {
    case "createRequest":
      return { create: cv.watchCreate(u.value), watchId: cv.num(u.value.watchId), fragment: u.value.fragment };
    case "cancelRequest":
      return { cancel: cv.num(u.value.watchId) };
    case "progressRequest":
      return { progress: true };
    default:
      return { none: true };
  }
}

/** One for every stream of the process: a write's events reach watchers on many streams. */
const framer = new WatchEventsFramer();

/**
 * The framed messages of the hub message at hand by watch ID: streams whose watchers have
 * the same ID (most streams hold one watcher, ID 0) get the same bytes, so the same buffer
 * is written to each (node:http2 only reads it). Valid, as the framer's shared part, until
 * the turn's microtasks run.
 */
class SharedFrames {
  #events: readonly V3Event[] | undefined;
  #revision = 0;
  #byId: Array<Buffer | undefined> = [];

  frame(revision: number, headerOf: (revision: number) => V3Header, watchId: number, events: readonly V3Event[], fragment: boolean): Buffer {
    if (fragment || watchId >= 64) return framer.frame(revision, headerOf, watchId, events, fragment);
    if (events !== this.#events || revision !== this.#revision) {
      if (this.#events === undefined) queueMicrotask(this.#forget);
      this.#events = events;
      this.#revision = revision;
      this.#byId = [];
    }
    return (this.#byId[watchId] ??= framer.frame(revision, headerOf, watchId, events, fragment));
  }

  readonly #forget = (): void => {
    this.#events = undefined;
    this.#byId = [];
  };
}

const frames = new SharedFrames();

class GrpcWatchWire implements WatchWire {
  readonly #s: Stream;
  readonly #header: (revision: number) => V3Header;

  constructor(s: Stream, gw: V3GatewayContext) {
    this.#s = s;
    this.#header = (revision) => gw.backend.header(revision);
  }

  get unsent(): number {
    return this.#s.raw.writableLength;
  }

  control(r: WatchControl): void {
    const m: Response = { header: cv.header(r.header), watchId: BigInt(r.watchId) };
    if (r.created === true) m.created = true;
    if (r.canceled === true) m.canceled = true;
    if (r.compactRevision !== undefined) m.compactRevision = BigInt(r.compactRevision);
    if (r.cancelReason !== undefined) m.cancelReason = r.cancelReason;
    this.#s.send(m);
  }

  events(revision: number, watchId: number, events: readonly V3Event[], fragment: boolean): void {
    this.#s.raw.sendFramed(frames.frame(revision, this.#header, watchId, events, fragment));
  }

  overflow(limit: number): void {
    this.#s.raw.finish({ code: GrpcCode.ResourceExhausted, message: slowReaderReason(limit) });
  }

  fail(err: unknown): void {
    this.#s.raw.finish({ code: GrpcCode.Unknown, message: err instanceof Error ? err.message : String(err) });
  }
}

export function serveWatch(s: Stream, gw: V3GatewayContext, ctx: V3CallContext): WatchSession {
  const session = new WatchSession(gw, ctx, new GrpcWatchWire(s, gw));
  s.onMessage((m) => session.enqueue(watchRequestMsg(m)));
  s.raw.onClose = () => session.close();
  return session;
}

