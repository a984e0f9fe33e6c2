// Raft snapshots of a member: made in the background every --snapshot-count applied
// entries, recorded in the WAL by the run loop, installed when the leader sends one, and
// made afresh for a member added after the last one.
//
// Invariants:
// - At most one snapshot is being made; installing the leader's, or stopping, abandons it
//   and waits for it to let go of the state and the snapshot directory.
// - The snapshot is the state at one applied index: the v2 store is copied on write and
//   written in slices (a 300k-key snapshot in one piece took 1.5 s, long enough for the
//   followers to start an election), the small parts are copied at once, the v3 key space
//   is its database file (flushed before the snapshot is recorded).
// - WAL calls never overlap: the file is saved while Raft goes on, and the run loop records
//   it between two Readys (record()).
// - After recording, --experimental-snapshot-catchup-entries (5000) entries stay in memory
//   for slow followers (one further behind is sent the snapshot), and
//   WAL segments and snapshot files beyond --max-wals / --max-snapshots are purged.
import { MessageType, type ConfState, type MemoryStorage, type Message, type Snapshot } from "../raft/index.ts";
import type { Snapshotter, Wal } from "../wal/index.ts";
import { encodeConfState } from "./bootstrap.ts";
import type { StateStorage } from "./state-storage.ts";
import type { Logger } from "./logger.ts";
import { collectGarbageWhenIdle } from "./gc.ts";

/** A snapshot made in the background whose file is saved (see record()). */
interface MadeSnapshot {
  index: number;
  term: number;
  data: Buffer;
  confState: ConfState;
  startedAt: number;
}

/** What the snapshot flow needs of its member. */
export interface SnapshotHost {
  readonly log: Logger;
  readonly snapshotCount: number;
  /** Entries kept after a snapshot for followers that lag (etcd: 5000). */
  readonly catchupEntries: number;
  readonly maxWals: number;
  readonly maxSnapshots: number;
  state(): StateStorage;
  wal(): Wal;
  snapshotter(): Snapshotter;
  storage(): MemoryStorage;
  appliedIndex(): number;
  confState(): ConfState;
  /** Raft: a snapshot message was not sent (it retries). */
  reportSnapshotFailed(to: number): void;
  /** The leader's snapshot is the member's state now, at its index. */
  installed(index: number, confState: ConfState): void;
  kick(): void;
  fatal(err: unknown): void;
}

export class SnapshotFlow {
  readonly #host: SnapshotHost;
  #index: number;
  /** The snapshot being made in the background; at most one. `done` settles when it lets go of the state. */
  #job: { cancelled: boolean; done: Promise<void> } | undefined;
  /** A snapshot whose file is saved, for the run loop to record in the WAL. */
  #made: MadeSnapshot | undefined;

  /** @param index the index of the member's last snapshot (its applied index at start). */
  constructor(host: SnapshotHost, index: number) {
    this.#host = host;
    this.#index = index;
  }

  /** The index of the last snapshot recorded or installed. */
  get index(): number {
    return this.#index;
  }

  /** A made snapshot waits to be recorded (the run loop calls record() between Readys). */
  get pending(): boolean {
    return this.#made !== undefined;
  }

  /** After an apply: starts a snapshot once --snapshot-count entries were applied since the last. */
  maybeStart(): void {
    if (this.#job === undefined && this.#host.appliedIndex() - this.#index >= this.#host.snapshotCount) this.start();
  }

  /** Takes a snapshot of the state at the applied index without stopping the member. */
  start(): void {
    const host = this.#host;
    const index = host.appliedIndex();
    const job = { cancelled: false, done: Promise.resolve() };
    this.#job = job;
    const startedAt = performance.now();
    const term = host.storage().term(index);
    const cs = host.confState();
    const confState = { voters: [...cs.voters], learners: [...cs.learners] };
    const end = (): void => {
      if (this.#job === job) this.#job = undefined;
    };
    job.done = host
      .state()
      .snapshotData(() => job.cancelled)
      .then(async (data) => {
        if (data === undefined || job.cancelled) return end();
        await host.snapshotter().save({ index, term, data, meta: encodeConfState(confState) });
        if (job.cancelled) return end();
        this.#made = { index, term, data, confState, startedAt };
        host.kick();
      })
      .catch((err: unknown) => {
        // Abandoned (stopping: the database may be closing under it): nothing to save.
        if (job.cancelled) {
          host.log.debug("an abandoned snapshot failed", { index, error: String(err) });
          return end();
        }
        // As etcd: a snapshot that cannot be saved means the disk is failing.
        host.fatal(err);
      });
  }

  /** Makes the saved snapshot Raft's, records it in the WAL and drops what it replaces. */
  async record(): Promise<void> {
    const s = this.#made;
    this.#made = undefined;
    this.#job = undefined;
    // A snapshot installed from the leader meanwhile is newer: this one is not needed.
    if (s === undefined || s.index <= this.#index) return;
    const host = this.#host;
    const storage = host.storage();
    storage.createSnapshot(s.index, s.confState, s.data);
    await host.wal().saveSnapshotRef({ index: s.index, term: s.term });
    this.#index = s.index;
    const compactTo = s.index - host.catchupEntries;
    if (compactTo > storage.firstIndex()) {
      storage.compact(compactTo);
      // The entries compacted away are garbage now: collected once the member is idle (gc.ts).
      collectGarbageWhenIdle((ms) => host.log.debug("collected the compacted log entries", { ms: Math.round(ms) }));
    }
    // --max-wals as etcd's purge: old segments beyond the count go, once no snapshot needs them.
    await host.wal().releaseTo(s.index, { maxFiles: host.maxWals });
    if (host.maxSnapshots > 0) await host.snapshotter().purge(host.maxSnapshots);
    host.log.info("saved snapshot", { index: s.index, term: s.term, bytes: s.data.length, ms: Math.round(performance.now() - s.startedAt) });
  }

  /** Installs the leader's snapshot: it replaces the whole state machine (followers only). */
  async install(snap: Snapshot): Promise<void> {
    this.cancel();
    // The abandoned job may still be reading the state or writing its file into the snapshot
    // directory: the install replaces the one and writes into the other, so it waits for the
    // job to let go (a slice of the store, the database's flush or one file's save at most).
    await this.settled();
    const host = this.#host;
    const ref = { index: snap.metadata.index, term: snap.metadata.term };
    await host.snapshotter().save({ ...ref, data: snap.data, meta: encodeConfState(snap.metadata.confState) });
    await host.wal().saveSnapshotRef(ref);
    host.storage().applySnapshot(snap);
    await host.state().install(ref.index, snap.data);
    this.#index = ref.index;
    host.installed(ref.index, snap.metadata.confState);
    host.log.info("installed snapshot from the leader", ref);
  }

  /** Abandons the snapshot being made (stopping, or the leader's installed). */
  cancel(): void {
    if (this.#job !== undefined) this.#job.cancelled = true;
    this.#made = undefined;
  }

  /**
   * Resolves once no snapshot is being made: a stopping member waits for it before it
   * closes the database and the snapshot directory the job reads and writes.
   */
  async settled(): Promise<void> {
    await this.#job?.done;
  }

  /**
   * A snapshot Raft picked from storage was made before `to` joined (a member added after
   * this member's last snapshot, e.g. after --force-new-cluster): `to` would ignore it, as
   * it is not in its configuration, and ask again forever. etcd sends a snapshot made at
   * that moment; here it is held back, reported failed (Raft retries), and a new snapshot,
   * which holds the member, is made for the retry.
   */
  withoutStale(msgs: Message[]): Message[] {
    let stale = false;
    const out = msgs.filter((m) => {
      if (m.type !== MessageType.MsgSnap || m.snapshot === undefined) return true;
      const cs = m.snapshot.metadata.confState;
      if (cs.voters.includes(m.to) || cs.learners.includes(m.to)) return true;
      stale = true;
      this.#host.reportSnapshotFailed(m.to);
      return false;
    });
    if (stale && this.#job === undefined && this.#made === undefined) {
      this.#host.log.info("making a snapshot for a member added after the last one", { snapshotIndex: this.#index, appliedIndex: this.#host.appliedIndex() });
      this.start();
    }
    return stale ? out : msgs;
  }
}
