// Types shared by the transport's files.

/** The server's structured logger has this shape (src/server/logger.ts Logger). */
export interface TransportLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface TransportLimits {
  /** Normal messages queued per peer; beyond it the oldest are dropped (Raft retransmits). */
  maxQueuedMessages: number;
  /** Snapshots waiting per peer behind the one in flight; older ones are reported failed. */
  maxPendingSnapshots: number;
  /** Target size of one write to a stream (a single larger message still goes alone). */
  maxBatchBytes: number;
  /** Largest frame accepted on /raft. Must exceed the largest single message a peer sends. */
  maxReceiveBatchBytes: number;
  /** Largest /raft/snapshot body accepted (the image is held in memory). */
  maxReceiveSnapshotBytes: number;
  /** A stream whose written data stays unacknowledged this long is cut (dead peer or path). */
  requestTimeoutMs: number;
  /** An idle stream carries an empty frame this often, so a dead path is noticed (requestTimeoutMs). */
  linkHeartbeatMs: number;
  /** A snapshot request fails after this long without socket activity. */
  snapshotTimeoutMs: number;
  /** Back-off after a failed stream: starts here, doubles per failure, capped below. */
  backoffMinMs: number;
  backoffMaxMs: number;
}

export const defaultLimits: TransportLimits = {
  maxQueuedMessages: 4096,
  maxPendingSnapshots: 1,
  maxBatchBytes: 4 * 1024 * 1024,
  maxReceiveBatchBytes: 64 * 1024 * 1024,
  maxReceiveSnapshotBytes: 1024 * 1024 * 1024,
  requestTimeoutMs: 5000,
  linkHeartbeatMs: 1000,
  snapshotTimeoutMs: 30_000,
  backoffMinMs: 50,
  backoffMaxMs: 2000,
};

/** Peer header names (etcd's rafthttp uses X-Server-From and X-Raft-To likewise). */
export const PeerHeader = {
  clusterId: "X-Kv-Cluster-Id",
  from: "X-Server-From",
  to: "X-Raft-To",
  peerUrls: "X-Peer-Urls",
  /** On /raft/snapshot: the body's last N bytes are the v3 database file that goes with the MsgSnap. */
  snapshotDbBytes: "X-Kv-Snapshot-Db-Bytes",
} as const;

/**
 * The v3 database file sent after a MsgSnap (etcd sends its bbolt file the same way): a
 * consistent copy made for this send, streamed from disk, never held in memory.
 */
export interface SnapshotAttachment {
  path: string;
  size: number;
  /** Called once the send is over, whatever its outcome (the copy can go). */
  release(): void;
}

/** Member and cluster IDs on the wire: lower-case hex without leading zeros, as etcd. */
export function idHex(id: number): string {
  return id.toString(16);
}

/** Parses a hex ID header; undefined when absent or not a positive safe integer. */
export function parseIdHex(s: string | undefined): number | undefined {
  if (s === undefined || !/^[0-9a-fA-F]{1,14}$/.test(s)) return undefined;
  const n = parseInt(s, 16);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** How send() hands messages to the kernel (PeerTransport.send, Peer.flush). */
export interface SendOptions {
  /** Before send() returns, instead of when the event loop turns (node:http corks until then). */
  immediate?: boolean;
  /**
   * Only queued now; written once the event loop has run the callbacks it is running (a
   * setImmediate), or earlier by the next send() to the same peer, so order is kept.
   * For messages nobody is waiting on, such as a leader's bare commit update: the leader
   * answers its clients first instead of waking the peers (which, on few cores, take the
   * CPU from it) before the answers leave.
   */
  deferred?: boolean;
  /**
   * With `deferred`: written at the latest this many ms later instead of at the end of the
   * turn, or earlier by the next send() to the same peer, which then carries it in the same
   * write. For a leader's bare commit updates: on a one-connection write the next append
   * follows within a few hundred microseconds and takes the update along, so each follower
   * wakes up once per write instead of twice, and answers once.
   */
  lingerMs?: number;
}
