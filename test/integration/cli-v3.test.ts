// `kvctl v3 …` against `ETCDCTL_API=3 etcdctl …`, command line by command line: each
// case runs etcdctl on the reference etcd and kvctl on the server under test (`kvctl
// serve`, or etcd with KVCTL_V3_TEST_SERVER=etcd), both fed the same operations in the
// same order, and compares stdout, stderr and the exit code byte for byte (after mapping
// the two servers' cluster/member IDs, and lease IDs where a case creates leases).
// See test/helpers/etcd.ts for how the servers and the two CLIs are started.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gateway, gatewayPut, maskLeases, runEtcdctl, runKvctlV3, sameIds, startV3Server, type RunResult, type V3Server } from "../helpers/etcd.ts";

const testedKind = process.env["KVCTL_V3_TEST_SERVER"] === "etcd" ? "etcd" : "kvctl";
let ref: V3Server;
let tested: V3Server;
const tmp = mkdtempSync(join(tmpdir(), "kvctl-v3-cli-"));

before(async () => {
  [ref, tested] = await Promise.all([startV3Server("etcd"), startV3Server(testedKind)]);
});
after(async () => {
  await Promise.all([ref?.stop(), tested?.stop()]);
  rmSync(tmp, { recursive: true, force: true });
});

interface Case {
  name: string;
  /** Keys put (through the gateway) on both servers first. */
  setup?: [string, string][];
  args: string[];
  /** kvctl's arguments when they differ from etcdctl's (aliases, kvctl additions). */
  kvctlArgs?: string[];
  input?: string;
  kvctlInput?: string;
  /** Grant a 100 s lease on each server first; `{lease}` in args is its hex ID. */
  lease?: boolean;
  /**
   * A flag error: etcdctl prints its usage on stdout and the error twice on stderr (cobra,
   * then etcdctl); kvctl prints the error once. Compare the first stderr line and the code.
   */
  stderrOnly?: boolean;
  env?: { etcdctl: Record<string, string>; kvctl: Record<string, string> };
}

const tsfile = join(tmp, "txn.json");
const b64 = (s: string): string => Buffer.from(s).toString("base64");
writeFileSync(
  tsfile,
  JSON.stringify({
    compare: [{ key: b64("t1"), target: "VALUE", result: "EQUAL", value: b64("1") }],
    success: [{ request_put: { key: b64("t2"), value: b64("ok"), prev_kv: true } }, { request_range: { key: b64("t"), range_end: b64("u") } }],
    failure: [{ request_delete_range: { key: b64("t1") } }],
  }),
);
const txnLines = 'val("t1") = "1"\n\nput t2 ok --prev-kv\nget t --prefix\n\ndel t1\n\n';

const cases: Case[] = [
  { name: "put prints OK", args: ["put", "foo", "bar"] },
  { name: "put --prev-kv prints the previous pair", args: ["put", "foo", "baz", "--prev-kv"] },
  { name: "put reads the value from stdin", args: ["put", "stdin-key"], input: "from stdin\n" },
  { name: "put without a value fails with 128", args: ["put", "lonely"] },
  { name: "put rejects a bad lease ID", args: ["put", "k", "v", "--lease", "zz"] },
  { name: "put -w json prints the header", args: ["put", "foo", "baz", "-w", "json"] },
  { name: "put --prev-kv -w fields prints the Prev fields", args: ["put", "foo", "baz", "--prev-kv", "-w", "fields"] },
  { name: "get prints key and value", setup: [["a", "1"], ["b", "2"], ["c", "3 three"]], args: ["get", "foo"] },
  { name: "range is an alias of get", args: ["get", "foo"], kvctlArgs: ["range", "foo"] },
  { name: "get -w json prints etcdctl's JSON", args: ["get", "foo", "-w", "json"] },
  { name: "get -w fields prints quoted fields", args: ["get", "", "--prefix", "-w", "fields"] },
  { name: "get --hex prints bytes as \\x escapes", args: ["get", "a", "--hex"] },
  { name: "get --print-value-only prints values only", args: ["get", "a", "c", "--print-value-only"] },
  { name: "get --keys-only prints keys and empty values", args: ["get", "--prefix", "", "--keys-only"] },
  { name: "get --from-key --limit reads from a key", args: ["get", "b", "--from-key", "--limit", "2", "-w", "json"] },
  { name: "get --sort-by --order sorts", args: ["get", "--prefix", "", "--sort-by=VALUE", "--order=DESCEND"] },
  { name: "get --sort-by without order sorts ascending", args: ["--write-out=json", "get", "a", "z", "--sort-by", "modify"] },
  { name: "get --rev reads an old revision", args: ["get", "foo", "--rev", "2"] },
  { name: "get --consistency=s reads serializably", args: ["get", "foo", "--consistency", "s"] },
  { name: "get prints nothing for a missing key", args: ["get", "missing"] },
  { name: "get of a future revision fails", args: ["get", "foo", "--rev", "99999"] },
  { name: "get without a key fails with 128", args: ["get"] },
  { name: "get rejects --prefix with --from-key", args: ["get", "a", "--prefix", "--from-key"] },
  { name: "get rejects a range end with --prefix", args: ["get", "a", "b", "--prefix"] },
  { name: "get rejects an unknown consistency with 4", args: ["get", "a", "--consistency=x"] },
  { name: "get rejects a bad sort order", args: ["get", "a", "--order=up"] },
  { name: "get --print-value-only needs simple output", args: ["get", "a", "--print-value-only", "-w", "json"] },
  { name: "get -w table is not supported", args: ["get", "a", "-w", "table"] },
  { name: "get -w of an unknown format fails with 4", args: ["get", "a", "-w", "bogus"] },
  { name: "get rejects an unknown flag", args: ["get", "a", "--bogus"], stderrOnly: true },
  { name: "get rejects a bad --limit", args: ["get", "a", "--limit", "x"], stderrOnly: true },
  { name: "del prints 0 for a missing key", args: ["del", "nothere"] },
  { name: "del --prev-kv prints the deleted pairs", setup: [["d1", "x"], ["d2", "y"]], args: ["del", "d", "--prefix", "--prev-kv"] },
  { name: "del of a range -w json", setup: [["e1", "x"], ["e2", "y"]], args: ["del", "e1", "e3", "-w", "json"] },
  { name: "del without a key fails", args: ["del"] },
  { name: "txn runs success requests", setup: [["t1", "1"]], args: ["txn"], input: txnLines },
  { name: "txn runs failure requests", args: ["txn"], input: 'mod("t1") < "0"\n\nput t3 x\n\nget t1\nput t4 y\n\n' },
  { name: "txn -i prints the prompts", args: ["txn", "-i"], input: 'ver("t1") != "0"\nc("t1") > "0"\n\nget t1\n\n\n' },
  { name: "txn -w json", args: ["txn", "-w", "json"], input: 'm("t1") > "0"\n\nget t1\nput t5 v --prev-kv\ndel nothere\n\n\n' },
  { name: "txn -w fields", args: ["txn", "-w", "fields"], input: 'value("t1") = "1"\n\nget t1\nput t5 w --prev-kv\ndel t5\n\n\n' },
  { name: "txn reads a JSON TxnRequest from --file", setup: [["t1", "1"]], args: ["txn"], input: txnLines, kvctlArgs: ["txn", "--file", tsfile] },
  { name: "txn reads a JSON TxnRequest from stdin", args: ["txn", "-w", "json"], input: txnLines, kvctlInput: JSON.stringify({ compare: [{ key: b64("t1"), target: "VALUE", result: "EQUAL", value: b64("1") }], success: [{ request_put: { key: b64("t2"), value: b64("ok"), prev_kv: true } }, { request_range: { key: b64("t"), range_end: b64("u") } }], failure: [{ request_delete_range: { key: b64("t1") } }] }) },
  { name: "txn reports a malformed compare with 3", args: ["txn"], input: "bad\n\n\n\n" },
  { name: "txn reports an unknown target", args: ["txn"], input: 'zz("a") = "0"\n\n\n\n' },
  { name: "txn reports a bad number", args: ["txn"], input: 'mod("a") > "x"\n\n\n\n' },
  { name: "txn reports an invalid request", args: ["txn"], input: 'mod("a") > "0"\n\nbogus x\n\n\n' },
  { name: "txn reports input cut short as EOF", args: ["txn"], input: 'mod("a") > "0"\n' },
  { name: "txn takes no arguments", args: ["txn", "extra"] },
  { name: "compaction compacts", setup: [["z", "1"]], args: ["compaction", "3"] },
  { name: "compaction of a compacted revision fails", args: ["compaction", "2"] },
  { name: "compact is an alias of compaction --physical", args: ["compaction", "4", "--physical"], kvctlArgs: ["compact", "4", "--physical"] },
  { name: "compaction rejects a bad revision", args: ["compaction", "x"] },
  { name: "get of a compacted revision fails", args: ["get", "foo", "--rev", "2"] },
  { name: "watch from a compacted revision is canceled with 5", args: ["watch", "foo", "--rev", "2"] },
  { name: "watch -w json prints the canceled response", args: ["watch", "foo", "--rev", "2", "-w", "json"] },
  { name: "watch needs a key", args: ["watch"] },
  { name: "watch rejects a range end with --prefix", args: ["watch", "a", "b", "--prefix"] },
  { name: "watch rejects -- without a command", args: ["watch", "a", "--"] },
  { name: "lease grant prints the hex ID", args: ["lease", "grant", "100"], lease: true },
  { name: "lease grant -w json", args: ["lease", "grant", "100", "-w", "json"], lease: true },
  { name: "lease grant rejects a bad TTL", args: ["lease", "grant", "x"] },
  { name: "put --lease attaches a lease", args: ["put", "lk", "v", "--lease", "{lease}"], lease: true },
  { name: "lease timetolive --keys lists attached keys", args: ["lease", "timetolive", "{lease}", "--keys"], lease: true },
  { name: "lease timetolive -w json", args: ["lease", "timetolive", "{lease}", "-w", "json"], lease: true },
  { name: "lease timetolive of an expired lease", args: ["lease", "timetolive", "7b"] },
  { name: "lease keep-alive --once renews", args: ["lease", "keep-alive", "--once", "{lease}"], lease: true },
  { name: "lease keep-alive --once of a missing lease exits 2", args: ["lease", "keep-alive", "--once", "7b"] },
  { name: "lease revoke revokes", args: ["lease", "revoke", "{lease}"], lease: true },
  { name: "lease revoke of a missing lease fails", args: ["lease", "revoke", "7b"] },
  { name: "lease revoke rejects a non-hex ID", args: ["lease", "revoke", "zz"] },
  { name: "user add name:password", args: ["user", "add", "alice:pw"] },
  { name: "user add --new-user-password", args: ["user", "add", "carol", "--new-user-password", "pw", "-w", "json"] },
  { name: "user add --interactive=false reads stdin", args: ["user", "add", "dave", "--interactive=false"], input: "pw\n" },
  { name: "user add of an existing user fails", args: ["user", "add", "alice:pw"] },
  { name: "user add rejects an empty name", args: ["user", "add", ":pw"] },
  { name: "role add", args: ["role", "add", "r1"] },
  { name: "role add of an existing role fails", args: ["role", "add", "r1"] },
  { name: "role grant-permission of a key", args: ["role", "grant-permission", "r1", "readwrite", "/a"] },
  { name: "role grant-permission --prefix", args: ["role", "grant-permission", "r1", "read", "/p", "--prefix"] },
  { name: "role grant-permission --from-key", args: ["role", "grant-permission", "r1", "write", "/f", "--from-key"] },
  { name: "role grant-permission of a range", args: ["role", "grant-permission", "r1", "READ", "/x", "/y"] },
  { name: "role grant-permission rejects a bad type", args: ["role", "grant-permission", "r1", "bogus", "/x"] },
  { name: "role get", args: ["role", "get", "r1"] },
  { name: "role get -w json", args: ["role", "get", "r1", "-w", "json"] },
  { name: "role get -w fields", args: ["role", "get", "r1", "-w", "fields"] },
  { name: "user grant-role", args: ["user", "grant-role", "alice", "r1"] },
  { name: "user get", args: ["user", "get", "alice"] },
  { name: "user get --detail", args: ["user", "get", "alice", "--detail"] },
  { name: "user get -w json", args: ["user", "get", "alice", "-w", "json"] },
  { name: "user get -w fields is not supported", args: ["user", "get", "alice", "-w", "fields"] },
  { name: "user list", args: ["user", "list"] },
  { name: "user list -w json", args: ["user", "list", "-w", "json"] },
  { name: "role list -w fields", args: ["role", "list", "-w", "fields"] },
  { name: "role revoke-permission of a key", args: ["role", "revoke-permission", "r1", "/a"] },
  { name: "role revoke-permission --prefix", args: ["role", "revoke-permission", "r1", "/p", "--prefix"] },
  { name: "role revoke-permission --from-key", args: ["role", "revoke-permission", "r1", "/f", "--from-key"] },
  { name: "role revoke-permission of a missing permission fails", args: ["role", "revoke-permission", "r1", "/nope"] },
  { name: "user revoke-role", args: ["user", "revoke-role", "alice", "r1"] },
  { name: "user revoke-role of a role not granted fails", args: ["user", "revoke-role", "alice", "r1"] },
  { name: "user passwd --interactive=false", args: ["user", "passwd", "dave", "--interactive=false"], input: "pw2\n" },
  { name: "user delete", args: ["user", "delete", "dave"] },
  { name: "user delete of a missing user fails", args: ["user", "delete", "dave"] },
  { name: "role delete", args: ["role", "delete", "r1"] },
  { name: "user get of a missing user fails", args: ["user", "get", "nobody"] },
  { name: "auth enable fails without root", args: ["auth", "enable"] },
  { name: "user add root", args: ["user", "add", "root:rootpw"] },
  { name: "auth enable creates the root role", args: ["auth", "enable"] },
  { name: "get without a user is refused", args: ["get", "foo"] },
  { name: "--user with a bad password exits 2", args: ["--user", "root:bad", "get", "foo"] },
  { name: "--user name:password reads", args: ["--user", "root:rootpw", "get", "foo"] },
  { name: "--user with --password reads", args: ["get", "foo", "--user", "root", "--password", "rootpw"] },
  { name: "the user comes from the environment", args: ["get", "foo"], env: { etcdctl: { ETCDCTL_USER: "root:rootpw" }, kvctl: { KV_USER: "root:rootpw" } } },
  { name: "a non-root user is denied", args: ["--user", "alice:pw", "get", "foo"] },
  { name: "auth disable", args: ["--user", "root:rootpw", "auth", "disable"] },
  { name: "auth disable when disabled", args: ["auth", "disable"] },
];

async function grantLease(url: string): Promise<string> {
  const r = await gateway<{ ID?: string }>(url, "/v3/lease/grant", { TTL: 100 });
  return BigInt(r.ID ?? "0").toString(16).padStart(16, "0");
}

function normalise(r: RunResult, c: Case): string {
  const text = (s: string): string => (c.lease === true ? maskLeases(s) : s);
  const out = c.stderrOnly === true ? "" : text(r.stdout);
  const err = c.stderrOnly === true ? `${r.stderr.split("\n")[0] ?? ""}\n` : r.stderr;
  return `code ${r.code}\n--stdout--\n${out}--stderr--\n${text(err)}`;
}

for (const c of cases) {
  test(`kvctl v3 matches etcdctl: ${c.name}`, async () => {
    for (const [k, v] of c.setup ?? []) await Promise.all([gatewayPut(ref.url, k, v), gatewayPut(tested.url, k, v)]);
    const leases = c.lease === true ? await Promise.all([grantLease(ref.url), grantLease(tested.url)]) : ["", ""];
    const withLease = (args: string[], id: string): string[] => args.map((a) => a.replace("{lease}", id));
    const e = await runEtcdctl(ref.url, withLease(c.args, leases[0] ?? ""), { ...(c.input !== undefined ? { input: c.input } : {}), ...(c.env ? { env: c.env.etcdctl } : {}) });
    const input = c.kvctlInput ?? c.input;
    const k = await runKvctlV3(tested.url, withLease(c.kvctlArgs ?? c.args, leases[1] ?? ""), { ...(input !== undefined ? { input } : {}), ...(c.env ? { env: c.env.kvctl } : {}) });
    const kv = { ...k, stdout: sameIds(k.stdout, tested, ref), stderr: k.stderr };
    assert.equal(normalise(kv, c), normalise(e, c));
  });
}

test("kvctl v3 fails like etcdctl when no endpoint answers", async () => {
  const r = await runKvctlV3("http://127.0.0.1:1", ["get", "foo"]);
  assert.deepEqual([r.code, r.stdout, r.stderr], [1, "", "Error: context deadline exceeded\n"]);
});
