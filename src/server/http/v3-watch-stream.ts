// POST /v3/watch: etcd's serverWatchStream behind grpc-gateway. The body is a sequence of
// WatchRequests (create / cancel / progress), handled one after another in arrival order;
// the response is a never-ending sequence of `{"result":WatchResponse}` lines that only the
// client (or shutdown, or a slow reader) ends. The stream owns the watch IDs: per stream,
// automatic IDs count from 0 and skip IDs in use (0 is printed as nothing: a zero value),
// an explicit ID in use is refused with etcd's cancel_reason.
//
// Invariants:
// - a watcher's `created` line is written before any of its events (messages the hub
//   delivers while the registration is in flight are held, then flushed in order);
// - when the response closes, for whatever reason, every watcher of the stream is canceled;
// - the bytes waiting in the response buffer stay bounded: past `streamBufferBytes` the
//   watcher being written to is canceled (with a cancel_reason), past twice that the whole
//   stream is closed. A slow reader thus never makes the server hold unbounded memory.
import type { IncomingMessage, ServerResponse } from "node:http";
import { V3Error } from "../../api/v3-errors.ts";
import type { V3Event, WatchMessage } from "../../store/v3/index.ts";
import type { V3CallContext, V3GatewayContext, V3WatchRegistration } from "./v3-backend.ts";
import { decodeWatchRequest, type WatchCreateMsg, type WatchRequestMsg } from "./v3-decode.ts";
import { encodeWatchResponse, streamLine, type WatchResponseFields } from "./v3-encode.ts";
import { grpcRecvLimit } from "./v3-handlers.ts";
import { eventSize, varintLen } from "./v3-proto-size.ts";
import { V3StreamWriter } from "./v3-respond.ts";
import { firstMessageError, readMessages, trackStream } from "./v3-streams.ts";
import { messageFields } from "./v3-wire.ts";

export const DEFAULT_STREAM_BUFFER_BYTES = 8 << 20;

/** etcd's (mvcc) refusal of an explicit watch ID already in use on the stream. */
export const DUPLICATE_WATCH_ID = "mvcc: duplicate watch ID provided on the WatchStream";

/** Our cancel_reason for a watcher dropped because its client does not read fast enough. */
export function slowReaderReason(limit: number): string {
  return `etcdserver: watch canceled: the client reads too slowly (more than ${limit} bytes unsent)`;
}

/** gRPC's name for a code, as status.Error prints it ("rpc error: code = X desc = ..."). */
const GRPC_CODE_NAMES = [
  "OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists", "PermissionDenied",
  "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
];

/** etcd 3.4.23 puts the gRPC status error's text in the cancel_reason of a refused watch. */
export function refusedWatchReason(err: unknown): string {
  if (err instanceof V3Error) return `rpc error: code = ${GRPC_CODE_NAMES[err.code] ?? `Code(${err.code})`} desc = ${err.message}`;
  return `rpc error: code = Unknown desc = ${err instanceof Error ? err.message : String(err)}`;
}

interface Watcher {
  readonly id: number;
  readonly fragment: boolean;
  /** Set once the backend registered it; undefined while in flight. */
  reg: V3WatchRegistration | undefined;
  /** Messages the hub delivered before `created` was written. */
  held: WatchMessage[] | undefined;
  /** The hub sent its final message (compaction): the ID stays taken until canceled, as in etcd. */
  done: boolean;
}

export class WatchStream {
  readonly #gw: V3GatewayContext;
  readonly #ctx: V3CallContext;
  readonly #writer: V3StreamWriter;
  readonly #limit: number;
  readonly #watchers = new Map<number, Watcher>();
  #nextId = 0;
  #queue: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(res: ServerResponse, gw: V3GatewayContext, ctx: V3CallContext) {
    this.#gw = gw;
    this.#ctx = ctx;
    this.#writer = new V3StreamWriter(res);
    this.#limit = gw.streamBufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES;
    res.on("close", () => this.close());
  }

  /** Watchers currently registered (tests, metrics). */
  get size(): number {
    return this.#watchers.size;
  }

  /** Handles a request after the ones before it (creates wait for the backend). */
  enqueue(msg: WatchRequestMsg): void {
    this.#queue = this.#queue.then(() => this.#handle(msg)).catch((err: unknown) => {
      // A failure here is a bug or a dead socket: drop the stream rather than hang it.
      this.#writer.res.destroy(err instanceof Error ? err : new Error(String(err)));
    });
  }

  /** The stream's first message did not decode: the call fails (nothing was sent yet). */
  failFirst(message: string): void {
    this.close();
    this.#writer.fail(firstMessageError(message));
  }

  /** Cancels every watcher; idempotent. Called when the response closes. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of this.#watchers.values()) w.reg?.cancel();
    this.#watchers.clear();
  }

  async #handle(msg: WatchRequestMsg): Promise<void> {
    if (this.#closed) return;
    if ("create" in msg) return this.#create(msg);
    if ("cancel" in msg) return this.#cancel(msg.cancel);
    // etcd 3.4 answers a progress request at once, for the whole stream (watch_id -1).
    if ("progress" in msg) this.#send({ header: this.#gw.backend.header(), watchId: -1 });
  }

  async #create(m: WatchCreateMsg): Promise<void> {
    const backend = this.#gw.backend;
    let id = m.watchId;
    const auto = id === 0;
    if (auto) {
      while (this.#watchers.has(this.#nextId)) this.#nextId++;
      id = this.#nextId;
    } else if (this.#watchers.has(id)) {
      this.#send({ header: backend.header(), watchId: -1, created: true, canceled: true, cancelReason: DUPLICATE_WATCH_ID });
      return;
    }
    const w: Watcher = { id, fragment: m.fragment, reg: undefined, held: [], done: false };
    this.#watchers.set(id, w);
    if (auto) this.#nextId++;
    let reg: V3WatchRegistration;
    try {
      reg = await backend.watch(m.create, { send: (msg) => this.#onMessage(w, msg) }, this.#ctx);
    } catch (err) {
      // Refused before anything was registered: the ID is not used up (etcd checks first).
      this.#watchers.delete(id);
      if (auto) this.#nextId = id;
      this.#send({ header: backend.header(), watchId: -1, created: true, canceled: true, cancelReason: refusedWatchReason(err) });
      return;
    }
    if (this.#closed || this.#watchers.get(id) !== w) {
      reg.cancel();
      return;
    }
    w.reg = reg;
    this.#send({ header: backend.header(), watchId: id, created: true });
    const held = w.held ?? [];
    w.held = undefined;
    for (const msg of held) if (this.#watchers.get(id) === w) this.#deliver(w, msg);
  }

  #cancel(id: number): void {
    const w = this.#watchers.get(id);
    if (w === undefined) return; // etcd: an unknown ID gets no answer
    w.reg?.cancel();
    this.#watchers.delete(id);
    this.#send({ header: this.#gw.backend.header(), watchId: id, canceled: true });
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
    const base = this.#gw.backend.header(msg.revision);
    if (msg.canceled === true) {
      // etcd's compaction answer has no header revision (the response's Revision is 0).
      w.done = true;
      this.#send({ header: { ...base, revision: 0 }, watchId: w.id, canceled: true, compactRevision: msg.compactRevision ?? 0 });
      return;
    }
    if (msg.events.length === 0) {
      this.#send({ header: base, watchId: w.id }); // progress notification
    } else if (w.fragment) {
      for (const part of fragments(msg.events, this.#gw.maxRequestBytes, varintLen(w.id) + 64)) {
        this.#send({ header: base, watchId: w.id, events: part.events, fragment: part.more });
      }
    } else {
      this.#send({ header: base, watchId: w.id, events: msg.events });
    }
    this.#checkBacklog(w);
  }

  /** Cancels `w` (or the whole stream) when the client does not keep up. */
  #checkBacklog(w: Watcher): void {
    const res = this.#writer.res;
    const pending = res.writableLength;
    if (pending <= this.#limit) return;
    if (pending > 2 * this.#limit) {
      res.destroy(); // 'close' cancels every watcher
      return;
    }
    w.reg?.cancel();
    this.#watchers.delete(w.id);
    this.#send({ header: this.#gw.backend.header(), watchId: w.id, canceled: true, cancelReason: slowReaderReason(this.#limit) });
  }

  #send(fields: WatchResponseFields): void {
    if (this.#closed) return;
    this.#writer.line(streamLine(encodeWatchResponse(fields)));
  }
}

/**
 * etcd's sendFragments: a response of at least `maxBytes` (protobuf size) with two or more
 * events is split into responses just under the limit (each at least one event), all but
 * the last flagged `fragment`. `overhead` approximates the header and watch ID.
 */
export function fragments(events: V3Event[], maxBytes: number, overhead: number): Array<{ events: V3Event[]; more: boolean }> {
  const sizes = events.map((e) => {
    const s = eventSize(e);
    return 1 + varintLen(s) + s;
  });
  const total = overhead + sizes.reduce((a, b) => a + b, 0);
  if (total < maxBytes || events.length < 2) return [{ events, more: false }];
  const out: Array<{ events: V3Event[]; more: boolean }> = [];
  let i = 0;
  while (i < events.length) {
    let size = overhead + 2; // + the fragment flag
    const part: V3Event[] = [];
    while (i < events.length) {
      if (part.length > 0 && size + sizes[i]! >= maxBytes) break;
      size += sizes[i]!;
      part.push(events[i]!);
      i++;
    }
    out.push({ events: part, more: i < events.length });
  }
  return out;
}

/** Serves POST /v3/watch. */
export function serveWatch(req: IncomingMessage, res: ServerResponse, gw: V3GatewayContext, ctx: V3CallContext): WatchStream {
  const stream = new WatchStream(res, gw, ctx);
  trackStream(res, gw);
  readMessages(req, grpcRecvLimit(gw), {
    message(node) {
      stream.enqueue(decodeWatchRequest(messageFields(node)));
    },
    error(message, index) {
      // Only a broken FIRST message fails the call; later ones just stop the reading.
      if (index === 0) stream.failFirst(message);
    },
    end() {
      // The client closed its sending side: etcd keeps the watchers and the response open.
    },
  });
  return stream;
}
