import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Snapshotter } from "../../wal/index.ts";
import { brokenSnapshots, brokenSnapshotsWarning, passedOver, walWithoutSnapshotError } from "./broken-snapshots.ts";

const name = (term: number, index: number): string => `${term.toString(16).padStart(16, "0")}-${index.toString(16).padStart(16, "0")}.snap`;

test("brokenSnapshots: intact kvctl files renamed .broken are told from damaged ones, newest first", async () => {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-broken-"));
  try {
    const s = new Snapshotter(dir);
    for (const index of [5, 10]) await s.save({ term: 2, index, meta: new Uint8Array(0), data: Buffer.from(`state ${index}`) });
    renameSync(join(dir, name(2, 5)), join(dir, `${name(2, 5)}.broken`));
    renameSync(join(dir, name(2, 10)), join(dir, `${name(2, 10)}.broken`));
    writeFileSync(join(dir, `${name(2, 15)}.broken`), "not a snapshot");
    const found = await brokenSnapshots(dir);
    assert.deepEqual(found, [
      { name: `${name(2, 15)}.broken`, index: 15, intact: false },
      { name: `${name(2, 10)}.broken`, index: 10, intact: true },
      { name: `${name(2, 5)}.broken`, index: 5, intact: true },
    ]);
    // Restarting from the WAL alone passes over both intact files; from snapshot 5, one.
    assert.deepEqual(passedOver(found, 0).map((b) => b.index), [10, 5]);
    assert.deepEqual(passedOver(found, 10), []);
    assert.match(brokenSnapshotsWarning(found, 0)!, /^2 intact kvctl snapshot file\(s\) were renamed \.snap\.broken .*etcdctl backup.*restarting from the WAL alone \(no usable snapshot\); to use them, rename them back without "\.broken"$/);
    assert.equal(brokenSnapshotsWarning(found, 10), "damaged snapshot files kept as .snap.broken; restarting from snapshot 10");
    assert.equal(brokenSnapshotsWarning([], 0), undefined);
    const err = walWithoutSnapshotError(new Error("Cannot read WAL: entry 3 leaves a gap"), dir, passedOver(found, 0).slice(0, 1));
    assert.equal(err.message, `Cannot read WAL: entry 3 leaves a gap; the WAL needs the snapshot ${join(dir, `${name(2, 10)}.broken`)} renamed .snap.broken by a program that cannot read kvctl snapshots (etcdctl backup?): rename it back without ".broken" and start again`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("brokenSnapshots: a missing directory has none", async () => {
  assert.deepEqual(await brokenSnapshots(join(tmpdir(), "kvctl-no-such-dir-xyz")), []);
});
