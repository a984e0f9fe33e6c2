import assert from "node:assert/strict";
import { test } from "node:test";
import { LINES_VERSION, V2Store } from "../store/v2/index.ts";
import type { SnapshotImage } from "./bootstrap.ts";
import { decodeSnapshotData, snapshotPieces, SNAPSHOT_MAGIC, withMembership, writeSnapshotData, type SnapshotHeader } from "./snapshot-data.ts";
import { canonicalImage } from "../store/v2/image.test-helper.ts";

const T0 = Date.UTC(2026, 0, 1);
const rest = { membership: { clusterId: 7, members: [] }, auth: { enabled: false } } as unknown as SnapshotHeader;

test("snapshot data is the format-2 image of its start, written while the store changes", async () => {
  const s = new V2Store();
  // Values with quotes, control characters, surrogate pairs and lone surrogates.
  const values = ['a"b\\c', "line\nnext\u0001", "😀ü", "x\ud800y", ""];
  for (let i = 0; i < 3000; i++) s.set(`/d${i % 7}/k${i}`, { value: values[i % values.length] ?? "" }, T0);
  const expected = s.save();
  let turns = 0;
  const data = await writeSnapshotData({
    store: s.beginImage(LINES_VERSION),
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
  assert.ok(data !== undefined);
  assert.deepEqual(data.subarray(0, SNAPSHOT_MAGIC.length), SNAPSHOT_MAGIC);
  const state = decodeSnapshotData(data);
  assert.deepEqual({ membership: state.membership, auth: state.auth }, rest);
  // The v2 store of the start, by content (children deleted meanwhile, like /d2 and the
  // keys set again, come last: image-writer.ts). The v3 key space is its database file.
  assert.equal(state.v3, undefined);
  assert.equal(canonicalImage(V2Store.recover(state.store).save()), canonicalImage(expected));
});

test("with no change meanwhile, the sliced bytes are the one-go pieces, and decode to the same store", async () => {
  const s = new V2Store();
  for (let i = 0; i < 2000; i++) s.set(`/d${i % 3}/k${i}`, { value: `v${i}` }, T0 + i);
  s.set("/_hidden", { value: "h" }, T0);
  const data = await writeSnapshotData({ store: s.beginImage(LINES_VERSION), rest, cancelled: () => false, sliceMs: 0, yieldTurn: async () => {} });
  assert.deepEqual(data, Buffer.concat([...snapshotPieces(s, rest)]));
  assert.equal(V2Store.recover(decodeSnapshotData(data!).store).save(), s.save());
  assert.equal(V2Store.recover(decodeSnapshotData(data!).store).save(LINES_VERSION), s.save(LINES_VERSION));
});

test("format-1 snapshots (one JSON text, as written before) still decode, v3 part included", () => {
  const s = new V2Store();
  s.set("/a/b", { value: "x" }, T0);
  const old: SnapshotImage = { store: s.save(), ...rest, v3: { revision: 1 } as unknown as NonNullable<SnapshotImage["v3"]> };
  const state = decodeSnapshotData(Buffer.from(JSON.stringify(old)));
  assert.equal(V2Store.recover(state.store).save(), s.save());
  assert.deepEqual(state.membership, rest.membership);
  assert.deepEqual(state.v3, { revision: 1 });
});

test("malformed snapshots fail with a clear error", () => {
  const s = new V2Store();
  for (let i = 0; i < 20; i++) s.set(`/k${i}`, { value: "v" }, T0);
  const good = Buffer.concat([...snapshotPieces(s, rest)]);
  const cases: [string, Buffer, RegExp][] = [
    ["empty", Buffer.alloc(0), /Error: Cannot parse snapshot: neither format/],
    ["garbage", Buffer.from("hello"), /Error: Cannot parse snapshot: neither format/],
    ["format 1 cut", Buffer.from('{"store":"{'), /Error: Cannot parse snapshot: invalid JSON/],
    ["no header", SNAPSHOT_MAGIC, /Error: Cannot parse snapshot: truncated: no header line/],
    ["bad header", Buffer.concat([SNAPSHOT_MAGIC, Buffer.from("[1]\n")]), /Error: Cannot parse snapshot: bad header line/],
    ["store cut", good.subarray(0, good.length - 7), /Error: Cannot parse v2 store image: truncated/],
    ["store missing", good.subarray(0, good.indexOf(10, SNAPSHOT_MAGIC.length) + 1), /Error: Cannot parse v2 store image: truncated/],
    ["trailing line", Buffer.concat([good, Buffer.from("{}\n")]), /Error: Cannot parse snapshot: data after/],
  ];
  for (const [name, data, message] of cases) assert.throws(() => decodeSnapshotData(data), message, name);
});

test("withMembership rewrites only the header line (and drops a format-1 v3 part)", () => {
  const s = new V2Store();
  s.set("/a", { value: "1" }, T0);
  const data = Buffer.concat([...snapshotPieces(s, rest)]);
  const membership = { clusterId: 9, members: [] } as unknown as SnapshotHeader["membership"];
  const out = withMembership(data, membership);
  const state = decodeSnapshotData(out);
  assert.deepEqual(state.membership, membership);
  assert.deepEqual(state.auth, rest.auth);
  const headEnd = data.indexOf(10, SNAPSHOT_MAGIC.length) + 1;
  assert.deepEqual(out.subarray(out.indexOf(10, SNAPSHOT_MAGIC.length) + 1), data.subarray(headEnd));
  const old = Buffer.from(JSON.stringify({ store: s.save(), ...rest, v3: {} }));
  const back = decodeSnapshotData(withMembership(old, membership));
  assert.deepEqual(back.membership, membership);
  assert.equal(back.v3, undefined);
});

test("snapshot data is undefined when cancelled between slices", async () => {
  const s = new V2Store();
  for (let i = 0; i < 2000; i++) s.set(`/k${i}`, { value: "v" }, T0);
  let turns = 0;
  const data = await writeSnapshotData({ store: s.beginImage(LINES_VERSION), rest, cancelled: () => turns >= 2, sliceMs: 0, yieldTurn: async () => void turns++ });
  assert.equal(data, undefined);
  assert.equal(turns, 2);
});
