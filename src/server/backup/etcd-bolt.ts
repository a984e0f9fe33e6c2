// etcd 3.4's schema read from a bbolt file (bbolt.ts): what `etcdctl snapshot status`
// prints for it, and the v3 state it holds, for `kvctl v3 snapshot restore` of an etcd
// snapshot. Buckets (etcd's mvcc/backend, lease/lessor.go, auth/store.go):
//   key        8-byte main revision BE, '_', 8-byte sub revision BE, then 't' if the
//              revision is a deletion (a tombstone); value an mvccpb.KeyValue
//   meta       consistent_index (u64 BE), scheduledCompactRev and finishedCompactRev
//              (17-byte revision keys)
//   lease      8-byte lease id BE → leasepb.Lease {ID, TTL, RemainingTTL}
//   auth       authEnabled (one byte, 1: on), authRevision (u64 BE)
//   authUsers  name → authpb.User;  authRoles  name → authpb.Role
//   members, members_removed, alarm, cluster: membership, not restored (a restore makes
//   a new cluster, as etcdctl's does)
import { fromBinary } from "@bufbuild/protobuf";
import { crc32c } from "../../wal/crc32c.ts";
import { RoleSchema, UserSchema, type Role, type User } from "../grpc/gen/etcd/auth/authpb/auth_pb.ts";
import { KeyValueSchema, type KeyValue } from "../grpc/gen/etcd/mvcc/mvccpb/kv_pb.ts";
import { BoltDb, BoltFormatError, type BoltEntry, type BoltSource } from "./bbolt.ts";

/** etcdctl snapshot status's fields. */
export interface EtcdSnapshotStatus {
  hash: number;
  revision: number;
  totalKey: number;
  totalSize: number;
}

/**
 * clientv3/snapshot's Status: a CRC-32C over every bucket's name and each of its keys and
 * values in order; the revision of the key bucket's last key (a tombstone's too); every
 * key of every bucket counted; the database's used size (pages × page size).
 */
export function etcdSnapshotStatus(from: Buffer | BoltSource): EtcdSnapshotStatus {
  const db = new BoltDb(from);
  let crc = 0;
  let revision = 0;
  let totalKey = 0;
  for (const b of db.buckets()) {
    crc = crc32c(b.name, crc);
    const isKey = b.name.toString() === "key";
    for (const e of b.entries) {
      crc = crc32c(e.key, crc);
      if (e.value !== undefined) crc = crc32c(e.value, crc);
      if (isKey) revision = Number(e.key.readBigUInt64BE(0));
      totalKey++;
    }
  }
  return { hash: crc >>> 0, revision, totalKey, totalSize: db.size };
}

export interface EtcdRevision {
  main: number;
  sub: number;
  tombstone: boolean;
  /** A tombstone's holds the key only (and its mod revision). */
  kv: KeyValue;
}

export interface EtcdLease {
  id: bigint;
  ttl: number;
  /** A checkpointed remaining TTL (0: none). */
  remainingTtl: number;
}

export interface EtcdV3State {
  /** Every revision kept (from the compaction on), in revision order. */
  revisions: EtcdRevision[];
  /** The current revision: the last one written (a compaction alone writes none). */
  revision: number;
  /** finishedCompactRev, -1 if never compacted. */
  compactRevision: number;
  /** scheduledCompactRev, -1 if none. */
  scheduledCompactRevision: number;
  consistentIndex: bigint;
  leases: EtcdLease[];
  authEnabled: boolean;
  authRevision: bigint;
  users: User[];
  roles: Role[];
}

function revOf(b: Buffer | undefined): number {
  if (b === undefined) return -1;
  if (b.length < 17 || b[8] !== 0x5f) throw new BoltFormatError(`bad revision key ${b.toString("hex")}`);
  return Number(b.readBigUInt64BE(0));
}

/** leasepb.Lease: three int64 varint fields (ID 1, TTL 2, RemainingTTL 3). */
function decodeLease(b: Buffer): EtcdLease {
  const f: bigint[] = [0n, 0n, 0n, 0n];
  let at = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (at >= b.length) throw new BoltFormatError("lease record truncated");
      const x = b[at++]!;
      v |= BigInt(x & 0x7f) << shift;
      if ((x & 0x80) === 0) return v;
    }
  };
  while (at < b.length) {
    const tag = Number(varint());
    if ((tag & 7) !== 0) throw new BoltFormatError(`lease record: wire type ${tag & 7}`);
    const v = BigInt.asIntN(64, varint());
    const field = tag >> 3;
    if (field >= 1 && field <= 3) f[field] = v;
  }
  return { id: f[1]!, ttl: Number(f[2]), remainingTtl: Number(f[3]) };
}

const value = (db: BoltDb, bucket: string, key: string): Buffer | undefined => {
  for (const e of db.bucket(bucket) ?? []) if (e.key.toString() === key) return e.value;
  return undefined;
};

function revisionOfEntry(e: BoltEntry & { value: Buffer }): EtcdRevision {
  if (e.key.length < 17 || e.key[8] !== 0x5f) throw new BoltFormatError(`bad revision key ${e.key.toString("hex")}`);
  return {
    main: Number(e.key.readBigUInt64BE(0)),
    sub: Number(e.key.readBigUInt64BE(9)),
    tombstone: e.key.length === 18 && e.key[17] === 0x74,
    kv: fromBinary(KeyValueSchema, e.value),
  };
}

/** The key bucket's revisions, decoded one at a time as they are read. */
export function* etcdRevisions(db: BoltDb): Generator<EtcdRevision> {
  for (const e of db.bucket("key") ?? []) if (e.value !== undefined) yield revisionOfEntry(e as BoltEntry & { value: Buffer });
}

/** The v3 state but its revisions. */
export type EtcdV3Meta = Omit<EtcdV3State, "revisions">;

/** Everything of the v3 state but its revisions (etcdRevisions reads those), without reading the key bucket through. */
export function readEtcdV3Meta(db: BoltDb): EtcdV3Meta {
  if (db.bucket("key") === undefined || db.bucket("meta") === undefined) throw new BoltFormatError("not an etcd database: no key or meta bucket");
  const ci = value(db, "meta", "consistent_index");
  const enabled = value(db, "auth", "authEnabled");
  const authRev = value(db, "auth", "authRevision");
  const lastEntry = db.lastOf("key");
  const last = lastEntry?.value === undefined ? undefined : revisionOfEntry(lastEntry as BoltEntry & { value: Buffer });
  const compactRevision = revOf(value(db, "meta", "finishedCompactRev"));
  return {
    // etcd restores its current revision from the last key, or the compaction point if later.
    revision: Math.max(last?.main ?? 1, compactRevision),
    compactRevision,
    scheduledCompactRevision: revOf(value(db, "meta", "scheduledCompactRev")),
    consistentIndex: ci !== undefined && ci.length === 8 ? ci.readBigUInt64BE(0) : 0n,
    leases: [...(db.bucket("lease") ?? [])].filter((e) => e.value !== undefined).map((e) => decodeLease(e.value!)),
    authEnabled: enabled !== undefined && enabled.length === 1 && enabled[0] === 1,
    authRevision: authRev !== undefined && authRev.length === 8 ? authRev.readBigUInt64BE(0) : 0n,
    users: [...(db.bucket("authUsers") ?? [])].filter((e) => e.value !== undefined).map((e) => fromBinary(UserSchema, e.value!)),
    roles: [...(db.bucket("authRoles") ?? [])].filter((e) => e.value !== undefined).map((e) => fromBinary(RoleSchema, e.value!)),
  };
}

/** The v3 state an etcd 3.4 database holds, every revision in memory (throws BoltFormatError if it is not one). */
export function readEtcdV3State(from: Buffer | BoltSource): EtcdV3State {
  const db = new BoltDb(from);
  const meta = readEtcdV3Meta(db);
  return { revisions: [...etcdRevisions(db)], ...meta };
}

/** What kvctl's own bucket holds beside etcd's schema (etcd-bolt-writer.ts). */
export interface KvctlExtras {
  /** The BackupHeader's JSON bytes (reader.ts parseHeader checks them). */
  header: Buffer;
  /** The raft snapshot's bytes, in order. */
  image: Buffer[];
  leases: { id: string; ttl: number; expiry: number; remainingTtl?: number }[];
  alarms: { memberId: string; alarm: number }[];
}

/** kvctl's bucket of a file kvctl wrote, or undefined for a file etcd wrote. */
export function readKvctlExtras(db: BoltDb): KvctlExtras | undefined {
  const entries = db.bucket("kvctl");
  if (entries === undefined) return undefined;
  let header: Buffer | undefined;
  const image: Buffer[] = [];
  let leases: KvctlExtras["leases"] = [];
  let alarms: KvctlExtras["alarms"] = [];
  for (const e of entries) {
    if (e.value === undefined) continue;
    const k = e.key.toString("latin1");
    if (k === "header") header = e.value;
    else if (k.startsWith("image/")) image.push(e.value);
    else if (k === "leases") leases = JSON.parse(e.value.toString("utf8")) as KvctlExtras["leases"];
    else if (k === "alarms") alarms = JSON.parse(e.value.toString("utf8")) as KvctlExtras["alarms"];
  }
  if (header === undefined) throw new BoltFormatError("kvctl bucket without a header");
  return { header, image, leases, alarms };
}
