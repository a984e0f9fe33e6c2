// ls, watch and exec-watch against a real server. Watches start with --after-index at
// an index taken before the writes, so they never race the writes (no sleeps).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { runKvctl, spawnKvctl, startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
before(async () => {
  srv = await startServer();
  for (const args of [
    ["set", "/ls/a", "1"],
    ["set", "/ls/b/c", "2"],
    ["set", "/ls/b/d/e", "3"],
    ["mkdir", "/ls/f"],
  ]) {
    const r = await kv(args);
    assert.equal(r.code, 0, r.stderr);
  }
});
after(async () => {
  await srv?.stop();
});

function kv(args: string[], env?: Record<string, string>) {
  return runKvctl(["--endpoints", srv.url, ...args], env !== undefined ? { env } : {});
}

/** The store index now: what a watch with --after-index starts from. */
async function currentIndex(): Promise<number> {
  const r = await kv(["-o", "extended", "set", "/ls-index-probe", "x"]);
  const m = /^Index: (\d+)$/m.exec(r.stdout);
  assert.ok(m, r.stdout + r.stderr);
  return Number(m[1]);
}

const sortLines = (s: string): string[] => s.split("\n").filter((l) => l !== "").sort();

const lsCases: { name: string; args: string[]; lines: string[] }[] = [
  { name: "ls lists the children of a directory", args: ["ls", "/ls"], lines: ["/ls/a", "/ls/b", "/ls/f"] },
  { name: "ls -p marks directories with a slash", args: ["ls", "-p", "/ls"], lines: ["/ls/a", "/ls/b/", "/ls/f/"] },
  {
    name: "ls -r lists every key below",
    args: ["ls", "-r", "/ls"],
    lines: ["/ls/a", "/ls/b", "/ls/b/c", "/ls/b/d", "/ls/b/d/e", "/ls/f"],
  },
  {
    name: "ls -r -p combines both",
    args: ["ls", "--recursive", "-p", "/ls"],
    lines: ["/ls/a", "/ls/b/", "/ls/b/c", "/ls/b/d/", "/ls/b/d/e", "/ls/f/"],
  },
  { name: "ls of a key prints the key", args: ["ls", "/ls/a"], lines: ["/ls/a"] },
];

for (const c of lsCases) {
  test(c.name, async () => {
    const r = await kv(c.args);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(sortLines(r.stdout), c.lines);
    // Piped output never carries colour or tree drawing.
    assert.doesNotMatch(r.stdout, /\u001b\[|──/);
  });
}

test("ls --sort returns keys in order", async () => {
  const r = await kv(["ls", "--sort", "-r", "/ls"]);
  assert.equal(r.stdout, "/ls/a\n/ls/b\n/ls/b/c\n/ls/b/d\n/ls/b/d/e\n/ls/f\n");
});

test("ls -o json prints the whole response", async () => {
  const r = await kv(["-o", "json", "ls", "--sort", "/ls/b"]);
  assert.match(r.stdout, /^\{"action":"get","node":\{"key":"\/ls\/b","dir":true,"value":"","nodes":\[\{"key":"\/ls\/b\/c","value":"2","nodes":null,/);
});

test("ls -o extended prints the directory block without a value", async () => {
  const r = await kv(["-o", "extended", "ls", "/ls/b"]);
  assert.match(r.stdout, /^Key: \/ls\/b\nCreated-Index: \d+\nModified-Index: \d+\nTTL: 0\nIndex: \d+\n\n\n$/);
});

test("ls exits 4 when the directory is missing", async () => {
  const r = await kv(["ls", "/ls-missing"]);
  assert.equal(r.code, 4);
  assert.match(r.stderr, /^Error:  100: Key not found \(\/ls-missing\) \[\d+\]\n$/);
});

test("watch prints the value of the next change and exits 0", async () => {
  const idx = await currentIndex();
  await kv(["set", "/w/one", "first"]);
  const r = await kv(["watch", "--after-index", String(idx), "/w/one"]);
  assert.deepEqual([r.stdout, r.code], ["first\n", 0]);
});

test("watch -o extended prints the event block", async () => {
  const idx = await currentIndex();
  await kv(["set", "/w/ext", "v"]);
  const r = await kv(["-o", "extended", "watch", "--after-index", String(idx), "/w/ext"]);
  assert.match(r.stdout, /^Key: \/w\/ext\nCreated-Index: \d+\nModified-Index: \d+\nTTL: 0\nIndex: \d+\n\nv\n$/);
});

test("watch -r prefixes each event with its action and key, skipping directories", async () => {
  const idx = await currentIndex();
  await kv(["mkdir", "/w/rec/sub"]);
  await kv(["set", "/w/rec/sub/k", "1"]);
  const r = await kv(["-o", "json", "watch", "-r", "--after-index", String(idx), "/w/rec"]);
  assert.match(r.stdout, /^\[set\] \/w\/rec\/sub\/k\n\{"action":"set","node":\{"key":"\/w\/rec\/sub\/k","value":"1",/);
});

test("watch --forever prints every event until interrupted, then exits 0", async () => {
  const idx = await currentIndex();
  await kv(["set", "/w/f/a", "1"]);
  await kv(["rm", "/w/f/a"]);
  const w = spawnKvctl(["--endpoints", srv.url, "watch", "--forever", "-r", "--after-index", String(idx), "/w/f"]);
  await w.waitForOutput((out) => out.includes("PrevNode.Value: 1\n"));
  assert.equal(w.stdout(), "[set] /w/f/a\n1\n[delete] /w/f/a\nPrevNode.Value: 1\n");
  w.child.kill("SIGINT");
  assert.deepEqual(await w.exited, { code: 0, signal: null });
});

test("watch without a key exits 1", async () => {
  const r = await kv(["watch"]);
  assert.deepEqual([r.stderr, r.code], ["Error:  key required\n", 1]);
});

test("exec-watch runs the command with ETCD_WATCH_* and KV_WATCH_* set", async () => {
  const idx = await currentIndex();
  await kv(["set", "/w/exec/k", "val"]);
  const script = 'echo "$ETCD_WATCH_ACTION $ETCD_WATCH_KEY $ETCD_WATCH_VALUE $ETCD_WATCH_MODIFIED_INDEX|$KV_WATCH_ACTION $KV_WATCH_KEY $KV_WATCH_VALUE $KV_WATCH_MODIFIED_INDEX"';
  const w = spawnKvctl([
    "--endpoints", srv.url, "exec-watch", "-r", "--after-index", String(idx), "/w/exec", "--", "sh", "-c", script,
  ]);
  await w.waitForOutput((out) => out.includes("\n"));
  const m = /^set \/w\/exec\/k val (\d+)\|set \/w\/exec\/k val (\d+)\n$/.exec(w.stdout());
  assert.ok(m, w.stdout());
  assert.equal(m[1], m[2]);
  w.child.kill("SIGINT");
  assert.equal((await w.exited).code, 0);
});

test("exec-watch without a command exits 1", async () => {
  const r = await kv(["exec-watch", "/w/x"]);
  assert.deepEqual([r.stderr, r.code], ["Error:  key and command to exec required\n", 1]);
});
