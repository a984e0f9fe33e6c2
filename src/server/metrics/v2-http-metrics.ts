// The v2 HTTP API's own families (etcd: etcdserver/api/v2http/metrics.go), counted where
// etcd's keysHandler counts them, by the router's keys handler and the fast lane alike:
// - a request is received once it parsed and passed v2 access control, unless it waits
//   (wait=true: a watch, or a quorum GET that etcd still marks as waiting);
// - it failed when the server refused it after that (the store's or raft's error), by its
//   method and the status it was answered with; parameter errors (400 before the server)
//   and access refusals are neither received nor failed; a watch the store refuses
//   (history cleared) failed;
// - it succeeded when answered with an event: the time from its arrival (before its body
//   was read) to the answer, by method. Watches are never timed.
// The method is the request's, with a quorum GET as "QGET" (etcd's methodFromRequest).
// The series appear on first use, as etcd's CounterVec and HistogramVec show them.
import { Counter, Histogram, exponentialBuckets } from "./registry.ts";

/** One method's series, kept by the caller: a request then costs no label lookup. */
export interface V2MethodSeries {
  received(): void;
  /** @param startMs, nowMs performance.now() when the request arrived and when it was answered */
  succeeded(startMs: number, nowMs: number): void;
  /** @param status the status the request was answered with */
  failed(status: number): void;
}

/** etcd's methodFromRequest: a quorum GET is "QGET"; HEAD stays HEAD, quorum or not. */
export function v2MetricMethod(method: string, quorum: boolean): string {
  return method === "GET" && quorum ? "QGET" : method;
}

export class V2HttpMetrics {
  readonly receivedTotal = new Counter(
    "etcd_http_received_total",
    "Counter of requests received into the system (successfully parsed and authd).",
    ["method"],
  );
  readonly failedTotal = new Counter(
    "etcd_http_failed_total",
    "Counter of handle failures of requests (non-watches), by method (GET/PUT etc.) and code (400, 500 etc.).",
    ["method", "code"],
  );
  // ExponentialBuckets(0.0005, 2, 13): 0.5 ms to 2.048 s.
  readonly successfulDuration = new Histogram(
    "etcd_http_successful_duration_seconds",
    "Bucketed histogram of processing time (s) of successfully handled requests (non-watches), by method (GET/PUT etc.).",
    exponentialBuckets(0.0005, 2, 13),
    ["method"],
  );
  /**
   * The v2 store's watch requests (etcd: v2store/metrics.go, counted as its watcher hub
   * takes a watch, before the history is scanned: a refused one counts too). Counted by the
   * keys handler, the only caller of the store's watch.
   */
  readonly storeWatchRequests = new Counter("etcd_debugging_store_watch_requests_total", "Total number of incoming watch requests (new or reestablished).");
  readonly #byMethod = new Map<string, V2MethodSeries>();

  /** The series of a method (as v2MetricMethod names it); created lazily, series and all, on first use. */
  of(method: string): V2MethodSeries {
    let s = this.#byMethod.get(method);
    if (s === undefined) {
      s = this.#create(method);
      this.#byMethod.set(method, s);
    }
    return s;
  }

  #create(method: string): V2MethodSeries {
    let received: (() => void) | undefined;
    let observe: ((v: number) => void) | undefined;
    const failed = this.failedTotal;
    return {
      received: () => (received ??= this.receivedTotal.incrementer({ method }))(),
      succeeded: (startMs, nowMs) => (observe ??= this.successfulDuration.observer({ method }))((nowMs - startMs) / 1000),
      failed: (status) => failed.inc({ method, code: String(status) }),
    };
  }

  families(): Array<Counter | Histogram> {
    return [this.receivedTotal, this.failedTotal, this.successfulDuration, this.storeWatchRequests];
  }
}
