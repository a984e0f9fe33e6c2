// etcd 3.4's metric families for one member, with etcd's names, labels, units, HELP text
// and buckets (compared with a real etcd's /metrics: test/integration/fixtures/). Two kinds:
// - events counted where they happen: the KvServer calls the hooks below from its real
//   code paths (propose, WAL save, backend commit, apply), the transport reports peer
//   bytes and heartbeat round trips, the gRPC server its calls;
// - levels read from the server when scraped (leader, indexes, revisions, sizes), so they
//   cannot drift from what the server reports elsewhere.
import type { Command } from "../request.ts";
import type { ApplyResult } from "../apply.ts";
import { v3ResultOf } from "../v3-results.ts";
import type { PutRequest, RequestOp, TxnRequest, TxnResponse } from "../../store/v3/index.ts";
import { Counter, Gauge, Histogram, exponentialBuckets } from "./registry.ts";
import { V2HttpMetrics } from "./v2-http-metrics.ts";
import { WatchMetrics } from "./watch-metrics.ts";

/** etcd's warnApplyDuration: an apply slower than this counts as slow. */
export const SLOW_APPLY_MS = 100;

/**
 * A txn's reads, puts and deletes in the branch it took, nested txns included, and its puts'
 * bytes (`putSize`: key and value of each, as etcd's metricsTxnWrite adds them).
 */
function countTxn(req: TxnRequest, res: TxnResponse | undefined, putSize: (p: PutRequest) => number = () => 0): { ranges: number; puts: number; deletes: number; putBytes: number } {
  const out = { ranges: 0, puts: 0, deletes: 0, putBytes: 0 };
  const ops: readonly RequestOp[] = res === undefined ? [] : res.succeeded ? req.success : req.failure;
  ops.forEach((op, i) => {
    if ("range" in op) out.ranges++;
    else if ("put" in op) {
      out.puts++;
      out.putBytes += putSize(op.put);
    } else if ("deleteRange" in op) out.deletes++;
    else {
      const inner = res?.responses[i];
      const sub = countTxn(op.txn, inner !== undefined && "txn" in inner ? inner.txn : undefined, putSize);
      out.ranges += sub.ranges;
      out.puts += sub.puts;
      out.deletes += sub.deletes;
      out.putBytes += sub.putBytes;
    }
  });
  return out;
}

export class ServerMetrics {
  /** The v3 watch streams' counts (watch-metrics.ts), kept by the streams of both transports. */
  readonly watch = new WatchMetrics();
  readonly proposalsPending = new Gauge("etcd_server_proposals_pending", "The current number of pending proposals to commit.");
  readonly proposalsFailed = new Counter("etcd_server_proposals_failed_total", "The total number of failed proposals seen.");
  readonly slowApply = new Counter("etcd_server_slow_apply_total", "The total number of slow apply requests (likely overloaded from slow disk).");
  readonly heartbeatSendFailures = new Counter(
    "etcd_server_heartbeat_send_failures_total",
    "The total number of leader heartbeat send failures (likely overloaded from slow disk).",
  );
  // etcd: etcdserver/metrics.go, counted by its linearizable read loop (read-index.ts here).
  readonly slowReadIndexes = new Counter(
    "etcd_server_slow_read_indexes_total",
    "The total number of pending read indexes not in sync with leader's or timed out read index requests.",
  );
  readonly readIndexesFailed = new Counter("etcd_server_read_indexes_failed_total", "The total number of failed read indexes seen.");
  /** etcd: etcdserver/metrics.go; counted by the leader as it applies a promotion (member-admin.ts). */
  readonly learnerPromoteSuccesses = new Counter(
    "etcd_server_learner_promote_successes",
    "The total number of successful learner promotions while this member is leader.",
  );
  /** etcd: etcdserver/metrics.go; a refused promotion, by etcd's error text, on the leader that refused it (member-admin.ts). */
  readonly learnerPromoteFailures = new Counter(
    "etcd_server_learner_promote_failures",
    "The total number of failed learner promotions (likely learner not ready) while this member is leader.",
    ["Reason"],
  );
  readonly healthSuccess = new Counter("etcd_server_health_success", "The total number of successful health checks");
  readonly healthFailures = new Counter("etcd_server_health_failures", "The total number of failed health checks");

  // etcd: wal/metrics.go and mvcc/backend/metrics.go (ExponentialBuckets(0.001, 2, 14)).
  readonly walFsync = new Histogram("etcd_disk_wal_fsync_duration_seconds", "The latency distributions of fsync called by WAL.", exponentialBuckets(0.001, 2, 14));
  readonly backendCommit = new Histogram(
    "etcd_disk_backend_commit_duration_seconds",
    "The latency distributions of commit called by backend.",
    exponentialBuckets(0.001, 2, 14),
  );

  // etcd: mvcc/backend/metrics.go; observed when a defragmentation succeeded, in flight meanwhile.
  readonly defragDuration = new Histogram(
    "etcd_disk_backend_defrag_duration_seconds",
    "The latency distribution of backend defragmentation.",
    exponentialBuckets(0.1, 2, 13),
  );
  readonly defragInflight = new Gauge("etcd_disk_defrag_inflight", "Whether or not defrag is active on the member. 1 means active, 0 means not.");
  // etcd: mvcc/metrics.go, observed by scheduleCompaction (backend/compactions.ts here), whole ms.
  readonly dbCompactionPause = new Histogram(
    "etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds",
    "Bucketed histogram of db compaction pause duration.",
    exponentialBuckets(1, 2, 13),
  );
  readonly dbCompactionTotal = new Histogram(
    "etcd_debugging_mvcc_db_compaction_total_duration_milliseconds",
    "Bucketed histogram of db compaction total duration.",
    exponentialBuckets(100, 2, 14),
  );
  readonly dbCompactionKeys = new Counter("etcd_debugging_mvcc_db_compaction_keys_total", "Total number of db keys compacted.");
  // etcd: mvcc/kvstore.go times kvindex.Compact, whole ms; here the compaction's apply,
  // which compacts the index (the database's deletions follow in batches, above).
  readonly indexCompactionPause = new Histogram(
    "etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds",
    "Bucketed histogram of index compaction pause duration.",
    exponentialBuckets(0.5, 2, 14),
  );
  // etcd: snap/snapshotter.go's save, for every snapshot the member saves (made or received):
  // marshalling is the encoding and CRC (the header and CRC here), total adds the write and fsyncs.
  readonly snapSaveTotal = new Histogram("etcd_debugging_snap_save_total_duration_seconds", "The total latency distributions of save called by snapshot.", exponentialBuckets(0.001, 2, 14));
  readonly snapSaveMarshalling = new Histogram(
    "etcd_debugging_snap_save_marshalling_duration_seconds",
    "The marshalling cost distributions of save called by snapshot.",
    exponentialBuckets(0.001, 2, 14),
  );
  /** What the snapshotter reports each save to (wal/snapshotter.ts). */
  readonly snapshotObserver = {
    saved: (t: { marshallingMs: number; totalMs: number }): void => {
      this.snapSaveMarshalling.observe(t.marshallingMs / 1000);
      this.snapSaveTotal.observe(t.totalMs / 1000);
    },
  };
  /** What the v3 database's compaction deletions report to (backend/compactions.ts). */
  readonly compactionObserver = {
    batch: (ms: number): void => this.dbCompactionPause.observe(ms),
    job: (ms: number, records: number): void => {
      this.dbCompactionTotal.observe(ms);
      this.dbCompactionKeys.inc({}, records);
    },
  };

  // etcd: mvcc/metrics.go, observed by its store's Hash and HashByRev (the Hash and HashKV
  // calls here: kvctl runs no corruption check), HashByRev only when it answered.
  readonly hashDuration = new Histogram("etcd_mvcc_hash_duration_seconds", "The latency distribution of storage hash operation.", exponentialBuckets(0.01, 2, 15));
  readonly hashRevDuration = new Histogram(
    "etcd_mvcc_hash_rev_duration_seconds",
    "The latency distribution of storage hash by revision operation.",
    exponentialBuckets(0.01, 2, 15),
  );

  readonly mvccPut = new Counter("etcd_mvcc_put_total", "Total number of puts seen by this member.");
  readonly mvccRange = new Counter("etcd_mvcc_range_total", "Total number of ranges seen by this member.");
  readonly mvccDelete = new Counter("etcd_mvcc_delete_total", "Total number of deletes seen by this member.");
  readonly mvccTxn = new Counter("etcd_mvcc_txn_total", "Total number of txns seen by this member.");
  // etcd: mvcc/metrics_txn.go adds each put's key and value length when its write txn ends.
  readonly mvccPutSize = new Gauge("etcd_debugging_mvcc_total_put_size_in_bytes", "The total size of put kv pairs seen by this member.");
  /**
   * The length of a key's value now (after the put applied): a put with ignore_value writes
   * the value the key had, and etcd counts that one. Set by the server; unset, such a put
   * counts its key only.
   */
  valueLength: ((key: Buffer) => number) | undefined;
  readonly leaseGranted = new Counter("etcd_debugging_lease_granted_total", "The total number of granted leases.");
  readonly leaseRevoked = new Counter("etcd_debugging_lease_revoked_total", "The total number of revoked leases.");
  readonly leaseRenewed = new Counter("etcd_debugging_lease_renewed_total", "The number of renewed leases seen by the leader.");
  /** etcd: etcdserver/metrics.go, counted by the leader once its revocation of an expired lease applied (lease-keeper.ts). */
  readonly leaseExpired = new Counter("etcd_debugging_server_lease_expired_total", "The total number of expired leases.");
  // etcd: lease/metrics.go, observed at the lessor's Grant with the TTL granted (after the minimum TTL); 1 s to 3 months.
  readonly leaseTtl = new Histogram("etcd_debugging_lease_ttl_total", "Bucketed histogram of lease TTLs.", exponentialBuckets(1, 2, 24));

  // etcd: rafthttp/metrics.go; the round trip buckets are ExponentialBuckets(0.0001, 2, 16).
  readonly peerSentBytes = new Counter("etcd_network_peer_sent_bytes_total", "The total number of bytes sent to peers.", ["To"]);
  readonly peerReceivedBytes = new Counter("etcd_network_peer_received_bytes_total", "The total number of bytes received from peers.", ["From"]);
  // etcd: v3rpc/metrics.go, counted by its gRPC interceptors: every call that passed grpc-go's
  // decoding, gateway calls included (the gateway is a gRPC client of the member).
  readonly clientRequests = new Counter("etcd_server_client_requests_total", "The total number of client requests per client version.", ["type", "client_api_version"]);
  readonly #clientRequestCounts = new Map<string, () => void>();
  // Counted by the transport where a link comes up / goes down and where messages are lost.
  readonly activePeers = new Gauge("etcd_network_active_peers", "The current number of active peer connections.", ["Local", "Remote"]);
  readonly disconnectedPeers = new Counter("etcd_network_disconnected_peers_total", "The total number of disconnected peers.", ["Local", "Remote"]);
  readonly peerSentFailures = new Counter("etcd_network_peer_sent_failures_total", "The total number of send failures from peers.", ["To"]);
  // etcd: rafthttp counts a pipeline or snapshot body it cannot read or decode, labelled with
  // the connection's remote address (and a message its full receive buffer dropped, by member
  // id: kvctl hands every message to Raft at once and drops none).
  readonly peerReceivedFailures = new Counter("etcd_network_peer_received_failures_total", "The total number of receive failures from peers.", ["From"]);
  readonly peerRoundTrip = new Histogram(
    "etcd_network_peer_round_trip_time_seconds",
    "Round-Trip-Time histogram between peers",
    exponentialBuckets(0.0001, 2, 16),
    ["To"],
  );
  readonly grpcSentBytes = new Counter("etcd_network_client_grpc_sent_bytes_total", "The total number of bytes sent to grpc clients.");
  readonly grpcReceivedBytes = new Counter("etcd_network_client_grpc_received_bytes_total", "The total number of bytes received from grpc clients.");
  /**
   * The cluster versions (major.minor) this process applied, replays included: etcd's gauge
   * keeps a series for each, 0 but for the current one (member-metrics.ts).
   */
  readonly clusterVersionsApplied = new Set<string>();
  /** The v2 HTTP API's requests (the keys handler and the fast lane count them). */
  readonly v2Http = new V2HttpMetrics();

  /** A proposal entered propose(); pair with proposalEnded. */
  proposalStarted(): void {
    this.proposalsPending.inc();
  }

  /** `failed`: it never got a result (timed out, dropped, server stopped) — not a refused request. */
  proposalEnded(failed: boolean): void {
    this.proposalsPending.dec();
    if (failed) this.proposalsFailed.inc();
  }

  walSynced(ms: number): void {
    this.walFsync.observe(ms / 1000);
  }

  backendCommitted(ms: number): void {
    this.backendCommit.observe(ms / 1000);
  }

  /** A v3 range served outside the log (a plain read; txn reads are counted at apply). */
  ranged(): void {
    this.mvccRange.inc();
  }

  /** A txn without writes, served as a read (no log entry): its ranges. */
  readOnlyTxn(req: TxnRequest, res: TxnResponse): void {
    const n = countTxn(req, res);
    this.mvccRange.inc({}, n.ranges);
    if (n.ranges > 1) this.mvccTxn.inc();
  }

  /**
   * One committed entry applied in `ms`. The mvcc counters follow etcd's metricsTxnWrite:
   * each put, delete and range of a write counts once; a txn counts when it ran more than
   * one operation.
   */
  /** @param slowMs --experimental-warning-apply-duration (etcd counts applies slower than it) */
  applied(cmd: Command | undefined, result: ApplyResult | undefined, ms: number, slowMs = SLOW_APPLY_MS): void {
    if (ms > slowMs) this.slowApply.inc();
    if (cmd?.t === "ver") this.clusterVersionsApplied.add(cmd.v.split(".").slice(0, 2).join("."));
    if (cmd?.t !== "v3" || result?.ok !== true) return;
    const op = cmd.op;
    switch (op.k) {
      case "put":
        this.mvccPut.inc();
        this.mvccPutSize.inc({}, this.#putSize(op.r));
        break;
      case "deleteRange":
        this.mvccDelete.inc();
        break;
      case "compact":
        this.indexCompactionPause.observe(Math.trunc(ms));
        break;
      case "txn": {
        const n = countTxn(op.r, v3ResultOf(op, result), (p) => this.#putSize(p));
        this.mvccRange.inc({}, n.ranges);
        this.mvccPut.inc({}, n.puts);
        if (n.putBytes > 0) this.mvccPutSize.inc({}, n.putBytes);
        this.mvccDelete.inc({}, n.deletes);
        if (n.ranges + n.puts + n.deletes > 1) this.mvccTxn.inc();
        break;
      }
      case "leaseGrant":
        this.leaseGranted.inc();
        this.leaseTtl.observe(v3ResultOf(op, result).ttl);
        break;
      case "leaseRevoke":
        this.leaseRevoked.inc();
        break;
      case "leaseRenew":
        this.leaseRenewed.inc();
        break;
      default:
        break;
    }
  }

  #putSize(p: PutRequest): number {
    return p.key.length + (p.ignoreValue ? (this.valueLength?.(p.key) ?? 0) : p.value.length);
  }

  peerSent(to: string, bytes: number): void {
    this.peerSentBytes.inc({ To: to }, bytes);
  }

  peerReceived(from: string, bytes: number): void {
    this.peerReceivedBytes.inc({ From: from }, bytes);
  }

  peerRoundTripMs(to: string, ms: number): void {
    this.peerRoundTrip.observe(ms / 1000, { To: to });
  }

  /**
   * A v3 call as etcd's interceptors count it: `unary` or `stream`, with the caller's
   * client-api-version metadata (clientv3 sends its version, e.g. 3.4) or `unknown`.
   */
  clientRequest(type: "unary" | "stream", apiVersion: string | undefined): void {
    const version = apiVersion ?? "unknown";
    const key = type === "unary" ? version : `\0${version}`;
    let inc = this.#clientRequestCounts.get(key);
    if (inc === undefined) {
      // As etcd: a series per version callers send (the label is theirs to choose).
      inc = this.clientRequests.incrementer({ type, client_api_version: version });
      this.#clientRequestCounts.set(key, inc);
    }
    inc();
  }

  peerActive(local: string, remote: string, active: boolean): void {
    const labels = { Local: local, Remote: remote };
    if (active) this.activePeers.inc(labels);
    else {
      this.activePeers.dec(labels);
      this.disconnectedPeers.inc(labels);
    }
  }

  peerSendFailed(to: string, n: number): void {
    this.peerSentFailures.inc({ To: to }, n);
  }

  heartbeatSendFailed(): void {
    this.heartbeatSendFailures.inc();
  }

  /** Every event-counted family, for the registry. */
  families(): Array<Counter | Gauge | Histogram> {
    return [
      this.proposalsPending,
      this.proposalsFailed,
      this.slowApply,
      this.heartbeatSendFailures,
      this.slowReadIndexes,
      this.readIndexesFailed,
      this.learnerPromoteSuccesses,
      this.learnerPromoteFailures,
      this.healthSuccess,
      this.healthFailures,
      this.walFsync,
      this.backendCommit,
      this.defragDuration,
      this.hashDuration,
      this.hashRevDuration,
      this.defragInflight,
      this.dbCompactionPause,
      this.dbCompactionTotal,
      this.dbCompactionKeys,
      this.indexCompactionPause,
      this.snapSaveTotal,
      this.snapSaveMarshalling,
      this.mvccPut,
      this.mvccRange,
      this.mvccDelete,
      this.mvccTxn,
      this.mvccPutSize,
      this.leaseGranted,
      this.leaseRevoked,
      this.leaseRenewed,
      this.leaseExpired,
      this.leaseTtl,
      this.peerSentBytes,
      this.peerReceivedBytes,
      this.peerRoundTrip,
      this.clientRequests,
      this.activePeers,
      this.disconnectedPeers,
      this.peerSentFailures,
      this.peerReceivedFailures,
      this.grpcSentBytes,
      this.grpcReceivedBytes,
      ...this.v2Http.families(),
      this.watch.events,
    ];
  }
}
