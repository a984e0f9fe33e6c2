// The file `kvctl v3 snapshot save` writes (and Maintenance.Snapshot streams): a bbolt
// database in etcd 3.4's schema (bbolt-writer.ts), so that `etcdctl snapshot status` and
// `etcdctl snapshot restore` read it and etcd serves its v3 state; the stream that serves
// it appends its sha256, as etcd's does. Buckets, as etcd writes them (mvcc/kvstore.go,
// mvcc/revision.go, lease/lessor.go, auth/store.go, etcdserver/api/membership/store.go,
// etcdserver/api/v3alarm):
//   key              main rev (8 BE) '_' sub rev (8 BE), then 't' for a deletion → mvccpb.KeyValue
//                    (a deletion's holds the key only), written by the store's etcd-key-record.ts
//                    as HashKV sums them
//   meta             consistent_index (u64 BE); scheduledCompactRev, finishedCompactRev
//                    (17-byte revision keys) once compacted
//   lease            lease id (8 BE) → leasepb.Lease {ID, TTL, RemainingTTL}
//   auth             authEnabled (one byte; once enabled), authRevision (u64 BE)
//   authUsers, authRoles   name → authpb.User, authpb.Role
//   members          member id (hex) → {"id","peerURLs","isLearner","name","clientURLs"}
//   members_removed  member id (hex) → "removed"
//   cluster          clusterVersion → "3.4.0"
//   alarm            etcdserverpb.AlarmMember → (empty)
// and one of kvctl's own, which etcd keeps untouched (it opens only the buckets it knows):
//   kvctl            header   the BackupHeader (JSON)
//                    image/<n, 8 hex digits>   the raft snapshot's bytes (v2 store, v2 auth,
//                             membership, v3 auth; snapshot-data.ts) in pieces of 1 MiB
//                    leases   [{id, ttl, expiry, remainingTtl}] (JSON: the expiry etcd's
//                             lease bucket has no place for)
//                    alarms   [{memberId, alarm}] (JSON)
// so that `kvctl v3 snapshot restore` gets back everything the old format carried. Key
// records are written as they come from the backend's read transaction: memory holds a
// page per tree level and at most FLUSH_BYTES of pages waiting for the disk.
import { open } from "node:fs/promises";
import { REVISION_KEY_BYTES } from "../../backend/record-codec.ts";
import { ProtoWriter } from "../proto-writer.ts";
import { keyValueBytes, revisionKeyBytes, writeKeyValue, writeRevisionKey } from "../../store/v3/index.ts";
import type { V3AuthImage } from "../../auth/v3-image.ts";
import type { MembershipJSON } from "../membership.ts";
import { SNAPSHOT_MAGIC } from "../snapshot-data.ts";
import { BoltWriter, type BucketBuilder, type BucketHeader } from "./bbolt-writer.ts";
import { BackupFormatError, MAX_SECTION_BYTES } from "./format.ts";
import type { BackupParts } from "./writer.ts";

/** kvctl's own bucket in the file (etcd ignores it). */
export const KVCTL_BUCKET = "kvctl";
export const IMAGE_PREFIX = "image/";
// Pages wait for the disk up to this much: the backup runs beside a serving member, and
// each flush is a turn of its event loop.
const FLUSH_BYTES = 1024 * 1024;

// The backend's record (record-codec.ts): flags:u8 (bit 0 tombstone) keyLen:u32 BE
// createRevision:f64 version:f64 lease:i64 BE, then the key and the value. Read in place
// here: this runs once per record of the key space, beside a serving member.
const RECORD_HEAD = 1 + 4 + 8 + 8 + 8;

/** The `key` bucket's record (the store's etcd-key-record.ts) of a backend record at its 16-byte revision key. */
export function keyValueOf(revKey: Uint8Array, record: Uint8Array): { key: Buffer; value: Buffer } {
  const rec = Buffer.isBuffer(record) ? record : Buffer.from(record.buffer, record.byteOffset, record.byteLength);
  if (revKey.length !== REVISION_KEY_BYTES || rec.length < RECORD_HEAD) throw new BackupFormatError(`a v3 record of ${rec.length} bytes at a ${revKey.length}-byte key`);
  const tombstone = (rec[0]! & 1) === 1;
  const keyLen = rec.readUInt32BE(1);
  if (RECORD_HEAD + keyLen > rec.length) throw new BackupFormatError("a v3 record's key runs past its end");
  const main = u64At(revKey, 0);
  const sub = u64At(revKey, 8);
  const kv = {
    key: rec.subarray(RECORD_HEAD, RECORD_HEAD + keyLen),
    createRevision: rec.readDoubleBE(5),
    version: rec.readDoubleBE(13),
    value: rec.subarray(RECORD_HEAD + keyLen),
    lease: rec.readBigInt64BE(21),
  };
  const key = Buffer.allocUnsafe(revisionKeyBytes(tombstone));
  writeRevisionKey(key, 0, main, sub, tombstone);
  const value = Buffer.allocUnsafe(keyValueBytes(main, tombstone, kv));
  writeKeyValue(value, 0, main, tombstone, kv);
  return { key, value };
}

/** A backend revision (a u64 BE below 2^53) read from the bytes: no Buffer view made per record. */
function u64At(b: Uint8Array, at: number): number {
  const hi = ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
  const lo = ((b[at + 4]! << 24) | (b[at + 5]! << 16) | (b[at + 6]! << 8) | b[at + 7]!) >>> 0;
  return hi * 0x1_0000_0000 + lo;
}

function u64be(v: bigint | number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt.asUintN(64, typeof v === "bigint" ? v : BigInt(v)));
  return b;
}

/** meta's compaction revisions: etcd writes them as revision keys (sub 0). */
function revBytes(main: number): Buffer {
  const b = Buffer.allocUnsafe(revisionKeyBytes(false));
  writeRevisionKey(b, 0, main, 0, false);
  return b;
}

/** The image's small parts: its header line (format 2) or the whole JSON (format 1). */
function imageHeader(pieces: readonly Buffer[]): { membership?: MembershipJSON; v3auth?: V3AuthImage } {
  const head: Buffer[] = [];
  let bytes = 0;
  for (const p of pieces) {
    head.push(p);
    bytes += p.length;
    const all = Buffer.concat(head, bytes);
    if (all.length >= SNAPSHOT_MAGIC.length && all.subarray(0, SNAPSHOT_MAGIC.length).equals(SNAPSHOT_MAGIC)) {
      const end = all.indexOf(0x0a, SNAPSHOT_MAGIC.length);
      if (end >= 0) return JSON.parse(all.toString("utf8", SNAPSHOT_MAGIC.length, end)) as { membership?: MembershipJSON; v3auth?: V3AuthImage };
    } else if (all.length >= SNAPSHOT_MAGIC.length) {
      break;
    }
  }
  const whole = Buffer.concat(pieces);
  if (whole[0] !== 0x7b) throw new BackupFormatError("the snapshot image has no header line");
  return JSON.parse(whole.toString("utf8")) as { membership?: MembershipJSON; v3auth?: V3AuthImage };
}

/** The pieces' bytes cut in chunks of `size` (the last may be shorter), never all joined at once. */
function* chunks(pieces: Iterable<Buffer>, size: number): Generator<Buffer> {
  let held: Buffer[] = [];
  let bytes = 0;
  for (let p of pieces) {
    while (bytes + p.length >= size) {
      const take = size - bytes;
      held.push(p.subarray(0, take));
      yield Buffer.concat(held, size);
      p = p.subarray(take);
      held = [];
      bytes = 0;
    }
    if (p.length > 0) {
      held.push(p);
      bytes += p.length;
    }
  }
  if (bytes > 0) yield Buffer.concat(held, bytes);
}

const byBytes = <T extends { key: Buffer }>(a: T, b: T): number => Buffer.compare(a.key, b.key);

function fill(b: BucketBuilder, entries: { key: Buffer; value: Buffer }[]): BucketHeader {
  for (const e of entries.sort(byBytes)) b.put(e.key, e.value);
  return b.finish();
}

/**
 * Writes the backup of `parts` as an etcd 3.4 bbolt database at `path`; answers its size
 * (whole pages: a multiple of 512, so the sha256 the stream appends is found by etcdctl).
 */
export async function writeEtcdBoltBackup(path: string, parts: BackupParts): Promise<number> {
  const image = [...parts.image];
  const { membership, v3auth } = imageHeader(image);
  const fh = await open(path, "w", 0o600);
  const w = new BoltWriter();
  const flush = async (): Promise<void> => {
    for (const x of w.drain()) {
      for (let at = 0; at < x.data.length; ) at += (await fh.write(x.data, at, x.data.length - at, x.position + at)).bytesWritten;
    }
  };
  try {
    const buckets = new Map<string, BucketHeader>();

    // The key space first, streamed: the rest is small.
    const keys = w.bucket();
    for (const [k, v] of parts.records) {
      const kv = keyValueOf(k, v);
      keys.put(kv.key, kv.value);
      if (w.pendingBytes >= FLUSH_BYTES) await flush();
    }
    buckets.set("key", keys.finish());

    const meta = [{ key: Buffer.from("consistent_index"), value: u64be(parts.header.index) }];
    if (parts.header.compactRevision > 0) {
      meta.push({ key: Buffer.from("scheduledCompactRev"), value: revBytes(parts.header.compactRevision) });
      meta.push({ key: Buffer.from("finishedCompactRev"), value: revBytes(parts.header.compactRevision) });
    }
    buckets.set("meta", fill(w.bucket(), meta));

    buckets.set(
      "lease",
      fill(
        w.bucket(),
        parts.leases.map((l) => ({ key: u64be(l.id), value: new ProtoWriter().int64(1, l.id).int64(2, l.ttl).int64(3, l.remainingTtl ?? 0).finish() })),
      ),
    );

    const auth = v3auth ?? { version: 1, enabled: false, authRevision: 1, users: [], roles: [] };
    // etcd writes authEnabled when auth is first enabled: a store where it never was has none.
    const authKeys = [{ key: Buffer.from("authRevision"), value: u64be(auth.authRevision) }];
    if (auth.enabled) authKeys.push({ key: Buffer.from("authEnabled"), value: Buffer.from([1]) });
    buckets.set("auth", fill(w.bucket(), authKeys));
    buckets.set(
      "authUsers",
      fill(
        w.bucket(),
        auth.users.map((u) => {
          const p = new ProtoWriter().bytes(1, Buffer.from(u.name)).bytes(2, Buffer.from(u.passwordHash ?? ""));
          for (const r of u.roles) p.bytesElement(3, Buffer.from(r));
          if (u.noPassword) p.bytesElement(4, new ProtoWriter().int64(1, 1).finish());
          return { key: Buffer.from(u.name), value: p.finish() };
        }),
      ),
    );
    buckets.set(
      "authRoles",
      fill(
        w.bucket(),
        auth.roles.map((r) => {
          const p = new ProtoWriter().bytes(1, Buffer.from(r.name));
          for (const k of r.keyPermissions) {
            p.bytesElement(2, new ProtoWriter().int64(1, k.permType).bytes(2, Buffer.from(k.key, "base64")).bytes(3, Buffer.from(k.rangeEnd, "base64")).finish());
          }
          return { key: Buffer.from(r.name), value: p.finish() };
        }),
      ),
    );

    const members = membership?.members ?? [];
    buckets.set(
      "members",
      fill(
        w.bucket(),
        members.map((m) => {
          // Go's json.Marshal of membership.Member: isLearner, name and clientURLs are omitempty.
          const json: Record<string, unknown> = { id: m.id, peerURLs: m.peerUrls };
          if (m.isLearner === true) json["isLearner"] = true;
          if (m.name !== "") json["name"] = m.name;
          if (m.clientUrls.length > 0) json["clientURLs"] = m.clientUrls;
          return { key: Buffer.from(m.id.toString(16)), value: Buffer.from(JSON.stringify(json)) };
        }),
      ),
    );
    buckets.set("members_removed", fill(w.bucket(), (membership?.removed ?? []).map((id) => ({ key: Buffer.from(id.toString(16)), value: Buffer.from("removed") }))));
    buckets.set(
      "cluster",
      fill(w.bucket(), membership?.version === undefined ? [] : [{ key: Buffer.from("clusterVersion"), value: Buffer.from(membership.version) }]),
    );
    buckets.set(
      "alarm",
      fill(
        w.bucket(),
        parts.alarms.map((a) => ({ key: new ProtoWriter().int64(1, BigInt(a.memberId)).int64(2, a.alarm).finish(), value: Buffer.alloc(0) })),
      ),
    );

    const own = w.bucket();
    own.put(Buffer.from("alarms"), Buffer.from(JSON.stringify(parts.alarms)));
    own.put(Buffer.from("header"), Buffer.from(JSON.stringify(parts.header)));
    let n = 0;
    for (const chunk of chunks(image, MAX_SECTION_BYTES)) {
      own.put(Buffer.from(IMAGE_PREFIX + (n++).toString(16).padStart(8, "0")), chunk);
      if (w.pendingBytes >= FLUSH_BYTES) await flush();
    }
    const leases = parts.leases.map((l) => ({ id: l.id.toString(), ttl: l.ttl, expiry: l.expiry, ...(l.remainingTtl === undefined ? {} : { remainingTtl: l.remainingTtl }) }));
    own.put(Buffer.from("leases"), Buffer.from(JSON.stringify(leases)));
    buckets.set(KVCTL_BUCKET, own.finish());

    const root = w.bucket();
    for (const name of [...buckets.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))) root.putBucket(Buffer.from(name), buckets.get(name)!);
    const size = w.finish(root.finish());
    await flush();
    await fh.sync();
    return size;
  } finally {
    await fh.close();
  }
}
