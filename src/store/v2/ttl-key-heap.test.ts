import assert from "node:assert/strict";
import { test } from "node:test";
import { TtlKeyHeap, type HeapEntry } from "./ttl-key-heap.ts";
import { mulberry32 } from "../../prng.test-helper.ts";

function entry(path: string, expireTime: number): HeapEntry {
  return { path, expireTime, expireNs: 0, heapIndex: -1 };
}

const order = (a: HeapEntry, b: HeapEntry): number =>
  a.expireTime - b.expireTime || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

test("ttl heap pops in (expireTime, path) order under random push/remove/update", () => {
  const seed = Number(process.env["SEED"] ?? 20260122);
  const rand = mulberry32(seed);
  const heap = new TtlKeyHeap<HeapEntry>();
  const live = new Set<HeapEntry>();
  for (let i = 0; i < 5000; i++) {
    const r = rand();
    if (r < 0.5 || live.size === 0) {
      const e = entry(`/k${i}`, Math.floor(rand() * 100)); // many ties on purpose
      heap.push(e);
      live.add(e);
    } else if (r < 0.7) {
      const e = [...live][Math.floor(rand() * live.size)] as HeapEntry;
      heap.remove(e);
      live.delete(e);
      assert.equal(e.heapIndex, -1, `seed ${seed}`);
    } else if (r < 0.9) {
      const e = [...live][Math.floor(rand() * live.size)] as HeapEntry;
      e.expireTime = Math.floor(rand() * 100);
      heap.update(e);
    } else {
      const want = [...live].sort(order)[0];
      assert.equal(heap.pop(), want, `seed ${seed}`);
      live.delete(want as HeapEntry);
    }
    assert.equal(heap.size, live.size, `seed ${seed}`);
  }
  const want = [...live].sort(order);
  const got: HeapEntry[] = [];
  for (let e = heap.pop(); e !== undefined; e = heap.pop()) got.push(e);
  assert.deepEqual(got, want, `seed ${seed}`);
});

test("ttl heap breaks expireTime ties by path whatever the insertion order", () => {
  const a = new TtlKeyHeap<HeapEntry>();
  const b = new TtlKeyHeap<HeapEntry>();
  for (const p of ["/c", "/a", "/b"]) a.push(entry(p, 7));
  for (const p of ["/b", "/c", "/a"]) b.push(entry(p, 7));
  const drain = (h: TtlKeyHeap<HeapEntry>): string[] => [h.pop(), h.pop(), h.pop()].map((e) => e?.path ?? "");
  assert.deepEqual(drain(a), ["/a", "/b", "/c"]);
  assert.deepEqual(drain(b), ["/a", "/b", "/c"]);
});

test("ttl heap ignores remove/update of an entry it does not hold and rejects a double push", () => {
  const h = new TtlKeyHeap<HeapEntry>();
  const e = entry("/x", 1);
  h.remove(e);
  h.update(e);
  assert.equal(h.size, 0);
  h.push(e);
  assert.throws(() => h.push(e), /already in the TTL heap/);
  assert.equal(h.top(), e);
  h.clear();
  assert.equal(e.heapIndex, -1);
  assert.equal(h.top(), undefined);
  assert.equal(h.pop(), undefined);
});
