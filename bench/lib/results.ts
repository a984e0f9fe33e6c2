// Shapes of the results JSON (bench/results/<label>-<timestamp>.json) and the list of wrk rows.
// Field names follow the shared harness's JSON where the same figure exists there.
import type { AuthCheck } from "./auth.ts";
import type { TimingResult } from "./client-startup.ts";
import type { FillResult } from "./fill.ts";
import type { Group } from "./options.ts";
import type { ServerKind } from "./server.ts";
import type { WatchResult } from "./watch.ts";

export interface WrkRowSpec {
  readonly id: string;
  readonly group: Group;
  /** File in lib/wrk/ (a verbatim copy of the shared harness's script). */
  readonly script: string;
  readonly connections: number;
  readonly title: string;
  /**
   * v2 auth on: the server gets lib/auth.ts's setup (user with a /bench* role, guest
   * revoked) and the script sends Basic credentials on every request. Key prefixes of these
   * rows start with "bench" so the role covers them.
   */
  readonly auth?: true;
  /** The same workload with auth off (its id): the auth-cost table divides by it. */
  readonly noAuthRow?: string;
}

/** The throughput rows, in table order. */
export const WRK_ROWS: readonly WrkRowSpec[] = [
  { id: "v2-put-unique-c1", group: "put", script: "v2-put-unique.lua", connections: 1, title: "v2 PUT unique keys, 1 conn" },
  { id: "v2-put-unique-c16", group: "put", script: "v2-put-unique.lua", connections: 16, title: "v2 PUT unique keys, 16 conns" },
  {
    id: "v2-put-unique-c16-auth", group: "auth", script: "v2-put-unique-auth.lua", connections: 16,
    title: "v2 PUT unique keys, 16 conns (auth)", auth: true, noAuthRow: "v2-put-unique-c16",
  },
  { id: "v2-put-unique-c64", group: "put", script: "v2-put-unique.lua", connections: 64, title: "v2 PUT unique keys, 64 conns" },
  { id: "v2-put-same-c16", group: "put-same", script: "v2-put-same.lua", connections: 16, title: "v2 PUT same key, 16 conns" },
  { id: "v2-get-c16", group: "get", script: "v2-get.lua", connections: 16, title: "v2 GET, 16 conns" },
  { id: "v2-get-c16-auth", group: "auth", script: "v2-get-auth.lua", connections: 16, title: "v2 GET, 16 conns (auth)", auth: true, noAuthRow: "v2-get-c16" },
  { id: "v2-get-c64", group: "get", script: "v2-get.lua", connections: 64, title: "v2 GET, 64 conns" },
  { id: "v2-get-quorum-c16", group: "quorum", script: "v2-get-quorum.lua", connections: 16, title: "v2 quorum GET, 16 conns" },
  { id: "v2-cas-c16", group: "cas", script: "v2-cas.lua", connections: 16, title: "v2 CAS (prevValue matches), 16 conns" },
];

export interface ThroughputResult {
  readonly row: string;
  readonly server: ServerKind;
  readonly connections: number;
  readonly rps?: number;
  readonly p50_ms?: number;
  readonly p99_ms?: number;
  readonly max_ms?: number;
  readonly socket_errors?: number;
  readonly non2xx?: number;
  readonly cpu_steal_pct: number | null;
  readonly rss_kb_before: number | null;
  readonly rss_kb_after: number | null;
  readonly wrk_exit: number | null;
  readonly error?: string;
  /** Auth rows: what the server answered after the setup, with and without credentials. */
  readonly auth_check?: AuthCheck;
}

export interface WatchPhaseResult {
  readonly server: ServerKind;
  readonly watchers: number;
  readonly reps: readonly WatchResult[];
  /** medians over reps; null when some rep did not deliver the event to all watchers */
  readonly all_ms: number | null;
  readonly register_all_ms: number | null;
  readonly error?: string;
}

export interface MemoryResult {
  readonly server: ServerKind;
  readonly startup_ms: number | null;
  readonly rss_kb_idle: number | null;
  readonly fill: FillResult | null;
  readonly fill_steal_pct: number | null;
  readonly rss_kb_after_fill: number | null;
  readonly data_dir_bytes_running: number | null;
  readonly data_dir_bytes_stopped: number | null;
  readonly restart_ms_all: readonly number[];
  readonly restart_ms: number | null;
  readonly last_key_ok_after_restart: boolean | null;
  readonly rss_kb_after_restart: number | null;
  readonly error?: string;
}

export interface ClientTiming {
  /** Whose client: kvctl's CLI against kvctl, etcdctl (v2) against etcd; "node" = `node -e 0`, the floor of any Node CLI. */
  readonly client: ServerKind | "node";
  readonly timing: TimingResult;
}

export interface ServerInfo {
  readonly kind: ServerKind;
  readonly command_line: string;
  readonly version: unknown;
  readonly available: boolean;
  readonly error?: string;
}

export interface BenchResults {
  readonly label: string;
  readonly timestamp: string;
  readonly argv: readonly string[];
  readonly settings: Readonly<Record<string, unknown>>;
  readonly machine: Readonly<Record<string, unknown>>;
  readonly servers: readonly ServerInfo[];
  readonly throughput: readonly ThroughputResult[];
  readonly watch: readonly WatchPhaseResult[];
  readonly memory: readonly MemoryResult[];
  readonly client: readonly ClientTiming[];
  readonly errors: readonly string[];
  readonly elapsed_s: number;
}
