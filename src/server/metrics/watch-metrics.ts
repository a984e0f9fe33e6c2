// etcd 3.4's v3 watch families (mvcc/metrics.go), kept by the watch streams of both
// transports (http/v3-watch-session.ts, which gRPC and the gateway share) and read from the
// watch hub when scraped. As etcd counts them:
// - watch_stream_total: streams open (etcd's NewWatchStream per Watch call, the gateway's
//   included: grpc-gateway opens one gRPC stream per POST /v3/watch); down at close;
// - watcher_total: watchers registered, plus those a compaction ended whose ID the stream
//   still holds (etcd's watcher marked compacted counts until canceled or its stream closes);
// - slow_watcher_total: watchers the hub holds behind (catching up from history, or paused
//   because their stream holds too much unsent): etcd's unsynced group and its victims;
// - events_total: events a stream took for a client (after the watcher's filters), counted
//   once each (etcd's ReportEventReceived, which also counts those a closing stream drops);
// - pending_events_total: events taken for a watcher whose `created` answer has not gone
//   out yet (etcd: events waiting in the stream's channel or its pending map). kvctl writes
//   every other message to the wire as it takes it, so nothing else waits here. etcd adds
//   events before its filters and takes away those after them, so with NoPut/NoDelete its
//   gauge creeps up for good; this one does not.
import { Counter } from "./registry.ts";

/** What a watch stream reports (WatchSession). */
export interface WatchStreamCounts {
  streamOpened(): void;
  streamClosed(): void;
  /** Events taken for a client (they go out, or wait for `created`). */
  eventsTaken(n: number): void;
  /** Events waiting for `created`: + when held, - when written or dropped. */
  pendingChanged(delta: number): void;
  /** Watchers ended by a compaction whose ID the stream still holds: +1 / -1. */
  compactedHeld(delta: number): void;
}

export class WatchMetrics implements WatchStreamCounts {
  readonly events = new Counter("etcd_debugging_mvcc_events_total", "Total number of events sent by this member.");
  #streams = 0;
  #pending = 0;
  #compacted = 0;

  get streams(): number {
    return this.#streams;
  }

  get pending(): number {
    return this.#pending;
  }

  get compacted(): number {
    return this.#compacted;
  }

  streamOpened(): void {
    this.#streams++;
  }

  streamClosed(): void {
    this.#streams--;
  }

  eventsTaken(n: number): void {
    this.events.inc({}, n);
  }

  pendingChanged(delta: number): void {
    this.#pending += delta;
  }

  compactedHeld(delta: number): void {
    this.#compacted += delta;
  }
}
