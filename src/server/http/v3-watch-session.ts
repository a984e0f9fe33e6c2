// One Watch stream's watchers, as etcd's serverWatchStream, for both transports: the JSON
// gateway (v3-watch-stream.ts) and gRPC (../grpc/watch.ts) decode their requests into
// WatchRequestMsg and hand the session a WatchWire that encodes responses in their format.
// Everything else — watch IDs, the order of answers, fragments, compaction and refusal
// answers, slow readers — is decided here, once.
//
// Slow readers, as etcd's victims: while the wire holds more than `streamBufferBytes`
// unsent, a watcher handed events refuses them (its sink returns false) and the hub pauses
// it where they began; once the wire drains (`wire.drained()`), each paused watcher is
// resumed and the hub catches it up from the store, in order, with no gap or duplicate
// (or answers compact_revision if that history was compacted meanwhile). Nothing is
// canceled for being slow, and the member neither waits for the reader nor keeps its events.
// A wire that shares a connection with other streams (gRPC) also reports the connection's
// unsent bytes (`wire.sharedUnsent`): past CONNECTION_BUFFER_FACTOR times the limit, events
// wait the same way, on every stream of that connection.
//
// Catch-up runs in steps (a create from an old revision, a resumed watcher far behind):
// the hub scans a bounded stretch of history per step and asks for more (the sink's
// more()); the next step runs from the process's CatchUpQueue, a few milliseconds of
// steps per event-loop turn, so one watcher's backlog does not hold the member. Until its
// last step, a watcher gets no live events (the hub holds it, etcd's unsynced group).
//
// The stream owns its watch IDs: automatic ones count from 0 and skip IDs in use; an
// explicit ID in use is refused with etcd's cancel_reason. Requests are handled one after
// another in arrival order (a create waits for the backend before the next request).
//
// Invariants:
// - a watcher's `created` goes out before any of its events (messages the hub delivers
//   while the registration is in flight are held, then flushed in order);
// - a progress request is answered with watch ID -1 after every earlier request, and only
//   once every watcher of the stream has caught up (none paused, catching up, or holding
//   messages: its header revision promises every event up to it was sent), as etcd's
//   deferred progress (RequestProgressAll); requests while one waits add nothing;
// - close() cancels every watcher of the stream (the transport calls it when the call
//   ends, for whatever reason); half-closing the request side keeps them, as etcd;
// - the bytes the wire holds unsent stay bounded: events are written only while it holds
//   at most `streamBufferBytes` (so at most that plus one message); answers that cannot
//   wait (created, canceled, progress) past twice that end the stream (a client that keeps
//   asking and never reads); while a create is in flight its held messages stay under
//   the limit too.
import { V3Error } from "../../api/v3-errors.ts";
import type { V3Event, WatchMessage } from "../../store/v3/index.ts";
import type { V3CallContext, V3GatewayContext, V3Header, V3WatchRegistration } from "./v3-backend.ts";
import type { WatchCreateMsg, WatchRequestMsg } from "./v3-decode.ts";
import { eventSize, varintLen } from "./v3-proto-size.ts";
import { catchUpQueue, type CatchUpQueue } from "./catch-up-queue.ts";
import type { WatchStreamCounts } from "../metrics/watch-metrics.ts";

export const DEFAULT_STREAM_BUFFER_BYTES = 8 << 20;

/**
 * A connection carrying several streams (gRPC) is bounded too, at this many times the
 * stream limit (16 MiB by default: grpc-go's bdpLimit, the largest connection window its
 * clients grow to, so a client that reads never has more than that in flight anyway):
 * past it, watchers on every stream of the connection pause, whichever stream holds the
 * bytes, and resume when the connection drains. Without it, N streams that do not read
 * held N times the stream limit.
 */
export const CONNECTION_BUFFER_FACTOR = 2;

/** etcd's (mvcc) refusal of an explicit watch ID already in use on the stream. */
export const DUPLICATE_WATCH_ID = "mvcc: duplicate watch ID provided on the WatchStream";
export const EMPTY_WATCHER_RANGE = "mvcc: watcher range is empty";

/** etcd's watchStream.Watch: a range end that is not "\0" (from key) and not above the key watches nothing. */
export function emptyWatchRange(key: Buffer, rangeEnd: Buffer): boolean {
  if (rangeEnd.length === 0 || (rangeEnd.length === 1 && rangeEnd[0] === 0)) return false;
  return Buffer.compare(key, rangeEnd) >= 0;
}

/** Our status message for a stream ended because its client keeps asking and never reads. */
export function slowReaderReason(limit: number): string {
  return `etcdserver: watch stream ended: the client reads too slowly (more than ${2 * limit} bytes unsent)`;
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

/** A WatchResponse without events: created, canceled (refused, compacted, slow), progress. */
export interface WatchControl {
  header: V3Header;
  /** -1: the stream's (a progress answer, a refused create). */
  watchId: number;
  created?: boolean;
  canceled?: boolean;
  compactRevision?: number;
  cancelReason?: string;
}

/** What a transport provides: its encoding of the two kinds of response, and its buffer. */
export interface WatchWire {
  control(r: WatchControl): void;
  /**
   * Events of one hub message. The same `events` array (and `revision`) is handed to every
   * watcher of the stream, and of other streams, that gets that message unfragmented: a
   * wire may encode it once and reuse the bytes.
   */
  events(revision: number, watchId: number, events: readonly V3Event[], fragment: boolean): void;
  /** Bytes written and not yet taken by the client. */
  readonly unsent: number;
  /**
   * Bytes unsent on what this wire shares with other streams (its connection; undefined:
   * nothing shared), bounded at CONNECTION_BUFFER_FACTOR times the stream limit.
   */
  readonly sharedUnsent?: number | undefined;
  /**
   * Resolves once the wire holds little unsent again, and what it shares is back under its
   * bound (or the call ended); never rejects.
   */
  drained(): Promise<void>;
  /** Answers that cannot wait passed twice the limit: end the call (the session is closed). */
  overflow(limit: number): void;
  /** Handling a request failed unexpectedly: end the call (the session is closed). */
  fail(err: unknown): void;
}

interface Watcher {
  readonly id: number;
  readonly fragment: boolean;
  /** Set once the backend registered it; undefined while in flight. */
  reg: V3WatchRegistration | undefined;
  /** Messages the hub delivered before `created` went out, their events' bytes and count. */
  held: WatchMessage[] | undefined;
  heldBytes: number;
  heldEvents: number;
  /** Its sink refused events: the hub holds it until `reg.resume()`. */
  paused: boolean;
  /** The hub sent its final message (compaction): the ID stays taken until canceled, as in etcd. */
  done: boolean;
  /** Its catch-up step ended (the sink's more()): the next step is queued, or will be once registered. */
  stepping: boolean;
}

export class WatchSession {
  readonly #gw: V3GatewayContext;
  readonly #ctx: V3CallContext;
  readonly #wire: WatchWire;
  readonly #limit: number;
  readonly #watchers = new Map<number, Watcher>();
  #nextId = 0;
  #queue: Promise<void> = Promise.resolve();
  #closed = false;
  /** A drained() wait is on: paused watchers resume when it resolves. */
  #waitingDrain = false;
  /** A progress request waits for every watcher to catch up. */
  #progressDeferred = false;
  readonly #steps: Pick<CatchUpQueue, "push">;
  readonly #counts: WatchStreamCounts | undefined;

  constructor(gw: V3GatewayContext, ctx: V3CallContext, wire: WatchWire, opts: { steps?: Pick<CatchUpQueue, "push"> } = {}) {
    this.#gw = gw;
    this.#ctx = ctx;
    this.#wire = wire;
    this.#limit = gw.streamBufferBytes ?? DEFAULT_STREAM_BUFFER_BYTES;
    this.#steps = opts.steps ?? catchUpQueue;
    this.#counts = gw.watchMetrics;
    this.#counts?.streamOpened();
  }

  /** Watchers currently registered (tests, metrics). */
  get size(): number {
    return this.#watchers.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Handles a request after the ones before it. */
  enqueue(msg: WatchRequestMsg): void {
    this.#queue = this.#queue
      .then(() => this.#handle(msg))
      .catch((err: unknown) => {
        // A bug or a dead connection: end the call rather than leave it hanging.
        if (this.#closed) return;
        this.close();
        this.#wire.fail(err);
      });
  }

  /** Cancels every watcher; idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of this.#watchers.values()) {
      w.reg?.cancel();
      this.#forget(w);
    }
    this.#watchers.clear();
    this.#counts?.streamClosed();
  }

  async #handle(msg: WatchRequestMsg): Promise<void> {
    if (this.#closed) return;
    if ("create" in msg) return this.#create(msg);
    if ("cancel" in msg) return this.#cancel(msg.cancel);
    // etcd 3.4 answers a progress request at once, for the whole stream (watch_id -1).
    if ("progress" in msg) {
      this.#progressDeferred = true;
      this.#answerProgress();
    }
    // An empty request: etcd ignores it.
  }

  async #create(m: WatchCreateMsg): Promise<void> {
    const backend = this.#gw.backend;
    // Refused before an ID is taken or checked, as etcd's watchStream.Watch does.
    if (emptyWatchRange(m.create.key, m.create.rangeEnd)) {
      this.#control({ header: backend.header(), watchId: -1, created: true, canceled: true, cancelReason: EMPTY_WATCHER_RANGE });
      return;
    }
    let id = m.watchId;
    const auto = id === 0;
    if (auto) {
      while (this.#watchers.has(this.#nextId)) this.#nextId++;
      id = this.#nextId;
    } else if (this.#watchers.has(id)) {
      this.#control({ header: backend.header(), watchId: -1, created: true, canceled: true, cancelReason: DUPLICATE_WATCH_ID });
      return;
    }
    const w: Watcher = { id, fragment: m.fragment, reg: undefined, held: [], heldBytes: 0, heldEvents: 0, paused: false, done: false, stepping: false };
    this.#watchers.set(id, w);
    if (auto) this.#nextId++;
    let reg: V3WatchRegistration;
    try {
      reg = await backend.watch(m.create, { send: (msg) => this.#onMessage(w, msg), more: () => this.#onMore(w) }, this.#ctx);
    } catch (err) {
      // Refused before anything was registered: the ID is not used up (etcd checks first).
      if (this.#watchers.get(id) === w) this.#forget(w);
      this.#watchers.delete(id);
      if (auto) this.#nextId = id;
      this.#control({ header: backend.header(), watchId: -1, created: true, canceled: true, cancelReason: refusedWatchReason(err) });
      return;
    }
    if (this.#closed || this.#watchers.get(id) !== w) {
      reg.cancel();
      return; // close() or #cancel() forgot w
    }
    w.reg = reg;
    this.#control({ header: backend.header(), watchId: id, created: true });
    const held = w.held ?? [];
    w.held = undefined;
    this.#counts?.pendingChanged(-w.heldEvents);
    w.heldEvents = 0;
    for (const msg of held) if (this.#watchers.get(id) === w) this.#deliver(w, msg);
    if (w.paused) this.#waitDrain();
    else if (w.stepping) this.#steps.push(() => this.#step(w));
  }

  #cancel(id: number): void {
    const w = this.#watchers.get(id);
    if (w === undefined) return; // etcd: an unknown ID gets no answer
    w.reg?.cancel();
    this.#forget(w);
    this.#watchers.delete(id);
    this.#control({ header: this.#gw.backend.header(), watchId: id, canceled: true });
    this.#answerProgress();
  }

  /** The hub ended `w`'s catch-up step: queue the next (after registration, if in flight). */
  #onMore(w: Watcher): void {
    if (this.#closed || this.#watchers.get(w.id) !== w) return;
    w.stepping = true;
    if (w.reg !== undefined) this.#steps.push(() => this.#step(w));
  }

  /** One catch-up step of `w`, from the queue; a full wire turns it into a paused watcher. */
  #step(w: Watcher): void {
    if (this.#closed || this.#watchers.get(w.id) !== w || w.reg === undefined || !w.stepping) return;
    w.stepping = false;
    if (this.#full()) {
      // The hub holds it as paused already: resume() on drain takes the next step.
      w.paused = true;
      this.#waitDrain();
      return;
    }
    try {
      w.reg.resume(); // the step's events come through #onMessage; it may pause w or ask for more
    } catch (err) {
      this.close();
      this.#wire.fail(err);
      return;
    }
    this.#answerProgress();
  }

  /** A deferred progress request is answered once no watcher of the stream is behind. */
  #answerProgress(): void {
    if (!this.#progressDeferred || this.#closed) return;
    for (const w of this.#watchers.values()) {
      if (!w.done && (w.paused || w.stepping || w.held !== undefined)) return;
    }
    this.#progressDeferred = false;
    this.#control({ header: this.#gw.backend.header(), watchId: -1 });
  }

  /** The hub's message to `w`; false: events refused, `w` pauses (see the header). */
  #onMessage(w: Watcher, msg: WatchMessage): boolean {
    if (this.#closed || this.#watchers.get(w.id) !== w) return true;
    const events = msg.canceled !== true && msg.events.length > 0;
    if (w.held !== undefined) {
      const bytes = events ? messageBytes(msg) : 0;
      if (events && w.held.length > 0 && w.heldBytes + bytes > this.#limit) {
        w.paused = true;
        return false;
      }
      w.held.push(msg);
      w.heldBytes += bytes;
      if (events) {
        w.heldEvents += msg.events.length;
        this.#counts?.eventsTaken(msg.events.length);
        this.#counts?.pendingChanged(msg.events.length);
      }
      return true;
    }
    if (msg.canceled !== true && this.#full()) {
      // A progress notification is dropped (etcd: a full channel means events are coming).
      if (!events) return true;
      w.paused = true;
      this.#waitDrain();
      return false;
    }
    if (events) this.#counts?.eventsTaken(msg.events.length);
    this.#deliver(w, msg);
    return true;
  }

  /**
   * `w` leaves the stream: what it held for `created` is dropped (etcd counts such events
   * as received when its stream closes: eventsTaken already did), and a compacted one no
   * longer counts as a watcher.
   */
  #forget(w: Watcher): void {
    this.#counts?.pendingChanged(-w.heldEvents);
    w.heldEvents = 0;
    if (w.done) this.#counts?.compactedHeld(-1);
  }

  /** Events must wait: the stream, or the connection it shares, holds too much unsent. */
  #full(): boolean {
    return this.#wire.unsent > this.#limit || (this.#wire.sharedUnsent ?? 0) > CONNECTION_BUFFER_FACTOR * this.#limit;
  }

  #waitDrain(): void {
    if (this.#waitingDrain || this.#closed) return;
    this.#waitingDrain = true;
    void this.#wire.drained().then(() => {
      this.#waitingDrain = false;
      this.#resumePaused();
    });
  }

  /** Catches paused watchers up, in creation order, while the wire takes more. */
  #resumePaused(): void {
    for (const w of this.#watchers.values()) {
      if (this.#closed) return;
      if (!w.paused || w.reg === undefined) continue;
      if (this.#full()) {
        this.#waitDrain();
        return;
      }
      w.paused = false;
      w.reg.resume(); // synchronous: the hub's catch-up step comes through #onMessage, and may pause w again
    }
    this.#answerProgress();
  }

  #deliver(w: Watcher, msg: WatchMessage): void {
    if (w.done) return;
    if (msg.canceled === true) {
      // etcd's compaction answer has no header revision (the response's Revision is 0).
      w.done = true;
      this.#counts?.compactedHeld(1);
      const header = { ...this.#gw.backend.header(msg.revision), revision: 0 };
      this.#control({ header, watchId: w.id, canceled: true, compactRevision: msg.compactRevision ?? 0 });
      return;
    }
    if (msg.events.length === 0) {
      this.#control({ header: this.#gw.backend.header(msg.revision), watchId: w.id }); // progress notification
    } else if (w.fragment) {
      for (const part of fragments(msg.events, this.#gw.maxRequestBytes, varintLen(w.id) + 64)) {
        if (!this.#closed) this.#wire.events(msg.revision, w.id, part.events, part.more);
      }
    } else if (!this.#closed) {
      this.#wire.events(msg.revision, w.id, msg.events, false);
    }
  }

  #control(r: WatchControl): void {
    if (this.#closed) return;
    this.#wire.control(r);
    if (this.#wire.unsent > 2 * this.#limit) {
      this.close();
      this.#wire.overflow(this.#limit);
    }
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

/** A message's events as the hub weighs them for the held limit (their protobuf size). */
function messageBytes(msg: WatchMessage): number {
  let n = 0;
  for (const e of msg.events) n += eventSize(e);
  return n;
}
