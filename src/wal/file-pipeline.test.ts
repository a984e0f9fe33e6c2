import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, open, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FilePipeline } from "./file-pipeline.ts";

async function withDir(f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "kvctl-pipeline-"));
  try {
    await f(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test("FilePipeline prepares a file of fillBytes zeros, synced once", async () => {
  await withDir(async (dir) => {
    // Count datasync calls on FileHandles (one prototype for all of them).
    const probe = await open(join(dir, "probe"), "w");
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    const original = proto.datasync;
    let syncs = 0;
    proto.datasync = function (this: unknown) {
      syncs++;
      return original.call(this);
    };
    try {
      const p = new FilePipeline({ dir, fillBytes: 40_960 });
      const { fh, path } = await p.take();
      await fh.close();
      const bytes = await readFile(path);
      assert.equal(bytes.length, 40_960);
      assert.ok(bytes.every((b) => b === 0), "every byte is zero");
      assert.equal(syncs, 1, "synced before it is handed over");
    } finally {
      proto.datasync = original;
    }
  });
});

test("FilePipeline.close deletes a file prepared but never taken; the next one gets a new name", async () => {
  await withDir(async (dir) => {
    const p = new FilePipeline({ dir, fillBytes: 8192 });
    const first = await p.take();
    await first.fh.close();
    p.start();
    await p.close();
    assert.deepStrictEqual((await readdir(dir)).sort(), ["0.tmp"], "the untaken 1.tmp is gone, the taken file is the caller's");
  });
});
