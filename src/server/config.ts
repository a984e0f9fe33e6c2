// Server configuration: one typed object built from flags, KV_* and ETCD_* environment
// variables, or etcd's YAML configuration file (--config-file). Flag names, defaults and
// validation messages follow etcd 3.4, so scripts, environment files and configuration
// files written for etcd start kvctl unchanged. Like Go's flag package, `-flag value`,
// `-flag=value` and `--flag value` all work, and a repeated flag takes its last value.
// Every flag of etcd 3.4 is accepted; one kvctl has no counterpart for is logged once at
// start with what kvctl does instead (`notice` in the table), and never stops the start.
import { readFileSync } from "node:fs";
import { V3JwtTokens } from "../auth/index.ts";
import { isLogLevel, type LogLevelName } from "./logger.ts";
import { goCipherSuiteNames, isGoCipherSuite } from "./tls/cipher-suites.ts";
import { ConfigError, type ConfigNotice } from "./config-types.ts";
import { readConfigFile } from "./config-file.ts";
import { GoDurationError, parseGoDuration } from "./go-duration.ts";
import { KVCTL_VERSION, ETCD_SERVER_VERSION } from "./version.ts";
import { ProxyAddressError, discoveryProxyUrl } from "./discovery-proxy-url.ts";

export { ConfigError, type ConfigNotice };

export interface ServerConfig {
  name: string;
  dataDir: string;
  listenClientUrls: URL[];
  advertiseClientUrls: string[];
  listenPeerUrls: URL[];
  initialAdvertisePeerUrls: string[];
  /** name -> peer URLs, in the order given. */
  initialCluster: Map<string, string[]>;
  initialClusterState: "new" | "existing";
  initialClusterToken: string;
  snapshotCount: number;
  /** --experimental-snapshot-catchup-entries (etcd 3.5): entries kept in memory after a snapshot for slow followers. Wiring: snapshot-flow.ts. */
  snapshotCatchupEntries: number;
  /** Milliseconds. */
  heartbeatInterval: number;
  /** Milliseconds. */
  electionTimeout: number;
  maxRequestBytes: number;
  /** Operations allowed in one v3 txn (etcd's --max-txn-ops). */
  maxTxnOps: number;
  logLevel: LogLevelName;
  /** TLS of the client port (--cert-file, --key-file, --trusted-ca-file, --client-cert-auth, --auto-tls, --client-crl-file, --client-cert-allowed-hostname). */
  clientTls: TlsFlags;
  /** TLS of the peer port (--peer-*). */
  peerTls: TlsFlags;
  /** --cipher-suites as Go names, validated; empty: the platform default. */
  cipherSuites: string[];
  /** --host-whitelist; empty (or "*" listed) allows every Host. */
  hostWhitelist: string[];
  /** --discovery-srv: the domain whose SRV records list the initial cluster ("" = off); see discovery-srv.ts. */
  discoverySrv: string;
  /** --discovery-srv-name: suffix of the SRV service names (_etcd-server-ssl-<name>._tcp). */
  discoverySrvName: string;
  /** --discovery: the discovery service URL the initial cluster comes from ("" = off); see discovery.ts. */
  discovery: string;
  /** --discovery-proxy: the HTTP proxy discovery requests go through (undefined = none); see proxied-request.ts. */
  discoveryProxy?: URL;
  /** --discovery-fallback: what a member does when the discovery token is full (a proxy, or exit). */
  discoveryFallback: "proxy" | "exit";
  /** --proxy and --proxy-*: the v2 proxy (src/server/proxy/); times in milliseconds, 0 = none. */
  proxy: ProxyFlags;

  // --- the rest of etcd 3.4's flags: read, and acted on or said to be ignored ---

  /** --config-file that was read ("" = none): flags and environment variables were then ignored. */
  configFile: string;
  /** Lines to log at start, once the logger exists (serve.ts logs them in order). */
  notices: ConfigNotice[];
  /** --enable-v2 (kvctl's default: true; etcd 3.4's: false). false: /v2/keys, /v2/auth, /v2/members, /v2/machines, /v2/stats answer 404 as etcd's. */
  enableV2: boolean;
  /** --enable-grpc-gateway (hidden in etcd's help): false answers /v3/... and /v3beta/... 404. */
  enableGrpcGateway: boolean;
  /** --logger: "zap" writes one JSON object per line (kvctl's default), "capnslog" etcd 3.4's text lines. */
  logger: "zap" | "capnslog";
  /** --log-outputs: "stderr", "stdout" or file paths (appended to); "default" is stderr. */
  logOutputs: string[];
  /** --metrics: "extensive" adds the gRPC handling-time histograms to /metrics. */
  metrics: "basic" | "extensive";
  /** --listen-metrics-urls: extra URLs answering /metrics and /health only. Wiring: index.ts. */
  listenMetricsUrls: URL[];
  /** --cors as etcd normalises it (scheme://host:port); ["*"] (the default) allows every origin. */
  cors: string[];
  /** --auth-token: the v3 token provider and its options, validated as etcd's NewTokenProvider does. Wiring: v3 auth. */
  authToken: AuthTokenConfig;
  /** --auth-token-ttl: idle lifetime of a simple token, in seconds (0: etcd's 300). Wiring: bootstrap.ts v3AuthOptions. */
  authTokenTtl: number;
  /** --bcrypt-cost (4..31; etcd falls back to 10 with a warning otherwise). Wiring: v3-service.ts hashes v3 passwords with bcrypt at it (auth/password.ts hashV3Password). */
  bcryptCost: number;
  /** --wal-dir: the WAL's own directory, its segment files directly in it ("" = <data-dir>/member/wal; bootstrap.ts walDirOf). */
  walDir: string;
  /** --max-wals: WAL files kept once no snapshot needs them (0 = unlimited; Wal.releaseTo after each snapshot). */
  maxWals: number;
  /** --max-snapshots: snapshot files kept (0 = unlimited). */
  maxSnapshots: number;
  /**
   * --quota-backend-bytes as the effective byte count: 0 gives etcd's default 2 GiB
   * (2147483648), a negative value disables the quota (Infinity). Wiring: v3 store (NOSPACE alarm).
   */
  quotaBackendBytes: number;
  /**
   * --auto-compaction-mode and --auto-compaction-retention: retention in milliseconds
   * (periodic) or a revision count (revision); 0 = off. Wiring: v3 store compactor.
   */
  autoCompaction: { mode: "periodic" | "revision"; retention: number };
  /**
   * --pre-vote. kvctl's default is true (etcd 3.4's is false, etcd 3.5's true): a member
   * partitioned away and back, or restarted, cannot depose a working leader, and the early
   * campaign of the first election (first-election.ts) relies on it. Wiring: kv-server.ts raft options.
   */
  preVote: boolean;
  /** --strict-reconfig-check: refuse member changes that would lose quorum (reconfig-check.ts, used by member-admin.ts). */
  strictReconfigCheck: boolean;
  /** --initial-election-tick-advance: fast-forward election ticks on boot (false: wait a whole election timeout, as etcd). Wiring: first-election.ts firstElectionMode. */
  initialElectionTickAdvance: boolean;
  /** --experimental-watch-progress-notify-interval in milliseconds: at least 100; 0 or less is the default 10 min, as in etcd 3.4. Wiring: kv-server.ts timer, WatchHub.progress. */
  watchProgressNotifyIntervalMs: number;
  /** --force-new-cluster: restart as a one-member cluster keeping the data (bootstrap.ts, force-new-cluster.ts). */
  forceNewCluster: boolean;
  /** --max-concurrent-streams (HTTP/2 streams per client connection; grpc/server.ts). */
  maxConcurrentStreams: number;
  /** --grpc-keepalive-min-time, -interval, -timeout in milliseconds (0 = off for the last two; grpc/server.ts). */
  grpcKeepAlive: { minTimeMs: number; intervalMs: number; timeoutMs: number };
  /** --backend-batch-interval (ms, 0 = kvctl's 500 ms) and --backend-batch-limit (writes, 0 = etcd's 10,000). */
  backendBatch: { intervalMs: number; limit: number };
  /** --experimental-warning-apply-duration in milliseconds: apply slower than this is logged. Wiring: apply loop. */
  warningApplyDurationMs: number;
  /**
   * --experimental-enable-lease-checkpoint: the leader puts each lease's remaining TTL
   * through the log every `intervalMs` (kvctl's --experimental-lease-checkpoint-interval,
   * etcd's fixed 5 min), so a new leader resumes it instead of granting the full TTL again.
   * `persist` (--experimental-enable-lease-checkpoint-persist): the checkpoints are written to
   * the lease table too and survive a restart. Wiring: lease-keeper.ts; bootstrap.ts v3DbOptions.
   */
  leaseCheckpoint: { enabled: boolean; persist: boolean; intervalMs: number };
  /**
   * --experimental-compaction-batch-limit: records a v3 compaction deletes from the database
   * per transaction, the member serving between two (0 or less: etcd's 1000). Wiring:
   * bootstrap.ts v3DbOptions, backend/compactions.ts.
   */
  compactionBatchLimit: number;
  /** --unsafe-no-fsync. Wiring: WAL (kvctl fsyncs regardless until then). */
  unsafeNoFsync: boolean;
}

export const proxyModes = ["off", "readonly", "on"] as const;
export type ProxyMode = (typeof proxyModes)[number];

/** etcd's configProxy. */
export interface ProxyFlags {
  mode: ProxyMode;
  failureWaitMs: number;
  refreshIntervalMs: number;
  dialTimeoutMs: number;
  writeTimeoutMs: number;
  readTimeoutMs: number;
}

/** One side's TLS flags, as etcd's TLSInfo: "" means not set. */
export interface TlsFlags {
  certFile: string;
  keyFile: string;
  trustedCaFile: string;
  clientCertAuth: boolean;
  autoTls: boolean;
  /** --client-crl-file / --peer-crl-file. */
  crlFile: string;
  /** Peer side only (--peer-cert-allowed-cn); always "" for the client side. */
  allowedCn: string;
  /** --client-cert-allowed-hostname / --peer-cert-allowed-hostname: a name or IP the verified certificate must match. */
  allowedHostname: string;
  /** Peer side only: --experimental-peer-skip-client-san-verification. Wiring: tls/server-tls.ts peerCheck. */
  skipClientSanVerify: boolean;
}

/** --auth-token, decomposed as etcd's decomposeOpts and checked as its token providers do. */
export type AuthTokenConfig =
  | { type: "simple" }
  /** `--auth-token=` (empty): etcd's nop provider, no tokens at all. */
  | { type: "none" }
  | { type: "jwt"; signMethod: string; publicKeyFile: string; privateKeyFile: string; ttlMs: number };

export interface FlagSpec {
  name: string;
  /** Go's bool flags: `-flag` alone means true; a value needs `=` (`-flag=false`). Durations use Go's syntax (10m, 1h30m). */
  type: "string" | "number" | "boolean" | "duration";
  default: string | number | boolean;
  describe: string;
  /** Older names accepted on the command line and as KV_<ALIAS> (etcd's --ca-file). */
  aliases?: readonly string[];
  /** The heading of `kvctl serve --help` it is listed under (etcd's sections); set on the first flag of a section. */
  section?: string;
  /**
   * For an etcd flag kvctl has no counterpart for (or does not apply yet): what kvctl does
   * instead, logged once at start when the flag is set. Remove it when the flag is wired.
   */
  notice?: string;
}

/** Every serve flag; --help, the man page and completions are checked against this list. */
export const serveFlags: readonly FlagSpec[] = [
  { section: "Member", name: "name", type: "string", default: "default", describe: "Human-readable name for this member" },
  { name: "data-dir", type: "string", default: "${name}.kvctl", describe: "Path to the data directory (WAL and snapshots)" },
  { name: "wal-dir", type: "string", default: "", describe: "Path to the dedicated WAL directory (empty: inside the data directory)" },
  { name: "snapshot-count", type: "number", default: 100000, describe: "Number of committed transactions to trigger a snapshot to disk" },
  { name: "heartbeat-interval", type: "number", default: 100, describe: "Time (in milliseconds) of a heartbeat interval" },
  { name: "election-timeout", type: "number", default: 1000, describe: "Time (in milliseconds) for an election to timeout" },
  { name: "initial-election-tick-advance", type: "boolean", default: true, describe: "Whether to fast-forward initial election ticks on boot for faster election (false: the first election waits a full election timeout)" },
  { name: "listen-peer-urls", type: "string", default: "http://127.0.0.1:2380", describe: "Comma-separated URLs to listen on for peer traffic" },
  { name: "listen-client-urls", type: "string", default: "http://127.0.0.1:2379", describe: "Comma-separated URLs to listen on for client traffic" },
  { name: "max-snapshots", type: "number", default: 5, describe: "Maximum number of snapshot files to retain (0 is unlimited)" },
  { name: "max-wals", type: "number", default: 5, describe: "Maximum number of WAL files to retain (0 is unlimited)" },
  { name: "quota-backend-bytes", type: "number", default: 0, describe: "Raise alarms when the v3 backend size exceeds the given quota (0: 2 GiB; negative: no quota)" },
  { name: "backend-batch-interval", type: "duration", default: "0s", describe: "Maximum time before committing the backend transaction (Go duration; 0: 500ms, kvctl's default; etcd's is 100ms)" },
  { name: "backend-batch-limit", type: "number", default: 0, describe: "Maximum operations before committing the backend transaction (0: 10000, etcd's default)" },
  { name: "max-txn-ops", type: "number", default: 128, describe: "Maximum number of operations permitted in a transaction" },
  { name: "max-request-bytes", type: "number", default: 1572864, describe: "Maximum client request size in bytes the server will accept" },
  { name: "max-concurrent-streams", type: "number", default: 4294967295, describe: "Maximum concurrent streams that each client can open at a time (gRPC)" },
  { name: "grpc-keepalive-min-time", type: "duration", default: "5s", describe: "Minimum duration a client should wait before pinging the server (gRPC)" },
  { name: "grpc-keepalive-interval", type: "duration", default: "2h", describe: "Frequency of server-to-client pings to check a connection is alive (0 to disable)" },
  { name: "grpc-keepalive-timeout", type: "duration", default: "20s", describe: "Additional wait before closing a non-responsive connection (0 to disable)" },

  { section: "Clustering", name: "initial-advertise-peer-urls", type: "string", default: "http://127.0.0.1:2380", describe: "Comma-separated peer URLs of this member to advertise to the rest of the cluster" },
  { name: "initial-cluster", type: "string", default: "${name}=${initial-advertise-peer-urls}", describe: "Initial cluster configuration for bootstrapping: name=peerURL,..." },
  { name: "initial-cluster-state", type: "string", default: "new", describe: "Initial cluster state: 'new' or 'existing'" },
  { name: "initial-cluster-token", type: "string", default: "etcd-cluster", describe: "Initial cluster token; members of different clusters refuse to talk" },
  { name: "advertise-client-urls", type: "string", default: "http://127.0.0.1:2379", describe: "Comma-separated client URLs to advertise to the rest of the cluster" },
  { name: "discovery", type: "string", default: "", describe: "Discovery URL used to bootstrap the cluster" },
  { name: "discovery-fallback", type: "string", default: "proxy", describe: "Expected behavior ('exit' or 'proxy') when the discovery service fails" },
  { name: "discovery-proxy", type: "string", default: "", describe: "HTTP proxy to use for traffic to the discovery service" },
  // DNS SRV bootstrapping: the initial cluster from SRV records; see discovery-srv.ts.
  { name: "discovery-srv", type: "string", default: "", describe: "DNS domain used to bootstrap the initial cluster from SRV records (peer certificates must list it in their SAN)" },
  { name: "discovery-srv-name", type: "string", default: "", describe: "Service name suffix to query when using DNS discovery" },
  { name: "strict-reconfig-check", type: "boolean", default: true, describe: "Reject reconfiguration requests that would cause quorum loss (a member add or remove without a quorum of started, connected members)" },
  { name: "pre-vote", type: "boolean", default: true, describe: "Enable to run an additional Raft election phase (kvctl's default is true, as etcd 3.5's; etcd 3.4's is false): a member cut off and back cannot depose a working leader" },
  { name: "auto-compaction-retention", type: "string", default: "0", describe: "Auto compaction retention for the v3 key space: a Go duration (1h, 30m), or hours (periodic) / revisions (revision); 0 disables" },
  { name: "auto-compaction-mode", type: "string", default: "periodic", describe: "Interpret --auto-compaction-retention as 'periodic' (time) or 'revision' (a revision count)" },
  { name: "enable-v2", type: "boolean", default: true, describe: "Accept etcd v2 client requests (kvctl's default is true; false answers /v2/... 404 as etcd does)" },

  // Transport security, with etcd's names; see src/server/tls/README.md.
  { section: "Security", name: "cert-file", type: "string", default: "", describe: "Path to the client server TLS cert file" },
  { name: "key-file", type: "string", default: "", describe: "Path to the client server TLS key file (unencrypted)" },
  { name: "client-cert-auth", type: "boolean", default: false, describe: "Enable client cert authentication (the CN names the v2 user when auth is on)" },
  { name: "client-crl-file", type: "string", default: "", describe: "Path to the client certificate revocation list file" },
  { name: "client-cert-allowed-hostname", type: "string", default: "", describe: "Allowed TLS hostname (or IP) a client certificate must match" },
  { name: "trusted-ca-file", aliases: ["ca-file"], type: "string", default: "", describe: "Path to the client server TLS trusted CA cert file (--ca-file is the older name)" },
  { name: "auto-tls", type: "boolean", default: false, describe: "Client TLS using generated certificates (kept in <data-dir>/fixtures/client)" },
  { name: "peer-cert-file", type: "string", default: "", describe: "Path to the peer server TLS cert file" },
  { name: "peer-key-file", type: "string", default: "", describe: "Path to the peer server TLS key file (unencrypted)" },
  { name: "peer-client-cert-auth", type: "boolean", default: false, describe: "Enable peer client cert authentication" },
  { name: "peer-trusted-ca-file", aliases: ["peer-ca-file"], type: "string", default: "", describe: "Path to the peer server TLS trusted CA file (--peer-ca-file is the older name)" },
  { name: "peer-cert-allowed-cn", type: "string", default: "", describe: "Allowed CN for inter peer authentication" },
  { name: "peer-cert-allowed-hostname", type: "string", default: "", describe: "Allowed TLS hostname (or IP) for inter peer authentication" },
  { name: "peer-auto-tls", type: "boolean", default: false, describe: "Peer TLS using generated certificates (kept in <data-dir>/fixtures/peer)" },
  { name: "peer-crl-file", type: "string", default: "", describe: "Path to the peer certificate revocation list file" },
  { name: "cipher-suites", type: "string", default: "", describe: "Comma-separated list of supported TLS 1.2 cipher suites (Go names) between client/server and peers (empty: platform default)" },
  { name: "cors", type: "string", default: "*", describe: "Comma-separated origins (scheme://host:port) allowed by CORS, or * for all" },
  { name: "host-whitelist", type: "string", default: "", describe: "Comma-separated acceptable hostnames from HTTP client requests, if server is not secure (empty means allow all)" },

  { section: "Auth", name: "auth-token", type: "string", default: "simple", describe: "v3 auth token type and options: 'simple' or 'jwt,sign-method=RS256,priv-key=...,pub-key=...,ttl=5m'" },
  { name: "bcrypt-cost", type: "number", default: 10, describe: "Cost of hashing v3 auth passwords, as bcrypt's: 4 to 31, each step doubles the work (bcrypt, as etcd's hashes; above 20 hashes at 20); others fall back to 10 with a warning, as in etcd" },
  { name: "auth-token-ttl", type: "number", default: 300, describe: "Time (in seconds) a v3 simple token lives unused; each use renews it (0: 300; jwt tokens take ttl= instead)" },

  { section: "Profiling and Monitoring", name: "enable-pprof", type: "boolean", default: false, describe: "Enable runtime profiling via HTTP (not in kvctl: use node --cpu-prof or --inspect)", notice: "kvctl serves no /debug/pprof; profile it with node --cpu-prof or --inspect" },
  { name: "metrics", type: "string", default: "basic", describe: "Level of detail for exported metrics: 'basic' or 'extensive' (adds gRPC handling-time histograms)" },
  { name: "listen-metrics-urls", type: "string", default: "", describe: "Comma-separated URLs to listen on for the metrics and health endpoints" },

  { section: "Logging", name: "logger", type: "string", default: "zap", describe: "'zap' for JSON lines (kvctl's default) or 'capnslog' for etcd 3.4's text lines" },
  { name: "log-outputs", type: "string", default: "default", describe: "Comma-separated log targets: 'default' (stderr), 'stderr', 'stdout' or file paths" },
  { name: "log-level", type: "string", default: "info", describe: "Log level: debug, info, warn, error (panic, fatal and dpanic log errors only)" },
  { name: "log-output", type: "string", default: "default", describe: "Deprecated: use --log-outputs" },

  // The v2 proxy that runs instead of a member; see proxy/README.md.
  { section: "v2 Proxy", name: "proxy", type: "string", default: "off", describe: "Run as a v2 proxy: 'off', 'readonly' or 'on'" },
  { name: "proxy-failure-wait", type: "number", default: 5000, describe: "Time (in milliseconds) an endpoint will be held in a failed state" },
  { name: "proxy-refresh-interval", type: "number", default: 30000, describe: "Time (in milliseconds) of the endpoints refresh interval" },
  { name: "proxy-dial-timeout", type: "number", default: 1000, describe: "Time (in milliseconds) for a dial to timeout (0: no timeout)" },
  { name: "proxy-write-timeout", type: "number", default: 5000, describe: "Time (in milliseconds) for a write to timeout (0: no timeout)" },
  { name: "proxy-read-timeout", type: "number", default: 0, describe: "Time (in milliseconds) for a read to timeout (0: no timeout; keep it 0 or above the longest watch)" },

  { section: "Experimental", name: "experimental-initial-corrupt-check", type: "boolean", default: false, describe: "Check data corruption before serving (kvctl checks every WAL record's CRC on open)", notice: "kvctl checks every WAL record's CRC when it opens the log; there is no cross-member hash check" },
  { name: "experimental-corrupt-check-time", type: "duration", default: "0s", describe: "Duration between cluster corruption check passes", notice: "kvctl runs no periodic cross-member corruption check" },
  { name: "experimental-enable-v2v3", type: "string", default: "", describe: "Serve v2 requests through the v3 backend under a given prefix (kvctl keeps a separate v2 store)", notice: "kvctl serves the v2 API from its own v2 store; --experimental-enable-v2v3 is ignored" },
  { name: "experimental-backend-bbolt-freelist-type", type: "string", default: "array", describe: "Freelist type of etcd's bbolt backend (kvctl's v3 backend is LMDB)", notice: "kvctl's v3 backend is LMDB, which has no freelist type to choose" },
  { name: "experimental-enable-lease-checkpoint", type: "boolean", default: false, describe: "Leader sends regular lease checkpoints so remaining TTLs survive a leader change" },
  { name: "experimental-enable-lease-checkpoint-persist", type: "boolean", default: false, describe: "Persist lease checkpoints, so remaining TTLs also survive a restart (needs --experimental-enable-lease-checkpoint; etcd 3.4.23 accepts it but leaves it out of its --help)" },
  { name: "experimental-lease-checkpoint-interval", type: "duration", default: "5m", describe: "Time between the checkpoints of a lease (kvctl's flag; etcd 3.4 fixes it at 5m; 0 or less: 5m)" },
  { name: "experimental-compaction-batch-limit", type: "number", default: 1000, describe: "Maximum revisions deleted in each compaction batch (one database transaction each; 0 or less: 1000)" },
  { name: "experimental-peer-skip-client-san-verification", type: "boolean", default: false, describe: "Skip verification of the SAN field in peer client certificates (against the peer's address)" },
  { name: "experimental-watch-progress-notify-interval", type: "duration", default: "10m", describe: "Duration of periodic watch progress notifications to v3 watchers created with progress_notify (Go duration, at least 100ms; 0 or less keeps the default 10m, as in etcd 3.4)" },
  { name: "experimental-snapshot-catchup-entries", type: "number", default: 5000, describe: "Entries kept after a snapshot so slow followers catch up from the log (etcd 3.5's flag; a follower further behind gets a snapshot)" },
  { name: "experimental-warning-apply-duration", type: "duration", default: "100ms", describe: "A warning is logged when applying a request takes longer (and etcd_server_slow_apply_total counts it)" },

  { section: "Unsafe", name: "force-new-cluster", type: "boolean", default: false, describe: "Force to create a new one-member cluster" },
  { name: "unsafe-no-fsync", type: "boolean", default: false, describe: "Disable fsync (unsafe: will lose data on a crash)", notice: "kvctl fsyncs its WAL regardless (--unsafe-no-fsync is not supported)" },

  { section: "Other etcd flags", name: "enable-grpc-gateway", type: "boolean", default: true, describe: "Serve the v3 JSON gateway (/v3/...) on the client URLs" },
  { name: "debug", type: "boolean", default: false, describe: "Deprecated: same as --log-level=debug" },
  { name: "log-package-levels", type: "string", default: "", describe: "Deprecated per-package log levels (kvctl has one level: --log-level)", notice: "kvctl has one log level for all its parts (--log-level); --log-package-levels is ignored" },
  { name: "config-file", type: "string", default: "", describe: "Path to etcd's YAML configuration file; other flags and environment variables are then ignored" },
];

/**
 * Flags etcd 3.4 still accepts from etcd 0.4 and ignores with a warning (etcdmain's
 * `ignored`). Like etcd: no value needed, and a value only with `=`.
 */
export const ignoredEtcdFlags: readonly string[] = [
  "cluster-active-size", "cluster-remove-delay", "cluster-sync-interval", "config", "force", "max-result-buffer",
  "max-retry-attempts", "peer-heartbeat-interval", "peer-election-timeout", "retry-interval", "snapshot", "v", "vv",
];

function splitUrls(flag: string, raw: string): string[] {
  const list = raw.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (list.length === 0) throw new ConfigError(`--${flag} must not be empty`);
  for (const u of list) parseUrl(flag, u);
  return list;
}

function parseUrl(flag: string, raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`Cannot parse --${flag}: invalid URL ${JSON.stringify(raw)}`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new ConfigError(`Cannot parse --${flag}: URL scheme must be http or https: ${JSON.stringify(raw)}`);
  }
  if (u.pathname !== "/" && u.pathname !== "") {
    throw new ConfigError(`Cannot parse --${flag}: URL must not have a path: ${JSON.stringify(raw)}`);
  }
  if (u.port === "") {
    throw new ConfigError(`Cannot parse --${flag}: URL must have a port: ${JSON.stringify(raw)}`);
  }
  return u;
}

/** Parses `a=http://x:1,a=http://y:2,b=...` into name -> URLs (several URLs per name allowed). */
export function parseInitialCluster(raw: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const item of raw.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new ConfigError(`Cannot parse --initial-cluster: ${JSON.stringify(item)} is not name=URL`);
    const name = item.slice(0, eq);
    const url = item.slice(eq + 1);
    parseUrl("initial-cluster", url);
    const list = out.get(name) ?? [];
    list.push(url);
    out.set(name, list);
  }
  return out;
}

/** Go's uint flags (the --proxy-* times): 0 is allowed. `label` names the source: "flag -x", "KV_X", ... */
function nonNegativeInt(label: string, v: unknown): number {
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isSafeInteger(n) || n < 0 || String(v).trim() === "") {
    throw new ConfigError(`invalid value ${JSON.stringify(String(v))} for ${label}: must be a non-negative integer`);
  }
  return n;
}

/** --proxy and --proxy-*. */
function proxyFlags(v: Record<string, unknown>, label: (flag: string) => string): ProxyFlags {
  const mode = String(v["proxy"] ?? "off");
  if (!(proxyModes as readonly string[]).includes(mode)) {
    throw new ConfigError(`invalid value ${JSON.stringify(mode)} for ${label("proxy")}: valid values are "off", "readonly", "on"`);
  }
  const ms = (flag: string, dflt: number): number => nonNegativeInt(label(flag), v[flag] ?? dflt);
  return {
    mode: mode as ProxyMode,
    failureWaitMs: ms("proxy-failure-wait", 5000),
    refreshIntervalMs: ms("proxy-refresh-interval", 30000),
    dialTimeoutMs: ms("proxy-dial-timeout", 1000),
    writeTimeoutMs: ms("proxy-write-timeout", 5000),
    readTimeoutMs: ms("proxy-read-timeout", 0),
  };
}

function positiveInt(label: string, v: unknown): number {
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new ConfigError(`invalid value ${JSON.stringify(String(v))} for ${label}: must be a positive integer`);
  }
  return n;
}

/** The env prefix: KV_DATA_DIR sets --data-dir. */
export const ENV_PREFIX = "KV";

export function envName(flag: string): string {
  return `${ENV_PREFIX}_${flag.toUpperCase().replace(/-/g, "_")}`;
}

/** etcd's variable for a flag (ETCD_DATA_DIR), read when the KV_ one is absent. */
export function etcdEnvName(flag: string): string {
  return `ETCD_${flag.toUpperCase().replace(/-/g, "_")}`;
}


/** The --help text of `kvctl serve`, rendered from the flag table. */
export function serveHelp(): string {
  const lines = [
    "Usage: kvctl serve [flags]",
    "       kvctl serve --config-file <etcd YAML configuration file>",
    "",
    "Start a kvctl member: an etcd 3.4-compatible server of the v2 API (HTTP) and the v3 API",
    "(gRPC and its JSON gateway) on one client port, replicating every change through Raft",
    "and its write-ahead log before it answers.",
    "Flags follow Go's syntax as etcd's do (-flag value, -flag=value, --flag value; the last",
    "of a repeated flag wins). Every flag can also be set as KV_<FLAG> (e.g. KV_DATA_DIR),",
    "or as etcd's ETCD_<FLAG> when the KV_ one is absent; a flag on the command line wins",
    "over KV_<FLAG>, and is an error together with ETCD_<FLAG>, as in etcd. With",
    "--config-file, other flags and variables are ignored. Every etcd 3.4 flag is accepted;",
    "one kvctl does not act on is logged at start with what kvctl does instead.",
  ];
  for (const f of serveFlags) {
    if (f.section !== undefined) lines.push("", `${f.section}:`);
    const value = f.type === "number" ? " <number>" : f.type === "boolean" ? "" : f.type === "duration" ? " <duration>" : " <string>";
    lines.push(`  --${f.name}${value}${(f.aliases ?? []).map((a) => `, --${a}`).join("")}`);
    const envs = [f.name, ...(f.aliases ?? [])].map(envName).join(" or ");
    lines.push(`      ${f.describe} (default ${JSON.stringify(String(f.default))}; env ${envs})`);
  }
  lines.push("  --version", "      Print the version and exit");
  lines.push("  -h, --help", "      Show this help");
  lines.push("", `Ignored as by etcd 3.4 (a warning each): ${ignoredEtcdFlags.map((n) => `-${n}`).join(" ")}`);
  return lines.join("\n") + "\n";
}

/**
 * Parses arguments exactly as Go's flag package does for etcd: one or two dashes, `=value`
 * or the next argument as the value, the last of a repeated flag wins, parsing stops at
 * `--` or the first non-flag, and an unknown flag is an error. yargs is not used here: its
 * GNU conventions differ in corner cases, and it doubled `kvctl serve`'s start-up time.
 * `ignored` lists the etcd 0.4 flags given (ignoredEtcdFlags), each to be warned about.
 */
export function parseGoFlags(args: readonly string[]): { values: Map<string, string>; help: boolean; version: boolean; rest: string[]; ignored: string[] } {
  const known = new Map<string, FlagSpec>();
  for (const f of serveFlags) for (const n of [f.name, ...(f.aliases ?? [])]) known.set(n, f);
  const values = new Map<string, string>();
  const ignored: string[] = [];
  let help = false;
  let version = false;
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      i++;
      break;
    }
    if (!a.startsWith("-") || a === "-") break;
    const body = a.startsWith("--") ? a.slice(2) : a.slice(1);
    if (body === "" || body.startsWith("-") || body.startsWith("=")) throw new ConfigError(`bad flag syntax: ${a}`);
    const eq = body.indexOf("=");
    const name = eq < 0 ? body : body.slice(0, eq);
    if (name === "h" || name === "help") {
      help = true;
      continue;
    }
    // --version is a bool flag read from the command line only (an image's ETCD_VERSION is no request to print it).
    if (name === "version") {
      version = eq < 0 || parseBool(`flag -${name}`, body.slice(eq + 1));
      continue;
    }
    const spec = known.get(name);
    if (spec === undefined) {
      // etcd's IgnoredFlag is a bool flag: it takes no separate value.
      if (ignoredEtcdFlags.includes(name)) {
        ignored.push(name);
        continue;
      }
      throw new ConfigError(`flag provided but not defined: -${name}`);
    }
    let value: string;
    if (eq >= 0) value = body.slice(eq + 1);
    else if (spec.type === "boolean") value = "true";
    else {
      if (i + 1 >= args.length) throw new ConfigError(`flag needs an argument: -${name}`);
      value = args[++i]!;
    }
    checkFlagValue(spec, value, `flag -${name}`);
    // An alias sets its flag: the last of `--ca-file` and `--trusted-ca-file` wins.
    values.set(spec.name, value);
  }
  return { values, help, version, rest: args.slice(i), ignored };
}

/** What Go's flag package checks as it sets a flag: the type of its value. */
function checkFlagValue(spec: FlagSpec, value: string, label: string): void {
  if (spec.type === "boolean") parseBool(label, value);
  else if (spec.type === "duration") durationMs(label, value);
  else if (URLS_FLAGS.has(spec.name) && value !== "") {
    // etcd's UniqueURLs flags take "" as an exception, before any parsing.
    const why = goUrlsError(value);
    if (why !== undefined) throw new ConfigError(`invalid value ${JSON.stringify(value)} for ${label}: ${why}`);
  }
}

/** etcd's flags of type flags.UniqueURLs: their value is checked as the flag set reads it (exit 2). */
const URLS_FLAGS: ReadonlySet<string> = new Set(["listen-peer-urls", "listen-client-urls", "initial-advertise-peer-urls", "advertise-client-urls", "listen-metrics-urls"]);

/**
 * Why etcd's types.NewURLs refuses a comma-separated list (Go's url.Parse, then a scheme of
 * http, https, unix or unixs, a "host:port" address and no path), in Go's words; undefined
 * when it takes it. etcd 3.4.23: "foo" -> URL scheme must be ...; "http://x:y" ->
 * parse "http://x:y": invalid port ":y" after host.
 */
export function goUrlsError(raw: string): string | undefined {
  for (const item of raw.split(",")) {
    const inp = item.trim();
    const u = goUrlParse(inp);
    if (typeof u === "string") return `parse ${JSON.stringify(inp)}: ${u}`;
    if (!["http", "https", "unix", "unixs"].includes(u.scheme)) return `URL scheme must be http, https, unix, or unixs: ${inp}`;
    if (!goSplitsHostPort(u.host)) return `URL address does not have the form "host:port": ${inp}`;
    if (u.path !== "") return `URL must not contain a path: ${inp}`;
  }
  return undefined;
}

/** The parts of Go's url.Parse that NewURLs looks at, or Go's error text. */
function goUrlParse(raw: string): { scheme: string; host: string; path: string } | string {
  if (/[\x00-\x1f\x7f]/.test(raw)) return "net/url: invalid control character in URL";
  let rest = raw.split("#")[0]!;
  let scheme = "";
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(rest);
  if (rest.startsWith(":")) return "missing protocol scheme";
  if (m !== null) {
    scheme = m[1]!.toLowerCase();
    rest = rest.slice(m[0].length);
  }
  rest = rest.split("?")[0]!;
  if (!rest.startsWith("/")) {
    // Opaque ("http:x"): no host. Without a scheme a colon before any slash is refused.
    if (scheme === "" && rest.includes(":") && (rest.indexOf("/") < 0 || rest.indexOf(":") < rest.indexOf("/"))) return "first path segment in URL cannot contain colon";
    return { scheme, host: "", path: scheme === "" ? goUnescapeCheck(rest) ?? rest : "" };
  }
  let host = "";
  let path = rest;
  if (rest.startsWith("//")) {
    const end = rest.indexOf("/", 2);
    const authority = end < 0 ? rest.slice(2) : rest.slice(2, end);
    path = end < 0 ? "" : rest.slice(end);
    host = authority.slice(authority.lastIndexOf("@") + 1);
    const bad = goHostError(host);
    if (bad !== undefined) return bad;
  }
  const esc = goUnescapeCheck(path);
  if (esc !== undefined && esc.startsWith("invalid URL escape")) return esc;
  return { scheme, host, path };
}

/** Go's parseHost and its unescape in host mode: the port after the host, then its characters. */
function goHostError(host: string): string | undefined {
  let name = host;
  if (host.startsWith("[")) {
    const close = host.lastIndexOf("]");
    if (close < 0) return "missing ']' in host";
    const port = host.slice(close + 1);
    if (port !== "" && !/^:[0-9]*$/.test(port)) return `invalid port ${JSON.stringify(port)} after host`;
    name = host.slice(0, close + 1);
  } else {
    const colon = host.lastIndexOf(":");
    if (colon >= 0) {
      const port = host.slice(colon);
      if (!/^:[0-9]*$/.test(port)) return `invalid port ${JSON.stringify(port)} after host`;
    }
  }
  const esc = goUnescapeCheck(name);
  if (esc !== undefined && esc.startsWith("invalid URL escape")) return esc;
  const c = /[^A-Za-z0-9\-._~!$&'()*+,;=:[\]<>"%]/.exec(name);
  if (c !== null) return `invalid character ${JSON.stringify(c[0])} in host name`;
  return undefined;
}

/** Go's unescape: a '%' not followed by two hex digits is refused; undefined when all are well formed. */
function goUnescapeCheck(s: string): string | undefined {
  const m = /%(?![0-9a-fA-F]{2})(.{0,2})/s.exec(s);
  return m === null ? undefined : `invalid URL escape ${JSON.stringify("%" + m[1])}`;
}

/** Go's net.SplitHostPort succeeding: a port after the one colon, or after "[...]". */
function goSplitsHostPort(host: string): boolean {
  if (host.startsWith("[")) return /^\[[^\]]*\]:[^:\]\[]*$/.test(host);
  return (host.match(/:/g) ?? []).length === 1 && !/[[\]]/.test(host);
}

/** Where the values came from, for error messages and notices. */
export interface BuildOptions {
  /** How a flag's value is named in an error: "flag -snapshot-count" (default), "ETCD_SNAPSHOT_COUNT", ... */
  label?: (flag: string) => string;
  /** Lines gathered while reading flags and variables; the config's own are appended. */
  notices?: ConfigNotice[];
  /** The configuration file the values came from ("" = flags and environment). */
  configFile?: string;
}

/** Turns parsed values into a validated ServerConfig, applying etcd's cross-flag rules. */
export function buildConfig(v: Record<string, unknown>, explicit: ReadonlySet<string>, opts: BuildOptions = {}): ServerConfig {
  const label = opts.label ?? ((f: string): string => `flag -${f}`);
  const notices = [...(opts.notices ?? [])];
  const configFile = opts.configFile ?? "";
  const str = (k: string): string => String(v[k] ?? serveFlags.find((f) => f.name === k)?.default ?? "");
  // etcd's UniqueURLs flags keep their default when set to "" (the exception they are made
  // with): `--listen-client-urls=` listens where no flag would, and still counts as given.
  const urls = (k: string): string => (str(k) === "" ? String(serveFlags.find((f) => f.name === k)?.default ?? "") : str(k));
  const name = str("name");
  if (name === "") throw new ConfigError("--name must not be empty");
  const dataDir = explicit.has("data-dir") && str("data-dir") !== "" ? str("data-dir") : `${name}.kvctl`;
  const listenClientUrls = splitUrls("listen-client-urls", urls("listen-client-urls")).map((u) => parseUrl("listen-client-urls", u));
  const proxy = proxyFlags(v, label);
  const discoverySrv = String(v["discovery-srv"] ?? "");
  const discoverySrvName = String(v["discovery-srv-name"] ?? "");
  const discovery = str("discovery");
  // etcd: discovery replaces --initial-cluster; both given is a conflict.
  if ((discoverySrv !== "" || discoverySrvName !== "" || discovery !== "") && explicit.has("initial-cluster")) {
    throw new ConfigError('multiple discovery or bootstrap flags are set. Choose one of "initial-cluster", "discovery" or "discovery-srv"');
  }
  if (discovery !== "" && discoverySrv !== "") {
    throw new ConfigError('multiple discovery or bootstrap flags are set. Choose one of "initial-cluster", "discovery" or "discovery-srv"');
  }
  if (discoverySrvName !== "" && discoverySrv === "") throw new ConfigError("--discovery-srv-name needs --discovery-srv");
  const fallback = str("discovery-fallback");
  if (fallback !== "proxy" && fallback !== "exit") {
    throw new ConfigError(`invalid value ${JSON.stringify(fallback)} for ${label("discovery-fallback")}: valid values are "proxy", "exit"`);
  }
  // A proxy advertises nothing and is no member: etcd skips these checks for it. A
  // configuration file keeps etcd's default advertised URL instead (embed.ConfigFromFile).
  const member = proxy.mode === "off";
  if (member && configFile === "" && explicit.has("listen-client-urls") && !explicit.has("advertise-client-urls")) {
    throw new ConfigError("--advertise-client-urls is required when --listen-client-urls is set explicitly");
  }
  const advertiseClientUrls = splitUrls("advertise-client-urls", urls("advertise-client-urls"));
  const listenPeerUrls = splitUrls("listen-peer-urls", urls("listen-peer-urls")).map((u) => parseUrl("listen-peer-urls", u));
  const initialAdvertisePeerUrls = splitUrls("initial-advertise-peer-urls", urls("initial-advertise-peer-urls"));
  const initialCluster = explicit.has("initial-cluster")
    ? parseInitialCluster(str("initial-cluster"))
    : new Map([[name, initialAdvertisePeerUrls]]);
  const state = str("initial-cluster-state");
  if (state !== "new" && state !== "existing") {
    throw new ConfigError(`invalid value ${JSON.stringify(state)} for ${label("initial-cluster-state")}: valid values are "new", "existing"`);
  }
  const mine = initialCluster.get(name);
  if (!mine && member) {
    throw new ConfigError(`couldn't find local name ${JSON.stringify(name)} in the initial cluster configuration`);
  }
  const sortedEq = (a: string[], b: string[]): boolean =>
    a.length === b.length && [...a].sort().every((x, i) => new URL(x).href === new URL([...b].sort()[i]!).href);
  if (mine && member && !sortedEq(mine, initialAdvertisePeerUrls)) {
    throw new ConfigError(
      `--initial-cluster has ${name}=${mine.join(",")} but missing from --initial-advertise-peer-urls=${initialAdvertisePeerUrls.join(",")}`,
    );
  }
  const heartbeatInterval = positiveInt(label("heartbeat-interval"), v["heartbeat-interval"] ?? 100);
  const electionTimeout = positiveInt(label("election-timeout"), v["election-timeout"] ?? 1000);
  if (electionTimeout < 5 * heartbeatInterval) {
    throw new ConfigError(
      `--election-timeout[${electionTimeout}ms] should be at least as 5 times as --heartbeat-interval[${heartbeatInterval}ms]`,
    );
  }
  if (electionTimeout > 50000) {
    throw new ConfigError(`--election-timeout[${electionTimeout}ms] is too long, and should be set less than 50000ms`);
  }
  const { logger, logOutputs, logLevel } = loggingConfig(v, explicit, label, notices);
  const tls = tlsConfig(v, { client: listenClientUrls, peer: listenPeerUrls }, label);
  const config: ServerConfig = {
    name,
    dataDir,
    listenClientUrls,
    advertiseClientUrls,
    listenPeerUrls,
    initialAdvertisePeerUrls,
    initialCluster,
    initialClusterState: state,
    initialClusterToken: str("initial-cluster-token"),
    // etcd takes 0 as its default (etcdserver: 'set snapshot count to default 100000').
    snapshotCount: goUint(label("snapshot-count"), String(v["snapshot-count"] ?? 100000)) || 100000,
    snapshotCatchupEntries: positiveInt(label("experimental-snapshot-catchup-entries"), v["experimental-snapshot-catchup-entries"] ?? 5000),
    heartbeatInterval,
    electionTimeout,
    maxRequestBytes: positiveInt(label("max-request-bytes"), v["max-request-bytes"] ?? 1572864),
    maxTxnOps: positiveInt(label("max-txn-ops"), v["max-txn-ops"] ?? 128),
    logLevel,
    ...tls,
    discoverySrv,
    discoverySrvName,
    discovery,
    ...discoveryProxy(str("discovery-proxy")),
    discoveryFallback: fallback,
    proxy,
    configFile,
    notices,
    enableV2: parseBool(label("enable-v2"), str("enable-v2")),
    enableGrpcGateway: parseBool(label("enable-grpc-gateway"), str("enable-grpc-gateway")),
    logger,
    logOutputs,
    metrics: metricsLevel(str("metrics"), notices),
    listenMetricsUrls: str("listen-metrics-urls").trim() === "" ? [] : splitUrls("listen-metrics-urls", str("listen-metrics-urls")).map((u) => parseUrl("listen-metrics-urls", u)),
    cors: parseCors(str("cors"), label("cors")),
    authToken: parseAuthToken(str("auth-token"), notices),
    authTokenTtl: goUint(label("auth-token-ttl"), str("auth-token-ttl")),
    bcryptCost: bcryptCost(goUint(label("bcrypt-cost"), str("bcrypt-cost")), notices),
    walDir: str("wal-dir"),
    maxWals: goUint(label("max-wals"), str("max-wals")),
    maxSnapshots: goUint(label("max-snapshots"), str("max-snapshots")),
    quotaBackendBytes: quotaBytes(goInt(label("quota-backend-bytes"), str("quota-backend-bytes")), notices),
    autoCompaction: autoCompaction(str("auto-compaction-mode"), str("auto-compaction-retention"), notices),
    preVote: parseBool(label("pre-vote"), str("pre-vote")),
    strictReconfigCheck: parseBool(label("strict-reconfig-check"), str("strict-reconfig-check")),
    initialElectionTickAdvance: parseBool(label("initial-election-tick-advance"), str("initial-election-tick-advance")),
    watchProgressNotifyIntervalMs: watchProgressInterval(durationMs(label("experimental-watch-progress-notify-interval"), str("experimental-watch-progress-notify-interval")), notices),
    forceNewCluster: parseBool(label("force-new-cluster"), str("force-new-cluster")),
    maxConcurrentStreams: goUint(label("max-concurrent-streams"), str("max-concurrent-streams"), 0xffffffff),
    grpcKeepAlive: {
      minTimeMs: durationMs(label("grpc-keepalive-min-time"), str("grpc-keepalive-min-time")),
      intervalMs: durationMs(label("grpc-keepalive-interval"), str("grpc-keepalive-interval")),
      timeoutMs: durationMs(label("grpc-keepalive-timeout"), str("grpc-keepalive-timeout")),
    },
    backendBatch: {
      intervalMs: durationMs(label("backend-batch-interval"), str("backend-batch-interval") === "" ? "0" : str("backend-batch-interval")),
      limit: goInt(label("backend-batch-limit"), str("backend-batch-limit")),
    },
    warningApplyDurationMs: durationMs(label("experimental-warning-apply-duration"), str("experimental-warning-apply-duration")),
    leaseCheckpoint: {
      enabled: parseBool(label("experimental-enable-lease-checkpoint"), str("experimental-enable-lease-checkpoint")),
      persist: parseBool(label("experimental-enable-lease-checkpoint-persist"), str("experimental-enable-lease-checkpoint-persist")),
      intervalMs: leaseCheckpointInterval(durationMs(label("experimental-lease-checkpoint-interval"), str("experimental-lease-checkpoint-interval"))),
    },
    compactionBatchLimit: compactionBatchLimit(goInt(label("experimental-compaction-batch-limit"), str("experimental-compaction-batch-limit"))),
    unsafeNoFsync: parseBool(label("unsafe-no-fsync"), str("unsafe-no-fsync")),
  };
  // The rest of etcd's flags: parsed for their type only (Go's flag package checks that much).
  for (const f of serveFlags) {
    if (f.type === "boolean" || f.type === "duration") checkFlagValue(f, str(f.name), label(f.name));
  }
  const { enabled: checkpoint, persist } = config.leaseCheckpoint;
  if (persist && !checkpoint) throw new ConfigError("setting experimental-enable-lease-checkpoint-persist requires experimental-enable-lease-checkpoint");
  if (checkpoint && !persist) notices.push({ level: "warn", msg: "Detected that checkpointing is enabled without persistence. Consider enabling experimental-enable-lease-checkpoint-persist" });
  // One line per etcd flag set that kvctl does not act on: what it does instead.
  for (const f of serveFlags) {
    if (f.notice !== undefined && explicit.has(f.name)) notices.push({ level: "warn", msg: `--${f.name}: ${f.notice}`, fields: { [f.name]: str(f.name) } });
  }
  return config;
}

/** Go's strconv.ParseBool, as the flag package uses it for bool flags. */
function parseBool(label: string, v: unknown): boolean {
  if (typeof v === "boolean") return v;
  const s = String(v);
  if (["1", "t", "T", "TRUE", "true", "True"].includes(s)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(s)) return false;
  throw new ConfigError(label.startsWith("flag -") ? `invalid boolean value ${JSON.stringify(s)} for ${label.slice(5)}: parse error` : `invalid value ${JSON.stringify(s)} for ${label}: parse error`);
}

/** Go's flag.Duration: a Go duration string, in milliseconds. */
function durationMs(label: string, v: string): number {
  try {
    return Number(parseGoDuration(v)) / 1e6;
  } catch (err) {
    if (err instanceof GoDurationError) throw new ConfigError(`invalid value ${JSON.stringify(v)} for ${label}: parse error`);
    throw err;
  }
}

/** Go's strconv.ParseUint(s, 0, 64), as the flag package's uint flags use it. */
function goUint(label: string, v: string, max = Number.MAX_SAFE_INTEGER): number {
  const s = v.replace(/_/g, "");
  if (!/^(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[0-9]+)$/.test(s)) throw new ConfigError(`invalid value ${JSON.stringify(v)} for ${label}: parse error`);
  const n = Number(/^0[0-7]+$/.test(s) ? parseInt(s, 8) : s.replace(/^0[oO]/, "0o"));
  if (!Number.isFinite(n) || n > max) throw new ConfigError(`invalid value ${JSON.stringify(v)} for ${label}: value out of range`);
  return n;
}

/** Go's int flags: goUint with a sign. */
function goInt(label: string, v: string): number {
  const neg = v.startsWith("-");
  const n = goUint(label, neg || v.startsWith("+") ? v.slice(1) : v);
  return neg ? -n : n;
}

/** --logger, --log-outputs (and the deprecated --log-output), --log-level, --debug: etcd's setupLogging rules. */
function loggingConfig(v: Record<string, unknown>, explicit: ReadonlySet<string>, label: (f: string) => string, notices: ConfigNotice[]): Pick<ServerConfig, "logger" | "logOutputs" | "logLevel"> {
  const logger = String(v["logger"] ?? "zap");
  if (logger !== "zap" && logger !== "capnslog") throw new ConfigError(`unknown logger option ${JSON.stringify(logger)}`);
  const list = (k: string): string[] => [...new Set(String(v[k] ?? "default").split(",").map((s) => s.trim()).filter((s) => s !== ""))];
  let logOutputs = list("log-outputs");
  if (explicit.has("log-output")) {
    if (explicit.has("log-outputs")) throw new ConfigError("both '--log-output' and '--log-outputs' are set; only set '--log-outputs'");
    notices.push({ level: "warn", msg: "'--log-output' flag has been deprecated! Please use '--log-outputs'!" });
    logOutputs = list("log-output");
  }
  if (logOutputs.length === 0) logOutputs = ["default"];
  if (logger === "capnslog") {
    if (logOutputs.length !== 1) throw new ConfigError(`--logger=capnslog supports only 1 value in '--log-outputs', got ${goQuoteList(logOutputs)}`);
    const out = logOutputs[0]!;
    if (out !== "default" && out !== "stderr" && out !== "stdout") throw new ConfigError(`unknown log-output ${JSON.stringify(out)} (only supports "default", "stderr", "stdout")`);
  } else if (logOutputs.length > 1 && logOutputs.includes("default")) {
    throw new ConfigError(`multi logoutput for "default" is not supported yet`);
  }
  if (logOutputs.includes("systemd/journal")) {
    notices.push({ level: "warn", msg: "kvctl does not write to the systemd journal: log-outputs systemd/journal writes to stderr (journald collects a service's stderr)" });
  }
  let level = String(v["log-level"] ?? "info");
  // etcd's levels above error: kvctl has no panic or fatal lines, so these keep the errors only.
  if (level === "dpanic" || level === "panic" || level === "fatal") level = "error";
  if (!isLogLevel(level)) {
    throw new ConfigError(`invalid value ${JSON.stringify(level)} for ${label("log-level")}: valid values are debug, info, warn, error, dpanic, panic, fatal`);
  }
  if (parseBool(label("debug"), String(v["debug"] ?? "false"))) {
    notices.push({ level: "warn", msg: "[WARNING] Deprecated '--debug' flag is set to true (use '--log-level=debug' instead" });
    level = "debug";
  }
  return { logger, logOutputs, logLevel: level as LogLevelName };
}

/** Go's %q of a []string: ["a" "b"]. */
function goQuoteList(xs: readonly string[]): string {
  return `[${xs.map((x) => JSON.stringify(x)).join(" ")}]`;
}

function metricsLevel(s: string, notices: ConfigNotice[]): "basic" | "extensive" {
  if (s === "extensive") return s;
  // etcd takes any other word as basic.
  if (s !== "basic") notices.push({ level: "warn", msg: `--metrics=${s} is neither 'basic' nor 'extensive'; basic is used, as etcd does` });
  return "basic";
}

/**
 * --cors as etcd's UniqueURLs with the "*" exception: "*" alone, or URLs with a scheme,
 * a host:port and no path, kept as Go prints them (scheme lowercased). The Origin header
 * is compared with these strings exactly, as etcd does.
 */
export function parseCors(raw: string, label = "flag -cors"): string[] {
  if (raw === "*") return ["*"];
  const out: string[] = [];
  for (const item of raw.split(",")) {
    const s = item.trim();
    const bad = (why: string): ConfigError => new ConfigError(`invalid value ${JSON.stringify(raw)} for ${label}: ${why}`);
    const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)(.*)$/.exec(s);
    const scheme = m?.[1]?.toLowerCase() ?? "";
    if (!["http", "https", "unix", "unixs"].includes(scheme)) throw bad(`URL scheme must be http, https, unix, or unixs: ${s}`);
    const host = m?.[2] ?? "";
    if (!/^(\[[^\]]*\]|[^:[\]]*):[^:]*$/.test(host)) throw bad(`URL address does not have the form "host:port": ${s}`);
    if ((m?.[3] ?? "") !== "") throw bad(`URL must not contain a path: ${s}`);
    const u = `${scheme}://${host}`;
    if (!out.includes(u)) out.push(u);
  }
  return out;
}

/** --discovery-proxy read as etcd's newProxyFunc reads it; one that cannot be read refuses the start. */
function discoveryProxy(raw: string): Pick<ServerConfig, "discoveryProxy"> {
  if (raw === "") return {};
  try {
    return { discoveryProxy: discoveryProxyUrl(raw) };
  } catch (err) {
    if (err instanceof ProxyAddressError) throw new ConfigError(err.message);
    throw err;
  }
}

/** etcd's quota: 0 is the default 2 GiB, negative disables it; above 8 GiB is warned about. */
function quotaBytes(n: number, notices: ConfigNotice[]): number {
  const DEFAULT = 2 * 1024 * 1024 * 1024;
  const MAX = 8 * 1024 * 1024 * 1024;
  if (n < 0) {
    notices.push({ level: "warn", msg: "disabled backend quota", fields: { "quota-size-bytes": n } });
    return Infinity;
  }
  if (n === 0) return DEFAULT;
  if (n > MAX) {
    notices.push({ level: "warn", msg: "quota exceeds the maximum value", fields: { "quota-size-bytes": n, "quota-maximum-size-bytes": MAX, "quota-maximum-size": "8.6 GB" } });
  }
  return n;
}

/** etcd's parseCompactionRetention, with the mode checked as embed.Config.Validate does. */
export function autoCompaction(mode: string, retention: string, notices: ConfigNotice[] = []): ServerConfig["autoCompaction"] {
  if (mode !== "" && mode !== "periodic" && mode !== "revision") throw new ConfigError(`unknown auto-compaction-mode ${JSON.stringify(mode)}`);
  const m = mode === "revision" ? "revision" : "periodic";
  const r = retention === "" ? "0" : retention;
  if (/^[+-]?[0-9]+$/.test(r) && Number(r) >= 0) {
    const h = Number(r);
    return { mode: m, retention: m === "revision" ? h : h * 3_600_000 };
  }
  let ns: bigint;
  try {
    ns = parseGoDuration(r);
  } catch (err) {
    if (err instanceof GoDurationError) throw new ConfigError(`error parsing CompactionRetention: ${err.message}`);
    throw err;
  }
  if (m === "revision") {
    // etcd takes the duration's nanoseconds as the revision count; kvctl does the same, and says so.
    notices.push({ level: "warn", msg: "--auto-compaction-retention is a duration in revision mode: its nanoseconds are taken as the revision count, as etcd does", fields: { retention: r } });
    return { mode: m, retention: Number(ns) };
  }
  return { mode: m, retention: Number(ns) / 1e6 };
}

const jwtSignMethods = ["HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

/** --auth-token, checked as etcd's NewTokenProvider checks it when the server starts. */
export function parseAuthToken(raw: string, notices: ConfigNotice[] = []): AuthTokenConfig {
  const invalid = (why: string): ConfigError => new ConfigError(`auth: invalid auth options (${why})`);
  const parts = raw.split(",");
  const type = parts[0] ?? "";
  const opts = new Map<string, string>();
  for (const p of parts.slice(1)) {
    const pair = p.split("=");
    if (pair.length !== 2) throw invalid(`invalid token specific option: ${raw}`);
    if (opts.has(pair[0]!)) throw invalid(`invalid token specific option, duplicated parameters (${pair[0]}): ${raw}`);
    opts.set(pair[0]!, pair[1]!);
  }
  if (type === "simple") return { type: "simple" };
  if (type === "") return { type: "none" };
  if (type !== "jwt") throw invalid(`unknown token type: ${type}`);
  let ttlMs = 5 * 60_000;
  const ttl = opts.get("ttl") ?? "";
  if (ttl !== "") {
    try {
      ttlMs = Number(parseGoDuration(ttl)) / 1e6;
    } catch (err) {
      throw invalid(`problem loading JWT options: ${(err as Error).message}`);
    }
  }
  const publicKeyFile = opts.get("pub-key") ?? "";
  const privateKeyFile = opts.get("priv-key") ?? "";
  for (const file of [publicKeyFile, privateKeyFile]) {
    if (file === "") continue;
    try {
      readFileSync(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw invalid(`problem loading JWT options: open ${file}: ${code === "ENOENT" ? "no such file or directory" : code === "EACCES" ? "permission denied" : String(code)}`);
    }
  }
  const signMethod = opts.get("sign-method") ?? "";
  if (!jwtSignMethods.includes(signMethod)) throw invalid("problem loading JWT options: auth: invalid auth signature method");
  const unknown = [...opts.keys()].filter((k) => !["sign-method", "pub-key", "priv-key", "ttl"].includes(k));
  if (unknown.length > 0) notices.push({ level: "warn", msg: "unknown JWT options", fields: { keys: unknown } });
  if (signMethod === "EdDSA") throw new ConfigError("unsupported signing method: *jwt.SigningMethodEd25519");
  const cfg = { type: "jwt" as const, signMethod, publicKeyFile, privateKeyFile, ttlMs };
  // Parse the keys now, as etcd's NewTokenProvider does at start: a bad key is a start-up error, not a failed login.
  jwtTokensOf(cfg);
  return cfg;
}

/** The JWT provider an --auth-token=jwt,... names: reads the key files; throws ConfigError with etcd's messages. */
export function jwtTokensOf(cfg: Extract<AuthTokenConfig, { type: "jwt" }>): V3JwtTokens {
  const read = (file: string): Buffer | undefined => {
    if (file === "") return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      throw new ConfigError(`auth: invalid auth options (problem loading JWT options: open ${file}: ${String((err as NodeJS.ErrnoException).code)})`);
    }
  };
  const privateKey = read(cfg.privateKeyFile);
  const publicKey = read(cfg.publicKeyFile);
  try {
    return new V3JwtTokens({ signMethod: cfg.signMethod, ttlMs: cfg.ttlMs, ...(privateKey === undefined ? {} : { privateKey }), ...(publicKey === undefined ? {} : { publicKey }) });
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

/** etcd's minWatchProgressInterval (v3rpc.NewWatchServer): a shorter positive interval is raised to it, with a warning. */
export const MIN_WATCH_PROGRESS_INTERVAL_MS = 100;
/** etcd 3.4's progressReportInterval, which a value of 0 or less leaves in place (v3rpc only sets it when > 0). */
export const DEFAULT_WATCH_PROGRESS_INTERVAL_MS = 600_000;

function watchProgressInterval(ms: number, notices: ConfigNotice[]): number {
  if (ms <= 0) return DEFAULT_WATCH_PROGRESS_INTERVAL_MS;
  if (ms >= MIN_WATCH_PROGRESS_INTERVAL_MS) return ms;
  notices.push({ level: "warn", msg: "adjusting watch progress notify interval to minimum period", fields: { "min-watch-progress-notify-interval": "100ms" } });
  return MIN_WATCH_PROGRESS_INTERVAL_MS;
}

/** etcd's defaultLeaseCheckpointInterval, which its lessor also takes for a zero interval. */
export const DEFAULT_LEASE_CHECKPOINT_INTERVAL_MS = 5 * 60 * 1000;

function leaseCheckpointInterval(ms: number): number {
  return ms > 0 ? ms : DEFAULT_LEASE_CHECKPOINT_INTERVAL_MS;
}

/** etcd's defaultCompactBatchLimit, which its store takes for 0 (a negative limit would never end a compaction there). */
export const DEFAULT_COMPACTION_BATCH_LIMIT = 1000;

function compactionBatchLimit(n: number): number {
  return n > 0 ? n : DEFAULT_COMPACTION_BATCH_LIMIT;
}

/** etcd's NewAuthStore: a cost outside bcrypt's 4..31 falls back to the default 10, with a warning. */
function bcryptCost(n: number, notices: ConfigNotice[]): number {
  if (n >= 4 && n <= 31) return n;
  notices.push({ level: "warn", msg: "use default bcrypt cost instead of the invalid given cost", fields: { "min-cost": 4, "max-cost": 31, "default-cost": 10, "given-cost": n } });
  return 10;
}

/**
 * The TLS flags and their cross-flag rules. etcd reports most of these only when a
 * listener starts; kvctl refuses them before opening the data directory.
 */
function tlsConfig(v: Record<string, unknown>, listen: { client: readonly URL[]; peer: readonly URL[] }, label: (f: string) => string): Pick<ServerConfig, "clientTls" | "peerTls" | "cipherSuites" | "hostWhitelist"> {
  const str = (k: string): string => String(v[k] ?? "");
  const side = (prefix: "" | "peer-"): TlsFlags => {
    const certFile = str(`${prefix}cert-file`);
    const keyFile = str(`${prefix}key-file`);
    if ((certFile === "") !== (keyFile === "")) {
      const missing = certFile === "" ? `--${prefix}cert-file` : `--${prefix}key-file`;
      throw new ConfigError(`${missing} is required: KeyFile and CertFile must both be present[key: ${keyFile}, cert: ${certFile}]`);
    }
    const allowedCn = prefix === "peer-" ? str("peer-cert-allowed-cn") : "";
    const allowedHostname = str(prefix === "peer-" ? "peer-cert-allowed-hostname" : "client-cert-allowed-hostname");
    if (allowedCn !== "" && allowedHostname !== "") {
      throw new ConfigError(`AllowedCN and AllowedHostname are mutually exclusive (cn=${JSON.stringify(allowedCn)}, hostname=${JSON.stringify(allowedHostname)})`);
    }
    return {
      certFile,
      keyFile,
      trustedCaFile: str(`${prefix}trusted-ca-file`),
      clientCertAuth: parseBool(label(`${prefix}client-cert-auth`), v[`${prefix}client-cert-auth`] ?? false),
      autoTls: parseBool(label(`${prefix}auto-tls`), v[`${prefix}auto-tls`] ?? false),
      crlFile: str(prefix === "peer-" ? "peer-crl-file" : "client-crl-file"),
      allowedCn,
      allowedHostname,
      skipClientSanVerify: prefix === "peer-" && parseBool(label("experimental-peer-skip-client-san-verification"), v["experimental-peer-skip-client-san-verification"] ?? false),
    };
  };
  const clientTls = side("");
  const peerTls = side("peer-");
  for (const [kind, urls, tls, flags] of [
    ["client", listen.client, clientTls, "--cert-file, --key-file"],
    ["peer", listen.peer, peerTls, "--peer-cert-file, --peer-key-file"],
  ] as const) {
    for (const u of urls) {
      if (u.protocol === "https:" && tls.certFile === "" && !tls.autoTls) {
        throw new ConfigError(`TLS key/cert (${flags}) must be provided for ${kind} url ${u.origin} with HTTPS scheme`);
      }
    }
  }
  const cipherSuites = str("cipher-suites").split(",").map((s) => s.trim()).filter((s) => s !== "");
  const unknown = cipherSuites.find((s) => !isGoCipherSuite(s));
  if (unknown !== undefined) {
    throw new ConfigError(`unexpected TLS cipher suite ${JSON.stringify(unknown)} (valid: ${goCipherSuiteNames().join(", ")})`);
  }
  // etcd's default is "*"; kvctl keeps an empty list for "allow all".
  const hostWhitelist = [...new Set(str("host-whitelist").split(",").map((s) => s.trim()).filter((s) => s !== ""))];
  return { clientTls, peerTls, cipherSuites, hostWhitelist };
}

/** `kvctl serve --version`: etcd's four lines, with kvctl's own version first. */
export function versionText(): string {
  return [
    `kvctl Version: ${KVCTL_VERSION}`,
    `etcd Version: ${ETCD_SERVER_VERSION} (the etcd release whose API kvctl serves)`,
    `Node Version: ${process.version}`,
    `Node OS/Arch: ${process.platform}/${process.arch}`,
  ].join("\n") + "\n";
}

/**
 * Parses `kvctl serve` arguments with KV_* and ETCD_* variables, or the --config-file.
 * Returns null when --help or --version was printed.
 */
export async function parseServeArgs(args: readonly string[], env: NodeJS.ProcessEnv = process.env, out: (text: string) => void = (t) => process.stdout.write(t)): Promise<ServerConfig | null> {
  const { values, help, version, rest, ignored } = parseGoFlags(args);
  if (help) {
    out(serveHelp());
    return null;
  }
  if (rest.length > 0) throw new ConfigError(`'${rest[0]}' is not a valid flag`);
  if (version) {
    out(versionText());
    return null;
  }
  const notices: ConfigNotice[] = ignored.map((n) => ({ level: "warn", msg: `flag "-${n}" is no longer supported - ignoring.` }));
  const present = (x: string | undefined): x is string => x !== undefined && x !== "";
  const configFile = values.get("config-file") ?? env[envName("config-file")] ?? (present(env[etcdEnvName("config-file")]) ? env[etcdEnvName("config-file")] : undefined) ?? "";
  const v: Record<string, unknown> = {};
  const explicit = new Set<string>();
  const origin = new Map<string, string>();
  if (configFile !== "") {
    // etcd: the file replaces flags and variables entirely.
    const file = await readConfigFile(configFile);
    notices.push({ level: "info", msg: "loaded server configuration, other configuration command line flags and environment variables will be ignored if provided", fields: { path: configFile } });
    notices.push(...file.notices);
    for (const f of serveFlags) {
      const x = file.values.get(f.name);
      if (x !== undefined) {
        explicit.add(f.name);
        origin.set(f.name, `configuration file key ${f.name}`);
      }
      v[f.name] = x ?? f.default;
    }
    for (const f of serveFlags) if (explicit.has(f.name)) checkFlagValue(f, String(v[f.name]), origin.get(f.name)!);
    return buildConfig(v, explicit, { notices, configFile, label: (f) => origin.get(f) ?? `flag -${f}` });
  }
  // Every ETCD_ name of a flag counts as known, set or empty; others are warned about as etcd does.
  const etcdKnown = new Set<string>([...serveFlags.flatMap((f) => [f.name, ...(f.aliases ?? [])]), ...ignoredEtcdFlags, "version"].map(etcdEnvName));
  for (const f of serveFlags) {
    if (f.name === "config-file") {
      v[f.name] = values.get(f.name) ?? f.default;
      continue;
    }
    const names = [f.name, ...(f.aliases ?? [])];
    const kv = names.map(envName).find((k) => env[k] !== undefined);
    // etcd reads a variable only when it is not empty (pkg/flags.SetFlagsFromEnv).
    const etcd = names.map(etcdEnvName).find((k) => present(env[k]));
    const cmd = values.get(f.name);
    if (cmd !== undefined) {
      if (etcd !== undefined) {
        throw new ConfigError(`conflicting environment variable ${JSON.stringify(etcd)} is shadowed by corresponding command-line flag (either unset environment variable or disable flag)`);
      }
      explicit.add(f.name);
      v[f.name] = cmd;
    } else if (kv !== undefined) {
      // KV_<FLAG> fills every flag not given on the command line (then KV_<ALIAS>: KV_CA_FILE), before ETCD_<FLAG>.
      explicit.add(f.name);
      origin.set(f.name, kv);
      v[f.name] = env[kv];
      checkFlagValue(f, String(env[kv]), kv);
    } else if (etcd !== undefined) {
      explicit.add(f.name);
      origin.set(f.name, etcd);
      v[f.name] = env[etcd];
      checkFlagValue(f, String(env[etcd]), etcd);
      notices.push({ level: "info", msg: "recognized and used environment variable", fields: { variable: `${etcd}=${env[etcd]}` } });
    } else {
      v[f.name] = f.default;
    }
  }
  for (const n of ignoredEtcdFlags) {
    const k = etcdEnvName(n);
    if (!present(env[k])) continue;
    notices.push({ level: "warn", msg: `flag "-${n}" is no longer supported - ignoring.`, fields: { variable: k } });
  }
  for (const [k, x] of Object.entries(env)) {
    if (k.startsWith("ETCD_") && !etcdKnown.has(k)) notices.push({ level: "warn", msg: "unrecognized environment variable", fields: { variable: `${k}=${x ?? ""}` } });
  }
  return buildConfig(v, explicit, { notices, label: (f) => origin.get(f) ?? `flag -${f}` });
}
