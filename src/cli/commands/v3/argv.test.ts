import { test } from "node:test";
import assert from "node:assert/strict";
import { parseDurationMs } from "../../invocation.ts";
import { parseV3Argv, parseInt64, V3UsageError } from "./argv.ts";
import { v3Position } from "../../run.ts";

interface ParseCase {
  name: string;
  argv: string[];
  env?: Record<string, string>;
  path: string[];
  args?: string[];
  flags?: Record<string, string | number | boolean>;
  globals?: Record<string, unknown>;
}

const parseCases: ParseCase[] = [
  { name: "reads a command, its flags and arguments", argv: ["get", "foo", "--prefix", "--limit", "3"], path: ["get"], args: ["foo"], flags: { prefix: true, limit: 3 } },
  { name: "takes persistent flags before the command", argv: ["-w", "json", "--endpoints=http://a:1,http://b:2", "get", "k"], path: ["get"], args: ["k"], globals: { writeOut: "json", endpoints: ["http://a:1", "http://b:2"] } },
  { name: "takes persistent flags after the arguments", argv: ["put", "k", "v", "--hex", "-wjson"], path: ["put"], args: ["k", "v"], globals: { hex: true, writeOut: "json" } },
  { name: "reads -w=fields", argv: ["get", "-w=fields", "k"], path: ["get"], args: ["k"], globals: { writeOut: "fields" } },
  { name: "resolves nested commands", argv: ["lease", "timetolive", "1a", "--keys"], path: ["lease", "timetolive"], args: ["1a"], flags: { keys: true } },
  { name: "resolves aliases", argv: ["range", "k"], path: ["get"], args: ["k"] },
  { name: "resolves unique prefixes like cobra", argv: ["compact", "5"], path: ["compaction"], args: ["5"] },
  { name: "keeps bool flag values", argv: ["user", "add", "u", "--interactive=false"], path: ["user", "add"], args: ["u"], flags: { interactive: false } },
  { name: "defaults --interactive to true", argv: ["user", "passwd", "u"], path: ["user", "passwd"], args: ["u"], flags: { interactive: true } },
  { name: "ends flags at --", argv: ["put", "--", "k", "-v"], path: ["put"], args: ["k", "-v"] },
  { name: "takes a group's flag after its subcommand (cobra persistent flag)", argv: ["endpoint", "status", "--cluster"], path: ["endpoint", "status"], flags: { cluster: true } },
  { name: "takes a group's flag before its subcommand", argv: ["endpoint", "--cluster", "health"], path: ["endpoint", "health"], flags: { cluster: true } },
  { name: "reads a subcommand flag beside its group's", argv: ["endpoint", "hashkv", "--rev", "7"], path: ["endpoint", "hashkv"], flags: { cluster: false, rev: 7 } },
  { name: "keeps the lock command's own flags after --", argv: ["lock", "--ttl", "5", "L", "--", "sh", "-c", "x"], path: ["lock"], args: ["L", "sh", "-c", "x"], flags: { ttl: 5 } },
  { name: "reads Go durations", argv: ["--command-timeout", "1m30s", "--dial-timeout=250ms", "get", "k"], path: ["get"], args: ["k"], globals: { commandTimeoutMs: 90_000, dialTimeoutMs: 250 } },
  { name: "reads KV_ variables", argv: ["get", "k"], env: { KV_ENDPOINTS: "http://x:1", KV_USER: "u:p", KV_WRITE_OUT: "json" }, path: ["get"], args: ["k"], globals: { endpoints: ["http://x:1"], user: "u:p", writeOut: "json" } },
  { name: "falls back to ETCDCTL_ variables", argv: ["get", "k"], env: { ETCDCTL_HEX: "true" }, path: ["get"], args: ["k"], globals: { hex: true } },
  { name: "prefers flags to variables", argv: ["get", "k", "-w", "simple"], env: { KV_WRITE_OUT: "json" }, path: ["get"], args: ["k"], globals: { writeOut: "simple" } },
];

for (const c of parseCases) {
  test(`parseV3Argv ${c.name}`, () => {
    const inv = parseV3Argv(c.argv, c.env ?? {});
    assert.deepEqual(inv.path, c.path);
    assert.deepEqual(inv.args, c.args ?? []);
    for (const [k, v] of Object.entries(c.flags ?? {})) assert.equal(inv.flags[k], v, k);
    for (const [k, v] of Object.entries(c.globals ?? {})) assert.deepEqual(inv.globals[k as keyof typeof inv.globals], v, k);
  });
}

const errorCases: { argv: string[]; message: string }[] = [
  { argv: ["get", "k", "--bogus"], message: "unknown flag: --bogus" },
  { argv: ["get", "k", "-x"], message: "unknown shorthand flag: 'x' in -x" },
  { argv: ["get", "k", "--limit"], message: "flag needs an argument: --limit" },
  { argv: ["get", "k", "--limit", "x"], message: 'invalid argument "x" for "--limit" flag: strconv.ParseInt: parsing "x": invalid syntax' },
  { argv: ["get", "k", "--prefix=maybe"], message: 'invalid argument "maybe" for "--prefix" flag: strconv.ParseBool: parsing "maybe": invalid syntax' },
  { argv: ["--dial-timeout", "soon", "get"], message: 'invalid argument "soon" for "--dial-timeout" flag: time: invalid duration "soon"' },
  { argv: ["bogus"], message: 'unknown command "bogus" for "kvctl v3"' },
];
for (const c of errorCases) {
  test(`parseV3Argv rejects ${c.argv.join(" ")}`, () => {
    assert.throws(() => parseV3Argv(c.argv, {}), (e: unknown) => e instanceof V3UsageError && e.message === c.message && e.exitCode === 1);
  });
}

test("parseV3Argv reads only command flags when asked (txn request lines)", () => {
  assert.throws(() => parseV3Argv(["get", "k", "-w", "json"], {}, { commandFlagsOnly: true }), V3UsageError);
});

test("parseV3Argv reports --help and the words after --", () => {
  assert.equal(parseV3Argv(["get", "--help"], {}).help, true);
  assert.deepEqual(parseV3Argv(["watch", "k", "--", "echo", "x"], {}).afterDash, ["echo", "x"]);
});

const positions: [string[], number][] = [
  [["v3", "get"], 0],
  [["--endpoints", "http://x", "v3", "get"], 2],
  [["-w", "json", "v3"], 2],
  [["get", "v3"], -1],
  [["--debug", "v3"], 1],
  [["--", "v3"], -1],
];
for (const [argv, at] of positions) {
  test(`v3Position finds the v3 word in ${argv.join(" ")}`, () => assert.equal(v3Position(argv), at));
}

const ints: [string, number | undefined][] = [["10", 10], ["0x10", 16], ["010", 8], ["-5", -5], ["1_000", 1000], ["x", undefined], ["", undefined]];
for (const [s, want] of ints) test(`parseInt64 reads ${JSON.stringify(s)} as Go's ParseInt(s, 0, 64)`, () => assert.equal(parseInt64(s), want));

const durations: [string, number | undefined][] = [["2s", 2000], ["1m30s", 90_000], ["300ms", 300], ["0", 0], ["1.5h", 5_400_000], ["5", undefined]];
for (const [s, want] of durations) test(`parseDurationMs reads ${s}`, () => assert.equal(parseDurationMs(s), want));

test("tlsOf: certificates are checked against the --discovery-srv domain only with --insecure-discovery=false (etcdctl v3's serverName)", async () => {
  const { tlsOf } = await import("./context.ts");
  const tls = (argv: string[]) => tlsOf(parseV3Argv(argv, {}).globals);
  assert.equal(tls(["-d", "d.test", "--insecure-discovery=false", "get", "a"]).serverName, "d.test");
  assert.equal(tls(["-d", "d.test", "get", "a"]).serverName, undefined);
  assert.equal(tls(["get", "a"]).serverName, undefined);
  assert.equal(tlsOf(parseV3Argv(["get", "a"], { ETCDCTL_DISCOVERY_SRV: "e.test", ETCDCTL_INSECURE_DISCOVERY: "false" }).globals).serverName, "e.test");
});
