import { test } from "node:test";
import assert from "node:assert/strict";
import { parseQuery, parseGoBool, parseGoUint64, unescape } from "./form.ts";

test("parseQuery keeps every value in order and decodes plus as space", () => {
  const r = parseQuery("a=1&b=x+y&a=2&c");
  assert.equal(r.error, undefined);
  assert.deepEqual([...r.values], [["a", ["1", "2"]], ["b", ["x y"]], ["c", [""]]]);
});

const errorCases: Array<[string, string]> = [
  ["value=%zz", 'invalid URL escape "%zz"'],
  ["value=a;b", "invalid semicolon separator in query"],
  ["value=%4", 'invalid URL escape "%4"'],
  ["x=1&value=%", 'invalid URL escape "%"'],
];
for (const [raw, msg] of errorCases) {
  test(`parseQuery reports Go's error for ${raw}`, () => {
    assert.equal(parseQuery(raw).error, msg);
  });
}

test("parseQuery goes on past a bad pair as Go does", () => {
  const r = parseQuery("a;b=1&c=2");
  assert.equal(r.error, "invalid semicolon separator in query");
  assert.deepEqual(r.values.get("c"), ["2"]);
});

test("unescape turns invalid UTF-8 into U+FFFD and keeps plus in paths", () => {
  assert.deepEqual(unescape("%FF%FE", false), { value: "\uFFFD\uFFFD" });
  assert.deepEqual(unescape("a+b%2Fc", false), { value: "a+b/c" });
  assert.deepEqual(unescape("%C3%BC", true), { value: "ü" });
});

test("parseGoBool accepts exactly strconv.ParseBool's spellings", () => {
  for (const t of ["1", "t", "T", "TRUE", "true", "True"]) assert.equal(parseGoBool(t), true);
  for (const f of ["0", "f", "F", "FALSE", "false", "False"]) assert.equal(parseGoBool(f), false);
  for (const bad of ["", "yes", "tRuE", " true"]) assert.equal(parseGoBool(bad), undefined);
});

test("parseGoUint64 accepts digits up to 2^64-1 only", () => {
  assert.equal(parseGoUint64("0"), 0);
  assert.equal(parseGoUint64("42"), 42);
  assert.equal(parseGoUint64("18446744073709551615"), Number.MAX_SAFE_INTEGER);
  for (const bad of ["", "-1", "1.5", "1e3", " 5", "abc", "18446744073709551616", "+1"]) {
    assert.equal(parseGoUint64(bad), undefined, bad);
  }
});
