// `kvctl v3 snapshot status` of the files kvctl writes now (etcd's bbolt format) and wrote
// before (its own format, server/backup/format.ts): both read, each sha256 checked.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { encodeRecord, revisionKey } from "../../../backend/record-codec.ts";
import { etcdSnapshotStatus } from "../../../server/backup/etcd-bolt.ts";
import { writeEtcdBoltBackup } from "../../../server/backup/etcd-bolt-writer.ts";
import { writeBackupBody, type BackupParts } from "../../../server/backup/writer.ts";
import { SNAPSHOT_MAGIC } from "../../../server/snapshot-data.ts";
import { NO_LEASE, StoredRecord } from "../../../store/v3/index.ts";
import { snapshotStatus } from "./snapshot.ts";

const tmp = mkdtempSync(join(tmpdir(), "kvctl-snapshot-formats-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

const parts = (): BackupParts => ({
  header: { format: "kvctl-snapshot/1", index: 7, term: 2, revision: 3, compactRevision: -1, totalKeys: 2, time: 1 },
  image: [SNAPSHOT_MAGIC, Buffer.from(JSON.stringify({ membership: { clusterId: 1, members: [] } }) + "\n")],
  records: [new StoredRecord("a", 2, 0, 2, 1, Buffer.from("x"), NO_LEASE, false), new StoredRecord("b", 3, 0, 3, 1, Buffer.from("y"), NO_LEASE, false)].map(
    (r) => [revisionKey(r.main, r.sub), encodeRecord(r)] as [Buffer, Buffer],
  ),
  leases: [],
  alarms: [],
});

/** The file with its sha256 appended, as a member streams it. */
function hashed(path: string): void {
  const body = readFileSync(path);
  writeFileSync(path, Buffer.concat([body, createHash("sha256").update(body).digest()]));
}

test("the bbolt file: etcdctl's numbers, sha256 checked", async () => {
  const file = join(tmp, "new.db");
  await writeEtcdBoltBackup(file, parts());
  hashed(file);
  const st = await snapshotStatus(file);
  assert.deepEqual(st, etcdSnapshotStatus(readFileSync(file)));
  assert.equal(st.revision, 3);
  // key 2, meta 1, auth 1, cluster 0, kvctl 4 (alarms, header, one image piece, leases)
  assert.equal(st.totalKey, 8);
  const bad = readFileSync(file);
  bad[bad.indexOf("consistent_index") + 20]! ^= 1;
  writeFileSync(file, bad);
  await assert.rejects(snapshotStatus(file), /integrity check failed/);
});

test("kvctl's earlier format is still read", async () => {
  const file = join(tmp, "old.db");
  await writeBackupBody(file, parts());
  hashed(file);
  const st = await snapshotStatus(file);
  assert.equal(st.revision, 3);
  assert.equal(st.totalKey, 2);
  assert.equal(st.totalSize, readFileSync(file).length - 32);
});
