import { test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError, normalizeGoFlags, parseServeArgs } from "./config.ts";

test("normalizeGoFlags turns single-dash long flags into double-dash ones", () => {
  assert.deepEqual(normalizeGoFlags(["-name", "x", "-data-dir=/d", "--log-level", "debug", "-", "-5"]), [
    "--name", "x", "--data-dir=/d", "--log-level", "debug", "-", "-5",
  ]);
});

test("parseServeArgs applies etcd's defaults", async () => {
  const c = await parseServeArgs([], {});
  assert.ok(c);
  assert.equal(c.name, "default");
  assert.equal(c.dataDir, "default.kvctl");
  assert.deepEqual(c.listenClientUrls.map((u) => u.href), ["http://127.0.0.1:2379/"]);
  assert.deepEqual(c.advertiseClientUrls, ["http://127.0.0.1:2379"]);
  assert.deepEqual([...c.initialCluster], [["default", ["http://127.0.0.1:2380"]]]);
  assert.equal(c.initialClusterState, "new");
  assert.equal(c.initialClusterToken, "etcd-cluster");
  assert.equal(c.snapshotCount, 100000);
  assert.equal(c.heartbeatInterval, 100);
  assert.equal(c.electionTimeout, 1000);
  assert.equal(c.maxRequestBytes, 1572864);
  assert.equal(c.logLevel, "info");
});

test("parseServeArgs accepts Go flag syntax and keeps the last of a repeated flag", async () => {
  const c = await parseServeArgs(["-name", "a", "-name=b", "--snapshot-count", "5", "-snapshot-count=7"], {});
  assert.ok(c);
  assert.equal(c.name, "b");
  assert.equal(c.dataDir, "b.kvctl");
  assert.equal(c.snapshotCount, 7);
});

test("parseServeArgs reads KV_ variables, and flags win over them", async () => {
  const c = await parseServeArgs(["--name", "flag"], { KV_NAME: "env", KV_DATA_DIR: "/tmp/x", KV_SNAPSHOT_COUNT: "9" });
  assert.ok(c);
  assert.equal(c.name, "flag");
  assert.equal(c.dataDir, "/tmp/x");
  assert.equal(c.snapshotCount, 9);
});

test("parseServeArgs accepts several comma-separated client URLs", async () => {
  const c = await parseServeArgs(["--listen-client-urls", "http://127.0.0.1:1,http://127.0.0.1:2", "--advertise-client-urls", "http://127.0.0.1:1"], {});
  assert.ok(c);
  assert.equal(c.listenClientUrls.length, 2);
});

const bad: Array<[string[], RegExp]> = [
  [["--election-timeout", "100"], /at least as 5 times/],
  [["--election-timeout", "60000", "--heartbeat-interval", "1000"], /less than 50000ms/],
  [["--heartbeat-interval", "abc"], /heartbeat-interval/],
  [["--initial-cluster-state", "old"], /initial-cluster-state/],
  [["--log-level", "loud"], /log-level/],
  [["--initial-cluster", "other=http://127.0.0.1:2380"], /couldn't find local name "default"/],
  [["--listen-client-urls", "http://127.0.0.1:1"], /advertise-client-urls is required/],
  [["--listen-client-urls", "ftp://x:1", "--advertise-client-urls", "http://x:1"], /scheme/],
  [["--listen-client-urls", "http://127.0.0.1", "--advertise-client-urls", "http://x:1"], /port/],
  [["--no-such-flag", "1"], /Unknown argument/],
  [["stray"], /not a valid flag|Unknown argument/],
  [["--snapshot-count", "0"], /snapshot-count/],
];
for (const [args, re] of bad) {
  test(`parseServeArgs rejects ${args.join(" ")}`, async () => {
    await assert.rejects(parseServeArgs(args, {}), (err: unknown) => err instanceof ConfigError && re.test(err.message));
  });
}
