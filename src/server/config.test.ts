import { test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError, parseGoFlags, parseServeArgs, serveFlags, serveHelp } from "./config.ts";

test("parseGoFlags reads one or two dashes, =value or the next argument, last value wins", () => {
  const r = parseGoFlags(["-name", "x", "-data-dir=/d", "--log-level", "debug", "--name=y", "--", "-ignored"]);
  assert.deepEqual([...r.values], [["name", "y"], ["data-dir", "/d"], ["log-level", "debug"]]);
  assert.deepEqual(r.rest, ["-ignored"]);
  assert.equal(r.help, false);
});

test("parseGoFlags stops at the first non-flag and reports help", () => {
  assert.deepEqual(parseGoFlags(["-h"]).help, true);
  assert.deepEqual(parseGoFlags(["--help"]).help, true);
  assert.deepEqual(parseGoFlags(["stray", "--name", "x"]).rest, ["stray", "--name", "x"]);
});

test("parseGoFlags words its errors as Go's flag package", () => {
  assert.throws(() => parseGoFlags(["--no-such-flag", "1"]), /flag provided but not defined: -no-such-flag/);
  assert.throws(() => parseGoFlags(["--name"]), /flag needs an argument: -name/);
  assert.throws(() => parseGoFlags(["---name", "x"]), /bad flag syntax/);
});

test("serveHelp lists every flag with its default and KV_ variable", () => {
  const h = serveHelp();
  for (const f of serveFlags) {
    assert.ok(h.includes(`--${f.name}`), f.name);
    assert.ok(h.includes(`KV_${f.name.toUpperCase().replace(/-/g, "_")}`), f.name);
  }
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

test("--snapshot-count 0 is etcd's default, 100000 (etcd 3.4.23 starts: 'set snapshot count to default 100000')", async () => {
  const c = await parseServeArgs(["--snapshot-count", "0"], {});
  assert.ok(c);
  assert.equal(c.snapshotCount, 100000);
});

test("an empty --listen-metrics-urls is taken, as etcd's UniqueURLs flags take \"\" (etcd 3.4.23 starts with --listen-metrics-urls=)", async () => {
  const c = await parseServeArgs(["--listen-metrics-urls="], {});
  assert.ok(c);
  assert.deepEqual(c.listenMetricsUrls, []);
});

test("an empty value of the other URL flags is their default, as etcd's UniqueURLs keep theirs for \"\" (etcd 3.4.23 with --listen-client-urls= --advertise-client-urls=... serves clients on the default address)", async () => {
  const peers = ["--listen-peer-urls=", "--initial-advertise-peer-urls="];
  const c = await parseServeArgs(["--listen-client-urls=", "--advertise-client-urls=http://127.0.0.1:30000", ...peers], {});
  assert.ok(c);
  assert.deepEqual(c.listenClientUrls.map(String), ["http://127.0.0.1:2379/"]);
  assert.deepEqual(c.advertiseClientUrls, ["http://127.0.0.1:30000"]);
  assert.deepEqual(c.listenPeerUrls.map(String), ["http://127.0.0.1:2380/"]);
  assert.deepEqual(c.initialAdvertisePeerUrls, ["http://127.0.0.1:2380"]);
  const all = await parseServeArgs(["--advertise-client-urls="], { KV_LISTEN_CLIENT_URLS: "" });
  assert.ok(all);
  assert.deepEqual(all.listenClientUrls.map(String), ["http://127.0.0.1:2379/"]);
  assert.deepEqual(all.advertiseClientUrls, ["http://127.0.0.1:2379"]);
  // Still given: etcd then wants the advertised URLs too.
  await assert.rejects(parseServeArgs(["--listen-client-urls="], {}), /--advertise-client-urls is required when --listen-client-urls is set explicitly/);
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

// The exit code is etcd 3.4.23's for the same command line: 2 when Go's flag set refuses
// it (Parse failed, or a panic for --log-level), 1 for what etcd finds after parsing.
// Not yet etcd's: a bad URL in a --*-urls flag is a flag value there (exit 2, "invalid
// value ... for flag -listen-client-urls"), kvctl finds it after parsing (exit 1).
const bad: Array<[string[], RegExp, 1 | 2]> = [
  [["--election-timeout", "100"], /at least as 5 times/, 1],
  [["--election-timeout", "60000", "--heartbeat-interval", "1000"], /less than 50000ms/, 1],
  [["--heartbeat-interval", "abc"], /heartbeat-interval/, 2],
  [["--initial-cluster-state", "old"], /initial-cluster-state/, 2],
  [["--log-level", "loud"], /log-level/, 2],
  [["--initial-cluster", "other=http://127.0.0.1:2380"], /couldn't find local name "default"/, 1],
  [["--initial-cluster", "default=notaurl"], /initial-cluster/, 1],
  [["--listen-client-urls", "http://127.0.0.1:1"], /advertise-client-urls is required/, 1],
  [["--listen-client-urls", "ftp://x:1", "--advertise-client-urls", "http://x:1"], /scheme/, 2],
  [["--listen-client-urls", "http://127.0.0.1", "--advertise-client-urls", "http://x:1"], /host:port/, 2],
  [["--no-such-flag", "1"], /not defined/, 2],
  [["--proxy", "junk"], /proxy/, 2],
  [["stray"], /not a valid flag/, 1],
  [["--snapshot-count", "-1"], /^invalid value "-1" for flag -snapshot-count: parse error$/, 2],
  // etcd's URLsValue flags refuse a bad URL as the flag set reads them (etcd 3.4.23: exit 2, Go's text).
  [["--listen-client-urls", "foo"], /^invalid value "foo" for flag -listen-client-urls: URL scheme must be http, https, unix, or unixs: foo$/, 2],
  [["--advertise-client-urls", "http://x:y"], /^invalid value "http:\/\/x:y" for flag -advertise-client-urls: parse "http:\/\/x:y": invalid port ":y" after host$/, 2],
  [["--listen-peer-urls", "127.0.0.1:2380"], /^invalid value "127.0.0.1:2380" for flag -listen-peer-urls: parse "127.0.0.1:2380": first path segment in URL cannot contain colon$/, 2],
  [["--initial-advertise-peer-urls", "http://127.0.0.1:2380/"], /: URL must not contain a path: http:\/\/127.0.0.1:2380\/$/, 2],
  [["--listen-metrics-urls", "http://127.0.0.1"], /: URL address does not have the form "host:port": http:\/\/127.0.0.1$/, 2],
];
for (const [args, re, exitCode] of bad) {
  test(`parseServeArgs rejects ${args.join(" ")} (exit ${exitCode})`, async () => {
    await assert.rejects(parseServeArgs(args, {}), (err: unknown) => err instanceof ConfigError && re.test(err.message) && err.exitCode === exitCode);
  });
}
