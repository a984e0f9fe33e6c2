// etcd's Watch RPC (serverWatchStream) over gRPC, with the JSON gateway's semantics
// (http/v3-watch-stream.ts): the stream owns its watch IDs (automatic ones count from 0
// and skip IDs in use; an explicit ID in use is refused), requests are handled one after
// another in arrival order, a watcher's `created` goes out before its events, progress
// requests are answered with watch ID -1 after every earlier request (the hub replays a
// watcher's history inside its creation, so by then every watcher has caught up).
//
// Invariants: when the call ends (client cancel, connection gone, shutdown) every watcher
// of the stream is canceled; the bytes waiting for HTTP/2 flow control stay bounded (past
// `streamBufferBytes` the watcher being fed is canceled with a cancel_reason, past twice
// that the call is ended), so a client that stops reading never makes the server hold
// unbounded memory. The client half-closing keeps the watchers, as etcd does.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { V3Event, WatchMessage } from "../../store/v3/index.ts";
import type { V3CallContext, V3GatewayContext, V3WatchRegistration } from "../http/v3-backend.ts";
import { varintLen } from "../http/v3-proto-size.ts";
import { DEFAULT_STREAM_BUFFER_BYTES, DUPLICATE_WATCH_ID, fragments, refusedWatchReason, slowReaderReason } from "../http/v3-watch-stream.ts";
import * as cv from "./convert.ts";
import { encodeWatchEvents, headerFields } from "./fast-codec.ts";
import type { WatchRequest, WatchRequestSchema, WatchResponseSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { GrpcCode } from "../../api/v3-errors.ts";
import type { TypedStream } from "./services.ts";

type Response = MessageInitShape<typeof WatchResponseSchema>;

interface Watcher {
  readonly id: number;
  readonly fragment: boolean;
  reg: V3WatchRegistration | undefined;
  /** Messages delivered before `created` went out. */
  held: WatchMessage[] | undefined;
  /** The hub sent its final (compaction) message; the ID stays taken until canceled. */
  done: boolean;
}

export class GrpcWatchStream {
  readonly #s: TypedStream<typeof WatchRequestSchema, typeof WatchResponseSchema>;
  readonly #gw: V3GatewayContext;
  readonly #ctx: V3CallContext;
  readonly #limit: number;
  readonly #watchers = new Map<number, Watcher>();
  #nextId = 0;
  #queue: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(s: TypedStream<typeof WatchRequestSchema, typeof WatchResponseSchema>, gw: V3GatewayContext, ctx: V3CallContext) {
    this.#s = s;
    this.#gw = gw;
    this.#ctx = ctx;
    this.#limit = gw.streamBufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES;
    s.onMessage((m) => this.#enqueue(m));
    s.raw.onClose = () => this.close();
  }

  get size(): number {
    return this.#watchers.size;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of this.#watchers.values()) w.reg?.cancel();
    this.#watchers.clear();
  }

  #enqueue(m: WatchRequest): void {
    this.#queue = this.#queue
      .then(() => this.#handle(m))
      .catch((err: unknown) => {
        this.close();
        this.#s.raw.finish({ code: GrpcCode.Unknown, message: err instanceof Error ? err.message : String(err) });
      });
  }

  async #handle(m: WatchRequest): Promise<void> {
    if (this.#closed) return;
    const u = m.requestUnion;
    switch (u.case) {
      case "createRequest":
        return this.#create(cv.num(u.value.watchId), u.value.fragment, cv.watchCreate(u.value));
      case "cancelRequest":
        return this.#cancel(cv.num(u.value.watchId));
      case "progressRequest":
        this.#send({ header: cv.header(this.#gw.backend.header()), watchId: -1n });
        return;
      default:
        return; // an empty request: etcd ignores it
    }
  }

  async #create(requested: number, fragment: boolean, create: ReturnType<typeof cv.watchCreate>): Promise<void> {
    const backend = this.#gw.backend;
    let id = requested;
    const auto = id === 0;
    if (auto) {
      while (this.#watchers.has(this.#nextId)) this.#nextId++;
      id = this.#nextId;
    } else if (this.#watchers.has(id)) {
      this.#send({ header: cv.header(backend.header()), watchId: -1n, created: true, canceled: true, cancelReason: DUPLICATE_WATCH_ID });
      return;
    }
    const w: Watcher = { id, fragment, reg: undefined, held: [], done: false };
    this.#watchers.set(id, w);
    if (auto) this.#nextId++;
    let reg: V3WatchRegistration;
    try {
      reg = await backend.watch(create, { send: (msg) => this.#onMessage(w, msg) }, this.#ctx);
    } catch (err) {
      // Refused before anything was registered: the ID is not used up (etcd checks first).
      this.#watchers.delete(id);
      if (auto) this.#nextId = id;
      this.#send({ header: cv.header(backend.header()), watchId: -1n, created: true, canceled: true, cancelReason: refusedWatchReason(err) });
      return;
    }
    if (this.#closed || this.#watchers.get(id) !== w) {
      reg.cancel();
      return;
    }
    w.reg = reg;
    this.#send({ header: cv.header(backend.header()), watchId: BigInt(id), created: true });
    const held = w.held ?? [];
    w.held = undefined;
    for (const msg of held) if (this.#watchers.get(id) === w) this.#deliver(w, msg);
  }

  #cancel(id: number): void {
    const w = this.#watchers.get(id);
    if (w === undefined) return; // etcd: an unknown ID gets no answer
    w.reg?.cancel();
    this.#watchers.delete(id);
    this.#send({ header: cv.header(this.#gw.backend.header()), watchId: BigInt(id), canceled: true });
  }

  #onMessage(w: Watcher, msg: WatchMessage): void {
    if (this.#closed || this.#watchers.get(w.id) !== w) return;
    if (w.held !== undefined) {
      w.held.push(msg);
      return;
    }
    this.#deliver(w, msg);
  }

  #deliver(w: Watcher, msg: WatchMessage): void {
    if (w.done) return;
    if (msg.canceled !== true && msg.events.length > 0) {
      if (w.fragment) {
        for (const part of fragments(msg.events, this.#gw.maxRequestBytes, varintLen(w.id) + 64)) this.#sendEvents(msg.revision, w.id, part.events, part.more);
      } else this.#sendEvents(msg.revision, w.id, msg.events, false);
      this.#checkBacklog(w);
      return;
    }
    const header = cv.header(this.#gw.backend.header(msg.revision));
    const watchId = BigInt(w.id);
    if (msg.canceled === true) {
      // etcd's compaction answer has no header revision.
      w.done = true;
      this.#send({ header: { ...header, revision: 0n }, watchId, canceled: true, compactRevision: BigInt(msg.compactRevision ?? 0) });
      return;
    }
    this.#send({ header, watchId }); // progress notification
    this.#checkBacklog(w);
  }

  #checkBacklog(w: Watcher): void {
    const pending = this.#s.raw.writableLength;
    if (pending <= this.#limit) return;
    if (pending > 2 * this.#limit) {
      this.close();
      this.#s.raw.finish({ code: GrpcCode.ResourceExhausted, message: slowReaderReason(this.#limit) });
      return;
    }
    w.reg?.cancel();
    this.#watchers.delete(w.id);
    this.#send({ header: cv.header(this.#gw.backend.header()), watchId: BigInt(w.id), canceled: true, cancelReason: slowReaderReason(this.#limit) });
  }

  /** Events through fast-codec.ts: one write of 1,000 watchers' events costs 1,000 encodes. */
  #sendEvents(revision: number, id: number, events: readonly V3Event[], fragment: boolean): void {
    if (this.#closed) return;
    this.#s.raw.send(encodeWatchEvents(headerFields(this.#gw.backend.header(revision)), id, events, fragment));
  }

  #send(r: Response): void {
    if (this.#closed) return;
    this.#s.send(r);
  }
}

export function serveWatch(s: TypedStream<typeof WatchRequestSchema, typeof WatchResponseSchema>, gw: V3GatewayContext, ctx: V3CallContext): GrpcWatchStream {
  return new GrpcWatchStream(s, gw, ctx);
}
