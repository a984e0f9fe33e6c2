// `kvctl v3 snapshot restore`: a new member's data dir from a backup file, as etcdctl's
// restore makes one from an etcd snapshot. The state is the backup's (v2 store, v2 and v3
// auth, the v3 key space with its leases and alarms); the membership is the new cluster's,
// from --initial-cluster and --initial-cluster-token, so every member restored from the
// same file with the same flags starts as one cluster with the same IDs. As in etcd, the
// raft log starts at index n (the number of members) with term 1: a raft snapshot at n
// holds the state, and the v3 database's consistent index is n.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { MvccDb } from "../../backend/index.ts";
import { Snapshotter, Wal } from "../../wal/index.ts";
import type { AlarmMember, LeaseRecord } from "../../store/v3/index.ts";
import { encodeConfState, v3DbPath, type WalMetadata } from "../bootstrap.ts";
import { withMembership } from "../snapshot-data.ts";
import { Membership } from "../membership.ts";
import { BackupFormatError, SECTION, type BackupHeader } from "./format.ts";
import { checkBackup, parseHeader, readSections, recordsOf } from "./reader.ts";

export interface RestoreOptions {
  file: string;
  name: string;
  dataDir: string;
  initialCluster: ReadonlyMap<string, string[]>;
  initialClusterToken: string;
  /** Restore a file without (or with a wrong) sha256 trailer. */
  skipHashCheck: boolean;
  /** --wal-dir: the WAL's own directory (default <data-dir>/member/wal), as `serve --wal-dir`. */
  walDir?: string;
}

export interface RestoreResult {
  memberId: number;
  clusterId: number;
  index: number;
  header: BackupHeader;
}

/** What a restore needs besides the key records, known once they were read. */
export interface RestoreRest {
  header: BackupHeader;
  /** The raft snapshot's bytes (snapshot-data.ts), in pieces. */
  image: Buffer[];
  leases: LeaseRecord[];
  alarms: AlarmMember[];
}

/** The checks made before anything is read or written: the data dir is new, the name a member of the new cluster. */
function newMember(o: RestoreOptions): { membership: Membership; me: { id: number } } {
  if (existsSync(o.dataDir)) throw new BackupFormatError(`data-dir "${o.dataDir}" exists`);
  const membership = Membership.bootstrap(o.initialCluster, o.initialClusterToken);
  const me = membership.list().find((m) => m.name === o.name);
  if (me === undefined) throw new BackupFormatError(`couldn't find local name "${o.name}" in the initial cluster configuration`);
  return { membership, me };
}

/** Restores a file of kvctl's own format (format.ts). */
export async function restoreBackup(o: RestoreOptions): Promise<RestoreResult> {
  newMember(o);
  const { bodyBytes } = await checkBackup(o.file, { skipHashCheck: o.skipHashCheck });
  let header: BackupHeader | undefined;
  const image: Buffer[] = [];
  let leases: LeaseRecord[] = [];
  let alarms: AlarmMember[] = [];
  // The records go into the database as they are read: one section in memory at a time.
  const sections = readSections(o.file, bodyBytes);
  const records = async function* (): AsyncGenerator<[Buffer, Buffer]> {
    for await (const s of sections) {
      if (s.type === SECTION.HEADER) header = parseHeader(s.payload);
      else if (s.type === SECTION.IMAGE) image.push(s.payload);
      else if (s.type === SECTION.RECORDS) yield* recordsOf(s.payload);
      else if (s.type === SECTION.LEASES) leases = (JSON.parse(s.payload.toString()) as { id: string; ttl: number; expiry: number; remainingTtl?: number }[]).map(leaseOf);
      else if (s.type === SECTION.ALARMS) alarms = JSON.parse(s.payload.toString()) as AlarmMember[];
    }
  };
  return restoreState(o, records(), () => {
    if (header === undefined) throw new BackupFormatError("snapshot file has no header");
    return { header, image, leases, alarms };
  });
}

/**
 * Makes the data dir from key records (revision key, encoded record; in revision order)
 * and the rest, which `rest` gives once the records were read (a file may carry it after them).
 */
export async function restoreState(
  o: RestoreOptions,
  records: AsyncIterable<[Buffer, Buffer]> | Iterable<[Buffer, Buffer]>,
  rest: () => RestoreRest,
): Promise<RestoreResult> {
  const { membership, me } = newMember(o);
  const memberDir = join(o.dataDir, "member");
  await mkdir(join(memberDir, "snap"), { recursive: true, mode: 0o700 });
  const index = membership.ids().length;
  let r: RestoreRest;
  const db = MvccDb.open({ path: v3DbPath(o.dataDir) });
  try {
    let n = 0;
    for await (const [k, v] of records) {
      db.importRecord(k, v);
      if (++n % 10_000 === 0) await db.committedAll();
    }
    r = rest();
    db.importRest({ leases: r.leases, alarms: r.alarms, revision: r.header.revision, compactRevision: r.header.compactRevision, index });
    await db.flushed();
  } finally {
    await db.close();
  }
  // The backup's raft snapshot with the new cluster's membership: in format 2 only its
  // header line changes (no string of the whole state, as a member reads it).
  const data = withMembership(Buffer.concat(r.image), membership.toJSON());
  const confState = { voters: membership.ids(), learners: [] };
  await new Snapshotter(join(memberDir, "snap")).save({ index, term: 1, data, meta: encodeConfState(confState) });
  const meta: WalMetadata = { memberId: me.id, clusterId: membership.clusterId, members: membership.list() };
  const wal = await Wal.create(o.walDir !== undefined && o.walDir !== "" ? o.walDir : join(memberDir, "wal"), Buffer.from(JSON.stringify(meta)));
  try {
    await wal.saveSnapshotRef({ index, term: 1 });
    await wal.save({ term: 1, vote: 0, commit: index }, []);
  } finally {
    await wal.close();
  }
  return { memberId: me.id, clusterId: membership.clusterId, index, header: r.header };
}

function leaseOf(l: { id: string; ttl: number; expiry: number; remainingTtl?: number }): LeaseRecord {
  const r: LeaseRecord = { id: BigInt(l.id), ttl: l.ttl, expiry: l.expiry };
  if (typeof l.remainingTtl === "number" && l.remainingTtl > 0) r.remainingTtl = l.remainingTtl;
  return r;
}
