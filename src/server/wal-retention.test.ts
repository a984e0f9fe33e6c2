// --max-wals on a running member: small WAL segments (a test hook, not a flag) and a small
// --snapshot-count make many segments and many snapshots, so the retention is visible.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KvServer } from "./kv-server.ts";
import { parseServeArgs } from "./config.ts";
import { silentLogger } from "./logger.ts";
import type { ServerConfig } from "./config.ts";
import { until } from "../until.test-helper.ts";

const root = await mkdtemp(join(tmpdir(), "kvctl-wal-retention-"));
after(() => rm(root, { recursive: true, force: true }));

const SEGMENT_BYTES = 16 * 1024;

async function configFor(dir: string, extra: string[]): Promise<ServerConfig> {
  const peer = "http://127.0.0.1:47931";
  const c = await parseServeArgs(["--name", "m", "--data-dir", dir, "--initial-cluster", `m=${peer}`, "--initial-advertise-peer-urls", peer, "--listen-peer-urls", peer, "--snapshot-count", "20", ...extra], {}, () => undefined);
  assert.ok(c);
  return c;
}

const walFiles = async (dir: string): Promise<string[]> => (await readdir(dir)).filter((f) => f.endsWith(".wal")).sort();

/** Starts a member, writes `n` v2 keys, and returns it (running). */
async function run(config: ServerConfig, from: number, n: number): Promise<KvServer> {
  const kv = new KvServer({ config, logger: silentLogger, walSegmentBytes: SEGMENT_BYTES });
  await kv.start();
  await until(() => kv.isLeader, "leadership", 10_000);
  const val = "x".repeat(300);
  for (let i = from; i < from + n; i++) {
    const r = await kv.propose({ t: "v2", time: Date.now(), r: { method: "PUT", path: `/r/k${i}`, val, dir: false, prevValue: "", prevIndex: 0, recursive: false, sorted: false } });
    assert.ok(r.ok);
  }
  return kv;
}

test("--max-wals 3: old WAL files go until 3 remain once snapshots cover them; the member restarts from what is left", async () => {
  const dir = join(root, "three");
  const config = await configFor(dir, ["--max-wals", "3"]);
  const walDir = join(dir, "member", "wal");
  const kv = await run(config, 0, 400);
  try {
    // The last snapshot (every 20 entries) is recorded in the background.
    await until(async () => (await walFiles(walDir)).length <= 3, "at most 3 WAL files", 10_000);
    const files = await walFiles(walDir);
    // Exactly 3: files no snapshot needs are kept up to the count, as etcd keeps them.
    assert.equal(files.length, 3, files.join(","));
    assert.ok(!files.includes("0000000000000000-0000000000000000.wal"), `the first segment went: ${files.join(",")}`);
    assert.ok(Number.parseInt((files[0] as string).slice(0, 16), 16) >= 5, `400 entries of 300 bytes made more segments than kept: ${files.join(",")}`);
  } finally {
    // A member left running keeps the file's process alive past its tests.
    await kv.stop();
  }
  const again = await run(config, 400, 10);
  assert.equal(again.store.get("/r/k0", {}, Date.now()).node?.value, "x".repeat(300));
  assert.equal(again.store.get("/r/k409", {}, Date.now()).node?.value, "x".repeat(300));
  await again.stop();
});

test("--max-wals 0 keeps every WAL file, as etcd's does", async () => {
  const dir = join(root, "zero");
  const config = await configFor(dir, ["--max-wals", "0"]);
  const walDir = join(dir, "member", "wal");
  const kv = await run(config, 0, 400);
  await kv.stop();
  const files = await walFiles(walDir);
  assert.equal(files[0], "0000000000000000-0000000000000000.wal");
  assert.ok(files.length >= 6, files.join(","));
  files.forEach((f, i) => assert.equal(Number.parseInt(f.slice(0, 16), 16), i, "no gap in the sequence"));
  const again = await run(config, 400, 1);
  assert.equal(again.store.get("/r/k0", {}, Date.now()).node?.value, "x".repeat(300));
  await again.stop();
});

test("a needed WAL file is kept whatever --max-wals says (--max-wals 1)", async () => {
  const dir = join(root, "one");
  const config = await configFor(dir, ["--max-wals", "1"]);
  const walDir = join(dir, "member", "wal");
  const kv = await run(config, 0, 300);
  await kv.stop();
  // Restart needs the segment holding the last snapshot and every one after it: it works.
  const again = await run(config, 300, 1);
  assert.equal(again.store.get("/r/k299", {}, Date.now()).node?.value, "x".repeat(300));
  assert.ok((await walFiles(walDir)).length >= 1);
  await again.stop();
});
