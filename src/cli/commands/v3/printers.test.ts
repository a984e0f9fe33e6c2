// Expected texts recorded from `ETCDCTL_API=3 etcdctl` 3.4.23 for the same responses.
import { test } from "node:test";
import assert from "node:assert/strict";
import { printDel, printGet, printPut, printTxn, printWatch, UnsupportedFormatError, type PrintOptions, type Printed } from "./printers.ts";
import { printGrant, printLeases, printRevoke, printRoleGet, printTimeToLive, printUserGet, revokePermissionLine } from "./printers-admin.ts";
import { goQuote, hexBytes, leaseHex, parseHexInt64 } from "./go-format.ts";

const header = { cluster_id: "16091863006980761046", member_id: "329222808275183200", revision: "3", raft_term: "2" };
const kv = { key: "Zm9v", create_revision: "2", mod_revision: "3", version: "2", value: "YmF6" };
const simple: PrintOptions = { format: "simple", hex: false };
const json: PrintOptions = { format: "json", hex: false };
const fields: PrintOptions = { format: "fields", hex: false };

const cases: { name: string; got: () => Printed; want: string }[] = [
  { name: "get prints key and value lines", got: () => printGet({ header, kvs: [kv], count: "1" }, simple), want: "foo\nbaz\n" },
  { name: "get --print-value-only prints values", got: () => printGet({ header, kvs: [kv], count: "1" }, { ...simple, valueOnly: true }), want: "baz\n" },
  { name: "get --hex prints \\x bytes", got: () => printGet({ header, kvs: [kv] }, { ...simple, hex: true }), want: "\\x66\\x6f\\x6f\n\\x62\\x61\\x7a\n" },
  {
    name: "get -w json prints 64-bit IDs as numbers",
    got: () => printGet({ header, kvs: [kv], count: "1" }, json),
    want: '{"header":{"cluster_id":16091863006980761046,"member_id":329222808275183200,"revision":3,"raft_term":2},"kvs":[{"key":"Zm9v","create_revision":2,"mod_revision":3,"version":2,"value":"YmF6"}],"count":1}\n',
  },
  {
    name: "get -w fields quotes keys and values",
    got: () => printGet({ header, kvs: [kv], count: "1" }, fields),
    want: '"ClusterID" : 16091863006980761046\n"MemberID" : 329222808275183200\n"Revision" : 3\n"RaftTerm" : 2\n"Key" : "foo"\n"CreateRevision" : 2\n"ModRevision" : 3\n"Version" : 2\n"Value" : "baz"\n"Lease" : 0\n"More" : false\n"Count" : 1\n',
  },
  { name: "put prints OK and the previous pair", got: () => printPut({ header, prev_kv: kv }, simple), want: "OK\nfoo\nbaz\n" },
  { name: "put -w json omits an absent prev_kv", got: () => printPut({ header }, json), want: '{"header":{"cluster_id":16091863006980761046,"member_id":329222808275183200,"revision":3,"raft_term":2}}\n' },
  { name: "del prints the count", got: () => printDel({ header, deleted: "1", prev_kvs: [kv] }, simple), want: "1\nfoo\nbaz\n" },
  { name: "del prints 0 when nothing was deleted", got: () => printDel({ header }, simple), want: "0\n" },
  {
    name: "txn prints SUCCESS and each response after a blank line",
    got: () => printTxn({ header, succeeded: true, responses: [{ response_put: { header: { revision: "3" } } }, { response_range: { header: { revision: "3" }, kvs: [kv] } }, { response_delete_range: { header: { revision: "3" } } }] }, simple),
    want: "SUCCESS\n\nOK\n\nfoo\nbaz\n\n0\n",
  },
  {
    name: "txn -w json nests Go's oneof wrapper",
    got: () => printTxn({ header, succeeded: true, responses: [{ response_delete_range: { header: { revision: "3" } } }] }, json),
    want: '{"header":{"cluster_id":16091863006980761046,"member_id":329222808275183200,"revision":3,"raft_term":2},"succeeded":true,"responses":[{"Response":{"ResponseDeleteRange":{"header":{"revision":3}}}}]}\n',
  },
  { name: "txn prints FAILURE", got: () => printTxn({ header }, simple), want: "FAILURE\n" },
  {
    name: "watch prints type, previous pair and pair",
    got: () => printWatch({ header, events: [{ kv }, { type: "DELETE", kv: { key: "Zm9v", mod_revision: "4" }, prev_kv: kv }] }, simple),
    want: "PUT\nfoo\nbaz\nDELETE\nfoo\nbaz\nfoo\n\n",
  },
  {
    name: "watch -w json prints clientv3's WatchResponse",
    got: () => printWatch({ header, events: [{ type: "DELETE", kv: { key: "Zm9v", mod_revision: "4" } }] }, json),
    want: '{"Header":{"cluster_id":16091863006980761046,"member_id":329222808275183200,"revision":3,"raft_term":2},"Events":[{"type":1,"kv":{"key":"Zm9v","mod_revision":4}}],"CompactRevision":0,"Canceled":false,"Created":false}\n',
  },
  { name: "lease grant prints the ID in hex", got: () => printGrant({ header, ID: "7377074319804946962", TTL: "100" }, simple), want: "lease 6660a20229a15a12 granted with TTL(100s)\n" },
  {
    name: "lease grant -w json flattens the header",
    got: () => printGrant({ header, ID: "7377074319804946962", TTL: "100" }, json),
    want: '{"cluster_id":16091863006980761046,"member_id":329222808275183200,"revision":3,"raft_term":2,"ID":7377074319804946962,"TTL":100,"Error":""}\n',
  },
  { name: "lease timetolive of an expired lease", got: () => printTimeToLive({ header, ID: "123", TTL: "-1" }, false, simple), want: "lease 000000000000007b already expired\n" },
  {
    name: "lease timetolive --keys lists the keys",
    got: () => printTimeToLive({ header, ID: "123", TTL: "99", grantedTTL: "100", keys: ["bGs=", "bTI="] }, true, simple),
    want: "lease 000000000000007b granted with TTL(100s), remaining(99s), attached keys([lk m2])\n",
  },
  { name: "lease timetolive -w json prints keys null", got: () => printTimeToLive({ ID: "123", TTL: "-1" }, false, json), want: '{"id":123,"ttl":-1,"granted-ttl":0,"keys":null}\n' },
  { name: "lease list counts and lists", got: () => printLeases({ header, leases: [{ ID: "123" }] }, simple), want: "found 1 leases\n000000000000007b\n" },
  { name: "lease list -w json prints [] when empty", got: () => printLeases({ header }, json), want: '{"cluster_id":16091863006980761046,"member_id":329222808275183200,"revision":3,"raft_term":2,"leases":[]}\n' },
  { name: "user get prints Roles: with a space before each", got: () => printUserGet("bob", { header, roles: ["r1", "r2"] }, simple), want: "User: bob\nRoles: r1 r2\n" },
  {
    name: "role get prints keys, ranges, prefixes and open ends",
    got: () =>
      printRoleGet("r1", { header, perm: [{ permType: "READWRITE", key: "L2E=" }, { permType: "WRITE", key: "L2Y=", range_end: "AA==" }, { key: "L3A=", range_end: "L3E=" }] }, simple),
    want: "Role r1\nKV Read:\n\t/a\n\t[/p, /q) (prefix /p)\nKV Write:\n\t/a\n\t[/f, <open ended>\n",
  },
  {
    name: "role get -w fields names the permission types",
    got: () => printRoleGet("r1", { perm: [{ key: "L3A=", range_end: "L3E=" }] }, fields),
    want: '"ClusterID" : 0\n"MemberID" : 0\n"Revision" : 0\n"RaftTerm" : 0\n"PermType" :  READ\n"Key" : "/p"\n"RangeEnd" : "/q"\n',
  },
  { name: "revoke-permission names an open range", got: () => revokePermissionLine("r", "/f", "\x00"), want: "Permission of range [/f, <open ended> is revoked from role r" },
];

for (const c of cases) test(`printer ${c.name}`, () => assert.equal(c.got(), c.want));

test("printer refuses table, and fields for user get, with exit 4", () => {
  assert.throws(() => printGet({}, { format: "table", hex: false }), (e: unknown) => e instanceof UnsupportedFormatError && e.message === "table not supported as output format" && e.exitCode === 4);
  assert.throws(() => printUserGet("u", {}, fields), /fields not supported as output format/);
});

// Bytes recorded from `etcdctl -w protobuf` 3.4.23 against etcd 3.4.23 (xxd).
test("printer -w protobuf writes etcdctl's bytes", () => {
  const pb: PrintOptions = { format: "protobuf", hex: false };
  const h = { cluster_id: "12337222005447956175", member_id: "3884347338309814502", revision: "2563", raft_term: "2" };
  const hdr = "08cfadeeeec6c1a79bab0110e691c3a1afaafef335188314" + "2002";
  const got = printGet({ header: h, kvs: [{ key: "L3NyYy90MQ==", create_revision: "37", mod_revision: "42", version: "2", value: "MQ==" }], count: "1" }, pb);
  assert.equal(Buffer.from(got).toString("hex"), `0a1a${hdr}12120a072f7372632f74311025182a20022a01312001`);
  // lease responses marshal as their embedded header alone
  assert.equal(Buffer.from(printGrant({ header: h, ID: "7", TTL: "100" }, pb)).toString("hex"), hdr);
  // a negative int64 is ten bytes (two's complement)
  assert.equal(Buffer.from(printDel({ header: { revision: "-1" } }, pb)).toString("hex"), "0a0b18ffffffffffffffffff01");
  // a watch response always has its header
  assert.equal(Buffer.from(printWatch({ created: true }, pb)).toString("hex"), "0a001801");
  assert.throws(
    () => printRevoke("7", { header: h }, pb),
    (e: unknown) => e instanceof UnsupportedFormatError && e.exitCode === 4 && e.message === "marshal unsupported for type clientv3.LeaseRevokeResponse ({cluster_id:12337222005447956175 member_id:3884347338309814502 revision:2563 raft_term:2 })",
  );
});

const quotes: [Buffer, string][] = [
  [Buffer.from("plain"), '"plain"'],
  [Buffer.from('a"b\\c'), '"a\\"b\\\\c"'],
  [Buffer.from("tab\tnl\n"), '"tab\\tnl\\n"'],
  [Buffer.from([0, 0x7f]), '"\\x00\\x7f"'],
  [Buffer.from("é✓"), '"é✓"'],
  [Buffer.from([0xff, 0x41]), '"\\xffA"'],
  [Buffer.from("\u200b"), '"\\u200b"'],
];
for (const [b, want] of quotes) test(`goQuote quotes ${JSON.stringify(b.toString("latin1"))} like Go's %q`, () => assert.equal(goQuote(b), want));

test("leaseHex pads to 16 digits and hexBytes escapes every byte", () => {
  assert.equal(leaseHex("123"), "000000000000007b");
  assert.equal(hexBytes(Buffer.from("ab")), "\\x61\\x62");
});

test("parseHexInt64 reads int64 hex with Go's errors", () => {
  assert.deepEqual(parseHexInt64("7b"), { ok: true, value: "123" });
  assert.deepEqual(parseHexInt64("zz"), { ok: false, error: 'strconv.ParseInt: parsing "zz": invalid syntax' });
  assert.deepEqual(parseHexInt64("ffffffffffffffff"), { ok: false, error: 'strconv.ParseInt: parsing "ffffffffffffffff": value out of range' });
});
