// `kvctl v3 snapshot restore` of a bbolt file: one kvctl saved (etcd-bolt-writer.ts) or
// one etcd saved. Its state goes through restore.ts's restoreState, as a file of kvctl's
// older format does: one path makes every data dir. The file is read a page at a time,
// its key records one at a time. As etcdctl's restore, the sha256 appended is checked
// first (unless --skip-hash-check) and the membership in the file is dropped for the new
// cluster's.
// A file kvctl saved gives everything back: the rest of the state (v2 store, v2 auth,
// lease expiries, alarms) is in its own bucket. What an etcd file cannot give: the v2 key
// space (etcd's v3 snapshot has none; etcdctl's restore drops it too) and v2 auth; alarms
// are dropped, as etcd's restore does.
import { closeSync, openSync } from "node:fs";
import type { V3AuthImage } from "../../auth/v3-image.ts";
import { encodeRecord, revisionKey } from "../../backend/record-codec.ts";
import { LINES_VERSION, V2Store } from "../../store/v2/index.ts";
import { NO_LEASE, StoredRecord, type LeaseRecord } from "../../store/v3/index.ts";
import { Membership } from "../membership.ts";
import { SNAPSHOT_MAGIC } from "../snapshot-data.ts";
import { BackupFormatError, type BackupHeader } from "./format.ts";
import { BoltDb, fileSource } from "./bbolt.ts";
import { readEtcdV3Meta, readKvctlExtras, type EtcdV3Meta, type KvctlExtras } from "./etcd-bolt.ts";
import { checkBackup, parseHeader } from "./reader.ts";
import { restoreState, type RestoreOptions, type RestoreRest, type RestoreResult } from "./restore.ts";
import type { BackupParts } from "./writer.ts";

const goOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** etcd's users and roles as kvctl's v3 auth image (keys base64, names sorted as Go sorts). */
export function authImageOf(s: EtcdV3Meta): V3AuthImage {
  const name = (b: Uint8Array): string => Buffer.from(b).toString("utf8");
  const users = s.users
    .map((u) => {
      const hash = Buffer.from(u.password).toString("utf8");
      const noPassword = u.options?.noPassword === true || hash === "";
      return { name: name(u.name), passwordHash: noPassword ? null : hash, noPassword, roles: [...u.roles].sort(goOrder) };
    })
    .sort((a, b) => goOrder(a.name, b.name));
  const roles = s.roles
    .map((r) => ({
      name: name(r.name),
      keyPermissions: r.keyPermission.map((p) => ({ permType: p.permType, key: Buffer.from(p.key).toString("base64"), rangeEnd: Buffer.from(p.rangeEnd).toString("base64") })),
    }))
    .sort((a, b) => goOrder(a.name, b.name));
  return { version: 1, enabled: s.authEnabled, authRevision: Math.max(1, Number(s.authRevision)), users, roles };
}

/**
 * The key bucket's records, encoded as kvctl's backend keeps them, in revision order: each
 * mvccpb.KeyValue read in place (revisions are safe integers in kvctl), no message object
 * per record.
 */
export function* recordsOf(db: BoltDb): Generator<[Buffer, Buffer]> {
  for (const e of db.bucket("key") ?? []) {
    if (e.value === undefined) continue;
    const k = e.key;
    if (k.length < 17 || k[8] !== 0x5f) throw new BackupFormatError(`bad revision key ${k.toString("hex")}`);
    const main = k.readUIntBE(2, 6) + k.readUInt16BE(0) * 2 ** 48;
    const sub = k.readUIntBE(11, 6) + k.readUInt16BE(9) * 2 ** 48;
    const tombstone = k.length === 18 && k[17] === 0x74;
    const kv = decodeKeyValue(e.value);
    const id = kv.key.toString("latin1");
    const rec = tombstone
      ? new StoredRecord(id, main, sub, 0, 0, undefined, NO_LEASE, true)
      : new StoredRecord(id, main, sub, kv.createRevision, kv.version, kv.value, kv.lease, false);
    yield [revisionKey(main, sub), encodeRecord(rec)];
  }
}

interface KeyValueFields {
  key: Buffer;
  createRevision: number;
  version: number;
  value: Buffer;
  lease: bigint;
}

// The decoder's cursor: module state rather than closures, as this runs once per record.
let src: Buffer = Buffer.alloc(0);
let at = 0;

function varint(): number {
  let v = 0;
  for (let mul = 1; ; mul *= 128) {
    if (at >= src.length) throw new BackupFormatError("a key record is truncated");
    const x = src[at++]!;
    v += (x & 0x7f) * mul;
    if ((x & 0x80) === 0) return v;
  }
}

function varint64(): bigint {
  let v = 0n;
  for (let shift = 0n; ; shift += 7n) {
    if (at >= src.length) throw new BackupFormatError("a key record is truncated");
    const x = src[at++]!;
    v |= BigInt(x & 0x7f) << shift;
    if ((x & 0x80) === 0) return BigInt.asIntN(64, v);
  }
}

const EMPTY = Buffer.alloc(0);

/** mvccpb.KeyValue's fields kvctl keeps (key 1, create_revision 2, version 4, value 5, lease 6). */
function decodeKeyValue(b: Buffer): KeyValueFields {
  src = b;
  at = 0;
  const r: KeyValueFields = { key: EMPTY, createRevision: 0, version: 0, value: EMPTY, lease: NO_LEASE };
  while (at < b.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (wire === 2) {
      const n = varint();
      if (at + n > b.length) throw new BackupFormatError("a key record is truncated");
      const bytes = b.subarray(at, at + n);
      at += n;
      if (field === 1) r.key = bytes;
      else if (field === 5) r.value = bytes;
    } else if (wire === 0) {
      if (field === 6) r.lease = varint64();
      else {
        const v = varint();
        if (field === 2) r.createRevision = v;
        else if (field === 4) r.version = v;
      }
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else throw new BackupFormatError(`a key record has wire type ${wire}`);
  }
  return r;
}

/**
 * Leases as granted now: etcd's restored member renews every lease when it becomes
 * leader (lessor.Promote), a checkpointed one to its remaining TTL.
 */
function leasesOf(s: EtcdV3Meta, now: number): LeaseRecord[] {
  return s.leases.map((l) => {
    const r: LeaseRecord = { id: l.id, ttl: l.ttl, expiry: now + (l.remainingTtl > 0 ? l.remainingTtl : l.ttl) * 1000 };
    if (l.remainingTtl > 0) r.remainingTtl = l.remainingTtl;
    return r;
  });
}

/**
 * Restores a bbolt snapshot file (kvctl's or etcd's) into a new kvctl data dir
 * (RestoreOptions as restoreBackup). The file is read a page at a time, its revisions one
 * at a time: a database of any size restores in bounded memory.
 */
export async function restoreEtcdSnapshot(o: RestoreOptions): Promise<RestoreResult> {
  const { bodyBytes } = await checkBackup(o.file, { skipHashCheck: o.skipHashCheck });
  const fd = openSync(o.file, "r");
  try {
    const db = new BoltDb(fileSource(fd, bodyBytes));
    const meta = readEtcdV3Meta(db);
    const own = readKvctlExtras(db);
    // kvctl's bucket describes the state only while etcd's buckets are the ones kvctl wrote
    // beside it: etcd keeps the bucket, so a snapshot of an etcd restored from kvctl's file
    // carries it too, stale once etcd applied anything (its consistent index moved on).
    const ownHeader = own === undefined ? undefined : parseHeader(own.header);
    if (own !== undefined && ownHeader !== undefined && BigInt(ownHeader.index) === meta.consistentIndex) return await restoreKvctlBolt(o, db, own, ownHeader);
    const now = Date.now();
    let totalKeys = 0;
    for (const e of db.bucket("key") ?? []) if (e.value !== undefined) totalKeys++;
    const header: BackupHeader = {
      format: "kvctl-snapshot/1",
      index: Number(meta.consistentIndex),
      term: 1,
      revision: meta.revision,
      compactRevision: meta.compactRevision,
      totalKeys,
      time: now,
    };
    // The image's membership is replaced by restoreBackup; an empty v2 store, as etcd's.
    const membership = Membership.bootstrap(o.initialCluster, o.initialClusterToken).toJSON();
    const rest = Buffer.from(JSON.stringify({ membership, v3auth: authImageOf(meta) }) + "\n");
    const image = [SNAPSHOT_MAGIC, rest, ...[...new V2Store().imagePieces(LINES_VERSION)].map((p) => Buffer.from(p))];
    return await restoreParts(o, { header, image, records: recordsOf(db), leases: leasesOf(meta, now), alarms: [] });
  } catch (err) {
    if (err instanceof BackupFormatError) throw err;
    throw err instanceof Error ? new BackupFormatError(err.message) : err;
  } finally {
    closeSync(fd);
  }
}

/**
 * A file kvctl wrote (etcd-bolt-writer.ts): the key space from etcd's buckets, the rest
 * (the v2 store, v2 auth, leases with their expiry, alarms) from kvctl's own bucket.
 */
function restoreKvctlBolt(o: RestoreOptions, db: BoltDb, own: KvctlExtras, header: BackupHeader): Promise<RestoreResult> {
  const leases = own.leases.map((l): LeaseRecord => {
    const r: LeaseRecord = { id: BigInt(l.id), ttl: l.ttl, expiry: l.expiry };
    if (typeof l.remainingTtl === "number" && l.remainingTtl > 0) r.remainingTtl = l.remainingTtl;
    return r;
  });
  return restoreParts(o, { header, image: own.image, records: recordsOf(db), leases, alarms: own.alarms });
}

const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

function* buffers(records: Iterable<[Uint8Array, Uint8Array]>): Generator<[Buffer, Buffer]> {
  for (const [k, v] of records) yield [asBuffer(k), asBuffer(v)];
}

/** The parts restored (restore.ts): the records go to the database as they are read. */
async function restoreParts(o: RestoreOptions, parts: BackupParts): Promise<RestoreResult> {
  const rest: RestoreRest = { header: parts.header, image: [...parts.image], leases: parts.leases, alarms: parts.alarms };
  try {
    return await restoreState(o, buffers(parts.records), () => rest);
  } catch (err) {
    if (err instanceof BackupFormatError) throw err;
    throw err instanceof Error ? new BackupFormatError(err.message) : err;
  }
}
