import { test } from "node:test";
import assert from "node:assert/strict";
import { formatJoinSettings, goQuote } from "./cluster.ts";

test("formatJoinSettings prints kvctl serve's KV_ variables in etcdctl's layout", () => {
  const members = [
    { id: "491a2665b32e660", name: "e1", peerURLs: ["http://127.0.0.1:23302"], clientURLs: ["http://127.0.0.1:23301"] },
    { id: "acd190b05df115e4", name: "", peerURLs: ["http://127.0.0.1:23304"], clientURLs: [] },
  ];
  assert.equal(
    formatJoinSettings("e2", "acd190b05df115e4", members),
    '\nKV_NAME="e2"\nKV_INITIAL_CLUSTER="e1=http://127.0.0.1:23302,e2=http://127.0.0.1:23304"\nKV_INITIAL_CLUSTER_STATE="existing"\n',
  );
});

const quoteCases: [string, string][] = [
  ["plain", '"plain"'],
  ['new "one"', '"new \\"one\\""'],
  ["back\\slash", '"back\\\\slash"'],
  ["tab\there\n", '"tab\\there\\n"'],
  ["bell\x07\x01\x7f", '"bell\\a\\x01\\x7f"'],
  ["héllo 世界 ✓", '"héllo 世界 ✓"'],
  ["nb\u00a0sp\u0085", '"nb\\u00a0sp\\u0085"'],
  ["\u{e0001}", '"\\U000e0001"'],
];
for (const [input, want] of quoteCases) {
  test(`goQuote quotes ${JSON.stringify(input)} as Go's %q`, () => {
    assert.equal(goQuote(input), want);
  });
}
