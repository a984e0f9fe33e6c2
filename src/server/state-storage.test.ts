// Installing a leader's snapshot swaps the v3 database while the member goes on serving:
// reads and hashes during the install must meet an open database (the old one until the
// swap, the received one after), and the received file must end under the member's name.
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { V2AuthState, V3AuthState } from "../auth/index.ts";
import { MvccDb } from "../backend/index.ts";
import { V2Store } from "../store/v2/store.ts";
import { adoptReceivedDb, openKeySpace, receivedDbPath, v3DbPath } from "./bootstrap.ts";
import { createLogger } from "./logger.ts";
import { Membership } from "./membership.ts";
import { StateStorage } from "./state-storage.ts";
import { applyCommand } from "./apply.ts";

const root = mkdtempSync(join(tmpdir(), "kvctl-state-storage-"));
after(() => rmSync(root, { recursive: true, force: true }));
const logger = createLogger("error");

function member(name: string, quotaBackendBytes = Infinity, commitDelayMs?: number): StateStorage {
  const dataDir = join(root, name);
  mkdirSync(join(dataDir, "member", "snap"), { recursive: true });
  const db = MvccDb.open({ path: v3DbPath(dataDir), ...(commitDelayMs === undefined ? {} : { commitDelayMs }) });
  const v3 = openKeySpace(db, undefined, 0);
  return new StateStorage(
    { store: new V2Store(), auth: new V2AuthState(), v3, v3db: db, v3auth: new V3AuthState(), membership: new Membership(1, []) },
    { db: { path: v3DbPath(dataDir) }, dataDir, quotaBackendBytes, logger },
  );
}

const put = (s: StateStorage, key: string, value: string): void => {
  s.v3.put({ key: Buffer.from(key), value: Buffer.from(value), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false });
};
const value = (s: StateStorage, key: string): string | undefined =>
  s.v3.range({ key: Buffer.from(key), rangeEnd: Buffer.alloc(0), limit: 0, revision: 0, sortOrder: 0, sortTarget: 0, serializable: true, keysOnly: false, countOnly: false, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0 }).kvs[0]?.value.toString();

test("a snapshot install swaps the database in without a moment where reads meet a closed file", async () => {
  const leader = member("leader");
  for (let i = 0; i < 200; i++) put(leader, `k${i}`, `leader-${i}`);
  await leader.applied(10);
  const data = await leader.snapshotData(() => false);
  assert.ok(data !== undefined);
  const copy = await leader.snapshotDbCopy();

  const follower = member("follower");
  for (let i = 0; i < 50; i++) put(follower, `old${i}`, "x");
  await follower.applied(3);
  const received = follower.receivePath();
  copyFileSync(copy.path, received);
  copy.release();
  follower.receivedDb(10, received);
  assert.ok(existsSync(receivedDbPath(join(root, "follower"), 10)), "kept under etcd's name until the install");

  // Reads on every turn of the event loop while the install runs: the old database's
  // close and the new one's rename are awaited inside it.
  let reads = 0;
  let installing = true;
  const reader = (async () => {
    while (installing) {
      follower.hash();
      const v = value(follower, "k7") ?? value(follower, "old7");
      assert.ok(v !== undefined, "a key of the old or the new state is readable");
      reads++;
      await new Promise((r) => setImmediate(r));
    }
  })();
  await follower.install(10, data);
  installing = false;
  await reader;
  assert.ok(reads > 0);

  assert.equal(value(follower, "k7"), "leader-7");
  assert.equal(value(follower, "old7"), undefined, "the follower's own keys went with its database");
  assert.equal(follower.hash(), leader.hash());
  assert.equal(follower.v3Floor, 10);
  const snapFiles = readdirSync(join(root, "follower", "member", "snap")).sort();
  assert.deepEqual(snapFiles.filter((f) => !f.endsWith("-lock")), ["db"], "the received file became the member's database");
  // Writes after the install go to the file under the member's name.
  put(follower, "after", "1");
  await follower.applied(11);
  await follower.close();
  await leader.close();
  const reopened = MvccDb.open({ path: v3DbPath(join(root, "follower")) });
  assert.equal(reopened.consistentIndex, 11);
  await reopened.close();
});

test("a restart adopts the database of an interrupted install and removes left-overs", async () => {
  const dataDir = join(root, "crashed");
  const snapDir = join(dataDir, "member", "snap");
  mkdirSync(snapDir, { recursive: true });
  const fill = async (path: string, key: string, index: number): Promise<void> => {
    const db = MvccDb.open({ path });
    const ks = openKeySpace(db, undefined, 0);
    ks.put({ key: Buffer.from(key), value: Buffer.from("v"), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false });
    await db.commit(index);
    await db.close();
  };
  await fill(v3DbPath(dataDir), "old", 5);
  await fill(receivedDbPath(dataDir, 20), "from-leader", 20);
  await fill(receivedDbPath(dataDir, 7), "stale", 7);
  writeFileSync(join(snapDir, "recv-0a1b2c.db"), "partial");
  writeFileSync(join(snapDir, "backup-0a1b2c.tmp"), "partial");
  const snapName = "0000000000000002-0000000000000014.snap";
  writeFileSync(join(snapDir, snapName), "a snapshot file stays");

  await adoptReceivedDb(dataDir, 20, logger);

  assert.deepEqual(readdirSync(snapDir).filter((f) => !f.endsWith("-lock")).sort(), [snapName, "db"].sort());
  const db = MvccDb.open({ path: v3DbPath(dataDir) });
  assert.equal(db.consistentIndex, 20);
  const ks = openKeySpace(db, undefined, 20);
  assert.equal(ks.keyCount, 1);
  await db.close();

  // Without an interrupted install (the file's index is not the snapshot's) the member's file stays.
  await fill(receivedDbPath(dataDir, 30), "other", 30);
  await adoptReceivedDb(dataDir, 20, logger);
  const again = MvccDb.open({ path: v3DbPath(dataDir) });
  assert.equal(again.consistentIndex, 20);
  await again.close();
  assert.equal(existsSync(receivedDbPath(dataDir, 30)), false);
});

test("a write over the quota is applied but answered NOSPACE, judged with the writes not committed yet", async () => {
  // etcd 3.4.23 with a 1.5 MB quota took 5 to 7 sequential puts of 200 kB; within one
  // commit interval (a minute here) only the bytes written since the last commit tell.
  const s = member("quota", 1_500_000, 60_000);
  const big = Buffer.alloc(200_000, "x");
  const answers: string[] = [];
  for (let i = 0; i < 10; i++) {
    const r = applyCommand(s, { t: "v3", m: 1, id: i + 1, time: Date.now(), op: { k: "put", r: { key: Buffer.from("big"), value: big, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false } } }, i + 1);
    assert.ok(r.ok, "applied: the state stays the same on every member whatever its file");
    answers.push(r.noSpace === true ? "nospace" : "ok");
  }
  const fits = answers.indexOf("nospace");
  assert.ok(fits >= 5 && fits <= 7, `puts that fit: ${answers.join(",")}`);
  assert.ok(answers.slice(fits).every((a) => a === "nospace"), answers.join(","));
  assert.equal(s.v3.revision, 11, "every put applied");
  // A read-only operation costs nothing and is never judged.
  assert.equal(applyCommand(s, { t: "v3", m: 1, id: 11, time: Date.now(), op: { k: "deleteRange", r: { key: Buffer.from("none"), rangeEnd: Buffer.alloc(0), prevKv: false } } }, 11).ok, true);
  await s.close();
});
