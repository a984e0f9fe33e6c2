import assert from "node:assert/strict";
import { test } from "node:test";
import { V2Store } from "../store/v2/index.ts";
import type { SnapshotImage } from "./bootstrap.ts";
import { writeSnapshotData } from "./snapshot-data.ts";
import { canonicalImage } from "../store/v2/image.test-helper.ts";

const T0 = Date.UTC(2026, 0, 1);
const rest = { membership: { clusterId: 7, members: [] }, auth: { enabled: false } } as unknown as Omit<SnapshotImage, "store" | "v3">;

test("snapshot data is JSON.stringify of the image at its start, written while the store changes", async () => {
  const s = new V2Store();
  // Values with quotes, control characters, surrogate pairs and lone surrogates.
  const values = ['a"b\\c', "line\nnext\u0001", "😀ü", "x\ud800y", ""];
  for (let i = 0; i < 3000; i++) s.set(`/d${i % 7}/k${i}`, { value: values[i % values.length] ?? "" }, T0);
  const expected = Buffer.from(JSON.stringify({ store: s.save(), ...rest }));
  let turns = 0;
  const data = await writeSnapshotData({
    store: s.beginImage(),
    rest,
    cancelled: () => false,
    sliceMs: 0, // one step of 256 nodes per turn
    yieldTurn: async () => {
      turns++;
      // Changes between slices: new keys, updates, deletes, a whole directory removed.
      s.set(`/d${turns % 7}/new${turns}`, { value: "😀" }, T0);
      s.set(`/d${turns % 7}/k${turns}`, { value: "changed" }, T0);
      if (turns === 3) s.delete("/d2", { dir: true, recursive: true }, T0);
    },
  });
  assert.ok(turns >= 10, `written in ${turns} slices`);
  // JSON.stringify of its parts, byte for byte (the escaping of the store's text)...
  const img = JSON.parse(data!.toString()) as SnapshotImage;
  assert.deepEqual(data, Buffer.from(JSON.stringify({ store: img.store, ...rest })));
  // ...and the v2 store of the start, by content (children deleted meanwhile, like /d2 and
  // the keys set again, come last: image-writer.ts). The v3 key space is its database file.
  const want = JSON.parse(expected.toString()) as SnapshotImage;
  assert.equal(img.v3, undefined);
  assert.equal(canonicalImage(img.store), canonicalImage(want.store));
});

test("snapshot data is undefined when cancelled between slices", async () => {
  const s = new V2Store();
  for (let i = 0; i < 2000; i++) s.set(`/k${i}`, { value: "v" }, T0);
  let turns = 0;
  const data = await writeSnapshotData({ store: s.beginImage(), rest, cancelled: () => turns >= 2, sliceMs: 0, yieldTurn: async () => void turns++ });
  assert.equal(data, undefined);
  assert.equal(turns, 2);
});
