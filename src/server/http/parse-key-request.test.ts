import { test } from "node:test";
import assert from "node:assert/strict";
import { V2Error } from "../../api/v2-errors.ts";
import { echoPrevIndex, goExpiration, parseKeyRequest } from "./parse-key-request.ts";
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

test("parseKeyRequest treats an empty ttl as no TTL", () => {
  const r = parse("PUT", "value=v&ttl=");
  assert.ok(r.kind === "write" && r.request.expiration === undefined);
});

test("parseKeyRequest carries the proposer's nanoseconds beside the ms of the expiration", () => {
  const now = Date.UTC(2026, 10, 26, 1, 48, 35, 550);
  const r = parseKeyRequest("PUT", "/k", parseQuery("value=v&ttl=100").values, now, 621324);
  assert.ok(r.kind === "write");
  assert.equal(r.request.expiration, now + 100_000);
  assert.equal(r.request.expirationNs, 621324);
  const whole = parseKeyRequest("PUT", "/k", parseQuery("value=v&ttl=100").values, now, 0);
  assert.ok(whole.kind === "write" && whole.request.expirationNs === undefined, "no field for 0 ns");
});

test("goExpiration wraps a huge ttl as Go's int64 Duration and UnixNano do", () => {
  const now = Date.UTC(2026, 10, 26, 1, 48, 35, 550);
  // 99999999999 s * 1e9 overflows int64: etcd 3.4 stamps a time in 1688 (seen on a real member).
  const exp = goExpiration(99999999999n, now, 621324);
  assert.ok(exp !== undefined);
  const want = BigInt.asIntN(64, BigInt(now) * 1_000_000n + 621324n + BigInt.asIntN(64, 99999999999n * 1_000_000_000n));
  assert.equal(BigInt(exp.ms) * 1_000_000n + BigInt(exp.ns), want);
  assert.ok(exp.ns >= 0 && exp.ns < 1_000_000);
  assert.equal(new Date(exp.ms).getUTCFullYear(), 1688);
  // ttl >= 2^63 is a negative Duration in Go.
  const neg = goExpiration(1n << 63n, now, 0);
  assert.ok(neg !== undefined);
  assert.equal(goExpiration(100n, now, 0)?.ms, now + 100_000);
  // A sum of exactly 0 is "no expiration" for etcd's apply.
  assert.equal(goExpiration(0n, 0, 0), undefined);
});

test("parseKeyRequest gives a huge ttl its wrapped expiration (the store decides what it means)", () => {
  const r = parseKeyRequest("PUT", "/k", parseQuery("value=v&ttl=99999999999").values, Date.UTC(2026, 0, 1), 0);
  assert.ok(r.kind === "write" && r.request.expiration !== undefined && r.request.expiration < 0);
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

test("a failed compare echoes a prevIndex above 2^53 as it was sent, not clamped", () => {
  const kr = parse("PUT", "prevIndex=18446744073709551615&value=v");
  assert.equal(kr.kind === "write" && kr.request.prevIndex, Number.MAX_SAFE_INTEGER);
  const failed = new V2Error(101, `[${Number.MAX_SAFE_INTEGER} != 35]`, 35);
  const echoed = echoPrevIndex(failed, kr);
  assert.ok(echoed instanceof V2Error);
  assert.equal(echoed.cause_, "[18446744073709551615 != 35]");
  assert.equal(echoed.index, 35);
  assert.equal(echoPrevIndex(failed, parse("PUT", "prevIndex=9007199254740991&value=v")), failed, "a prevIndex of exactly 2^53-1 is its own text");
  const notFound = new V2Error(100, "/k", 35);
  assert.equal(echoPrevIndex(notFound, kr), notFound);
});
