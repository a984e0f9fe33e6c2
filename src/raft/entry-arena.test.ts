// The arena's slabs, seen through the buffers of the copies it hands out. Module state is
// per process: this file's first retained entry is the process's first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { retainEntryData } from "./entry-arena.ts";

const MiB = 1024 * 1024;

test("copies go into a 1 MiB first slab, then 33 MiB slabs; large entries get their own buffer", () => {
  const entry = new Uint8Array(1000).fill(7);
  const first = retainEntryData(entry);
  assert.notEqual(first.buffer, entry.buffer);
  assert.deepEqual(first, entry);
  assert.equal(first.buffer.byteLength, MiB);
  // 8-byte aligned: 1000 bytes take 1000; the first slab holds 1048 of them.
  const copies: Uint8Array[] = [first];
  for (let i = 1; i < 1048; i++) copies.push(retainEntryData(entry.fill(i % 256)));
  assert.ok(copies.every((c) => c.buffer === first.buffer));
  assert.deepEqual(copies[1047], new Uint8Array(1000).fill(1047 % 256));
  const next = retainEntryData(entry);
  assert.equal(next.buffer.byteLength, 33 * MiB);
  assert.deepEqual(copies[5], new Uint8Array(1000).fill(5), "earlier copies are untouched by later ones");
  const large = retainEntryData(new Uint8Array(32 * 1024).fill(9));
  assert.equal(large.buffer.byteLength, 32 * 1024);
  assert.equal(retainEntryData(entry).buffer, next.buffer, "a large entry does not start a slab");
});

test("an empty entry is returned as it is", () => {
  const empty = new Uint8Array(0);
  assert.equal(retainEntryData(empty), empty);
});
