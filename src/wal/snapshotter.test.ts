import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Snapshotter, decodeSnapshot, encodeSnapshot, snapshotName } from "./snapshotter.ts";
import type { SnapshotFile } from "./snapshotter.ts";
import type { WalLogger } from "./wal.ts";

const root = await mkdtemp(join(tmpdir(), "kvctl-snap-"));
after(() => rm(root, { recursive: true, force: true }));
let n = 0;
async function newDir(): Promise<string> {
  const d = join(root, `s${n++}`);
  await mkdir(d);
  return d;
}

function snap(index: number, term: number): SnapshotFile {
  return { index, term, data: Buffer.from(`{"store":${index}}`), meta: Buffer.from('{"voters":[1]}') };
}
const norm = (s: SnapshotFile | null): unknown => s && { ...s, data: Buffer.from(s.data), meta: Buffer.from(s.meta) };

function capture(): WalLogger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info() {}, warn(msg) { warnings.push(msg); } };
}

test("snapshotName is <term:16 hex>-<index:16 hex>.snap", () => {
  assert.equal(snapshotName(2, 0x1f), "0000000000000002-000000000000001f.snap");
});

test("encodeSnapshot and decodeSnapshot round trip, with empty and large parts", () => {
  for (const s of [snap(1, 1), { index: 2 ** 50, term: 7, data: new Uint8Array(), meta: new Uint8Array() }, { ...snap(3, 2), data: Buffer.alloc(1 << 20, 9) }]) {
    assert.deepEqual(norm(decodeSnapshot(encodeSnapshot(s))), norm(s));
  }
});

test("Snapshotter.save writes the same bytes as encodeSnapshot, also for data checksummed in several slices", async () => {
  const dir = await newDir();
  const big = Buffer.alloc(9 * 1024 * 1024 + 17);
  for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
  const s = { ...snap(5, 3), data: big };
  await new Snapshotter(dir).save(s);
  const onDisk = await readFile(join(dir, snapshotName(3, 5)));
  assert.ok(onDisk.equals(encodeSnapshot(s)));
  assert.deepEqual(norm(decodeSnapshot(onDisk)), norm(s));
});

test("Snapshotter.loadNewest returns null when there is no snapshot", async () => {
  assert.equal(await new Snapshotter(await newDir()).loadNewest(), null);
});

test("Snapshotter.loadNewest returns the snapshot with the highest index", async () => {
  const dir = await newDir();
  const s = new Snapshotter(dir);
  await s.save(snap(10, 2));
  await s.save(snap(30, 3));
  await s.save(snap(20, 3));
  assert.deepEqual(norm(await s.loadNewest()), norm(snap(30, 3)));
  assert.ok((await readdir(dir)).every((f) => !f.endsWith(".tmp")));
});

const damages = [
  { name: "a flipped data byte", damage: (b: Buffer) => { b[b.length - 6] = (b[b.length - 6] as number) ^ 1; return b; } },
  { name: "a cut-off end", damage: (b: Buffer) => b.subarray(0, b.length - 3) },
  { name: "an empty file", damage: (_b: Buffer) => Buffer.alloc(0) },
  { name: "a header that disagrees with the name", damage: (_b: Buffer) => encodeSnapshot(snap(29, 3)) },
] as const;

for (const d of damages) {
  test(`Snapshotter.loadNewest renames a newest snapshot with ${d.name} to .broken and falls back`, async () => {
    const dir = await newDir();
    const log = capture();
    const s = new Snapshotter(dir, { logger: log });
    await s.save(snap(10, 2));
    await s.save(snap(30, 3));
    const newest = join(dir, snapshotName(3, 30));
    await writeFile(newest, d.damage(await readFile(newest)));
    assert.deepEqual(norm(await s.loadNewest()), norm(snap(10, 2)));
    assert.equal(log.warnings.length, 1);
    assert.deepEqual((await readdir(dir)).sort(), [snapshotName(2, 10), `${snapshotName(3, 30)}.broken`]);
  });
}

test("Snapshotter.loadNewest deletes leftover temp files of a crashed save", async () => {
  const dir = await newDir();
  const s = new Snapshotter(dir);
  await s.save(snap(5, 1));
  await writeFile(join(dir, `${snapshotName(1, 9)}.tmp`), "partial");
  assert.deepEqual(norm(await s.loadNewest()), norm(snap(5, 1)));
  assert.deepEqual(await readdir(dir), [snapshotName(1, 5)]);
});

test("Snapshotter.purge keeps only the newest files", async () => {
  const dir = await newDir();
  const s = new Snapshotter(dir);
  for (const i of [1, 2, 3, 4, 5]) await s.save(snap(i * 10, 1));
  await s.purge(2);
  assert.deepEqual((await readdir(dir)).sort(), [snapshotName(1, 40), snapshotName(1, 50)]);
  await s.purge(5);
  assert.equal((await readdir(dir)).length, 2);
});
