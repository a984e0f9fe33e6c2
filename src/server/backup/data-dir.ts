// `kvctl backup` (etcdctl v2's backup): a copy of a stopped member's data dir from which
// `kvctl serve --force-new-cluster` starts a fresh one-member cluster with the data. As
// etcdctl's handleBackup: the newest snapshot and the WAL after it are copied under a NEW
// member id and cluster id (etcd's idutil generator seeded with the clock), conf changes
// and member attribute publishes leave the log, and so do the v3 entries unless --with-v3,
// which also copies the v3 database. Unlike etcd 3.4 (which removes them and renumbers the
// entries after them, so its WAL no longer matches the database's consistent index), a
// left-out entry becomes an empty normal entry at the same index: the v3 database copied
// with --with-v3 stays in step with the log, and Raft's leader no-op is such an entry.
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { Snapshotter, Wal, type HardState, type SnapshotFile, type WalEntry } from "../../wal/index.ts";
import { v3DbPath, type SnapshotImage, type WalMetadata } from "../bootstrap.ts";
import { SNAPSHOT_MAGIC } from "../snapshot-data.ts";
import { decodeCommand } from "../request.ts";

/** Raft's entry types as the WAL stores them (src/raft: EntryNormal 0, EntryConfChange 1). */
const ENTRY_NORMAL = 0;
const ENTRY_CONF_CHANGE = 1;

/** A backup that cannot be made; the message is etcdctl's (its log.Fatal text). */
export class DataDirBackupError extends Error {
  override readonly name = "DataDirBackupError";
}

export interface DataDirBackupOptions {
  dataDir: string;
  backupDir: string;
  /** --wal-dir: the source's WAL directory (default <data-dir>/member/wal). */
  walDir?: string;
  /** --backup-wal-dir: where the backup's WAL goes (default <backup-dir>/member/wal). */
  backupWalDir?: string;
  withV3: boolean;
  /** The ids' seed (etcd: time.Now()). */
  now?: number;
  /** etcdctl's log lines ("ignoring EntryConfChange raft entry", ...). */
  log(line: string): void;
}

export interface DataDirBackupResult {
  memberId: number;
  clusterId: number;
  snapshotIndex: number;
  entries: number;
  commit: number;
  ignored: IgnoredCounts;
}

export interface IgnoredCounts {
  confChanges: number;
  memberAttributes: number;
  v3: number;
}

/**
 * etcd's idutil.NewGenerator(0, now): member bits 0, then the low 40 bits of the clock in
 * ms, then an 8-bit counter; Next() increments the counter first. The backup takes the
 * first id for the member and the second for the cluster, as etcdctl does.
 */
export function backupIds(nowMs: number): { memberId: number; clusterId: number } {
  const base = (nowMs % 2 ** 40) * 2 ** 8;
  return { memberId: base + 1, clusterId: base + 2 };
}

/**
 * The backup's log: the same indexes and terms, with conf changes, member attribute
 * publishes and (without `withV3`) v3 commands replaced by empty normal entries. Pure.
 */
export function rewriteEntries(entries: readonly WalEntry[], opts: { withV3: boolean; log(line: string): void }): { entries: WalEntry[]; ignored: IgnoredCounts } {
  const ignored: IgnoredCounts = { confChanges: 0, memberAttributes: 0, v3: 0 };
  const out: WalEntry[] = [];
  const blank = (e: WalEntry): WalEntry => ({ term: e.term, index: e.index, type: ENTRY_NORMAL, data: new Uint8Array(0) });
  for (const e of entries) {
    if (e.type === ENTRY_CONF_CHANGE) {
      opts.log("ignoring EntryConfChange raft entry");
      ignored.confChanges++;
      out.push(blank(e));
      continue;
    }
    if (e.data.length === 0) {
      out.push(e);
      continue;
    }
    const c = decodeCommand(e.data);
    if (c.t === "attr") {
      opts.log(`ignoring member attribute update on /0/members/${c.a.id.toString(16)}/attributes`);
      ignored.memberAttributes++;
      out.push(blank(e));
    } else if (c.t === "v3" && !opts.withV3) {
      opts.log("ignoring v3 raft entry");
      ignored.v3++;
      out.push(blank(e));
    } else {
      out.push(e);
    }
  }
  return { entries: out, ignored };
}

/**
 * The snapshot's bytes with the backup's cluster id (the members stay: --force-new-cluster
 * removes them). Without `withV3` the v3 auth state goes too, as etcd's lives in the
 * database a backup without --with-v3 leaves behind. Format 2 changes only its header line.
 */
export function backupSnapshotData(data: Buffer, clusterId: number, withV3: boolean): Buffer {
  const edit = (h: Partial<SnapshotImage>): void => {
    if (h.membership === undefined) throw new DataDirBackupError("snapshot has no membership");
    h.membership = { ...h.membership, clusterId };
    if (!withV3) {
      delete h.v3auth;
      delete h.v3;
    }
  };
  if (data.subarray(0, SNAPSHOT_MAGIC.length).equals(SNAPSHOT_MAGIC)) {
    const end = data.indexOf(0x0a, SNAPSHOT_MAGIC.length);
    if (end === -1) throw new DataDirBackupError("snapshot has no header line");
    const header = JSON.parse(data.toString("utf8", SNAPSHOT_MAGIC.length, end)) as Partial<SnapshotImage>;
    edit(header);
    return Buffer.concat([SNAPSHOT_MAGIC, Buffer.from(JSON.stringify(header) + "\n"), data.subarray(end + 1)]);
  }
  const image = JSON.parse(data.toString("utf8")) as Partial<SnapshotImage>;
  edit(image);
  return Buffer.from(JSON.stringify(image));
}

/**
 * The WAL read from a copy of its segments: opening a log repairs a torn tail and removes
 * left-over temp files, and the source must stay as it is (etcd reads it with
 * OpenForRead), even while a member still writes it.
 */
async function readWalCopy(srcWal: string, backupDir: string, ref: { index: number; term: number }): Promise<{ hardState: HardState; entries: WalEntry[] }> {
  const scratch = await mkdtemp(join(backupDir === "" ? "." : backupDir, ".kvctl-backup-wal-"));
  try {
    const copy = join(scratch, "wal");
    await mkdir(copy);
    for (const name of await readdir(srcWal)) if (name.endsWith(".wal")) await copyFile(join(srcWal, name), join(copy, name));
    const opened = await Wal.open(copy, { snapshot: ref });
    await opened.wal.close();
    return { hardState: opened.hardState, entries: opened.entries };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Go's %q of a []string: ["a" "b"]. */
function goQuoted(names: readonly string[]): string {
  return `[${names.map((n) => JSON.stringify(n)).join(" ")}]`;
}

function enoent(path: string): DataDirBackupError {
  return new DataDirBackupError(`open ${path}: no such file or directory`);
}

export async function backupDataDir(o: DataDirBackupOptions): Promise<DataDirBackupResult> {
  const srcSnap = join(o.dataDir, "member", "snap");
  const destSnap = join(o.backupDir, "member", "snap");
  const srcWal = o.walDir !== undefined && o.walDir !== "" ? o.walDir : join(o.dataDir, "member", "wal");
  const destWal = o.backupWalDir !== undefined && o.backupWalDir !== "" ? o.backupWalDir : join(o.backupDir, "member", "wal");

  // etcd's fileutil.CreateDirAll: made if missing, refused unless empty.
  await mkdir(destSnap, { recursive: true, mode: 0o700 });
  const present = (await readdir(destSnap)).sort();
  if (present.length > 0) throw new DataDirBackupError(`failed creating backup snapshot dir ${destSnap}: expected "${destSnap}" to be empty, got ${goQuoted(present)}`);

  const { memberId, clusterId } = backupIds(o.now ?? Date.now());
  if (!existsSync(srcSnap)) throw enoent(srcSnap);
  const snap: SnapshotFile | null = await new Snapshotter(srcSnap).loadNewest();
  const ref = snap === null ? { index: 0, term: 0 } : { index: snap.index, term: snap.term };
  if (snap !== null) await new Snapshotter(destSnap).save({ index: snap.index, term: snap.term, meta: snap.meta, data: backupSnapshotData(Buffer.from(snap.data), clusterId, o.withV3) });

  if (!existsSync(srcWal)) throw enoent(srcWal);
  // etcd's wal.ErrFileNotFound: the directory holds no segment.
  if (!Wal.exists(srcWal)) throw new DataDirBackupError("wal: file not found");
  const opened = await readWalCopy(srcWal, o.backupDir, ref);
  const { entries, ignored } = rewriteEntries(opened.entries, { withV3: o.withV3, log: o.log });

  if (o.withV3) {
    const srcDb = v3DbPath(o.dataDir);
    if (!existsSync(srcDb)) throw enoent(srcDb);
    // lmdb is loaded only here: a backup without the v3 data never opens it.
    const { MvccDb } = await import("../../backend/index.ts");
    const db = MvccDb.open({ path: srcDb });
    try {
      await db.copyTo(join(destSnap, "db"), { compact: false });
    } finally {
      await db.close();
    }
  }

  // The members are left out: with no snapshot, --force-new-cluster starts from these and
  // adds the new member alone (a snapshot's members are removed by conf changes).
  const meta: WalMetadata = { memberId, clusterId, members: [] };
  const wal = await Wal.create(destWal, Buffer.from(JSON.stringify(meta)));
  try {
    if (ref.index > 0) await wal.saveSnapshotRef(ref);
    await wal.save(opened.hardState, entries);
  } finally {
    await wal.close();
  }
  return { memberId, clusterId, snapshotIndex: ref.index, entries: entries.length, commit: opened.hardState.commit, ignored };
}
