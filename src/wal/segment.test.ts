// readWrittenPart: the last segment's bytes up to its trailing zeros, the zeros only checked.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { trailingZeroStart } from "./decoder.ts";
import { readWrittenPart } from "./segment.ts";

const root = await mkdtemp(join(tmpdir(), "kvctl-wal-segment-"));
after(() => rm(root, { recursive: true, force: true }));
let n = 0;

async function file(bytes: Buffer): Promise<string> {
  const path = join(root, `f${n++}.wal`);
  await writeFile(path, bytes);
  return path;
}

function filled(size: number, ranges: [number, number][]): Buffer {
  const b = Buffer.alloc(size);
  for (const [from, to] of ranges) for (let i = from; i < to; i++) b[i] = (i % 251) + 1;
  return b;
}

test("data then zeros over several read chunks: up to the data's last sector", async () => {
  const whole = filled(3 * 1024 * 1024 + 100, [[0, 3000]]);
  const got = await readWrittenPart(await file(whole));
  assert.equal(got.length, 3072);
  assert.deepEqual(got, whole.subarray(0, 3072));
});

test("data after a run of zeros (a hole) is kept: the cut is after the LAST non-zero byte", async () => {
  const lastData = 1024 * 1024 + 700; // in the second chunk from the start, not the last one
  const whole = filled(4 * 1024 * 1024, [[0, 4096], [lastData - 10, lastData]]);
  const got = await readWrittenPart(await file(whole));
  assert.equal(got.length, Math.ceil(lastData / 512) * 512);
  assert.deepEqual(got, whole.subarray(0, got.length));
  // The tail rules see the same zero-run start as in the whole file.
  assert.equal(trailingZeroStart(got, 0), trailingZeroStart(whole, 0));
});

test("a file of zeros gives one sector of zeros; a short one itself", async () => {
  assert.deepEqual(await readWrittenPart(await file(Buffer.alloc(2 * 1024 * 1024))), Buffer.alloc(512));
  assert.deepEqual(await readWrittenPart(await file(Buffer.alloc(100))), Buffer.alloc(100));
  assert.equal((await readWrittenPart(await file(Buffer.alloc(0)))).length, 0);
});

test("no trailing zeros: the whole file, even off a sector boundary", async () => {
  const whole = filled(1000, [[0, 1000]]);
  assert.deepEqual(await readWrittenPart(await file(whole)), whole);
  const big = filled(1024 * 1024 + 3, [[0, 1024 * 1024 + 3]]);
  assert.deepEqual(await readWrittenPart(await file(big)), big);
});
