import { test } from "node:test";
import assert from "node:assert/strict";
import { canonicalUrlPath, goEncodeQuery, goPathEscape, goQueryEscape, joinPath, v2KeysPath } from "./go-url.ts";

// Expected values recorded from etcdctl 3.4.23 --debug (Go's net/url).
const keyPaths: [string, string, string][] = [
  ["", "foo", "/v2/keys/foo"],
  ["", "/a/../b//c/", "/v2/keys/b/c/"],
  ["", "sp ace/~*?#%|", "/v2/keys/sp%20ace/~%2A%3F%23%25%7C"],
  ["", "a/./b/", "/v2/keys/a/b/"],
  ["/prefix/", "k", "/prefix/v2/keys/k"],
  ["", "é$&+,:;=@", "/v2/keys/%C3%A9$&+,:;=@"],
  ["", "", "/v2/keys"],
];
for (const [base, key, want] of keyPaths) {
  test(`v2KeysPath escapes ${JSON.stringify(key)} like etcd's client`, () => {
    assert.equal(v2KeysPath(base, "/v2/keys", key), want);
  });
}

test("goQueryEscape writes spaces as + and escapes * and ~ like Go", () => {
  assert.equal(goQueryEscape("a~*b c+d&"), "a~%2Ab+c%2Bd%26");
});

test("goEncodeQuery sorts keys", () => {
  assert.equal(goEncodeQuery({ sorted: "false", quorum: "false", recursive: "true" }), "quorum=false&recursive=true&sorted=false");
  assert.equal(goEncodeQuery({}), "");
});

test("canonicalUrlPath cleans but keeps a trailing slash", () => {
  assert.deepEqual(
    ["", "/", "//a//b", "/a/../../b/", "a/b", "/./"].map(canonicalUrlPath),
    ["/", "/", "/a/b", "/b/", "/a/b", "/"],
  );
});

test("goPathEscape keeps Go's path-safe characters", () => {
  assert.equal(goPathEscape("/a b/$&+,/:;=@~-_."), "/a%20b/$&+,/:;=@~-_.");
});

test("joinPath joins like path.Join", () => {
  assert.equal(joinPath("", "/v2/members", "leader"), "/v2/members/leader");
  assert.equal(joinPath("/base/", "/v2/stats", "store"), "/base/v2/stats/store");
});
