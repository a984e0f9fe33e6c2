// kvctl's key commands against a real server, compared with what etcdctl v2 prints
// (recorded from etcdctl 3.4.23): stdout, stderr and exit code of every case.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { runKvctl, startServer, kvctlBin, type TestServer } from "../helpers/server.ts";
import { spawnSync } from "node:child_process";

let srv: TestServer;
before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv?.stop();
});

const kv = (args: string[], opts: { input?: string } = {}) => runKvctl(["--endpoints", srv.url, ...args], opts);

interface Case {
  name: string;
  setup?: string[][];
  args: string[];
  input?: string;
  stdout: string | RegExp;
  stderr?: string | RegExp;
  code: number;
}

const N = String.raw`\d+`;
const cases: Case[] = [
  { name: "set prints the value", args: ["set", "/k/set", "v1"], stdout: "v1\n", code: 0 },
  { name: "get prints the value", setup: [["set", "/k/get", "v2"]], args: ["get", "/k/get"], stdout: "v2\n", code: 0 },
  {
    name: "get exits 4 with etcd's error line when the key is missing",
    args: ["get", "/k/missing"],
    stdout: "",
    stderr: new RegExp(`^Error:  100: Key not found \\(/k/missing\\) \\[${N}\\]\\n$`),
    code: 4,
  },
  {
    name: "get -o extended prints the rfc2822-style block",
    setup: [["set", "/k/ext", "v3"]],
    args: ["-o", "extended", "get", "/k/ext"],
    stdout: new RegExp(`^Key: /k/ext\\nCreated-Index: ${N}\\nModified-Index: ${N}\\nTTL: 0\\nIndex: ${N}\\n\\nv3\\n$`),
    code: 0,
  },
  {
    name: "get -o json re-marshals like Go (nodes and prevNode null)",
    setup: [["set", "/k/json", "a<b>&c"]],
    args: ["-o", "json", "get", "/k/json"],
    stdout: new RegExp(
      `^\\{"action":"get","node":\\{"key":"/k/json","value":"a\\\\u003cb\\\\u003e\\\\u0026c","nodes":null,"createdIndex":${N},"modifiedIndex":${N}\\},"prevNode":null\\}\\n$`,
    ),
    code: 0,
  },
  { name: "get exits 1 on a directory", setup: [["mkdir", "/k/dir1"]], args: ["get", "/k/dir1"], stdout: "", stderr: "/k/dir1: is a directory\n", code: 1 },
  { name: "get exits 1 without a key", args: ["get"], stdout: "", stderr: "Error:  key required\n", code: 1 },
  {
    name: "set --ttl shows ttl and expiration in json",
    args: ["-o", "json", "set", "--ttl", "100", "/k/ttl", "x"],
    stdout: new RegExp(`"expiration":"[^"]+Z","ttl":(100|99)\\},"prevNode":null\\}\\n$`),
    code: 0,
  },
  {
    name: "set --swap-with-value exits 4 when the value differs",
    setup: [["set", "/k/cas", "v"]],
    args: ["set", "--swap-with-value", "x", "/k/cas", "w"],
    stdout: "",
    stderr: new RegExp(`^Error:  101: Compare failed \\(\\[x != v\\]\\) \\[${N}\\]\\n$`),
    code: 4,
  },
  {
    name: "set --swap-with-value swaps when it matches",
    setup: [["set", "/k/cas2", "v"]],
    args: ["-o", "extended", "set", "/k/cas2", "w", "--swap-with-value", "v"],
    stdout: new RegExp(`^Key: /k/cas2\\nCreated-Index: ${N}\\nModified-Index: ${N}\\nPrevNode.Value: v\\nTTL: 0\\nIndex: ${N}\\n\\nw\\n$`),
    code: 0,
  },
  { name: "set without a value and empty stdin exits 1", args: ["set", "/k/nov"], stdout: "", stderr: "Error:  value required\n", code: 1 },
  { name: "set reads the value from stdin", args: ["set", "/k/stdin"], input: "piped\n", stdout: "piped\n\n", code: 0 },
  { name: "set takes a value that looks like a flag after the key", args: ["set", "/k/neg", "-5"], stdout: "-5\n", code: 0 },
  { name: "set takes -- before the key", args: ["set", "--", "/k/dash", "-v"], stdout: "-v\n", code: 0 },
  { name: "set accepts Go-style -ttl", args: ["set", "-ttl", "30", "/k/gottl", "g"], stdout: "g\n", code: 0 },
  {
    name: "mk exits 4 when the key exists",
    setup: [["set", "/k/mk", "a"]],
    args: ["mk", "/k/mk", "b"],
    stdout: "",
    stderr: new RegExp(`^Error:  105: Key already exists \\(/k/mk\\) \\[${N}\\]\\n$`),
    code: 4,
  },
  {
    name: "mk --in-order creates a 20-digit key under the directory",
    args: ["-o", "json", "mk", "--in-order", "/k/queue", "job"],
    stdout: /^\{"action":"create","node":\{"key":"\/k\/queue\/\d{20}","value":"job",/,
    code: 0,
  },
  { name: "mkdir is silent in simple output", args: ["mkdir", "/k/md"], stdout: "", code: 0 },
  {
    name: "mkdir -o json shows the directory node",
    args: ["-o", "json", "mkdir", "/k/md2"],
    stdout: new RegExp(`^\\{"action":"create","node":\\{"key":"/k/md2","dir":true,"value":"","nodes":null,"createdIndex":${N},"modifiedIndex":${N}\\},"prevNode":null\\}\\n$`),
    code: 0,
  },
  { name: "setdir exits 4 on an existing directory", setup: [["setdir", "/k/sd"]], args: ["setdir", "/k/sd"], stdout: "", stderr: /^Error:  102: Not a file \(\/k\/sd\)/, code: 4 },
  { name: "update exits 4 when the key is missing", args: ["update", "/k/upmiss", "x"], stdout: "", stderr: /^Error:  100: Key not found/, code: 4 },
  {
    name: "update -o extended shows the previous value",
    setup: [["set", "/k/up", "old"]],
    args: ["-o", "extended", "update", "/k/up", "new"],
    stdout: /^Key: \/k\/up\n.*PrevNode.Value: old\nTTL: 0\nIndex: \d+\n\nnew\n$/s,
    code: 0,
  },
  { name: "updatedir --ttl is silent", setup: [["mkdir", "/k/ud"]], args: ["updatedir", "--ttl", "60", "/k/ud"], stdout: "", code: 0 },
  { name: "rm prints the previous value", setup: [["set", "/k/rm", "gone"]], args: ["rm", "/k/rm"], stdout: "PrevNode.Value: gone\n", code: 0 },
  { name: "rm exits 4 on a directory without --dir or -r", setup: [["set", "/k/rmd/a", "1"]], args: ["rm", "/k/rmd"], stdout: "", stderr: /^Error:  102: Not a file \(\/k\/rmd\)/, code: 4 },
  { name: "rm -r removes a directory silently", setup: [["set", "/k/rmr/a", "1"]], args: ["rm", "-r", "/k/rmr"], stdout: "", code: 0 },
  {
    name: "rm --with-value exits 4 on a mismatch",
    setup: [["set", "/k/rmv", "1"]],
    args: ["rm", "--with-value", "2", "/k/rmv"],
    stdout: "",
    stderr: /^Error:  101: Compare failed \(\[2 != 1\]\)/,
    code: 4,
  },
  { name: "rmdir exits 4 on a non-empty directory", setup: [["set", "/k/rmdir/a", "1"]], args: ["rmdir", "/k/rmdir"], stdout: "", stderr: /^Error:  108: Directory not empty/, code: 4 },
  { name: "rmdir removes an empty directory silently", setup: [["mkdir", "/k/rmdir2"]], args: ["rmdir", "/k/rmdir2"], stdout: "", code: 0 },
  {
    name: "an unsupported output format is reported on stderr with exit 0",
    setup: [["set", "/k/xml", "1"]],
    args: ["-o", "xml", "get", "/k/xml"],
    stdout: "",
    stderr: "Unsupported output format: xml\n",
    code: 0,
  },
];

for (const c of cases) {
  test(c.name, async () => {
    for (const s of c.setup ?? []) {
      const r = await kv(s);
      assert.equal(r.code, 0, `setup ${s.join(" ")}: ${r.stderr}`);
    }
    const r = await kv(c.args, c.input !== undefined ? { input: c.input } : {});
    const check = (actual: string, expected: string | RegExp | undefined, what: string): void => {
      if (expected === undefined) return;
      if (typeof expected === "string") assert.equal(actual, expected, what);
      else assert.match(actual, expected, what);
    };
    check(r.stdout, c.stdout, "stdout");
    check(r.stderr, c.stderr ?? "", "stderr");
    assert.equal(r.code, c.code, `exit code (stderr: ${r.stderr})`);
  });
}

test("a shell script captures kvctl get output like etcdctl's", async () => {
  await kv(["set", "/k/script", "hello world"]);
  const script = `
    kv() { "$NODE" "$BIN" --endpoints "$EP" "$@"; }
    v=$(kv get /k/script) || exit 9
    echo "got:$v"
    kv get /k/nothing-here 2>/dev/null
    echo "missing:$?"
    if kv mk /k/script again 2>/dev/null; then echo created; else echo "exists:$?"; fi
  `;
  const r = spawnSync("sh", ["-c", script], {
    env: { ...process.env, NODE: process.execPath, BIN: kvctlBin, EP: srv.url },
    encoding: "utf8",
    timeout: 30_000,
  });
  assert.equal(r.stdout, "got:hello world\nmissing:4\nexists:4\n", r.stderr);
  assert.equal(r.status, 0);
});
