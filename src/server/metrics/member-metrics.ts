// One member's metrics registry: the event counters the server and its gRPC layer keep
// (server-metrics.ts, grpc-metrics.ts), the levels read from the server at each scrape,
// and the process collector. /metrics on the client and metrics URLs writes `expose()`.
import { ETCD_SERVER_VERSION } from "../version.ts";
import type { TransportObserver } from "../../transport/index.ts";
import type { V3KeySpace, WatchHub } from "../../store/v3/index.ts";
import type { V2Store } from "../../store/v2/store.ts";
import type { ServerConfig } from "../config.ts";
import type { Membership } from "../membership.ts";
import type { ServerStats } from "../stats.ts";
import type { ServerMetrics } from "./server-metrics.ts";
import { GrpcMetrics } from "./grpc-metrics.ts";
import { registerProcessMetrics } from "./process.ts";
import { GaugeFunc, Registry, counterFunc } from "./registry.ts";

/** The part of a GrpcServer read at scrape time (it reports open connections' bytes). */
export interface GrpcTraffic {
  reportTraffic(): void;
}

/**
 * What a scrape reads of the member: the counters it keeps (`metrics`, registered once),
 * and the levels read at each scrape. The key space is replaced when a snapshot is
 * installed, so it is read through the host each time.
 */
export interface MemberMetricsHost {
  readonly metrics: ServerMetrics;
  readonly config: Pick<ServerConfig, "quotaBackendBytes">;
  readonly memberId: number;
  readonly leaderId: number;
  readonly isLeader: boolean;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly stats: Pick<ServerStats, "leaderChanges">;
  readonly membership: Pick<Membership, "get" | "version">;
  readonly v3: Pick<V3KeySpace, "revision" | "compactRevision" | "range">;
  readonly watchHub: Pick<WatchHub, "size" | "behind">;
  readonly store: Pick<V2Store, "statsJSON" | "reads">;
  readonly v3auth: { readonly authRevision: number };
  v3DbSizes(): { size: number; inUse: number };
  readonly walWrittenBytes: number;
}

/** What attachTransport needs of the peer transport (PeerTransport). */
export interface TransportLinks {
  observer: TransportObserver | undefined;
  /** Per peer, keyed by its id in hex. */
  stats(): Record<string, unknown>;
  activeSince(id: number): number | undefined;
}

const hex = (id: number): string => id.toString(16);

export class MemberMetrics {
  readonly registry = new Registry();
  readonly grpc: GrpcMetrics;
  readonly #kv: MemberMetricsHost;
  #grpcServer: GrpcTraffic | undefined;
  /** Counting the live keys walks the key index: a scrape reuses the count of the same revision. */
  #keys = { revision: -1, count: 0 };

  constructor(kv: MemberMetricsHost, opts: { level: "basic" | "extensive" }) {
    this.#kv = kv;
    const m = kv.metrics;
    this.grpc = new GrpcMetrics({
      extensive: opts.level === "extensive",
      sentBytes: m.grpcSentBytes,
      receivedBytes: m.grpcReceivedBytes,
      clientRequest: (type, version) => m.clientRequest(type, version),
    });
    const r = this.registry;
    for (const f of [...m.families(), ...this.grpc.families()]) r.register(f);
    const g = (name: string, help: string, read: () => number): void => void r.register(new GaugeFunc(name, help, read));
    const label = (name: string, help: string, key: string, value: () => string): void =>
      void r.register(new GaugeFunc(name, help, () => [{ labels: { [key]: value() }, value: 1 }]));

    g("etcd_server_has_leader", "Whether or not a leader exists. 1 is existence, 0 is not.", () => (kv.leaderId !== 0 ? 1 : 0));
    g("etcd_server_is_leader", "Whether or not this member is a leader. 1 if is, 0 otherwise.", () => (kv.isLeader ? 1 : 0));
    g("etcd_server_is_learner", "Whether or not this member is a learner. 1 if is, 0 otherwise.", () =>
      kv.membership.get(kv.memberId)?.isLearner === true ? 1 : 0,
    );
    r.register(counterFunc("etcd_server_leader_changes_seen_total", "The number of leader changes seen.", () => kv.stats.leaderChanges));
    // etcd exports these two as gauges of the raft indexes (etcdserver/metrics.go).
    g("etcd_server_proposals_committed_total", "The total number of consensus proposals committed.", () => kv.commitIndex);
    g("etcd_server_proposals_applied_total", "The total number of consensus proposals applied.", () => kv.appliedIndex);
    // A gauge in etcd despite its name (wal/metrics.go); the WAL counts its record bytes as it writes them.
    g("etcd_disk_wal_write_bytes_total", "Total number of bytes written in WAL.", () => kv.walWrittenBytes);
    g("etcd_server_quota_backend_bytes", "Current backend storage quota size in bytes.", () => kv.config.quotaBackendBytes);
    label("etcd_server_id", "Server or member ID in hexadecimal format. 1 for 'server_id' label with current ID.", "server_id", () => hex(kv.memberId));
    label("etcd_server_version", "Which version is running. 1 for 'server_version' label with current version.", "server_version", () => ETCD_SERVER_VERSION);
    // As etcd's gauge vector: no series until a version is recorded, then 1 for the current
    // one and 0 for those this process applied before it (3.0 when a member was late at the start).
    const help = "Which version is running. 1 for 'cluster_version' label with current cluster version";
    r.register(new GaugeFunc("etcd_cluster_version", help, () => {
      const v = kv.membership.version;
      if (v === undefined) return [];
      const current = v.split(".").slice(0, 2).join(".");
      const all = new Set([...m.clusterVersionsApplied, current]);
      return [...all].sort().map((c) => ({ labels: { cluster_version: c }, value: c === current ? 1 : 0 }));
    }));

    g("etcd_mvcc_db_total_size_in_bytes", "Total size of the underlying database physically allocated in bytes.", () => kv.v3DbSizes().size);
    g("etcd_debugging_mvcc_db_total_size_in_bytes", "Total size of the underlying database physically allocated in bytes.", () => kv.v3DbSizes().size);
    g("etcd_mvcc_db_total_size_in_use_in_bytes", "Total size of the underlying database logically in use in bytes.", () => kv.v3DbSizes().inUse);
    g("etcd_debugging_mvcc_keys_total", "Total number of keys.", () => this.#keyCount());
    g("etcd_debugging_mvcc_current_revision", "The current revision of store.", () => kv.v3.revision);
    g("etcd_debugging_mvcc_compact_revision", "The revision of the last compaction in store.", () => kv.v3.compactRevision);
    // watch-metrics.ts says how each of these follows etcd's count.
    g("etcd_debugging_mvcc_watch_stream_total", "Total number of watch streams.", () => m.watch.streams);
    g("etcd_debugging_mvcc_watcher_total", "Total number of watchers.", () => kv.watchHub.size + m.watch.compacted);
    g("etcd_debugging_mvcc_slow_watcher_total", "Total number of unsynced slow watchers.", () => kv.watchHub.behind);
    g("etcd_debugging_mvcc_pending_events_total", "Total number of pending events to be sent.", () => m.watch.pending);
    // etcd counts the same operations twice, under the debugging names too.
    for (const [c, name] of [
      [m.mvccPut, "etcd_debugging_mvcc_put_total"],
      [m.mvccRange, "etcd_debugging_mvcc_range_total"],
      [m.mvccDelete, "etcd_debugging_mvcc_delete_total"],
      [m.mvccTxn, "etcd_debugging_mvcc_txn_total"],
    ] as const) {
      r.register(counterFunc(name, c.help, () => c.value()));
    }

    // The v2 store's own counters (/v2/stats/store), under etcd's store metric names.
    const store = (): ReturnType<V2Store["statsJSON"]> => kv.store.statsJSON();
    r.register(
      counterFunc("etcd_debugging_store_writes_total", "Total number of writes (e.g. set/compareAndDelete) seen by this member.", () => {
        const s = store();
        return [
          { labels: { action: "compareAndDelete" }, value: s.compareAndDeleteSuccess },
          { labels: { action: "compareAndSwap" }, value: s.compareAndSwapSuccess },
          { labels: { action: "create" }, value: s.createSuccess },
          { labels: { action: "delete" }, value: s.deleteSuccess },
          { labels: { action: "set" }, value: s.setsSuccess },
          { labels: { action: "update" }, value: s.updateSuccess },
        ].filter((x) => x.value > 0);
      }),
    );
    r.register(
      // As etcd's store Get counts them: failed gets too, a recursive one under its own label.
      counterFunc("etcd_debugging_store_reads_total", "Total number of reads action by (get/getRecursive), local to this member.", () => {
        const r = kv.store.reads();
        return [
          { labels: { action: "get" }, value: r.get },
          { labels: { action: "getRecursive" }, value: r.getRecursive },
        ].filter((x) => x.value > 0);
      }),
    );
    // etcd: auth/metrics.go, the v3 auth store's revision (1 from the start).
    g("etcd_debugging_auth_revision", "The current revision of auth store.", () => kv.v3auth.authRevision);
    r.register(counterFunc("etcd_debugging_store_expires_total", "Total number of expired keys.", () => store().expireCount));
    g("etcd_debugging_store_watchers", "Count of currently active watchers.", () => store().watchers);

    registerProcessMetrics(r);
  }

  /** The gRPC server whose open connections' bytes are counted at each scrape. */
  attachGrpc(server: GrpcTraffic): void {
    this.#grpcServer = server;
  }

  /**
   * Takes the peer transport's reports from now on, and counts the links already up as
   * active. The server attaches once kv.start() returned, and a peer's stream opened in
   * start() can be accepted while start() still awaits: that link's "up" went to no one, and
   * etcd_network_active_peers stayed 0 for it until it went down and up again (a member
   * started after its peers: 2 of 4 starts).
   */
  attachTransport(t: TransportLinks): void {
    const o = this.transportObserver();
    t.observer = o;
    for (const h of Object.keys(t.stats())) {
      const id = parseInt(h, 16);
      if (t.activeSince(id) !== undefined) o.peerActive(id, true);
    }
  }

  /** The transport's reports, keyed by member id in hex as etcd labels them. */
  transportObserver(): TransportObserver {
    const m = this.#kv.metrics;
    // Called per message: each peer's label is made once.
    const labels = new Map<number, string>();
    const hex = (id: number): string => {
      let h = labels.get(id);
      if (h === undefined) labels.set(id, (h = id.toString(16)));
      return h;
    };
    return {
      sent: (to, bytes) => m.peerSent(hex(to), bytes),
      received: (from, bytes) => m.peerReceived(hex(from), bytes),
      roundTrip: (to, ms) => m.peerRoundTripMs(hex(to), ms),
      heartbeatDropped: () => m.heartbeatSendFailed(),
      peerActive: (id, active) => m.peerActive(hex(this.#kv.memberId), hex(id), active),
      sendFailed: (to, n) => m.peerSendFailed(hex(to), n),
      receiveFailed: (remoteAddr) => m.peerReceivedFailures.inc({ From: remoteAddr }),
    };
  }

  expose(): string {
    this.#grpcServer?.reportTraffic();
    this.grpc.initializeSeries();
    return this.registry.expose();
  }

  #keyCount(): number {
    const revision = this.#kv.v3.revision;
    if (revision !== this.#keys.revision) {
      const all = Buffer.from([0]);
      const res = this.#kv.v3.range({
        key: all,
        rangeEnd: all,
        limit: 0,
        revision: 0,
        sortOrder: 0,
        sortTarget: 0,
        serializable: true,
        keysOnly: true,
        countOnly: true,
        minModRevision: 0,
        maxModRevision: 0,
        minCreateRevision: 0,
        maxCreateRevision: 0,
      });
      this.#keys = { revision, count: res.count };
    }
    return this.#keys.count;
  }
}
