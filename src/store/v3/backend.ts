// Where the key space keeps its records and leases between restarts (etcd's mvcc backend).
// The store stays pure: it tells the backend what each applied request changed and reads
// values back through it; what the backend does with that (an LMDB file, or nothing in
// tests) is not the store's business. Writes arrive in apply order; the backend decides
// when they are committed, together with the raft index they belong to.

import type { StoredRecord, ValueSource } from "./key-index.ts";
import type { LeaseId } from "./types.ts";
import type { AlarmMember } from "./alarms.ts";

/** A lease as the backend keeps it (its attached keys follow from the records). */
export interface LeaseRecord {
  id: LeaseId;
  /** Granted TTL, seconds. */
  ttl: number;
  /** ms since the epoch, from the entry that granted or renewed it. */
  expiry: number;
  /** The last checkpoint's seconds left (see LeaseStatus); absent: none. */
  remainingTtl?: number;
}

export interface MvccBackend extends ValueSource {
  /**
   * A record a request wrote, carrying its value. From this call on, readValue serves the
   * value for it (from memory until the backend's commit, then from disk): the key index
   * keeps only revisions.
   */
  putRecord(rec: StoredRecord): void;
  /**
   * A compaction at `revision`, and the records it dropped as (main, sub) pairs, flat:
   * nothing can read them any more. The compaction point is committed with the entry's
   * other effects (etcd's scheduledCompactRev); the records may go later, in batches of the
   * backend's own (etcd's scheduleCompaction). A backend loaded before they all went says
   * so (`compactionPending`), and the store compacts its index again and calls this with
   * what it finds.
   */
  compacted(revision: number, dropped: readonly number[]): void;
  putLease(l: LeaseRecord): void;
  /**
   * A lease checkpoint changed `l.remainingTtl`. Whether it is written is the backend's
   * choice (--experimental-enable-lease-checkpoint-persist): etcd 3.4 keeps it in memory
   * only, so a restart finds the lease as its grant wrote it.
   */
  checkpointLease(l: LeaseRecord): void;
  removeLease(id: LeaseId): void;
  putAlarm(a: AlarmMember): void;
  removeAlarm(a: AlarmMember): void;
}

/** A record as a restart reads it back: everything but its value (read through the backend). */
export type LoadedRecord = Pick<StoredRecord, "id" | "main" | "sub" | "createRevision" | "version" | "lease" | "tombstone">;

/** What a backend hands back at start: the state of its last commit. */
export interface MvccLoaded {
  /** In (main, sub) order. */
  records: Iterable<LoadedRecord>;
  leases: Iterable<LeaseRecord>;
  alarms: Iterable<AlarmMember>;
  /** The highest revision written; 1 for an empty store. */
  revision: number;
  /** -1 before the first compaction. */
  compactRevision: number;
  /**
   * The records of the compaction at `compactRevision` may not all be deleted yet (a
   * restart during its batches): `records` may hold some it dropped.
   */
  compactionPending: boolean;
}
