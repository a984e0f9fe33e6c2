import assert from "node:assert/strict";
import { test } from "node:test";
import { cleanPath, compareKeys, inOrderName, isHiddenBelow, isHiddenPath, isStrictlyBelow } from "./path.ts";

const cleanCases: [input: string, want: string][] = [
  ["", "/"],
  ["/", "/"],
  ["a", "/a"],
  ["/a/b", "/a/b"],
  ["/a/b/", "/a/b"],
  ["//a//b//", "/a/b"],
  ["/a/./b", "/a/b"],
  ["/a/../b", "/b"],
  ["/../a", "/a"],
  ["/a/b/..", "/a"],
  ["/a/.", "/a"],
  ["/.hidden/..x/x..", "/.hidden/..x/x.."],
  ["/_h/ü/😀", "/_h/ü/😀"],
  ["/a b/%2F", "/a b/%2F"],
];
for (const [input, want] of cleanCases) {
  test(`cleanPath turns ${JSON.stringify(input)} into ${want}`, () => {
    assert.equal(cleanPath(input), want);
  });
}

test("compareKeys sorts like UTF-8 bytes, not UTF-16 units", () => {
  const keys = ["/d/a", "/d/\uFF5E", "/d/10", "/d/B", "/d/😀", "/d/9", "/d/é"];
  const sorted = [...keys].sort(compareKeys);
  const byBytes = [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  assert.deepEqual(sorted, byBytes);
  assert.deepEqual(sorted, ["/d/10", "/d/9", "/d/B", "/d/a", "/d/é", "/d/\uFF5E", "/d/😀"]);
  assert.ok(compareKeys("/a", "/a/b") < 0);
  assert.equal(compareKeys("/x", "/x"), 0);
});

test("isHiddenPath looks at the last segment only", () => {
  assert.equal(isHiddenPath("/a/_b"), true);
  assert.equal(isHiddenPath("/_a/b"), false);
  assert.equal(isHiddenPath("/"), false);
});

const hiddenCases: [watch: string, key: string, want: boolean][] = [
  ["/", "/_x", true],
  ["/", "/a/_x/y", true],
  ["/a", "/a/_b", true],
  ["/a", "/a/b", false],
  ["/_a", "/_a/b", false], // the watched path's own segments do not count
  ["/a/_b", "/a/_b", false],
  ["/a/b/c", "/a", false], // deeper watcher of a deleted ancestor
];
for (const [watch, key, want] of hiddenCases) {
  test(`isHiddenBelow(${watch}, ${key}) is ${want}`, () => {
    assert.equal(isHiddenBelow(watch, key), want);
  });
}

test("isStrictlyBelow compares whole segments", () => {
  assert.equal(isStrictlyBelow("/foo", "/foo/x"), true);
  assert.equal(isStrictlyBelow("/foo", "/foobar"), false);
  assert.equal(isStrictlyBelow("/foo", "/foo"), false);
  assert.equal(isStrictlyBelow("/", "/a"), true);
  assert.equal(isStrictlyBelow("/", "/"), false);
});

test("inOrderName pads the index to 20 digits", () => {
  assert.equal(inOrderName(117), "00000000000000000117");
  assert.equal(inOrderName(2 ** 53 - 1).length, 20);
});
