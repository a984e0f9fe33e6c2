// The replicated state machine's storage: the v2 store, v2 and v3 auth, the membership,
// and the v3 key space with its database (src/backend/). The raft loop (kv-server.ts)
// applies entries to it and asks it for what snapshots, followers and backups need; this
// module decides how each part is kept, imaged, replaced and maintained:
//
// - raft snapshots hold the image of everything but the v3 key space (written a slice at
//   a time, snapshot-data.ts); the key space is its database file, flushed before a
//   snapshot is recorded and sent to a follower beside the snapshot;
// - installing a leader's snapshot replaces the parts in place (open watches stay
//   registered) and swaps in the database that came with it;
// - entries at or below `v3Floor` have their v3 effects in the database already: a replay
//   applies only the rest (etcd's consistent index);
// - a defragmentation or the start of a backup pauses applies (applyGate) while the
//   database must not change under it.
import { createHash, randomBytes } from "node:crypto";
import { renameSync } from "node:fs";
import { rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { MvccDb, type MvccDbOptions } from "../backend/index.ts";
import { V2AuthState, V3AuthState } from "../auth/index.ts";
import { IMAGE_VERSION, LINES_VERSION, type V2Store } from "../store/v2/index.ts";
import type { V3KeySpace } from "../store/v3/index.ts";
import type { SnapshotAttachment } from "../transport/index.ts";
import type { StateMachine } from "./apply.ts";
import { writeEtcdBoltBackup } from "./backup/etcd-bolt-writer.ts";
import type { BackupHeader } from "./backup/format.ts";
import { decodeSnapshotImage, openKeySpace, receivedDbPath, restoreV3Auth, type OpenedMember } from "./bootstrap.ts";
import type { Logger } from "./logger.ts";
import { Membership } from "./membership.ts";
import { snapshotPieces, writeSnapshotData, type SnapshotHeader, type SnapshotState } from "./snapshot-data.ts";

export interface StateStorageOptions {
  /** The v3 database (a snapshot install swaps in the leader's file there). */
  db: MvccDbOptions;
  dataDir: string;
  /** --quota-backend-bytes, effective (Infinity: no quota). */
  quotaBackendBytes: number;
  logger: Logger;
}

export class StateStorage implements StateMachine {
  store: V2Store;
  /** v2 access control (restored in place when a snapshot is installed). */
  auth: V2AuthState;
  /** Replaced when a snapshot is installed: read it through this field. */
  v3: V3KeySpace;
  v3auth: V3AuthState;
  membership: Membership;
  readonly #opts: StateStorageOptions;
  #db: MvccDb;
  #v3Floor: number;
  /** A database file received with a snapshot from the leader, waiting for Raft to install it. */
  #receivedDb: { index: number; path: string } | undefined;
  #applyGate: Promise<void> | undefined;

  constructor(m: Pick<OpenedMember, "store" | "auth" | "v3" | "v3db" | "v3auth" | "membership">, opts: StateStorageOptions) {
    this.store = m.store;
    this.auth = m.auth;
    this.v3 = m.v3;
    this.#db = m.v3db;
    this.#v3Floor = m.v3db.consistentIndex;
    this.v3auth = m.v3auth;
    this.membership = m.membership;
    this.#opts = opts;
  }

  /** Entries up to this index have their v3 effects in the database already. */
  get v3Floor(): number {
    return this.#v3Floor;
  }

  /** While set, committed entries must wait before they are applied. */
  get applyGate(): Promise<void> | undefined {
    return this.#applyGate;
  }

  /**
   * The end of a batch of applied entries: their v3 writes commit with the index they
   * reach. Resolves when LMDB committed them; undefined when nothing was written.
   */
  applied(index: number): Promise<void> | undefined {
    return this.#db.commit(index);
  }

  /** A digest of the whole state: members that applied the same log prefix report the same. */
  hash(): string {
    const h = createHash("sha256");
    // The v2 store's version-1 text, as it always was (the value must not change), in pieces.
    for (const piece of this.store.imagePieces(IMAGE_VERSION)) h.update(piece);
    h.update(JSON.stringify(this.auth.save())).update(JSON.stringify(this.membership.toJSON()));
    h.update(this.v3.hash()).update(JSON.stringify(this.v3auth.toImage()));
    return h.digest("hex");
  }

  // ---- raft snapshots -----------------------------------------------------------------

  /**
   * The snapshot data of the state now, written a slice at a time while the state goes
   * on changing; undefined when `cancelled()` turned true meanwhile. Resolves only once
   * the database holds every write applied so far (etcd's ForceCommit), so the WAL
   * entries the snapshot replaces are no longer needed for the key space either.
   */
  async snapshotData(cancelled: () => boolean): Promise<Buffer | undefined> {
    const store = this.store.beginImage(LINES_VERSION);
    const rest = this.#imageRest();
    const flushed = this.#db.flushed();
    const data = await writeSnapshotData({ store, rest, cancelled: () => cancelled() || this.store.abandoned(store) });
    await flushed;
    return data;
  }

  /**
   * A database file came with the leader's snapshot at `index`: kept until Raft installs
   * it, under the name etcd gives it (`<index>.snap.db`), so a restart after a crash in
   * the middle of the install finds it (see adoptReceivedDb).
   */
  receivedDb(index: number, path: string): void {
    const old = this.#receivedDb;
    const named = receivedDbPath(this.#opts.dataDir, index);
    try {
      renameSync(path, named);
    } catch (err) {
      this.#opts.logger.warn("could not keep the database received from the leader", { path, error: String(err) });
      void rm(path, { force: true });
      return;
    }
    if (old !== undefined && old.path !== named) void rm(old.path, { force: true });
    this.#receivedDb = { index, path: named };
  }

  /** The leader's snapshot at `index`: every part replaced in place, the database swapped in. */
  async install(index: number, data: Uint8Array): Promise<void> {
    const image = decodeSnapshotImage(data);
    this.store.recovery(image.store);
    this.auth.recovery(image.auth ?? new V2AuthState().save());
    await this.#installDb(index, image);
    // Tokens end with the state they were issued under; the lifetime (--auth-token-ttl) stays.
    this.v3auth = restoreV3Auth(image, { tokenTtlMs: this.v3auth.tokens.ttlMs });
    this.membership = Membership.fromJSON(image.membership);
  }

  /**
   * The database that came with the snapshot takes the key space's place. It is opened
   * and its key index built before the member's file is closed, so reads, hashes and
   * backups never meet a closed database (they go to the old one until the swap, which
   * no await separates from the opening); then it takes the file's name.
   */
  async #installDb(index: number, image: SnapshotState): Promise<void> {
    const received = this.#receivedDb;
    this.#receivedDb = undefined;
    let from: string;
    if (received !== undefined && received.index === index) {
      from = received.path;
    } else {
      // A leader that sent no database: an image from before the database holds the key space.
      if (received !== undefined) await rm(received.path, { force: true });
      if (image.v3 === undefined) throw new Error(`snapshot ${index} from the leader came without its v3 database`);
      from = this.#tempPath("image", "db");
    }
    const db = MvccDb.open({ ...this.#opts.db, path: from });
    const v3 = openKeySpace(db, image, index);
    const old = this.#db;
    this.#db = db;
    this.v3 = v3;
    this.#v3Floor = db.consistentIndex;
    await old.close();
    await db.moveTo(this.#opts.db.path);
    this.#opts.logger.info("installed the v3 database from the leader", { index, consistentIndex: this.#v3Floor, revision: this.v3.revision });
  }

  /**
   * A consistent copy of the database for a follower's snapshot (etcd streams its bbolt
   * file): made from one read transaction after the writes so far were committed, so its
   * consistent index is at least the snapshot's (a snapshot is made of applied state).
   */
  async snapshotDbCopy(): Promise<SnapshotAttachment> {
    const path = this.#tempPath("send", "db");
    await this.#db.copyTo(path, { compact: false });
    const { size } = await stat(path);
    return { path, size, release: () => void rm(path, { force: true }) };
  }

  /** Where a database file received with a snapshot is written. */
  receivePath(): string {
    return this.#tempPath("recv", "db");
  }

  // ---- maintenance ---------------------------------------------------------------------

  /** The database file's size and the part of it in use (etcd's dbSize, dbSizeInUse). */
  v3DbSizes(): { size: number; inUse: number } {
    return this.#db.sizes();
  }

  /** Resolves once the database deleted the records of every compaction up to `revision` (they go in batches after the apply). */
  compactionFinished(revision: number): Promise<void> {
    return this.#db.compactionFinished(revision);
  }

  /**
   * etcd's backend quota: would a write of `cost` bytes keep the database under
   * --quota-backend-bytes? Read on every v3 write and again when it applies (as etcd's
   * quotaApplierV3), so it uses the size as of the last commit plus what was written since.
   */
  quotaAvailable(cost: number): boolean {
    return cost === 0 || this.#db.quotaSize + cost < this.#opts.quotaBackendBytes;
  }

  /**
   * etcd's Defragment: the database rewritten without its free pages. Entries are not
   * applied meanwhile (their writes would go to the file being replaced), as etcd blocks
   * its backend; reads go on.
   */
  async defragment(resume: () => void): Promise<void> {
    const t0 = performance.now();
    const before = this.#db.sizes().size;
    await this.#appliesPaused(() => this.#db.defragment(), resume);
    this.#opts.logger.info("defragmented the v3 database", { before, after: this.#db.sizes().size, ms: Math.round(performance.now() - t0) });
  }

  /**
   * A backup of the whole state at applied index `at.index` (kvctl v3 snapshot save),
   * written to a file in the data dir: applies pause only until the database's last commit
   * is on disk and a read transaction holds it; the file is written from that transaction
   * while the member goes on. release() removes the file.
   */
  async backup(at: () => { index: number; term: number }, resume: () => void): Promise<{ path: string; size: number; release(): void }> {
    const { reader, parts } = await this.#appliesPaused(async () => {
      await this.#db.flushed();
      const reader = this.#db.reader();
      const header: BackupHeader = {
        format: "kvctl-snapshot/1",
        ...at(),
        revision: this.v3.revision,
        compactRevision: this.v3.compactMainRevision,
        totalKeys: this.v3.keyCount,
        time: Date.now(),
      };
      // Pieces of the raft snapshot's bytes, never one string of the whole store.
      const image = [...snapshotPieces(this.store, this.#imageRest())];
      return { reader, parts: { header, image, records: reader.records(), leases: reader.leases(), alarms: reader.alarms() } };
    }, resume);
    const path = this.#tempPath("backup", "tmp");
    try {
      const size = await writeEtcdBoltBackup(path, parts);
      return { path, size, release: () => void rm(path, { force: true }) };
    } catch (err) {
      await rm(path, { force: true });
      throw err;
    } finally {
      reader.done();
    }
  }

  async close(): Promise<void> {
    await this.#db.close();
    if (this.#receivedDb !== undefined) await rm(this.#receivedDb.path, { force: true });
  }

  // ---- internals -------------------------------------------------------------------------

  /** Runs `fn` while committed entries wait (one such pause at a time); `resume` restarts the loop. */
  async #appliesPaused<T>(fn: () => Promise<T>, resume: () => void): Promise<T> {
    while (this.#applyGate !== undefined) await this.#applyGate;
    let open!: () => void;
    this.#applyGate = new Promise<void>((resolve) => (open = resolve));
    try {
      return await fn();
    } finally {
      this.#applyGate = undefined;
      open();
      resume();
    }
  }

  /**
   * The small parts of an image, detached from the live state (a background snapshot
   * encodes them later): the membership and v2 auth images are copied, the v3 auth image
   * is built fresh.
   */
  #imageRest(): SnapshotHeader {
    const { membership, auth } = structuredClone({ membership: this.membership.toJSON(), auth: this.auth.save() });
    return { membership, auth, v3auth: this.v3auth.toImage() };
  }

  #tempPath(kind: string, ext: string): string {
    return join(this.#opts.dataDir, "member", "snap", `${kind}-${randomBytes(6).toString("hex")}.${ext}`);
  }
}
