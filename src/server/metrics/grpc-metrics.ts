// go-grpc-prometheus's server metrics as etcd 3.4 registers them: every method of every
// served service starts at 0 for every code (InitializeMetrics), so rates exist before
// the first call; `extensive` adds the handling-time histogram (--metrics extensive).
import type { GrpcObserver } from "../grpc/server.ts";
import { GRPC_METHODS } from "./grpc-methods.ts";
import { Counter, Histogram, type Family } from "./registry.ts";

/** Status code names as grpc-go's codes.Code.String() writes them. */
const CODE_NAMES = [
  "OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists", "PermissionDenied",
  "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable",
  "DataLoss", "Unauthenticated",
] as const;

export function codeName(code: number): string {
  return CODE_NAMES[code] ?? `Code(${code})`;
}

type MethodLabels = Readonly<Record<"grpc_method" | "grpc_service" | "grpc_type", string>>;

/** Counts a call in etcd_server_client_requests_total (ServerMetrics.clientRequest). */
export type ClientRequestCounter = (type: "unary" | "stream", apiVersion: string | undefined) => void;

/**
 * The Lock and Election services, which have no grpc_server_* series here but are calls
 * etcd's interceptors count: unary but for Observe. (kvctl serves them all as streams.)
 */
const CONCURRENCY_STREAMS: ReadonlyMap<string, boolean> = new Map([
  ["/v3lockpb.Lock/Lock", false],
  ["/v3lockpb.Lock/Unlock", false],
  ["/v3electionpb.Election/Campaign", false],
  ["/v3electionpb.Election/Proclaim", false],
  ["/v3electionpb.Election/Leader", false],
  ["/v3electionpb.Election/Resign", false],
  ["/v3electionpb.Election/Observe", true],
]);

export class GrpcMetrics implements GrpcObserver {
  readonly started = new Counter("grpc_server_started_total", "Total number of RPCs started on the server.", ["grpc_method", "grpc_service", "grpc_type"]);
  readonly handled = new Counter("grpc_server_handled_total", "Total number of RPCs completed on the server, regardless of success or failure.", [
    "grpc_code",
    "grpc_method",
    "grpc_service",
    "grpc_type",
  ]);
  readonly handling: Histogram | undefined;
  readonly sentBytes: Counter;
  readonly receivedBytes: Counter;
  readonly #clientRequest: ClientRequestCounter | undefined;
  readonly #methods = new Map<string, MethodLabels>();
  /** Per method, its series' incrementers, made at its first call (the hot path: no label key per call). */
  readonly #bound = new Map<string, { labels: MethodLabels; started: () => void; handled: Array<(() => void) | undefined> }>();
  #initialized = false;

  constructor(opts: { extensive: boolean; sentBytes: Counter; receivedBytes: Counter; clientRequest?: ClientRequestCounter }) {
    this.#clientRequest = opts.clientRequest;
    this.sentBytes = opts.sentBytes;
    this.receivedBytes = opts.receivedBytes;
    // go-grpc-prometheus's DefBuckets.
    this.handling = opts.extensive
      ? new Histogram(
          "grpc_server_handling_seconds",
          "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
          [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          ["grpc_method", "grpc_service", "grpc_type"],
        )
      : undefined;
    for (const m of GRPC_METHODS) this.#methods.set(`/${m.service}/${m.method}`, { grpc_method: m.method, grpc_service: m.service, grpc_type: m.type });
  }

  /**
   * Creates every method's series at 0 (~700 of them): done at the first scrape rather than
   * at start, where it cost a member 4-6 ms (the rest of the metrics set-up: ~2 ms).
   */
  initializeSeries(): void {
    if (this.#initialized) return;
    this.#initialized = true;
    for (const labels of this.#methods.values()) {
      this.started.touch(labels);
      for (const code of CODE_NAMES) this.handled.touch({ ...labels, grpc_code: code });
    }
  }

  callStarted(path: string): void {
    this.#method(path)?.started();
  }

  clientRequest(path: string, apiVersion: string | undefined): void {
    const count = this.#clientRequest;
    if (count === undefined) return;
    const m = this.#method(path);
    const stream = m === undefined ? CONCURRENCY_STREAMS.get(path) : m.labels.grpc_type !== "unary";
    if (stream !== undefined) count(stream ? "stream" : "unary", apiVersion);
  }

  callHandled(path: string, code: number, ms: number): void {
    const m = this.#method(path);
    if (m === undefined) return;
    (m.handled[code] ??= this.handled.incrementer({ ...m.labels, grpc_code: codeName(code) }))();
    this.handling?.observe(ms / 1000, m.labels);
  }

  #method(path: string): { labels: MethodLabels; started: () => void; handled: Array<(() => void) | undefined> } | undefined {
    let m = this.#bound.get(path);
    if (m === undefined) {
      const labels = this.#methods.get(path);
      if (labels === undefined) return undefined;
      m = { labels, started: this.started.incrementer(labels), handled: [] };
      this.#bound.set(path, m);
    }
    return m;
  }

  traffic(received: number, sent: number): void {
    if (received > 0) this.receivedBytes.inc({}, received);
    if (sent > 0) this.sentBytes.inc({}, sent);
  }

  families(): Family[] {
    return this.handling === undefined ? [this.started, this.handled] : [this.started, this.handled, this.handling];
  }
}
