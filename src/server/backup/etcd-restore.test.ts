import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { parseV3AuthImage } from "../../auth/v3-image.ts";
import { readEtcdV3State } from "./etcd-bolt.ts";
import { authImageOf, restoreEtcdSnapshot } from "./etcd-restore.ts";

const fixturePath = new URL("./testdata/etcd-3.4.23.snapshot.db", import.meta.url);
const tmp = mkdtempSync(join(tmpdir(), "kvctl-etcd-restore-unit-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

const opts = (file: string, dataDir: string, skipHashCheck = false) => ({
  file,
  name: "r1",
  dataDir,
  initialCluster: new Map([["r1", ["http://127.0.0.1:23999"]]]),
  initialClusterToken: "etcd-cluster",
  skipHashCheck,
});

test("etcd's users and roles make a valid kvctl auth image, enabled, hashes kept", () => {
  const img = parseV3AuthImage(authImageOf(readEtcdV3State(readFileSync(fixturePath))));
  assert.equal(img.enabled, true);
  assert.deepEqual(img.users.map((u) => [u.name, u.roles, u.passwordHash?.slice(0, 7)]), [["alice", ["r1"], "$2a$10$"], ["root", ["root"], "$2a$10$"]]);
  assert.deepEqual(img.roles.map((r) => r.name), ["r1", "root"]);
  assert.deepEqual(img.roles[0]!.keyPermissions, [{ permType: 2, key: Buffer.from("/x").toString("base64"), rangeEnd: Buffer.from("/y").toString("base64") }]);
});

test("the sha256 etcd appended is checked, as etcdctl's restore does", async () => {
  const bad = Buffer.from(readFileSync(fixturePath));
  bad[bad.length - 1]! ^= 1;
  const file = join(tmp, "bad.db");
  writeFileSync(file, bad);
  await assert.rejects(restoreEtcdSnapshot(opts(file, join(tmp, "d1"))), /expected sha256/);
  const r = await restoreEtcdSnapshot(opts(file, join(tmp, "d2"), true));
  assert.equal(r.header.revision, 16);
  assert.equal(r.header.compactRevision, 5);
  assert.ok(existsSync(join(tmp, "d2", "member", "wal")));
});
