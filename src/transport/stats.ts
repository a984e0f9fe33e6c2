// Counters behind /v2/stats/leader (per follower: counts and request latency) and
// /v2/stats/self (messages, bytes, and etcd's package / bandwidth rates). Pure: the
// clock is passed in, so the rate window is tested without waiting.

export interface LatencyStats {
  current: number;
  average: number;
  minimum: number;
  maximum: number;
  standardDeviation: number;
}

export interface PeerStats {
  /** MsgApp messages delivered (etcd's counts.success). */
  sent: number;
  /** MsgApp messages in requests that failed (etcd's counts.fail). */
  failed: number;
  /** Messages of any type dropped because the peer's queue was full. */
  dropped: number;
  /** Round trip of successful requests, in milliseconds. */
  latencyMs: LatencyStats;
}

export interface SelfTransportStats {
  messagesSent: number;
  bytesSent: number;
  messagesReceived: number;
  bytesReceived: number;
  /** MsgApp counts, as etcd's sendAppendRequestCnt / recvAppendRequestCnt. */
  sendAppendRequestCnt: number;
  recvAppendRequestCnt: number;
  /** MsgApp per second and bytes per second over the recent window (0 when idle). */
  sendPkgRate: number;
  sendBandwidthRate: number;
  recvPkgRate: number;
  recvBandwidthRate: number;
}

/** Per-peer traffic for the Prometheus metrics (etcd's rafthttp metrics); ids are member ids. */
export interface TransportObserver {
  sent(to: number, bytes: number): void;
  received(from: number, bytes: number): void;
  /** A heartbeat's round trip (sent to its response), in milliseconds. */
  roundTrip(to: number, ms: number): void;
  /** A heartbeat dropped before it was sent (the peer's queue was full). */
  heartbeatDropped(to: number): void;
  /** The link to a peer came up (true) or went down after being up (false): etcd's peerStatus activate / deactivate. */
  peerActive(id: number, active: boolean): void;
  /** `n` messages to a peer were lost: dropped from a full queue, cut off in a failed stream, a failed snapshot. */
  sendFailed(to: number, n: number): void;
  /** Bytes a peer sent did not decode (a message stream's or a snapshot's), from `remoteAddr` ("ip:port"). */
  receiveFailed?(remoteAddr: string): void;
}

/** Running latency statistics (mean and standard deviation from sums, as etcd). */
export class LatencyTracker {
  #n = 0;
  #current = 0;
  #sum = 0;
  #sumSquares = 0;
  #min = Infinity;
  #max = 0;

  record(ms: number): void {
    this.#n++;
    this.#current = ms;
    this.#sum += ms;
    this.#sumSquares += ms * ms;
    if (ms < this.#min) this.#min = ms;
    if (ms > this.#max) this.#max = ms;
  }

  snapshot(): LatencyStats {
    if (this.#n === 0) return { current: 0, average: 0, minimum: 0, maximum: 0, standardDeviation: 0 };
    const avg = this.#sum / this.#n;
    // max(0, …): rounding may make the variance a tiny negative number.
    const variance = Math.max(0, this.#sumSquares / this.#n - avg * avg);
    return {
      current: this.#current,
      average: avg,
      minimum: this.#min,
      maximum: this.#max,
      standardDeviation: Math.sqrt(variance),
    };
  }
}

/**
 * etcd's statsQueue: the last `capacity` samples; the rate is samples (and bytes) over the
 * time between the oldest and newest, and 0 once the newest is older than `idleMs`.
 */
export class RateWindow {
  readonly #capacity: number;
  readonly #idleMs: number;
  #times: number[] = [];
  #sizes: number[] = [];
  #bytes = 0;

  constructor(opts: { capacity?: number; idleMs?: number } = {}) {
    this.#capacity = opts.capacity ?? 200;
    this.#idleMs = opts.idleMs ?? 1000;
  }

  add(now: number, size: number): void {
    this.#times.push(now);
    this.#sizes.push(size);
    this.#bytes += size;
    if (this.#times.length > this.#capacity) {
      this.#times.shift();
      this.#bytes -= this.#sizes.shift() ?? 0;
    }
  }

  /** [samples per second, bytes per second]. */
  rate(now: number): [number, number] {
    const first = this.#times[0];
    const last = this.#times[this.#times.length - 1];
    if (first === undefined || last === undefined) return [0, 0];
    if (now - last > this.#idleMs) {
      this.#times = [];
      this.#sizes = [];
      this.#bytes = 0;
      return [0, 0];
    }
    const span = last - first;
    if (span <= 0) return [0, 0];
    return [(this.#times.length / span) * 1000, (this.#bytes / span) * 1000];
  }
}
