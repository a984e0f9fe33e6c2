import { test } from "node:test";
import assert from "node:assert/strict";
import { parseArgv, type ParseOutcome } from "./argv.ts";
import { buildInvocation, parseGoDuration, parseGoInt, type Invocation } from "./invocation.ts";
import { UsageError } from "./exit-codes.ts";
import { yargsInvocation } from "./yargs-app.ts";

function raw(argv: string[]) {
  const o: ParseOutcome = parseArgv(argv);
  assert.equal(o.kind, "ok", JSON.stringify(o));
  return o.kind === "ok" ? o.raw : undefined;
}

const parseCases: { name: string; argv: string[]; flags?: Record<string, string | boolean>; globals?: Record<string, string | boolean>; args: string[] }[] = [
  { name: "reads a key", argv: ["get", "/a"], args: ["/a"] },
  { name: "accepts -flag and --flag alike", argv: ["set", "-ttl", "5", "--swap-with-value=x", "/a", "v"], flags: { ttl: "5", "swap-with-value": "x" }, args: ["/a", "v"] },
  { name: "moves command flags after the arguments forward (urfave/cli)", argv: ["set", "/a", "v", "--ttl", "5"], flags: { ttl: "5" }, args: ["/a", "v"] },
  { name: "keeps the last of a repeated flag", argv: ["set", "--ttl", "1", "--ttl=2", "/a", "v"], flags: { ttl: "2" }, args: ["/a", "v"] },
  { name: "treats an unknown -x after the first argument as an argument", argv: ["set", "/a", "-5"], args: ["/a", "-5"] },
  { name: "ends flags at --", argv: ["set", "--", "/a", "--ttl"], args: ["/a", "--ttl"] },
  { name: "drops -- between arguments", argv: ["set", "/a", "--", "-v"], args: ["/a", "-v"] },
  { name: "reads bool flags with Go values", argv: ["get", "--quorum=false", "--sort=1", "/a"], flags: { quorum: false, sort: "1" === "1" }, args: ["/a"] },
  { name: "reads global flags before the command", argv: ["-o", "json", "--no-sync", "get", "/a"], globals: { output: "json", "no-sync": true }, args: ["/a"] },
  { name: "reads global flags after the command", argv: ["get", "/a", "--endpoints", "http://x", "-o=extended"], globals: { endpoints: "http://x", output: "extended" }, args: ["/a"] },
  { name: "leaves what follows a bool flag's argument as arguments (urfave/cli reorder, then Go's parse)", argv: ["rm", "--dir", "/a", "--recursive"], flags: { dir: true }, args: ["/a", "--recursive"] },
  { name: "keeps a -- after a bool flag's argument as an argument", argv: ["mk", "--in-order", "b", "--"], flags: { "in-order": true }, args: ["b", "--"] },
  { name: "drops a trailing -- after the arguments", argv: ["mk", "b", "--"], args: ["b"] },
  { name: "moves flags past a -- that follows a bool flag, then ends Go's parse at it", argv: ["mk", "--in-order", "--", "b", "--ttl", "5"], flags: { "in-order": true }, args: ["--ttl", "5", "b"] },
  { name: "gives exec-watch the rest after --", argv: ["exec-watch", "-r", "/k", "--", "sh", "-c", "ls -r"], flags: { recursive: true }, args: ["/k", "sh", "-c", "ls -r"] },
  { name: "stops exec-watch flags at the command", argv: ["exec-watch", "/k", "ls", "-r"], args: ["/k", "ls", "-r"] },
  { name: "still reads exec-watch flags between key and --", argv: ["exec-watch", "/k", "--after-index", "3", "--", "echo"], flags: { "after-index": "3" }, args: ["/k", "echo"] },
];

for (const c of parseCases) {
  test(`parseArgv ${c.name}`, () => {
    const r = raw(c.argv);
    assert.deepEqual(r?.args, c.args);
    assert.deepEqual(r?.flags, c.flags ?? {});
    assert.deepEqual(r?.globals, c.globals ?? {});
  });
}

const usageCases: { argv: string[]; message: string }[] = [
  { argv: ["--bogus", "get"], message: "flag provided but not defined: -bogus" },
  { argv: ["get", "--bogus", "/a"], message: "flag provided but not defined: -bogus" },
  { argv: ["ls", "-rp"], message: "flag provided but not defined: -rp" },
  { argv: ["user", "--ttl", "grant", "u1"], message: "flag provided but not defined: -ttl" },
  { argv: ["set", "/a", "--ttl"], message: 'invalid value "/a" for flag -ttl: parse error' },
  { argv: ["set", "--ttl"], message: "flag needs an argument: -ttl" },
  { argv: ["set", "--ttl", "x", "--ttl=2", "/a", "v"], message: 'invalid value "x" for flag -ttl: parse error' },
  { argv: ["mkdir", "--ttl", "1.5", "/", "--ttl", "5"], message: 'invalid value "1.5" for flag -ttl: parse error' },
  { argv: ["--timeout", "x", "--timeout", "2s", "get", "/a"], message: 'invalid value "x" for flag -timeout: parse error' },
  { argv: ["get", "--quorum=maybe", "/a"], message: 'invalid boolean value "maybe" for -quorum: parse error' },
  { argv: ["get", "---x"], message: "bad flag syntax: ---x" },
];
for (const c of usageCases) {
  test(`parseArgv rejects ${c.argv.join(" ")}`, () => {
    assert.throws(() => parseArgv(c.argv), (err: unknown) => err instanceof UsageError && err.message === c.message);
  });
}

test("parseArgv delegates help, no command and unknown commands", () => {
  assert.deepEqual(parseArgv([]), { kind: "delegate", reason: "no-command" });
  assert.deepEqual(parseArgv(["--help"]), { kind: "delegate", reason: "help" });
  assert.deepEqual(parseArgv(["get", "-h"]), { kind: "delegate", reason: "help" });
  assert.deepEqual(parseArgv(["help", "get"]), { kind: "delegate", reason: "help" });
  assert.deepEqual(parseArgv(["member"]), { kind: "delegate", reason: "help" });
  assert.deepEqual(parseArgv(["bogus"]), { kind: "delegate", reason: "unknown-command", name: "bogus" });
  assert.deepEqual(parseArgv(["member", "bogus"]), { kind: "delegate", reason: "unknown-command", name: "bogus" });
});

test("parseArgv reads member subcommands and --version alone", () => {
  assert.equal(raw(["member", "list"])?.subcommand, "list");
  assert.equal(raw(["--version"])?.command, "version");
});

test("buildInvocation applies defaults", () => {
  const inv = buildInvocation({ command: "set", globals: {}, flags: {}, args: ["/a", "v"] }, {});
  assert.deepEqual(inv.globals.endpoints, ["http://127.0.0.1:2379", "http://127.0.0.1:4001"]);
  assert.equal(inv.globals.timeoutMs, 2000);
  assert.equal(inv.globals.totalTimeoutMs, 5000);
  assert.equal(inv.globals.output, "simple");
  assert.deepEqual(inv.flags, { ttl: 0, "swap-with-value": "", "swap-with-index": 0 });
});

test("buildInvocation reads KV_ variables below flags, then ETCDCTL_ variables", () => {
  const env = { KV_OUTPUT: "json", KV_NO_SYNC: "t", KV_TIMEOUT: "300ms", ETCDCTL_ENDPOINTS: "http://e", KV_USERNAME: "u:p" };
  const inv = buildInvocation({ command: "get", globals: { output: "extended" }, flags: {}, args: [] }, env);
  assert.equal(inv.globals.output, "extended");
  assert.equal(inv.globals.noSync, true);
  assert.equal(inv.globals.timeoutMs, 300);
  assert.deepEqual(inv.globals.endpoints, ["http://e"]);
  assert.equal(inv.globals.username, "u:p");
  const kvFirst = buildInvocation({ command: "get", globals: {}, flags: {}, args: [] }, { KV_ENDPOINTS: "http://k", ETCDCTL_ENDPOINTS: "http://e" });
  assert.deepEqual(kvFirst.globals.endpoints, ["http://k"]);
});

test("buildInvocation keeps an explicit empty -o (etcdctl: Unsupported output format: ), and KV_OUTPUT below it", () => {
  const out = (globals: Record<string, string>, env: Record<string, string>) =>
    buildInvocation({ command: "get", globals, flags: {}, args: [] }, env).globals.output;
  assert.equal(out({ output: "" }, {}), "");
  assert.equal(out({}, {}), "simple");
  assert.equal(out({}, { KV_OUTPUT: "json" }), "json");
  assert.equal(out({}, { KV_OUTPUT: "" }), "simple");
});

test("buildInvocation follows etcdctl's endpoint precedence", () => {
  const ep = (globals: Record<string, string>, env: Record<string, string>) =>
    buildInvocation({ command: "get", globals, flags: {}, args: [] }, env).globals.endpoints;
  assert.deepEqual(ep({ peers: "http://p" }, { ETCDCTL_ENDPOINT: "http://e1" }), ["http://e1"]);
  assert.deepEqual(ep({ endpoint: "http://a,http://b" }, { ETCDCTL_PEERS: "http://p" }), ["http://a", "http://b"]);
  assert.deepEqual(ep({}, { KV_PEERS: "http://p" }), ["http://p"]);
});

test("buildInvocation reads -D/--discovery-srv and --insecure-discovery as etcdctl v2's getDiscoveryDomain", () => {
  const g = (globals: Record<string, string | boolean>, env: Record<string, string>) =>
    buildInvocation({ command: "get", globals, flags: {}, args: [] }, env).globals;
  const none = g({}, {});
  assert.deepEqual([none.discoverySrv, none.discoverySrvName, none.insecureDiscovery], [undefined, undefined, false]);
  assert.equal(g({ "discovery-srv": "a.test" }, { ETCDCTL_DISCOVERY_SRV: "e.test" }).discoverySrv, "a.test");
  assert.equal(g({ "discovery-srv": "" }, { ETCDCTL_DISCOVERY_SRV: "e.test" }).discoverySrv, "e.test");
  assert.equal(g({}, { KV_DISCOVERY_SRV: "k.test", ETCDCTL_DISCOVERY_SRV: "e.test" }).discoverySrv, "k.test");
  // The service name has no flag in etcdctl v2: its variable only.
  assert.equal(g({}, { ETCDCTL_DISCOVERY_SRV_NAME: "blue" }).discoverySrvName, "blue");
  assert.equal(g({}, { KV_DISCOVERY_SRV_NAME: "red", ETCDCTL_DISCOVERY_SRV_NAME: "blue" }).discoverySrvName, "red");
  // flag || ETCDCTL_INSECURE_DISCOVERY != "": any value of the variable turns it on.
  assert.equal(g({ "insecure-discovery": true }, {}).insecureDiscovery, true);
  assert.equal(g({ "insecure-discovery": false }, { ETCDCTL_INSECURE_DISCOVERY: "false" }).insecureDiscovery, true);
  assert.equal(g({}, { ETCDCTL_INSECURE_DISCOVERY: "" }).insecureDiscovery, false);
  assert.equal(g({}, { KV_INSECURE_DISCOVERY: "true" }).insecureDiscovery, true);
  assert.throws(() => g({}, { KV_INSECURE_DISCOVERY: "yes" }), UsageError);
});

test("parseArgv reads -D with its value, and --insecure-discovery as a bool", () => {
  assert.deepEqual(raw(["-D", "a.test", "--insecure-discovery", "get", "/a"])?.globals, { "discovery-srv": "a.test", "insecure-discovery": true });
  assert.deepEqual(raw(["get", "/a", "--discovery-srv=b.test"])?.globals, { "discovery-srv": "b.test" });
  assert.throws(() => parseArgv(["-d", "a.test", "get", "/a"]), (e: unknown) => e instanceof UsageError && e.message === "flag provided but not defined: -d");
});

const ints: [string, number | undefined][] = [
  ["0", 0], ["42", 42], ["-7", -7], ["0x1f", 31], ["010", 8], ["0b101", 5], ["0o17", 15], ["abc", undefined], ["1.5", undefined], ["", undefined], [" 5", undefined],
];
for (const [text, want] of ints) {
  test(`parseGoInt reads ${JSON.stringify(text)} like strconv.ParseInt(s, 0, 64)`, () => {
    if (want === undefined) assert.throws(() => parseGoInt(text, "-ttl"), UsageError);
    else assert.equal(parseGoInt(text, "-ttl"), want);
  });
}

const durations: [string, number | undefined][] = [
  ["2s", 2000], ["300ms", 300], ["1m30s", 90_000], ["1.5h", 5_400_000], ["0", 0], ["-1s", -1000], ["100us", 0.1], ["abc", undefined], ["5", undefined], ["1x", undefined],
];
for (const [text, want] of durations) {
  test(`parseGoDuration reads ${JSON.stringify(text)} like time.ParseDuration`, () => {
    if (want === undefined) assert.throws(() => parseGoDuration(text, "-timeout"), UsageError);
    else assert.equal(parseGoDuration(text, "-timeout"), want);
  });
}

// The yargs app is a second parser of the same grammar: for the argv both accept, it
// must produce the same Invocation as the fast parser.
const equivalence: { argv: string[]; env: Record<string, string> }[] = [
  { argv: ["get", "/a"], env: {} },
  { argv: ["--endpoints", "http://x:1", "-o", "json", "get", "--quorum", "/a"], env: {} },
  { argv: ["set", "--ttl", "5", "/a", "v"], env: { KV_ENDPOINTS: "http://k:1", KV_NO_SYNC: "1" } },
  { argv: ["--timeout=300ms", "rm", "-r", "--with-index", "4", "/d"], env: { KV_DATA_DIR: "ignored", KV_DEBUG: "true" } },
  { argv: ["ls", "-r", "-p", "--sort", "/d"], env: { KV_OUTPUT: "extended" } },
  { argv: ["watch", "-f", "--after-index", "10", "/w"], env: {} },
  { argv: ["member", "list"], env: { ETCDCTL_ENDPOINTS: "http://e:1" } },
  { argv: ["-u", "root:pw", "mk", "--in-order", "/q", "job"], env: {} },
  { argv: ["-D", "d.test", "--insecure-discovery", "get", "/a"], env: {} },
  { argv: ["ls", "/"], env: { KV_DISCOVERY_SRV: "d.test", KV_INSECURE_DISCOVERY: "1", ETCDCTL_DISCOVERY_SRV_NAME: "n" } },
];

for (const c of equivalence) {
  test(`yargs and the fast parser agree on ${c.argv.join(" ")}`, async () => {
    const r = parseArgv(c.argv);
    assert.equal(r.kind, "ok");
    if (r.kind !== "ok") return;
    const fast: Invocation = buildInvocation(r.raw, c.env);
    const slow = await yargsInvocation(c.argv, c.env);
    assert.deepEqual(slow, fast);
  });
}
