import { test } from "node:test";
import assert from "node:assert/strict";
import { cleanPath, muxCleanPath, escapePath } from "./path.ts";

const cases: Array<[string, string]> = [
  ["/v2/keys/a", "/v2/keys/a"],
  ["/v2/keys/a/", "/v2/keys/a/"],
  ["/v2/keys//a", "/v2/keys/a"],
  ["/v2/keys/./a", "/v2/keys/a"],
  ["/v2/keys/zz/../a", "/v2/keys/a"],
  ["/v2/keys/u/..", "/v2/keys"],
  ["/v2/keys/...", "/v2/keys/..."],
  ["/", "/"],
];
for (const [input, want] of cases) {
  test(`muxCleanPath cleans ${input} to ${want}`, () => assert.equal(muxCleanPath(input), want));
}

test("cleanPath drops the trailing slash and resolves dots", () => {
  assert.equal(cleanPath("/a/b/"), "/a/b");
  assert.equal(cleanPath("/../a"), "/a");
  assert.equal(cleanPath(""), "/");
});

test("escapePath escapes what a Location header needs", () => {
  assert.equal(escapePath("/v2/keys/a b"), "/v2/keys/a%20b");
  assert.equal(escapePath("/v2/keys/q?x#y"), "/v2/keys/q%3Fx%23y");
});
