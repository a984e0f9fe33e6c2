import { test } from "node:test";
import assert from "node:assert/strict";
import type { V2ResponseJSON, V2NodeJSON } from "../api/v2-types.ts";
import {
  formatLs,
  formatLsTree,
  formatMemberList,
  formatPrettyJson,
  formatResponse,
  formatWatchEvent,
  goJsonResponse,
  goString,
  type Paint,
  type PrintableResult,
} from "./output.ts";

const result = (response: V2ResponseJSON & { node: V2NodeJSON }, index = 9): PrintableResult => ({ response, index });

const setFoo = result({ action: "set", node: { key: "/foo", value: "bar", modifiedIndex: 8, createdIndex: 8 } });
const updated = result({
  action: "update",
  node: { key: "/foo", value: "new", modifiedIndex: 9, createdIndex: 8, ttl: 5, expiration: "2026-01-01T00:00:05.5Z" },
  prevNode: { key: "/foo", value: "old", modifiedIndex: 8, createdIndex: 8 },
});
const deleted = result({
  action: "delete",
  node: { key: "/foo", modifiedIndex: 10, createdIndex: 8 },
  prevNode: { key: "/foo", value: "bar", modifiedIndex: 8, createdIndex: 8 },
});
const dirNode = result({ action: "create", node: { key: "/d", dir: true, modifiedIndex: 3, createdIndex: 3 } });

const cases: { name: string; r: PrintableResult; format: string; stdout: string; stderr?: string }[] = [
  { name: "simple prints the value", r: setFoo, format: "simple", stdout: "bar\n" },
  { name: "simple prints the previous value of a delete", r: deleted, format: "simple", stdout: "PrevNode.Value: bar\n" },
  {
    name: "extended prints the block, the header index and the value",
    r: setFoo,
    format: "extended",
    stdout: "Key: /foo\nCreated-Index: 8\nModified-Index: 8\nTTL: 0\nIndex: 9\n\nbar\n",
  },
  {
    name: "extended shows the previous value and the TTL",
    r: updated,
    format: "extended",
    stdout: "Key: /foo\nCreated-Index: 8\nModified-Index: 9\nPrevNode.Value: old\nTTL: 5\nIndex: 9\n\nnew\n",
  },
  {
    name: "extended omits the value of a delete",
    r: deleted,
    format: "extended",
    stdout: "Key: /foo\nCreated-Index: 8\nModified-Index: 10\nPrevNode.Value: bar\nTTL: 0\nIndex: 9\n",
  },
  {
    name: "extended prints an empty value for a directory",
    r: dirNode,
    format: "extended",
    stdout: "Key: /d\nCreated-Index: 3\nModified-Index: 3\nTTL: 0\nIndex: 9\n\n\n",
  },
  {
    name: "json re-marshals in Go's field order with nulls",
    r: setFoo,
    format: "json",
    stdout: '{"action":"set","node":{"key":"/foo","value":"bar","nodes":null,"createdIndex":8,"modifiedIndex":8},"prevNode":null}\n',
  },
  {
    name: "json keeps expiration and ttl after the indexes",
    r: updated,
    format: "json",
    stdout:
      '{"action":"update","node":{"key":"/foo","value":"new","nodes":null,"createdIndex":8,"modifiedIndex":9,"expiration":"2026-01-01T00:00:05.5Z","ttl":5},"prevNode":{"key":"/foo","value":"old","nodes":null,"createdIndex":8,"modifiedIndex":8}}\n',
  },
  {
    name: "json marks directories and gives them an empty value",
    r: dirNode,
    format: "json",
    stdout: '{"action":"create","node":{"key":"/d","dir":true,"value":"","nodes":null,"createdIndex":3,"modifiedIndex":3},"prevNode":null}\n',
  },
  { name: "an unknown format goes to stderr", r: setFoo, format: "yaml", stdout: "", stderr: "Unsupported output format: yaml\n" },
];

for (const c of cases) {
  test(`formatResponse: ${c.name}`, () => {
    assert.deepEqual(formatResponse(c.r, c.format), { stdout: c.stdout, stderr: c.stderr ?? "" });
  });
}

const escapes: [string, string][] = [
  ["plain", '"plain"'],
  ["a<b>&c", '"a\\u003cb\\u003e\\u0026c"'],
  ["\b\f\u0001\t\n\"\\", '"\\u0008\\u000c\\u0001\\t\\n\\"\\\\"'],
  ["\u2028\u2029 é", '"\\u2028\\u2029 é"'],
];
for (const [input, want] of escapes) {
  test(`goString escapes like Go's encoding/json: ${JSON.stringify(input)}`, () => {
    assert.equal(goString(input), want);
  });
}

test("goJsonResponse writes [] for an empty nodes array and nests children", () => {
  const json = goJsonResponse({
    action: "get",
    node: { key: "/d", dir: true, nodes: [{ key: "/d/e", dir: true, nodes: [], modifiedIndex: 2, createdIndex: 2 }], modifiedIndex: 1, createdIndex: 1 },
  });
  assert.equal(
    json,
    '{"action":"get","node":{"key":"/d","dir":true,"value":"","nodes":[{"key":"/d/e","dir":true,"value":"","nodes":[],"createdIndex":2,"modifiedIndex":2}],"createdIndex":1,"modifiedIndex":1},"prevNode":null}',
  );
});

const tree = result({
  action: "get",
  node: {
    key: "/d",
    dir: true,
    nodes: [
      { key: "/d/a", value: "1" },
      { key: "/d/b", dir: true, nodes: [{ key: "/d/b/c", value: "2" }] },
      { key: "/d/z", dir: true },
    ],
  },
});

test("formatLs prints every key below, -p marking directories", () => {
  assert.equal(formatLs(tree, { format: "simple", slash: false }).stdout, "/d/a\n/d/b\n/d/b/c\n/d/z\n");
  assert.equal(formatLs(tree, { format: "simple", slash: true }).stdout, "/d/a\n/d/b/\n/d/b/c\n/d/z/\n");
});

test("formatLs prints the key itself when it is not a directory", () => {
  assert.equal(formatLs(setFoo, { format: "simple", slash: true }).stdout, "/foo\n");
});

test("formatLs uses the response printer for other formats", () => {
  assert.deepEqual(formatLs(setFoo, { format: "extended", slash: false }), formatResponse(setFoo, "extended"));
});

test("formatLs paints directories when given a Paint", () => {
  const paint: Paint = { dir: (t) => `<${t}>`, key: (t) => t, branch: (t) => t };
  assert.equal(formatLs(tree, { format: "simple", slash: false, paint }).stdout, "/d/a\n</d/b>\n/d/b/c\n</d/z>\n");
});

test("formatLsTree draws the tree with last-segment names", () => {
  const paint: Paint = { dir: (t) => `[${t}]`, key: (t) => t, branch: (t) => t };
  assert.equal(
    formatLsTree(tree, { slash: true, paint }),
    ["[/d/]", "├── a", "├── [b/]", "│   └── c", "└── [z/]", ""].join("\n"),
  );
});

test("formatWatchEvent prefixes recursive events with [action] key", () => {
  assert.deepEqual(formatWatchEvent(setFoo, { format: "simple", recursive: true }), { stdout: "[set] /foo\nbar\n", stderr: "" });
  assert.deepEqual(formatWatchEvent(setFoo, { format: "simple", recursive: false }), { stdout: "bar\n", stderr: "" });
});

test("formatMemberList prints etcdctl's member lines", () => {
  const out = formatMemberList(
    [
      { id: "a1", name: "one", peerURLs: ["http://p1"], clientURLs: ["http://c1", "http://c1b"] },
      { id: "b2", name: "", peerURLs: ["http://p2"], clientURLs: [] },
      { id: "c3", name: "three", peerURLs: ["http://p3"], clientURLs: ["http://c3"] },
    ],
    "c3",
  );
  assert.equal(
    out,
    "a1: name=one peerURLs=http://p1 clientURLs=http://c1,http://c1b isLeader=false\n" +
      "b2[unstarted]: peerURLs=http://p2\n" +
      "c3: name=three peerURLs=http://p3 clientURLs=http://c3 isLeader=true\n",
  );
});

test("formatPrettyJson indents by two spaces and ends with a newline", () => {
  assert.equal(formatPrettyJson({ a: 1, b: { c: "d" } }), '{\n  "a": 1,\n  "b": {\n    "c": "d"\n  }\n}\n');
});
