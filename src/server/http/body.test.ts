import assert from "node:assert/strict";
import { test } from "node:test";
import { goMediaType } from "./body.ts";

// Each verdict checked against etcd 3.4.23 (PUT /v2/keys/mt with that Content-Type):
// an error is its `Invalid POST form` cause.
const cases: [header: string, type: string, error?: string][] = [
  ["application/x-www-form-urlencoded; charset", "application/x-www-form-urlencoded", "mime: invalid media parameter"],
  ["application/x-www-form-urlencoded;charset=UTF-8", "application/x-www-form-urlencoded"],
  ["APPLICATION/X-WWW-FORM-URLENCODED", "application/x-www-form-urlencoded"],
  ["text", "text"],
  ["text/", "", "mime: expected token after slash"],
  [";x=y", "", "mime: no media type"],
  ["a/b c", "", "mime: unexpected content after media subtype"],
  ["a/b;", "a/b"],
  ["a/b; ;", "a/b", "mime: invalid media parameter"],
  ["a/b; x=1; X=2", "", "mime: duplicate parameter name"],
  ['a/b; x="unterminated', "a/b", "mime: invalid media parameter"],
  ['a/b; x="q"', "a/b"],
  ["multipart/form-data; boundary=x", "multipart/form-data"],
];
for (const [header, type, error] of cases) {
  test(`goMediaType(${JSON.stringify(header)}) is Go's verdict`, () => {
    assert.deepEqual(goMediaType(header), error === undefined ? { type } : { type, error });
  });
}
