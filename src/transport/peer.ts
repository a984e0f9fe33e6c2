// One remote member: a bounded queue of outgoing messages, one long-lived stream that
// carries them in the order Raft produced them, back-off after a failure, and a separate
// lane for snapshots (one request each, never blocking the heartbeats and appends behind
// a large image).
//
// A member's peers are connected before anything needs sending, and re-connected after
// every failure, as etcd keeps a stream to every peer: followers do not talk to each
// other until an election, and a vote that first has to open a connection (and, after
// the peer restarted, wait out a back-off) is what made elections slow. An idle stream
// carries an empty frame every linkHeartbeatMs, so a dead path is noticed there too.
//
// The stream (etcd's rafthttp stream, as a POST whose body never ends): messages are
// written as soon as send() queues them, without waiting for any answer, so a replicated
// write costs one network hop per direction. The peer acknowledges what it read (at most
// every ~100 ms); data left unacknowledged for requestTimeoutMs means the peer or the path
// is dead, and the stream is cut and re-opened after back-off.
//
// Invariants:
// - at most one stream and one snapshot request open;
// - no stream is opened while the back-off timer is pending;
// - a connected peer (connect()) has a stream open or a back-off timer pending, until stop();
// - after stop() no callback fires, no timer is pending, no request is open.
//
// Messages written into a stream that then fails are lost, not retried: Raft retransmits
// what matters (it probes the follower again after reportUnreachable), and stale
// heartbeats or votes are worthless.

import type { Agent } from "node:http";
import type { Socket } from "node:net";
import { MessageType, type Message } from "../raft/index.ts";
import { batchHeader, encodeFrame, heartbeatFrame } from "./codec.ts";
import { httpChunk } from "./chunked.ts";
import type { ClientRequest } from "node:http";
import { TransportError, checkStatus, openStream, parsePeerUrl, post } from "./http-client.ts";
import { LatencyTracker, type PeerStats } from "./stats.ts";
import { PeerHeader, type SendOptions, type SnapshotAttachment, type TransportLimits, type TransportLogger } from "./types.ts";

/** What a Peer needs from its transport (shared by all peers of one transport). */
export interface PeerContext {
  readonly logger: TransportLogger;
  /** Carries the long-lived message streams. */
  readonly agent: Agent;
  readonly snapshotAgent: Agent;
  readonly limits: TransportLimits;
  /** Peer TLS is configured: https peer URLs are usable. */
  readonly tls: boolean;
  /** Headers every request carries (cluster id, sender id, sender URLs). */
  headers(to: number): Record<string, string>;
  now(): number;
  onUnreachable(id: number): void;
  /** The peer answered 410: this member was removed from the cluster. */
  onRemoved(): void;
  onSnapshotStatus(id: number, failed: boolean): void;
  onRoundTrip(id: number, ms: number): void;
  onHeartbeatDropped(id: number): void;
  /** The link came up, or went down after being up (for the metrics: etcd's active / disconnected peers). */
  onActive(id: number, active: boolean): void;
  /** `n` messages to the peer were lost (for the metrics: etcd's peer_sent_failures_total). */
  onSendFailed(id: number, n: number): void;
  /** Delivered messages with their frame sizes (self stats). */
  onDelivered(msgs: readonly Message[], sizes: readonly number[]): void;
  /** The database file to send after a MsgSnap, if any. */
  snapshotAttachment?(m: Message): Promise<SnapshotAttachment | undefined>;
}

interface Stream {
  req: ClientRequest;
  ac: AbortController;
  /** When the oldest data not yet acknowledged was written; undefined when all is acknowledged. */
  unackedSince: number | undefined;
  /** MsgApps written since the last acknowledgement (counted sent on ack, failed on loss). */
  unackedApps: number;
  /** Messages written since the last acknowledgement: lost if the stream fails. */
  unackedMsgs: number;
  watchdog: NodeJS.Timeout | undefined;
  /** When data was last written (link heartbeats fill the silences). */
  lastWriteAt: number;
  heartbeat: NodeJS.Timeout | undefined;
  /**
   * The connection, once the peer accepted the stream: frames are then written to it as
   * HTTP chunks directly (see #goRaw). undefined: writes go through the request.
   */
  raw: Socket | undefined;
  /** The raw socket is corked until the end of this turn (writes that need not leave at once). */
  corked: boolean;
}

interface Queued {
  m: Message;
  chunks: Uint8Array[];
  size: number;
}

function queued(m: Message): Queued {
  // Encoded at enqueue time: a malformed message (a Raft bug) throws in the caller's
  // stack, and the queue knows exact sizes for batching.
  const chunks = encodeFrame(m);
  let size = 0;
  for (const c of chunks) size += c.length;
  return { m, chunks, size };
}

function countApps(items: readonly Queued[]): number {
  let n = 0;
  for (const q of items) if (q.m.type === MessageType.MsgApp) n++;
  return n;
}

/** The wait after a failure: min after a success (prev 0), then doubling up to max. */
export function nextBackoff(prevMs: number, limits: { backoffMinMs: number; backoffMaxMs: number }): number {
  return prevMs === 0 ? limits.backoffMinMs : Math.min(prevMs * 2, limits.backoffMaxMs);
}

/** What a failure is, without the details that change every time (ports, timings). */
function failureKind(err: unknown): string {
  if (err instanceof TransportError) return err.code;
  const e = err as { code?: unknown } | undefined;
  return typeof e?.code === "string" ? e.code : describeFailure(err);
}

function describeFailure(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class Peer {
  readonly id: number;
  readonly #ctx: PeerContext;
  #urls: URL[];
  #urlIndex = 0;
  #queue: Queued[] = [];
  #snapQueue: Queued[] = [];
  #stream: Stream | undefined;
  #snapInflight: AbortController | undefined;
  #open = new Set<Promise<void>>();
  #backoffMs = 0;
  #backoffTimer: NodeJS.Timeout | undefined;
  /** undefined until the first outcome, so the first failure is logged too. */
  #active: boolean | undefined;
  /** The kind of the last failure logged (see failureKind). */
  #lastFailure = "";
  /** When the link last became active (ctx.now()); undefined while it is not. */
  #activeSince: number | undefined;
  #dropWarned = false;
  #stopped = false;
  /** connect() was called: keep a stream open even with nothing to send. */
  #kept = false;
  #sentApps = 0;
  #failedApps = 0;
  #dropped = 0;
  #latency = new LatencyTracker();
  /** When the heartbeat awaiting its response left (for the latency in leader stats). */
  #heartbeatSentAt: number | undefined;

  constructor(id: number, urls: readonly string[], ctx: PeerContext) {
    this.id = id;
    this.#ctx = ctx;
    this.#urls = Peer.#parse(id, urls, ctx.tls);
  }

  static #parse(id: number, urls: readonly string[], tls: boolean): URL[] {
    if (urls.length === 0) throw new TransportError("ERR_PEER_URL", `Cannot add peer ${id.toString(16)}: no URLs`);
    return urls.map((u) => parsePeerUrl(u, { tls }));
  }

  updateUrls(urls: readonly string[]): void {
    this.#urls = Peer.#parse(this.id, urls, this.#ctx.tls);
    this.#urlIndex = 0;
    // Later messages go to the new URLs: retire the open stream quietly (not a failure).
    const s = this.#stream;
    if (s !== undefined) {
      this.#stream = undefined;
      this.#closeStream(s);
      if (this.#kept && this.#backoffTimer === undefined) this.#openStream();
    }
  }

  /** Opens the stream now and keeps one open from here on (re-opened after each failure). */
  connect(): void {
    if (this.#stopped) return;
    this.#kept = true;
    if (this.#stream === undefined && this.#backoffTimer === undefined) this.#openStream();
  }

  /** Queues one message; call flush() after queueing a batch. */
  enqueue(m: Message): void {
    if (this.#stopped) return;
    const q = queued(m);
    if (m.type === MessageType.MsgSnap) {
      this.#snapQueue.push(q);
      const max = this.#ctx.limits.maxPendingSnapshots;
      while (this.#snapQueue.length > max) {
        // Raft has at most one snapshot outstanding per follower; an older pending one is
        // obsolete. Reporting it failed lets Raft re-probe if it still waits on it.
        const old = this.#snapQueue.shift()!;
        this.#dropped++;
        this.#ctx.onSendFailed(this.id, 1);
        this.#ctx.onSnapshotStatus(this.id, true);
        this.#ctx.logger.warn("dropped pending snapshot", { remotePeerId: this.#hex(), index: old.m.snapshot?.metadata.index });
      }
      return;
    }
    if (m.type === MessageType.MsgHeartbeat && this.#heartbeatSentAt === undefined) this.#heartbeatSentAt = this.#ctx.now();
    this.#queue.push(q);
    if (this.#queue.length > this.#ctx.limits.maxQueuedMessages) {
      const old = this.#queue.shift();
      if (old?.m.type === MessageType.MsgHeartbeat) this.#ctx.onHeartbeatDropped(this.id);
      this.#dropped++;
      this.#ctx.onSendFailed(this.id, 1);
      if (!this.#dropWarned) {
        this.#dropWarned = true;
        this.#ctx.logger.warn("dropped messages to peer: queue full", {
          remotePeerId: this.#hex(),
          bound: this.#ctx.limits.maxQueuedMessages,
        });
      }
      // As etcd: a full queue means the peer is not keeping up; Raft should slow down
      // (probe) instead of piling more appends on it.
      this.#ctx.onUnreachable(this.id);
    }
  }

  /** The peer answered a heartbeat: the round trip is the link latency leader stats show. */
  onHeartbeatResponse(): void {
    if (this.#heartbeatSentAt === undefined) return;
    const ms = this.#ctx.now() - this.#heartbeatSentAt;
    this.#latency.record(ms);
    this.#ctx.onRoundTrip(this.id, ms);
    this.#heartbeatSentAt = undefined;
  }

  /**
   * Writes what is queued to the stream (opening it if needed), unless back-off is pending.
   * node:http corks the socket on a write and uncorks it when the event loop turns;
   * `immediate` uncorks it now, so the bytes leave before the caller blocks on a disk
   * write (a leader's appends, a follower's acknowledgements).
   */
  flush(opts: SendOptions = {}): void {
    const immediate = opts.immediate === true;
    this.#pump(immediate);
    this.#pumpSnapshot();
    if (!immediate) return;
    const s = this.#stream;
    if (s?.raw !== undefined) this.#uncork(s);
    else s?.req.socket?.uncork();
  }

  /** Since when the link has been up (ctx.now() ms), undefined while it is down. */
  get activeSince(): number | undefined {
    return this.#activeSince;
  }

  stats(): PeerStats {
    return { sent: this.#sentApps, failed: this.#failedApps, dropped: this.#dropped, latencyMs: this.#latency.snapshot() };
  }

  /** Aborts open requests, forgets the queues, clears the timer; resolves once requests closed. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#backoffTimer);
    this.#backoffTimer = undefined;
    this.#queue = [];
    this.#snapQueue = [];
    if (this.#stream !== undefined) this.#closeStream(this.#stream);
    this.#snapInflight?.abort();
    await Promise.allSettled([...this.#open]);
  }

  #hex(): string {
    return this.id.toString(16);
  }

  #url(path: string): URL {
    const base = this.#urls[this.#urlIndex % this.#urls.length]!;
    const u = new URL(base.href);
    u.pathname = path;
    u.search = "";
    return u;
  }

  /** After a failure, the next request tries the next URL (etcd's urlPicker). */
  #rotateUrl(): void {
    this.#urlIndex = (this.#urlIndex + 1) % this.#urls.length;
  }

  #track(p: Promise<void>): void {
    this.#open.add(p);
    void p.finally(() => this.#open.delete(p));
  }

  #takeBatch(): Queued[] {
    const max = this.#ctx.limits.maxBatchBytes;
    let n = 0;
    let bytes = 0;
    // At least one message, even one larger than the limit: it must be able to move.
    while (n < this.#queue.length && (n === 0 || bytes + this.#queue[n]!.size <= max)) {
      bytes += this.#queue[n]!.size;
      n++;
    }
    return this.#queue.splice(0, n);
  }

  /** `immediate`: the caller wants the bytes to leave now (see flush); otherwise at the end of this turn. */
  #pump(immediate = false): void {
    if (this.#stopped || this.#backoffTimer || this.#queue.length === 0) return;
    const s = this.#stream ?? this.#openStream();
    // A full socket buffer: keep the rest queued (bounded) until 'drain'.
    while (this.#queue.length > 0 && !(s.raw ?? s.req).writableNeedDrain) {
      const batch = this.#takeBatch();
      let bytes = 0;
      const chunks: Uint8Array[] = [];
      for (const q of batch) {
        bytes += q.size;
        chunks.push(...q.chunks);
      }
      this.#write(s, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes), immediate);
      s.unackedApps += countApps(batch);
      s.unackedMsgs += batch.length;
      this.#ctx.onDelivered(
        batch.map((q) => q.m),
        batch.map((q) => q.size),
      );
    }
  }

  #openStream(): Stream {
    const ac = new AbortController();
    let done!: () => void;
    this.#track(new Promise<void>((r) => (done = r)));
    const s: Stream = { ac, unackedSince: undefined, unackedApps: 0, unackedMsgs: 0, watchdog: undefined, lastWriteAt: 0, heartbeat: undefined, raw: undefined, corked: false } as Stream;
    s.req = openStream({
      url: this.#url("/raft"),
      agent: this.#ctx.agent,
      headers: this.#ctx.headers(this.id),
      signal: ac.signal,
      onAccepted: () => {
        this.#goRaw(s);
        this.#onAck(s);
      },
      onAck: () => this.#onAck(s),
      onClose: (err) => {
        done();
        this.#onStreamClosed(s, err);
      },
    });
    s.req.on("drain", () => this.#pump());
    this.#stream = s;
    // The version byte is data the peer acknowledges on arrival: a connection that never
    // completes (a black-holed address) is cut by the watchdog like any silent stream.
    this.#write(s, batchHeader());
    const every = this.#ctx.limits.linkHeartbeatMs;
    s.heartbeat = setInterval(() => {
      if (this.#stream !== s || (s.raw ?? s.req).writableNeedDrain) return;
      if (this.#ctx.now() - s.lastWriteAt >= every) this.#write(s, heartbeatFrame());
    }, every);
    return s;
  }

  /**
   * From the peer's 200 on, frames skip node:http's per-write work (chunk head formatting,
   * three corked socket writes, a writev of four pieces): one buffer, already framed as an
   * HTTP chunk, goes to the socket. On two cores that work sat on every hop of a write
   * (a follower forwarding its proposal, the leader's appends before its fsync, its commit
   * broadcast). The request never writes again: the stream ends only by being destroyed,
   * so node:http never writes a last chunk after ours. Only when everything written so far
   * has reached the socket (the head and the version byte) can the two not interleave.
   */
  #goRaw(s: Stream): void {
    const sock = s.req.socket;
    if (this.#stream !== s || sock === null || sock.destroyed || s.req.writableLength !== 0) return;
    s.raw = sock;
    sock.on("drain", () => {
      if (this.#stream === s) this.#pump();
    });
  }

  #uncork(s: Stream): void {
    if (!s.corked) return;
    s.corked = false;
    s.raw?.uncork();
  }

  #write(s: Stream, data: Uint8Array, immediate = false): void {
    const raw = s.raw;
    if (raw === undefined) s.req.write(data);
    else {
      // As node:http does: what need not leave at once waits for the end of the turn, and
      // leaves with whatever else this turn writes, in one writev.
      if (!immediate && !s.corked) {
        s.corked = true;
        raw.cork();
        process.nextTick(() => this.#uncork(s));
      }
      raw.write(httpChunk(data));
    }
    s.lastWriteAt = this.#ctx.now();
    if (s.unackedSince === undefined) {
      s.unackedSince = s.lastWriteAt;
      this.#armWatchdog(s);
    }
  }

  #armWatchdog(s: Stream): void {
    if (s.watchdog !== undefined || s.unackedSince === undefined) return;
    const timeout = this.#ctx.limits.requestTimeoutMs;
    s.watchdog = setTimeout(() => {
      s.watchdog = undefined;
      if (s.unackedSince === undefined || this.#stream !== s) return;
      const waited = this.#ctx.now() - s.unackedSince;
      if (waited >= timeout) {
        s.req.destroy(new TransportError("ERR_PEER_TIMEOUT", `no progress for ${timeout} ms`));
        return;
      }
      this.#armWatchdog(s);
    }, Math.max(1, timeout - (this.#ctx.now() - s.unackedSince)));
  }

  #onAck(s: Stream): void {
    if (this.#stopped || this.#stream !== s) return;
    s.unackedSince = undefined;
    this.#sentApps += s.unackedApps;
    s.unackedApps = 0;
    s.unackedMsgs = 0;
    this.#backoffMs = 0;
    this.#dropWarned = false;
    this.#setActive(true, undefined);
  }

  #closeStream(s: Stream): void {
    clearTimeout(s.watchdog);
    s.watchdog = undefined;
    clearInterval(s.heartbeat);
    s.heartbeat = undefined;
    s.ac.abort();
  }

  #onStreamClosed(s: Stream, err: Error): void {
    if (this.#stream !== s) return;
    this.#stream = undefined;
    this.#closeStream(s);
    if (this.#stopped) return;
    this.#failedApps += s.unackedApps;
    // As etcd counts a send failure per message its pipeline could not deliver: a leader
    // counts its heartbeats to a dead follower, a follower with nothing to say nothing
    // (etcd 3.4.23 counted ~20/s and 0 with a 50 ms heartbeat).
    if (s.unackedMsgs > 0) this.#ctx.onSendFailed(this.id, s.unackedMsgs);
    this.#heartbeatSentAt = undefined;
    this.#rotateUrl();
    this.#backoffMs = nextBackoff(this.#backoffMs, this.#ctx.limits);
    this.#backoffTimer = setTimeout(() => {
      this.#backoffTimer = undefined;
      if (this.#kept && this.#stream === undefined) this.#openStream();
      this.#pump();
    }, this.#backoffMs);
    this.#setActive(false, err);
    if (err instanceof TransportError && err.code === "ERR_PEER_REMOVED") {
      this.#ctx.logger.error("peer says this member was removed from the cluster", { remotePeerId: this.#hex() });
      this.#ctx.onRemoved();
    }
    this.#ctx.onUnreachable(this.id);
  }

  /**
   * Logs transitions only: a peer that stays down does not flood the log. A down peer
   * whose reason changes (refused, then a certificate error once it is up) is logged
   * again: the new reason is what the operator needs.
   */
  #setActive(active: boolean, err: unknown): void {
    const reason = active ? "" : failureKind(err);
    if (this.#active === active && (active || reason === this.#lastFailure)) return;
    const wasKnown = this.#active !== undefined;
    if (active !== this.#active) {
      this.#activeSince = active ? this.#ctx.now() : undefined;
      // Down before it was ever up is no disconnection (etcd's deactivate of an inactive peer).
      if (active || wasKnown) this.#ctx.onActive(this.id, active);
    }
    this.#active = active;
    this.#lastFailure = reason;
    if (active) {
      if (wasKnown) this.#ctx.logger.info("peer became active", { remotePeerId: this.#hex() });
      return;
    }
    const fields = { remotePeerId: this.#hex(), error: describeFailure(err) };
    if (err instanceof TransportError && err.code === "ERR_PEER_CLUSTER_MISMATCH") {
      this.#ctx.logger.error("peer refused our messages: cluster ID mismatch", fields);
    } else {
      this.#ctx.logger.warn("peer became inactive", fields);
    }
  }

  #pumpSnapshot(): void {
    if (this.#stopped || this.#snapInflight) return;
    const q = this.#snapQueue.shift();
    if (q === undefined) return;
    const ac = new AbortController();
    this.#snapInflight = ac;
    const index = q.m.snapshot?.metadata.index ?? 0;
    const start = this.#ctx.now();
    let attachment: SnapshotAttachment | undefined;
    const p = (async () => {
      attachment = await this.#ctx.snapshotAttachment?.(q.m);
      if (ac.signal.aborted) throw new TransportError("ERR_PEER_TIMEOUT", "snapshot send cancelled");
      const headers = this.#ctx.headers(this.id);
      if (attachment !== undefined) headers[PeerHeader.snapshotDbBytes] = String(attachment.size);
      this.#ctx.logger.info("sending snapshot", { remotePeerId: this.#hex(), index, bytes: q.size, dbBytes: attachment?.size ?? 0 });
      return post({
        url: this.#url("/raft/snapshot"),
        agent: this.#ctx.snapshotAgent,
        headers,
        chunks: [batchHeader(), ...q.chunks],
        ...(attachment === undefined ? {} : { tail: { path: attachment.path, size: attachment.size } }),
        idleTimeoutMs: this.#ctx.limits.snapshotTimeoutMs,
        signal: ac.signal,
      });
    })()
      .then(checkStatus)
      .then(
        () => {
          if (this.#stopped) return;
          this.#ctx.logger.info("sent snapshot", { remotePeerId: this.#hex(), index, ms: Math.round(this.#ctx.now() - start) });
          this.#ctx.onDelivered([q.m], [q.size]);
          this.#ctx.onSnapshotStatus(this.id, false);
        },
        (err: unknown) => {
          if (this.#stopped) return;
          this.#ctx.logger.warn("failed to send snapshot", { remotePeerId: this.#hex(), index, error: describeFailure(err) });
          this.#rotateUrl();
          this.#ctx.onSendFailed(this.id, 1);
          this.#ctx.onSnapshotStatus(this.id, true);
          this.#ctx.onUnreachable(this.id);
        },
      )
      .finally(() => {
        attachment?.release();
        this.#snapInflight = undefined;
        this.#pumpSnapshot();
      });
    this.#track(p);
  }
}
