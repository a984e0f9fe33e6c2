// Where one write's time goes, end to end: with KV_TRACE_WRITES=N every Nth client write
// (PUT, POST, DELETE on the client port) is followed from the moment its request reaches
// the router (or, for a write the fast lane answers, the moment its bytes were read) through propose, the Ready that carries it, the WAL write and its fdatasync,
// apply, and the moment the response is written, and logged as one line of offsets in
// microseconds. Off (N unset or 0) it costs one branch per Ready and per request.
//
// The request and its proposal are tied through AsyncLocalStorage, entered only for the
// sampled requests; a proposal's later phases are found by its request id. A handler that
// proposes before its first await (the fast lane's v2 writes) hands its trace over
// synchronously instead (withinSync): AsyncLocalStorage, once entered, puts promise hooks
// on every promise of the process, which the traced writes then pay for (one member, one
// client, six alternated rounds, medians: request read -> proposed 11-22 us against 12-35
// with AsyncLocalStorage, lower in 5 of 6 rounds; applied -> response written 54-98
// against 68-115, lower in 4 of 6).
//
// Across members: every line carries `at`, the absolute time of its first phase
// (performance.timeOrigin + performance.now(), in ms: comparable between processes of one
// machine), and the Raft index of its entry. A leader's trace also notes when its appends
// were written to the peers and when each follower's acknowledgement of the entry was read
// ("ack <id> read") and stepped. A follower traces the appends that carry an entry whose index is a multiple of N,
// from the moment its bytes were read through decode, step, its Ready, WAL write, fdatasync
// and the acknowledgement written; the two lines of one index line up by `at`.
import { AsyncLocalStorage } from "node:async_hooks";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "./logger.ts";
import { MessageType, type Message } from "../raft/index.ts";

/** The phases in the order a write passes them. */
export const TracePhase = {
  received: "received",
  proposed: "proposed",
  ready: "ready",
  walWrite: "wal write",
  fsynced: "fsynced",
  /** What was sent before the save left (a leader's appends): written to the sockets. */
  sentBeforeSave: "sent before save",
  /** What waited for the save left (a follower's acknowledgement): written to the socket. */
  sentAfterSave: "sent after save",
  /** A Ready with committed entries began (on the leader: the commit after the acknowledgement). */
  commitReady: "commit ready",
  applied: "applied",
  responded: "responded",
} as const;
export type TracePhase = (typeof TracePhase)[keyof typeof TracePhase];

/** One traced write: the time of each phase, first occurrence only. */
export class WriteTrace {
  readonly what: string;
  /** The Raft index of the traced entry, once known. */
  index: number | undefined;
  readonly #t0: number;
  readonly #marks = new Map<string, number>();

  constructor(what: string, t0: number) {
    this.what = what;
    this.#t0 = t0;
    this.#marks.set(TracePhase.received, t0);
  }

  /** A phase, or any step a handler names (note()). */
  mark(phase: TracePhase | string, at: number): void {
    if (!this.#marks.has(phase)) this.#marks.set(phase, at);
  }

  has(phase: TracePhase | string): boolean {
    return this.#marks.has(phase);
  }

  /** The first phase's time, absolute (ms since the epoch, sub-ms precision): lines of two members compare. */
  get at(): number {
    return Math.round((performance.timeOrigin + this.#t0) * 1000) / 1000;
  }

  /** Each phase's offset from the request's arrival, in µs, in the order they happened. */
  offsets(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [phase, at] of [...this.#marks].sort((a, b) => a[1] - b[1])) out[phase] = Math.round((at - this.#t0) * 1000);
    return out;
  }
}

const WRITE_METHODS = new Set(["PUT", "POST", "DELETE"]);

export class WriteTracer {
  readonly #every: number;
  readonly #log: Logger;
  readonly #now: () => number;
  #seen = 0;
  readonly #als = new AsyncLocalStorage<WriteTrace>();
  /** The trace handed over by withinSync(), while its function runs. */
  #current: WriteTrace | undefined;
  /** Traced proposals by request id, until applied. */
  readonly #pending = new Map<number, WriteTrace>();
  /** Traced appends received from the leader, until their acknowledgement is written. */
  readonly #appends: WriteTrace[] = [];

  /** @param every trace one write in `every` (0: off) */
  constructor(every: number, log: Logger, now: () => number = () => performance.now()) {
    this.#every = Number.isInteger(every) && every > 0 ? every : 0;
    this.#log = log;
    this.#now = now;
  }

  get enabled(): boolean {
    return this.#every > 0;
  }

  /** Proposals being followed (the run loop marks its phases only when there are some). */
  get active(): boolean {
    return this.#pending.size > 0 || this.#appends.length > 0;
  }

  /** Runs the handler of a request, traced when it is a sampled write. */
  around(req: IncomingMessage, res: ServerResponse, handle: () => void): void {
    const trace = this.begin(req.method ?? "", req.url ?? "");
    if (trace === undefined) {
      handle();
      return;
    }
    res.once("finish", () => this.end(trace));
    this.within(trace, handle);
  }

  /**
   * Starts following a request (node:http's, or one the fast lane answers) if it is a write.
   * Every write is followed, every Nth logged: the one whose entry's index is a multiple of
   * N (the appends a follower traces), or, without an index, every Nth.
   */
  begin(method: string, url: string): WriteTrace | undefined {
    if (this.#every === 0 || !WRITE_METHODS.has(method)) return undefined;
    return new WriteTrace(`${method} ${url.split("?")[0]}`, this.#now());
  }

  /** Runs `fn` in the traced request's context: a proposal made in it is followed. */
  within<T>(trace: WriteTrace, fn: () => T): T {
    return this.#als.run(trace, fn);
  }

  /**
   * Runs `fn` with the traced request current only until it returns: a proposal made
   * synchronously in it is followed, one made after an await is not (a write proposed only
   * once a leader is known goes untraced), and note() after an await marks nothing.
   */
  withinSync<T>(trace: WriteTrace, fn: () => T): T {
    const outer = this.#current;
    this.#current = trace;
    try {
      return fn();
    } finally {
      this.#current = outer;
    }
  }

  /** The traced request the caller is in, if any. */
  #inRequest(): WriteTrace | undefined {
    return this.#current ?? this.#als.getStore();
  }

  /** The traced request's response was written: logs the trace. */
  end(trace: WriteTrace): void {
    if (!this.#sampled(trace)) return;
    trace.mark(TracePhase.responded, this.#now());
    this.#log.info("write trace", { request: trace.what, at: trace.at, index: trace.index, us: trace.offsets() });
  }

  #sampled(trace: WriteTrace): boolean {
    return trace.index === undefined ? ++this.#seen % this.#every === 0 : trace.index % this.#every === 0;
  }

  /** A step of the traced request the caller is in, named by the caller (no-op otherwise). */
  note(step: string): void {
    this.#inRequest()?.mark(step, this.#now());
  }

  /** A command with request id `id` was handed to Raft (in the request's async context). */
  proposed(id: number): void {
    const trace = this.#inRequest();
    if (trace === undefined) return;
    trace.mark(TracePhase.proposed, this.#now());
    this.#pending.set(id, trace);
  }

  /** A run-loop phase reached by every traced proposal not yet past it. */
  phase(phase: TracePhase): void {
    const at = this.#now();
    for (const t of this.#pending.values()) t.mark(phase, at);
    for (const t of this.#appends) t.mark(phase, at);
  }

  /**
   * A phase of the Ready whose entries end at `lastIndex`, for the traced proposals in it
   * (and before it) only: pipelined Readys overlap, and a later one's proposals are pending
   * when an earlier one's fdatasync returns.
   */
  phaseThrough(phase: TracePhase, lastIndex: number): void {
    const at = this.#now();
    for (const t of this.#pending.values()) if (t.index !== undefined && t.index <= lastIndex) t.mark(phase, at);
  }

  /** A Ready carries entries up to `lastIndex`: traced proposals without an index get it. */
  entries(lastIndex: number): void {
    for (const t of this.#pending.values()) t.index ??= lastIndex;
  }

  /**
   * Peer messages read at `readAt` (this tracer's clock) are about to be stepped. Returns
   * the traces to mark "stepped" afterwards (with stepped()), or undefined.
   */
  peerMessages(msgs: readonly Message[], readAt: number): WriteTrace[] | undefined {
    if (this.#every === 0) return undefined;
    let out: WriteTrace[] | undefined;
    const now = this.#now();
    for (const m of msgs) {
      if (m.type === MessageType.MsgApp && m.entries.length > 0) {
        const index = m.entries.find((e) => e.index % this.#every === 0)?.index;
        if (index === undefined) continue;
        const t = new WriteTrace(`append from ${m.from.toString(16)}`, readAt);
        t.index = index;
        t.mark("decoded", now);
        this.#appends.push(t);
        (out ??= []).push(t);
      } else if (m.type === MessageType.MsgAppResp && !m.reject && this.#pending.size > 0) {
        const who = m.from.toString(16);
        for (const t of this.#pending.values()) {
          if (t.index === undefined || t.index > m.index) continue;
          t.mark(`ack ${who} read`, readAt);
          (out ??= []).push(t);
        }
      }
    }
    return out;
  }

  /** The messages of peerMessages() were stepped into Raft. */
  stepped(traces: readonly WriteTrace[]): void {
    const at = this.#now();
    for (const t of traces) t.mark(t.has("decoded") ? "stepped" : "ack stepped", at);
  }

  /** What waited for the save was written: traced appends whose entries were saved are done. */
  sentAfterSave(): void {
    this.phase(TracePhase.sentAfterSave);
    for (let i = this.#appends.length - 1; i >= 0; i--) {
      const t = this.#appends[i]!;
      if (!t.has(TracePhase.fsynced)) continue;
      this.#appends.splice(i, 1);
      this.#log.info("write trace", { request: t.what, at: t.at, index: t.index, us: t.offsets() });
    }
  }

  applied(id: number): void {
    const trace = this.#pending.get(id);
    if (trace === undefined) return;
    trace.mark(TracePhase.applied, this.#now());
    this.#pending.delete(id);
  }
}
