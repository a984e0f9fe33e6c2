import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { KeyValueSchema } from "../grpc/gen/etcd/mvcc/mvccpb/kv_pb.ts";
import { encodeRecord, revisionKey } from "../../backend/record-codec.ts";
import { LINES_VERSION, V2Store } from "../../store/v2/index.ts";
import { NO_LEASE, StoredRecord } from "../../store/v3/index.ts";
import { SNAPSHOT_MAGIC } from "../snapshot-data.ts";
import { BoltDb } from "./bbolt.ts";
import { etcdSnapshotStatus, readEtcdV3State, readKvctlExtras } from "./etcd-bolt.ts";
import { keyValueOf, writeEtcdBoltBackup } from "./etcd-bolt-writer.ts";
import { restoreEtcdSnapshot } from "./etcd-restore.ts";
import type { BackupHeader } from "./format.ts";
import type { BackupParts } from "./writer.ts";

const tmp = mkdtempSync(join(tmpdir(), "kvctl-etcd-bolt-writer-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

const LEASE = 0x7fff_0000_0000_1234n;
const big = Buffer.alloc(3 * 4096 + 17, 0x62);

function parts(opts: { compactRevision: number; manyKeys?: number }): BackupParts {
  const store = new V2Store();
  const rest = {
    membership: { clusterId: 77, members: [{ id: 0x1234, name: "m1", peerUrls: ["http://127.0.0.1:22001"], clientUrls: ["http://127.0.0.1:22000"] }], version: "3.4.0", removed: [0x99] },
    v3auth: {
      version: 1,
      enabled: true,
      authRevision: 7,
      users: [
        { name: "alice", passwordHash: "$2a$10$abcdefghijklmnopqrstuuJ0T3y0V7dYcWqf8l6e8qk3P8m6F5G1u", noPassword: false, roles: ["r1"] },
        { name: "bob", passwordHash: null, noPassword: true, roles: [] },
      ],
      roles: [{ name: "r1", keyPermissions: [{ permType: 2, key: Buffer.from("a").toString("base64"), rangeEnd: Buffer.from("z").toString("base64") }] }],
    },
  };
  const image = [SNAPSHOT_MAGIC, Buffer.from(JSON.stringify(rest) + "\n"), ...[...store.imagePieces(LINES_VERSION)].map((p) => Buffer.from(p))];
  const recs: StoredRecord[] = [
    new StoredRecord("a", 2, 0, 2, 1, Buffer.from("1"), NO_LEASE, false),
    new StoredRecord("big", 3, 0, 3, 1, big, NO_LEASE, false),
    new StoredRecord("leased", 4, 0, 4, 1, Buffer.from("lv"), LEASE, false),
    new StoredRecord("a", 5, 0, 0, 0, undefined, NO_LEASE, true),
    new StoredRecord("\u00ff\u0001", 5, 1, 5, 1, Buffer.alloc(0), NO_LEASE, false),
  ];
  for (let i = 0; i < (opts.manyKeys ?? 0); i++) recs.push(new StoredRecord(`k${i}`, 6 + i, 0, 6 + i, 1, Buffer.from(`v${i}`), NO_LEASE, false));
  const last = recs.at(-1)!.main;
  const header: BackupHeader = { format: "kvctl-snapshot/1", index: 42, term: 3, revision: last, compactRevision: opts.compactRevision, totalKeys: 3, time: 1_700_000_000_000 };
  return {
    header,
    image,
    records: recs.map((r) => [revisionKey(r.main, r.sub), encodeRecord(r)] as [Buffer, Buffer]),
    leases: [{ id: LEASE, ttl: 600, expiry: 1_700_000_600_000, remainingTtl: 500 }, { id: 5n, ttl: 60, expiry: 1_700_000_060_000 }],
    alarms: [{ memberId: "4660", alarm: 1 }],
  };
}

test("etcd's buckets and keys, as etcd 3.4 writes them, and kvctl's own bucket", async () => {
  const file = join(tmp, "a.db");
  const size = await writeEtcdBoltBackup(file, parts({ compactRevision: 3 }));
  const buf = readFileSync(file);
  assert.equal(buf.length, size);
  assert.equal(size % 4096, 0, "whole pages: with the sha256 appended, size % 512 == 32 as etcdctl checks");
  const db = new BoltDb(buf);
  assert.deepEqual(
    [...db.buckets()].map((b) => `${b.name.toString()}=${[...b.entries].length}`),
    ["alarm=1", "auth=2", "authRoles=1", "authUsers=2", "cluster=1", "key=5", "kvctl=4", "lease=2", "members=1", "members_removed=1", "meta=3"],
  );
  const s = readEtcdV3State(buf);
  assert.deepEqual(
    s.revisions.map((r) => [r.main, r.sub, r.tombstone, Buffer.from(r.kv.key).toString("latin1"), Number(r.kv.createRevision), Number(r.kv.modRevision), Number(r.kv.version), r.kv.lease]),
    [
      [2, 0, false, "a", 2, 2, 1, 0n],
      [3, 0, false, "big", 3, 3, 1, 0n],
      [4, 0, false, "leased", 4, 4, 1, LEASE],
      [5, 0, true, "a", 0, 0, 0, 0n],
      [5, 1, false, "\u00ff\u0001", 5, 5, 1, 0n],
    ],
  );
  assert.ok(Buffer.from(s.revisions[1]!.kv.value).equals(big), "a value bigger than a page (overflow pages)");
  // Byte for byte what a protobuf library marshals (fields in order, zero values left out).
  for (const e of db.bucket("key")!) {
    const kv = fromBinary(KeyValueSchema, e.value!);
    assert.ok(Buffer.from(toBinary(KeyValueSchema, kv)).equals(e.value!), e.key.toString("hex"));
  }
  assert.equal(s.revision, 5);
  assert.equal(s.compactRevision, 3);
  assert.equal(s.scheduledCompactRevision, 3);
  assert.equal(s.consistentIndex, 42n);
  assert.deepEqual(s.leases, [{ id: 5n, ttl: 60, remainingTtl: 0 }, { id: LEASE, ttl: 600, remainingTtl: 500 }]);
  assert.equal(s.authEnabled, true);
  assert.equal(s.authRevision, 7n);
  assert.deepEqual(s.users.map((u) => [Buffer.from(u.name).toString(), Buffer.from(u.password).toString().slice(0, 7), u.roles, u.options?.noPassword ?? false]), [
    ["alice", "$2a$10$", ["r1"], false],
    ["bob", "", [], true],
  ]);
  assert.deepEqual(s.roles.map((r) => [Buffer.from(r.name).toString(), r.keyPermission.map((p) => [p.permType, Buffer.from(p.key).toString(), Buffer.from(p.rangeEnd).toString()])]), [["r1", [[2, "a", "z"]]]]);
  const one = (bucket: string): [string, string][] => [...db.bucket(bucket)!].map((e) => [e.key.toString("hex"), e.value!.toString()]);
  assert.deepEqual(one("members"), [["1234", JSON.stringify({ id: 0x1234, peerURLs: ["http://127.0.0.1:22001"], name: "m1", clientURLs: ["http://127.0.0.1:22000"] })].map((x, i) => (i === 0 ? Buffer.from(x).toString("hex") : x)) as [string, string]]);
  assert.deepEqual(one("members_removed"), [[Buffer.from("99").toString("hex"), "removed"]]);
  assert.deepEqual(one("cluster"), [[Buffer.from("clusterVersion").toString("hex"), "3.4.0"]]);
  // AlarmMember{MemberID: 4660, Alarm: NOSPACE} as gogoproto marshals it.
  assert.deepEqual([...db.bucket("alarm")!].map((e) => e.key.toString("hex")), ["08b4241001"]);

  const own = readKvctlExtras(db)!;
  assert.deepEqual(JSON.parse(own.header.toString()), parts({ compactRevision: 3 }).header);
  assert.ok(Buffer.concat(own.image).equals(Buffer.concat(parts({ compactRevision: 3 }).image as Buffer[])));
  assert.deepEqual(own.leases.map((l) => [l.id, l.expiry]), [[LEASE.toString(), 1_700_000_600_000], ["5", 1_700_000_060_000]]);
  assert.deepEqual(own.alarms, [{ memberId: "4660", alarm: 1 }]);

  const st = etcdSnapshotStatus(buf);
  assert.equal(st.revision, 5);
  assert.equal(st.totalKey, 23);
  assert.equal(st.totalSize, size);
});

test("every record of etcd 3.4.23's key bucket, stored by kvctl's backend, comes back out byte for byte", () => {
  const buf = readFileSync(new URL("testdata/etcd-3.4.23.snapshot.db", import.meta.url));
  const raw = [...new BoltDb(buf).bucket("key")!];
  const s = readEtcdV3State(buf);
  assert.equal(s.revisions.length, raw.length);
  assert.ok(s.revisions.some((r) => r.tombstone) && s.revisions.some((r) => r.kv.lease !== 0n) && s.revisions.some((r) => r.sub > 0));
  s.revisions.forEach((r, i) => {
    const rec = new StoredRecord(Buffer.from(r.kv.key).toString("latin1"), r.main, r.sub, Number(r.kv.createRevision), Number(r.kv.version), Buffer.from(r.kv.value), r.kv.lease, r.tombstone);
    const kv = keyValueOf(revisionKey(r.main, r.sub), encodeRecord(rec));
    assert.equal(kv.key.toString("hex"), raw[i]!.key.toString("hex"));
    assert.equal(kv.value.toString("hex"), raw[i]!.value!.toString("hex"), `${r.main}_${r.sub}`);
  });
});

test("never compacted: no compaction keys; many keys span pages; the file restores as a kvctl data dir", async () => {
  const file = join(tmp, "b.db");
  const p = parts({ compactRevision: -1, manyKeys: 5000 });
  await writeEtcdBoltBackup(file, p);
  const body = readFileSync(file);
  const s = readEtcdV3State(body);
  assert.equal(s.compactRevision, -1);
  assert.equal(s.revisions.length, 5005);
  assert.equal(Buffer.from(s.revisions.at(-1)!.kv.value).toString(), "v4999");
  appendFileSync(file, createHash("sha256").update(body).digest());
  const r = await restoreEtcdSnapshot({
    file,
    name: "r1",
    dataDir: join(tmp, "restored"),
    initialCluster: new Map([["r1", ["http://127.0.0.1:22999"]]]),
    initialClusterToken: "t",
    skipHashCheck: false,
  });
  assert.deepEqual(r.header, p.header, "the header kvctl's bucket carries, not one rebuilt from etcd's buckets");
  assert.equal(r.index, 1);
});

test("a kvctl bucket whose consistent index is not etcd's (a snapshot of an etcd that applied since) is ignored: etcd's state wins", async () => {
  const file = join(tmp, "stale.db");
  const p = parts({ compactRevision: -1 });
  await writeEtcdBoltBackup(file, p);
  const body = readFileSync(file);
  // etcd's meta bucket moved on: consistent_index 42 → 43 (bbolt has no checksum over data pages).
  const at = body.indexOf(Buffer.concat([Buffer.from("consistent_index"), Buffer.from([0, 0, 0, 0, 0, 0, 0, 42])]));
  assert.ok(at > 0);
  body[at + "consistent_index".length + 7] = 43;
  const stale = join(tmp, "stale-hashed.db");
  appendFileSync(stale, body);
  appendFileSync(stale, createHash("sha256").update(body).digest());
  const r = await restoreEtcdSnapshot({
    file: stale,
    name: "r1",
    dataDir: join(tmp, "restored-stale"),
    initialCluster: new Map([["r1", ["http://127.0.0.1:22999"]]]),
    initialClusterToken: "t",
    skipHashCheck: false,
  });
  assert.equal(r.header.index, 43, "the header is etcd's, rebuilt from its buckets");
  assert.notEqual(r.header.time, p.header.time);
  assert.equal(r.header.revision, 5);
});
