import { test } from "node:test";
import assert from "node:assert/strict";
import {
  compareGoStrings,
  grantPermissions,
  listsEqual,
  patternMatches,
  patternMatchesRecursively,
  permissionsAllow,
  permissionsEmpty,
  revokePermissions,
  sortedSet,
} from "./v2-permissions.ts";
import { V2AuthError } from "./v2-model.ts";

// [pattern, key, plain access, recursive access] — the spec's five rules and REFERENCE's table.
const matchTable: Array<[string, string, boolean, boolean]> = [
  // rule 2: an exact pattern names that key only, and never grants recursive access
  ["/foo", "/foo", true, false],
  ["/foo", "/foo/", false, false],
  ["/foo", "/foo/bar", false, false],
  ["/foo", "/foobar", false, false],
  ["/foo", "/fo", false, false],
  ["/foo/", "/foo/", true, false],
  // rule 3: a trailing * is a string prefix
  ["/foo*", "/foo", true, true],
  ["/foo*", "/foobar", true, true],
  ["/foo*", "/foo/bar", true, true],
  ["/foo*", "/fo", false, false],
  ["/foo*", "/other", false, false],
  ["/foo/*", "/foo/bar", true, true],
  ["/foo/*", "/foo/bar/baz", true, true],
  ["/foo/*", "/foo/", true, true],
  ["/foo/*", "/foo", false, false],
  ["/foo/*", "/foobar", false, false],
  // rule 4: * and /* cover the key space (bare /v2/keys is the key "" as in etcd)
  ["*", "/anything/at/all", true, true],
  ["*", "", true, true],
  ["/*", "/", true, true],
  ["/*", "/a/b/c", true, true],
  ["/*", "", false, false],
  // an empty pattern matches nothing (etcd would crash)
  ["", "", false, false],
  ["", "/a", false, false],
  // non-ASCII keys compare as strings
  ["/é*", "/été", true, true],
  ["/é", "/e", false, false],
];

for (const [pattern, key, plain, recursive] of matchTable) {
  test(`pattern ${JSON.stringify(pattern)} ${plain ? "matches" : "does not match"} key ${JSON.stringify(key)}, recursively ${recursive}`, () => {
    assert.equal(patternMatches(pattern, key), plain);
    assert.equal(patternMatchesRecursively(pattern, key), recursive);
  });
}

test("permissionsAllow grants when any pattern of the list matches (rule 5)", () => {
  const p = { read: ["/a", "/b/*"], write: ["/w*"] };
  assert.equal(permissionsAllow(p, "/b/x", { write: false, recursive: false }), true);
  assert.equal(permissionsAllow(p, "/a", { write: false, recursive: false }), true);
  assert.equal(permissionsAllow(p, "/a", { write: true, recursive: false }), false);
  assert.equal(permissionsAllow(p, "/w/1", { write: true, recursive: false }), true);
  assert.equal(permissionsAllow(p, "/a", { write: false, recursive: true }), false);
  assert.equal(permissionsAllow(p, "/b/x", { write: false, recursive: true }), true);
});

test("permissionsAllow denies everything when the list is null", () => {
  assert.equal(permissionsAllow({ read: null, write: null }, "/a", { write: false, recursive: false }), false);
});

test("compareGoStrings orders by code point, as Go's byte order does", () => {
  // U+FF5E (one UTF-16 unit) sorts before U+1F600 (a surrogate pair) in UTF-8 byte order.
  assert.ok(compareGoStrings("\uff5e", "\u{1f600}") < 0);
  assert.ok(compareGoStrings("a", "ab") < 0);
  assert.equal(compareGoStrings("x", "x"), 0);
  assert.deepEqual(sortedSet(["b", "a", "b", "\u{1f600}", "\uff5e"]), ["a", "b", "\uff5e", "\u{1f600}"]);
});

test("listsEqual tells a null list from an empty one, and cares about order", () => {
  assert.equal(listsEqual(null, null), true);
  assert.equal(listsEqual(null, []), false);
  assert.equal(listsEqual(["a", "b"], ["b", "a"]), false);
  assert.equal(listsEqual(["a"], ["a"]), true);
});

test("permissionsEmpty is true for absent and pattern-less lists only", () => {
  assert.equal(permissionsEmpty(null), true);
  assert.equal(permissionsEmpty({ read: [], write: null }), true);
  assert.equal(permissionsEmpty({ read: null, write: ["/x"] }), false);
});

test("grantPermissions sorts, turns null lists into sets, and keeps a null grant a no-op", () => {
  const p = { read: ["/z", "/a"], write: null };
  assert.equal(grantPermissions(p, null), p);
  assert.deepEqual(grantPermissions(p, { read: ["/m"], write: null }), { read: ["/a", "/m", "/z"], write: [] });
});

test("grantPermissions refuses a duplicate pattern with etcd's 409 message", () => {
  const r = grantPermissions({ read: ["/a"], write: [] }, { read: null, write: ["/w", "/w"] });
  assert.ok(r instanceof V2AuthError);
  assert.equal(r.status, 409);
  assert.equal(r.message, "auth: Granting duplicate write permission /w");
  const r2 = grantPermissions({ read: ["/a"], write: [] }, { read: ["/a"], write: null });
  assert.ok(r2 instanceof V2AuthError);
  assert.equal(r2.message, "auth: Granting duplicate read permission /a");
});

test("revokePermissions ignores patterns that were never granted", () => {
  assert.deepEqual(revokePermissions({ read: ["/a", "/b"], write: ["/*"] }, { read: ["/b", "/nope"], write: null }), { read: ["/a"], write: ["/*"] });
});
