import { test } from "node:test";
import assert from "node:assert/strict";
import { V2Error } from "../../api/v2-errors.ts";
import { parseKeyRequest } from "./parse-key-request.ts";
import { parseQuery } from "./form.ts";

function parse(method: string, query: string) {
  return parseKeyRequest(method, "/k", parseQuery(query).values, 1_000_000);
}

function expectError(method: string, query: string, code: number, cause: string): void {
  assert.throws(() => parse(method, query), (err: unknown) => {
    assert.ok(err instanceof V2Error);
    assert.equal(err.errorCode, code);
    assert.equal(err.cause_, cause);
    assert.equal(err.index, 0);
    return true;
  });
}

const errors: Array<[string, string, number, string]> = [
  ["PUT", "prevIndex=abc", 203, 'invalid value for "prevIndex"'],
  ["GET", "waitIndex=-1", 203, 'invalid value for "waitIndex"'],
  ["GET", "waitIndex=", 203, 'invalid value for "waitIndex"'],
  ["GET", "recursive=yes", 209, 'invalid value for "recursive"'],
  ["GET", "sorted=", 209, 'invalid value for "sorted"'],
  ["PUT", "wait=true", 209, '"wait" can only be used with GET requests'],
  ["PUT", "prevValue=", 201, '"prevValue" cannot be empty'],
  ["PUT", "prevValue", 201, '"prevValue" cannot be empty'],
  ["PUT", "noValueOnSuccess=maybe", 209, 'invalid value for "noValueOnSuccess"'],
  ["PUT", "ttl=abc", 202, 'invalid value for "ttl"'],
  ["PUT", "ttl=1.5", 202, 'invalid value for "ttl"'],
  ["GET", "ttl=-1", 202, 'invalid value for "ttl"'],
  ["PUT", "prevExist=yes", 209, "invalid value for prevExist"],
  ["PUT", "refresh=x", 209, "invalid value for refresh"],
  ["PUT", "refresh=true&ttl=5&value=v", 211, "A value was provided on a refresh"],
  ["PUT", "refresh=true", 212, "No TTL value set"],
  ["PUT", "refresh=true&ttl=", 212, "No TTL value set"],
  // order: dir is checked before ttl
  ["PUT", "ttl=abc&dir=maybe", 209, 'invalid value for "dir"'],
];
for (const [m, q, code, cause] of errors) {
  test(`parseKeyRequest answers ${code} for ${m} ?${q}`, () => expectError(m, q, code, cause));
}

test("parseKeyRequest turns a TTL into an absolute expiration", () => {
  const r = parse("PUT", "value=v&ttl=5");
  assert.equal(r.kind, "write");
  if (r.kind === "write") assert.equal(r.request.expiration, 1_000_000 + 5000);
});

test("parseKeyRequest treats an empty ttl as no TTL and a huge ttl as permanent", () => {
  for (const q of ["value=v&ttl=", "value=v&ttl=99999999999"]) {
    const r = parse("PUT", q);
    assert.ok(r.kind === "write" && r.request.expiration === undefined, q);
  }
});

test("parseKeyRequest makes wait=true a watch unless quorum=true", () => {
  assert.equal(parse("GET", "wait=true&waitIndex=7").kind, "watch");
  assert.equal(parse("GET", "wait=true&quorum=true").kind, "get");
});

test("parseKeyRequest keeps prevExist tri-state and the first value of repeated keys", () => {
  const r = parse("PUT", "value=a&value=b&prevExist=false");
  assert.ok(r.kind === "write");
  if (r.kind === "write") {
    assert.equal(r.request.val, "a");
    assert.equal(r.request.prevExist, false);
  }
  const s = parse("PUT", "value=a");
  assert.ok(s.kind === "write" && !("prevExist" in s.request));
});
