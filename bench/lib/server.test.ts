// ServerProcess: start, measure, stop. The etcd case runs only where etcd is installed.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { memberArgs, portInUse, ServerProcess, type ServerSpec } from "./server.ts";

const dir = mkdtempSync(join(tmpdir(), "kvctl-bench-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));

// ports 24690-24693: the end of the bench's range, away from the driver's 24600-24611
const ETCD: ServerSpec = { kind: "etcd", command: "/usr/bin/etcd", prefixArgs: ["--enable-v2=true"], clientPort: 24690, peerPort: 24691 };

test("memberArgs passes etcd's single-member flags on loopback", () => {
  const a = memberArgs(ETCD, "/d");
  assert.deepEqual(a.slice(0, 4), ["--name", "b", "--data-dir", "/d"]);
  assert.ok(a.includes("http://127.0.0.1:24690"));
  assert.equal(a[a.indexOf("--initial-cluster") + 1], "b=http://127.0.0.1:24691");
});

test("ServerProcess.start rejects quickly when the server process exits", async () => {
  const spec: ServerSpec = { kind: "kvctl", command: process.execPath, prefixArgs: ["-e", "process.exit(1)", "--"], clientPort: 24692, peerPort: 24693 };
  const t0 = performance.now();
  await assert.rejects(
    ServerProcess.start({ spec, dataDir: join(dir, "exit"), logFile: join(dir, "exit.log"), deadlineMs: 20_000 }),
    /process exited/,
  );
  assert.ok(performance.now() - t0 < 10_000);
});

test("ServerProcess starts etcd healthy, reads its RSS and stops it", async (t) => {
  if (!existsSync(ETCD.command)) {
    t.skip("etcd not installed");
    return;
  }
  const s = await ServerProcess.start({ spec: ETCD, dataDir: join(dir, "etcd"), logFile: join(dir, "etcd.log"), deadlineMs: 30_000 });
  try {
    assert.ok(s.startupMs > 0);
    assert.ok((s.rssKb() ?? 0) > 1000);
    assert.equal(await portInUse(ETCD.clientPort), true);
  } finally {
    await s.stop();
  }
  assert.equal(s.rssKb(), null);
  assert.equal(await portInUse(ETCD.clientPort), false);
});
