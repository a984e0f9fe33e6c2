// Entry sizes and the ConfChange codec (byte-compatible with etcd's raftpb).

import assert from "node:assert/strict";
import { test } from "node:test";
import { bytes, ent } from "./raft.test-helper.ts";
import { ConfChangeType } from "./types.ts";
import { decodeConfChange, encodeConfChange, entrySize, limitSize, sortNumbers } from "./util.ts";

test("encodeConfChange writes etcd's protobuf bytes", () => {
  // pb.ConfChange{ID: 0, Type: AddNode, NodeID: 1}.Marshal() == 08 00 10 00 18 01
  assert.deepStrictEqual(
    [...encodeConfChange({ type: ConfChangeType.AddNode, nodeId: 1, context: new Uint8Array(0) })],
    [0x08, 0x00, 0x10, 0x00, 0x18, 0x01],
  );
  // With an id, a multi-byte node id and a context.
  assert.deepStrictEqual(
    [...encodeConfChange({ type: ConfChangeType.RemoveNode, nodeId: 300, context: bytes("ab"), id: 5 })],
    [0x08, 0x05, 0x10, 0x01, 0x18, 0xac, 0x02, 0x22, 0x02, 0x61, 0x62],
  );
});

test("decodeConfChange round-trips 64-bit-ish safe integers", () => {
  for (const nodeId of [1, 127, 128, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER]) {
    const cc = { type: ConfChangeType.AddLearnerNode, nodeId, context: bytes("ctx"), id: nodeId };
    assert.deepStrictEqual(decodeConfChange(encodeConfChange(cc)), cc);
  }
  assert.throws(() => decodeConfChange(new Uint8Array([0x08])), { code: "ERR_RAFT_INVARIANT" });
});

test("entrySize matches the protobuf size of an Entry", () => {
  // Term, Index, Type varints (1 byte each + tag) = 6; data "hello" = 1 + 1 + 5.
  assert.equal(entrySize(ent(1, 1)), 6);
  assert.equal(entrySize(ent(1, 1, "hello")), 13);
  assert.equal(entrySize(ent(300, 1)), 7);
});

test("limitSize keeps at least one entry and stops before exceeding the limit", () => {
  const ents = [ent(1, 1, "aaaa"), ent(1, 2, "bbbb"), ent(1, 3, "cccc")];
  const sz = entrySize(ents[0]!);
  assert.equal(limitSize(ents, 0).length, 1);
  assert.equal(limitSize(ents, sz).length, 1);
  assert.equal(limitSize(ents, 2 * sz).length, 2);
  assert.equal(limitSize(ents, 2 * sz + 1).length, 2);
  assert.equal(limitSize(ents, Infinity).length, 3);
});

test("sortNumbers sorts ascending in place like sort((a, b) => a - b), over seeded random arrays", () => {
  const seed = 20261122;
  let x = seed;
  const rand = (n: number): number => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x % n;
  };
  for (let t = 0; t < 500; t++) {
    const a = Array.from({ length: rand(9) }, () => rand(6) * 1e15 + rand(1000));
    const want = [...a].sort((p, q) => p - q);
    const got = sortNumbers(a);
    assert.equal(got, a, "in place: the same array comes back");
    assert.deepStrictEqual(got, want, `seed ${seed}, case ${t}`);
  }
});
