// Torn tails are repaired; anything else that is damaged stops open() with the file and offset.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scanSegment } from "./decoder.ts";
import { WalCorruptError } from "./errors.ts";
import { recordSize } from "./record.ts";
import type { WalEntry } from "./record.ts";
import { Wal } from "./wal.ts";
import type { WalLogger } from "./wal.ts";

const root = await mkdtemp(join(tmpdir(), "kvctl-wal-repair-"));
after(() => rm(root, { recursive: true, force: true }));
let n = 0;
const newDir = (): string => join(root, `w${n++}`, "wal");
const SEG = 64 * 1024;
const SNAP0 = { snapshot: { index: 0, term: 0 }, segmentBytes: SEG };

function ent(index: number, size = 100): WalEntry {
  return { term: 1, index, type: 0, data: Buffer.alloc(size, `x${index}-`) };
}
const range = (from: number, to: number, size = 100): WalEntry[] => Array.from({ length: to - from + 1 }, (_, i) => ent(from + i, size));
const norm = (es: WalEntry[]): WalEntry[] => es.map((e) => ({ ...e, data: Buffer.from(e.data) }));
const segmentFiles = async (dir: string): Promise<string[]> => (await readdir(dir)).filter((f) => f.endsWith(".wal")).sort();

/** A WAL of one segment whose last record is entry `count` (small, so every offset is cheap to try). */
async function oneSegment(count: number): Promise<{ dir: string; path: string; pristine: Buffer; offsets: number[] }> {
  const dir = newDir();
  const wal = await Wal.create(dir, Buffer.from("meta"), { segmentBytes: SEG });
  await wal.save({ term: 1, vote: 1, commit: 0 }, range(1, count - 1));
  await wal.save(null, [ent(count, 20)]);
  await wal.close();
  const path = join(dir, (await segmentFiles(dir))[0] as string);
  const pristine = await readFile(path);
  const offsets = scanSegment(pristine, { file: path, last: true, prevCrc: null }).records.map((r) => r.offset);
  return { dir, path, pristine, offsets };
}

function capture(): WalLogger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info() {}, warn(msg) { warnings.push(msg); } };
}

const variants = [
  { name: "the file ends", damage: (b: Buffer, cut: number, _end: number) => b.subarray(0, cut) },
  { name: "the rest is zero (preallocated)", damage: (b: Buffer, cut: number, end: number) => { const c = Buffer.from(b); c.fill(0, cut, end); return c; } },
] as const;

for (const v of variants) {
  test(`Wal.open truncates a torn last record at every byte offset when ${v.name}, and stays appendable`, async () => {
    const { dir, path, pristine, offsets } = await oneSegment(4);
    const x = offsets.at(-1) as number;
    const size = recordSize(pristine.readUInt32LE(x));
    for (let k = 0; k < size; k++) {
      await writeFile(path, v.damage(pristine, x + k, x + size));
      await rm(`${path}.broken`, { force: true });
      const log = capture();
      const r = await Wal.open(dir, { ...SNAP0, logger: log });
      assert.deepEqual(norm(r.entries), norm(range(1, 3)), `k=${k}`);
      let kept = k; // bytes of the torn record that are not zero: what repair reports as dropped
      while (kept > 0 && pristine[x + kept - 1] === 0) kept--;
      if (kept === 0) {
        assert.equal(r.repaired, null, `k=${k}: nothing but zeros is the clean end`);
      } else {
        assert.deepEqual(r.repaired, { file: path, offset: x, droppedBytes: kept }, `k=${k}`);
        assert.equal(log.warnings.length, 1);
        assert.deepEqual(await readFile(`${path}.broken`), pristine.subarray(x, x + kept));
      }
      await r.wal.save(null, [ent(4, 30)]);
      await r.wal.close();
      const r2 = await Wal.open(dir, SNAP0);
      assert.equal(r2.repaired, null);
      assert.deepEqual(norm(r2.entries), norm([...range(1, 3), ent(4, 30)]), `k=${k} after append`);
      await r2.wal.close();
    }
  });
}

test("Wal.open treats a record with a whole zero sector as torn even when later sectors reached the disk", async () => {
  const dir = newDir();
  const wal = await Wal.create(dir, Buffer.from("meta"), { segmentBytes: SEG });
  await wal.save(null, range(1, 2));
  await wal.save(null, [ent(3, 3000), ent(4)]); // one batch spanning several sectors
  await wal.close();
  const path = join(dir, (await segmentFiles(dir))[0] as string);
  const buf = await readFile(path);
  const x = scanSegment(buf, { file: path, last: true, prevCrc: null }).records.at(-2)?.offset as number;
  const sector = Math.ceil((x + 600) / 512) * 512;
  buf.fill(0, sector, sector + 512);
  await writeFile(path, buf);
  const r = await Wal.open(dir, SNAP0);
  assert.deepEqual(norm(r.entries), norm(range(1, 2)));
  assert.equal(r.repaired?.offset, x);
  await r.wal.close();
});

interface CorruptCase { name: string; at: (x: number, size: number) => number; mask: number; zeroHeader?: true }
const corruptCases: CorruptCase[] = [
  { name: "a payload byte", at: (x) => x + 40, mask: 0x20 },
  { name: "a crc byte", at: (x) => x + 5, mask: 0x01 },
  { name: "the type byte", at: (x) => x + 8, mask: 0x04 },
  { name: "a trailer byte", at: (x, size) => x + size - 1, mask: 0xff },
  { name: "length byte 0", at: (x) => x, mask: 0x08 },
  { name: "length byte 1", at: (x) => x + 1, mask: 0x01 },
  { name: "length byte 2 (points past the written data)", at: (x) => x + 2, mask: 0x01 },
  { name: "length byte 3", at: (x) => x + 3, mask: 0x01 },
  { name: "the whole header zeroed", at: (x) => x, mask: 0, zeroHeader: true },
];

for (const c of corruptCases) {
  test(`Wal.open throws WalCorruptError naming file and offset when ${c.name} of an earlier record changes`, async () => {
    const { dir, path, pristine, offsets } = await oneSegment(8);
    const x = offsets[5] as number; // entry 3 of 8: records follow it
    const size = recordSize(pristine.readUInt32LE(x));
    const buf = Buffer.from(pristine);
    if (c.zeroHeader) buf.fill(0, x, x + 8);
    else buf[c.at(x, size)] = (buf[c.at(x, size)] as number) ^ c.mask;
    await writeFile(path, buf);
    await assert.rejects(Wal.open(dir, SNAP0), (err: unknown) => {
      assert.ok(err instanceof WalCorruptError, String(err));
      assert.equal(err.file, path);
      assert.equal(err.offset, x);
      assert.match(err.message, new RegExp(`${path.replaceAll("/", "\\/")}.* offset ${x}$`));
      return true;
    });
  });
}

test("Wal.open throws WalCorruptError when the complete last record has a flipped byte", async () => {
  const { dir, path, pristine, offsets } = await oneSegment(4);
  const x = offsets.at(-1) as number;
  const buf = Buffer.from(pristine);
  buf[x + 12] = (buf[x + 12] as number) ^ 0x10;
  await writeFile(path, buf);
  await assert.rejects(Wal.open(dir, SNAP0), (err: unknown) => err instanceof WalCorruptError && err.offset === x);
});

const sealedCases = [
  { name: "a flipped payload byte", damage: (b: Buffer, x: number) => { b[x + 30] = (b[x + 30] as number) ^ 1; return b; } },
  { name: "its end cut off", damage: (b: Buffer, _x: number) => b.subarray(0, b.length - 8) },
  { name: "a zeroed last record", damage: (b: Buffer, _x: number) => { const last = b.length - 128; return b.fill(0, last); } },
] as const;

for (const c of sealedCases) {
  test(`Wal.open throws WalCorruptError for ${c.name} in a segment that is not the last`, async () => {
    const dir = newDir();
    const wal = await Wal.create(dir, Buffer.from("meta"), { segmentBytes: 4096 });
    for (let i = 1; i <= 90; i += 3) await wal.save(null, range(i, i + 2));
    await wal.close();
    const files = await segmentFiles(dir);
    assert.ok(files.length >= 3);
    const path = join(dir, files[0] as string);
    const buf = await readFile(path);
    const x = scanSegment(buf, { file: path, last: false, prevCrc: null }).records[6]?.offset as number;
    await writeFile(path, c.damage(Buffer.from(buf), x));
    await assert.rejects(Wal.open(dir, SNAP0), (err: unknown) => err instanceof WalCorruptError && err.file === path && err.message.includes(path));
  });
}
