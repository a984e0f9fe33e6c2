import { test } from "node:test";
import assert from "node:assert/strict";
import { CliExit } from "../../exit-codes.ts";
import { argify, linesOf, parseCompare, parseJsonTxn, parseRequestOp, readLineTxn, TxnInputError } from "./txn-parse.ts";

const b = (s: string): string => Buffer.from(s).toString("base64");

const compares: { line: string; want: unknown }[] = [
  { line: 'mod("foo") > "5"', want: { key: b("foo"), result: "GREATER", target: "MOD", mod_revision: "5" } },
  { line: 'ver("k") != "0"', want: { key: b("k"), result: "NOT_EQUAL", target: "VERSION", version: "0" } },
  { line: 'c("k") < "3"', want: { key: b("k"), result: "LESS", target: "CREATE", create_revision: "3" } },
  { line: 'value("a b") = "x \\"y\\""', want: { key: b("a b"), result: "EQUAL", target: "VALUE", value: b('x "y"') } },
  { line: 'lease("k") = "7b"', want: { key: b("k"), result: "EQUAL", target: "LEASE", lease: "123" } },
];
for (const c of compares) test(`parseCompare reads ${c.line}`, () => assert.deepEqual(parseCompare(c.line), c.want));

const badCompares: [string, string][] = [
  ["bad", "malformed comparison: bad"],
  ['zz("a") = "0"', 'malformed comparison: zz("a") = "0" (unknown target zz)'],
  ['mod("a") > "x"', 'invalid txn compare request: mod("a") > "x"'],
  ['mod("a") == "1"', 'malformed comparison: mod("a") == "1" (unknown op ==)'],
];
for (const [line, message] of badCompares) {
  test(`parseCompare rejects ${line}`, () => assert.throws(() => parseCompare(line), (e: unknown) => e instanceof TxnInputError && e.message === message && e.exitCode === 3));
}

const ops: { line: string; want: unknown }[] = [
  { line: "put k v --prev-kv", want: { request_put: { key: b("k"), value: b("v"), prev_kv: true } } },
  { line: 'put "k 1" "v 2"', want: { request_put: { key: b("k 1"), value: b("v 2") } } },
  { line: "get a --prefix --keys-only", want: { request_range: { key: b("a"), range_end: b("b"), keys_only: true } } },
  { line: "del a c", want: { request_delete_range: { key: b("a"), range_end: b("c") } } },
];
for (const c of ops) test(`parseRequestOp reads ${c.line}`, () => assert.deepEqual(parseRequestOp(c.line), c.want));

test("parseRequestOp rejects unknown commands and global flags", () => {
  assert.throws(() => parseRequestOp("bogus x"), /invalid txn request: bogus x/);
  assert.throws(() => parseRequestOp("get a -w json"), /invalid txn request/);
  // The command's own argument check exits as that command (etcdctl 3.4.23: exit 128).
  assert.throws(() => parseRequestOp("put /k"), (e: unknown) => e instanceof CliExit && e.exitCode === 128 && e.stderr === "Error: put command needs 1 argument and input from stdin or 2 arguments\n");
});

test("argify splits like a shell and unquotes Go strings", () => {
  assert.deepEqual(argify(`put "a b" 'c d' e\\tf`), ["put", "a b", "c d", "e\\tf"]);
});

test("readLineTxn reads three sections and prompts before each", async () => {
  const prompts: string[] = [];
  const req = await readLineTxn(linesOf('mod("a") > "0"\n\nput a 1\n\nget a\n\n'), (p) => prompts.push(p));
  assert.deepEqual(prompts, ["compares:", "success requests (get, put, del):", "failure requests (get, put, del):"]);
  assert.equal(req.compare?.length, 1);
  assert.equal(req.success?.length, 1);
  assert.equal(req.failure?.length, 1);
});

test("readLineTxn fails with EOF when input ends before a blank line", async () => {
  await assert.rejects(readLineTxn(linesOf('mod("a") > "0"\n'), () => {}), (e: unknown) => e instanceof TxnInputError && e.message === "EOF");
});

test("parseJsonTxn accepts a gateway TxnRequest and rejects other shapes", () => {
  const ok = { compare: [{ key: b("a"), target: "MOD", result: "GREATER", mod_revision: "0" }], success: [{ request_put: { key: b("a"), value: b("1") } }] };
  assert.deepEqual(parseJsonTxn(JSON.stringify(ok)), ok);
  assert.throws(() => parseJsonTxn('{"bogus":[]}'), /unknown field "bogus"/);
  assert.throws(() => parseJsonTxn('{"success":[{"put":{}}]}'), /needs one of request_range/);
  assert.throws(() => parseJsonTxn("{"), /invalid txn JSON/);
});
