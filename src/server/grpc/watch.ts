// etcd's Watch RPC (serverWatchStream) over gRPC. The watchers and every rule of the
// stream (IDs, order of answers, fragments, compaction and refusal answers, progress,
// slow readers paused and caught up) are the WatchSession's (../http/v3-watch-session.ts), which the JSON
// gateway drives too; this file is the gRPC wire: WatchRequest messages in, WatchResponse
// messages out, and the HTTP/2 stream's unsent bytes the session watches.
//
// Pacing (FanOutPacer): a connection hands its frames to its socket once the synchronous
// run that wrote them ends (h2/connection.ts gathers them until its microtasks are done; node:http2,
// before it, per event-loop turn), so a write's messages to 1,000 watchers, written in one
// go, would all leave after the last was written, and clients would begin reading only
// then. Now the messages to the first connections a fan-out reaches (about
// FANOUT_TURN_MESSAGES streams' worth) are written at once and the others' wait, by
// connection, for the following turns (about as many a turn, whole connections at a
// time): the first connections' bytes leave while the member writes the others', and each
// connection's frames still leave in one socket write. Per connection (and so per stream)
// the order of messages is kept: once one of its messages waits, every later one to any
// watch stream of that connection waits behind it.
//
// Invariants: when the call ends (client cancel, connection gone, shutdown) every watcher
// of the stream is canceled and its waiting messages are dropped; the client half-closing
// keeps the watchers, as etcd does.
import { GrpcCode } from "../../api/v3-errors.ts";
import type { V3Event } from "../../store/v3/index.ts";
import type { V3CallContext, V3GatewayContext, V3Header } from "../http/v3-backend.ts";
import type { WatchRequestMsg } from "../http/v3-decode.ts";
import { CONNECTION_BUFFER_FACTOR, DEFAULT_STREAM_BUFFER_BYTES, WatchSession, slowReaderReason, type WatchControl, type WatchWire } from "../http/v3-watch-session.ts";
import * as cv from "./convert.ts";
import { WatchEventsFramer, frameWatchControl, headerFields } from "./fast-codec.ts";
import type { WatchRequest, WatchRequestSchema, WatchResponseSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import type { TypedStream } from "./services.ts";

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
 * is written to each (the connection only reads it). Valid, as the framer's shared part, until
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

/**
 * How many watch streams' messages one turn of the event loop writes, about: connections
 * are let through whole while their streams fit (the first one always), and each later
 * turn flushes waiting connections until this many messages went out. 128 (one connection
 * of the bench's 1,000 watchers on 10) measured at least as well as 64, 256, or unpaced.
 */
export const FANOUT_TURN_MESSAGES = 128;

/** A client connection's watch streams, as the pacer sees them. */
interface Connection {
  /** Its watch streams open now. */
  streams: number;
  /** The pacer's turn in which it was let through (its messages of that turn go at once). */
  turn: number;
  /** In the pacer's queue: every message to its watch streams waits (order). */
  waiting: boolean;
  /** Its wires that hold waiting messages, in the order they got their first. */
  readonly wires: GrpcWatchWire[];
  /** Bytes of the messages waiting, over all its streams. */
  waitingBytes: number;
}

/** What a watch wire reads of its HTTP/2 connection (h2/connection.ts): all its streams' unsent bytes. */
interface SharedOutput {
  readonly unsentBytes: number;
  unsentBelow(bytes: number): Promise<void>;
}

function sharedOutput(session: object | undefined): SharedOutput | undefined {
  return session !== undefined && "unsentBelow" in session ? (session as SharedOutput) : undefined;
}

class FanOutPacer {
  /** Counts the synchronous runs that write (each ends when the microtasks run). */
  #turn = 1;
  /** Streams of the connections let through in this turn. */
  #turnStreams = 0;
  readonly #queue: Connection[] = [];
  #head = 0;
  #scheduled = false;

  /** Whether a message to a stream of `c` may be written now; if not, it waits. */
  admit(c: Connection): boolean {
    if (c.waiting) return false;
    if (c.turn === this.#turn) return true;
    if (this.#turnStreams === 0 || this.#turnStreams + c.streams <= FANOUT_TURN_MESSAGES) {
      if (this.#turnStreams === 0) queueMicrotask(this.#nextTurn);
      this.#turnStreams += Math.max(c.streams, 1);
      c.turn = this.#turn;
      return true;
    }
    c.waiting = true;
    this.#queue.push(c);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#drain);
    }
    return false;
  }

  readonly #nextTurn = (): void => {
    this.#turn++;
    this.#turnStreams = 0;
  };

  /** One turn's share: whole connections, in the order they began to wait. */
  readonly #drain = (): void => {
    let n = 0;
    while (this.#head < this.#queue.length && n < FANOUT_TURN_MESSAGES) {
      const c = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined as unknown as Connection;
      c.waiting = false;
      for (const w of c.wires) n += w.flush();
      c.wires.length = 0;
      c.waitingBytes = 0;
    }
    if (this.#head < this.#queue.length) {
      setImmediate(this.#drain);
      return;
    }
    this.#queue.length = 0;
    this.#head = 0;
    this.#scheduled = false;
  };
}

const pacer = new FanOutPacer();
/** By HTTP/2 session: the unit whose frames leave together. */
const connections = new WeakMap<object, Connection>();

class GrpcWatchWire implements WatchWire {
  readonly #s: Stream;
  readonly #header: (revision: number) => V3Header;
  readonly #conn: Connection;
  readonly #output: SharedOutput | undefined;
  /** The connection's bound (the session's: CONNECTION_BUFFER_FACTOR times the stream's). */
  readonly #connectionLimit: number;
  /** Messages waiting for the connection's turn (FanOutPacer), and their bytes. */
  #waiting: Buffer[] = [];
  #waitingBytes = 0;

  constructor(s: Stream, gw: V3GatewayContext) {
    this.#s = s;
    this.#header = (revision) => gw.backend.header(revision);
    const key = s.raw.session ?? this;
    let c = connections.get(key);
    if (c === undefined) connections.set(key, (c = { streams: 0, turn: 0, waiting: false, wires: [], waitingBytes: 0 }));
    c.streams++;
    this.#conn = c;
    this.#output = sharedOutput(s.raw.session);
    this.#connectionLimit = CONNECTION_BUFFER_FACTOR * (gw.streamBufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES);
  }

  get unsent(): number {
    return this.#s.raw.writableLength + this.#waitingBytes;
  }

  get sharedUnsent(): number | undefined {
    return this.#output === undefined ? undefined : this.#output.unsentBytes + this.#conn.waitingBytes;
  }

  async drained(): Promise<void> {
    const raw = this.#s.raw;
    // Messages waiting for the connection's turn go first (FanOutPacer: a later turn).
    while (this.#waitingBytes > 0 && !raw.closed) await new Promise<void>((resolve) => setImmediate(resolve));
    await raw.drained();
    // Then the connection, down to half its bound, so its streams do not resume one message at a time.
    if (this.#output !== undefined && !raw.closed) await this.#output.unsentBelow(this.#connectionLimit / 2);
  }

  control(r: WatchControl): void {
    this.#write(frameWatchControl(headerFields(r.header), r.watchId, r.created === true, r.canceled === true, r.compactRevision ?? 0, r.cancelReason ?? ""));
  }

  events(revision: number, watchId: number, events: readonly V3Event[], fragment: boolean): void {
    this.#write(frames.frame(revision, this.#header, watchId, events, fragment));
  }

  #write(framed: Buffer): void {
    if (pacer.admit(this.#conn)) {
      this.#s.raw.sendFramed(framed);
      return;
    }
    if (this.#waiting.length === 0) this.#conn.wires.push(this);
    this.#waiting.push(framed);
    this.#waitingBytes += framed.length;
    this.#conn.waitingBytes += framed.length;
  }

  /** The call ended. */
  closed(): void {
    this.#conn.streams--;
  }

  /** Writes the waiting messages (dropped if the call ended); returns how many there were. */
  flush(): number {
    const msgs = this.#waiting;
    this.#waiting = [];
    this.#waitingBytes = 0;
    const raw = this.#s.raw;
    for (const m of msgs) raw.sendFramed(m);
    return msgs.length;
  }

  overflow(limit: number): void {
    this.#s.raw.finish({ code: GrpcCode.ResourceExhausted, message: slowReaderReason(limit) });
  }

  fail(err: unknown): void {
    this.#s.raw.finish({ code: GrpcCode.Unknown, message: err instanceof Error ? err.message : String(err) });
  }
}

export function serveWatch(s: Stream, gw: V3GatewayContext, ctx: V3CallContext): WatchSession {
  const wire = new GrpcWatchWire(s, gw);
  const session = new WatchSession(gw, ctx, wire);
  s.onMessage((m) => session.enqueue(watchRequestMsg(m)));
  s.raw.onClose = () => {
    wire.closed();
    session.close();
  };
  return session;
}

