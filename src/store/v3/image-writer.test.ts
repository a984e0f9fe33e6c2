import assert from "node:assert/strict";
import { test } from "node:test";
import { V3KeySpace } from "./key-space.ts";
import { delReq, mulberry32, opDel, opPut, putReq, txnReq, b } from "./v3.test-helper.ts";

const T0 = Date.UTC(2026, 0, 1);

/** One random change: puts, deletes (single and ranges), txns, leases, compaction. */
function randomChange(ks: V3KeySpace, rand: () => number, keys: number): void {
  const key = (): string => `k${Math.floor(rand() * keys).toString().padStart(3, "0")}`;
  const r = rand();
  try {
    if (r < 0.45) ks.put(putReq(key(), `v${Math.floor(rand() * 1e6)}`));
    else if (r < 0.6) ks.deleteRange(delReq(key()));
    else if (r < 0.65) {
      const from = key();
      ks.deleteRange(delReq(from, { rangeEnd: b(`${from}5`) }));
    } else if (r < 0.75) ks.txn(txnReq({ success: [opPut(key(), "t1"), opDel(`n${key()}`), opPut(`n${key()}`, "t2")] }));
    else if (r < 0.8) {
      const id = BigInt(1 + Math.floor(rand() * 5));
      if (ks.leases().some((l) => l.id === id)) ks.leaseRevoke(id);
      else ks.leaseGrant({ id, ttl: 10 }, T0);
    } else if (r < 0.85) {
      const lease = ks.leases()[0]?.id;
      if (lease !== undefined) ks.put(putReq(key(), "leased", { lease }));
    } else if (r < 0.9) {
      // Compaction somewhere between the last compaction and now.
      const lo = ks.compactRevision + 1;
      ks.compact(lo + Math.floor(rand() * (ks.revision - lo + 1)));
    } else ks.put(putReq(`new${Math.floor(rand() * 1e4)}`, "x"));
  } catch (err) {
    // Errors the API would answer (a txn on the same key twice, ...) change nothing.
    if (!(err instanceof Error)) throw err;
  }
}

test("the key space image written in slices equals toImage() at its start, whatever changes in between", () => {
  for (let seed = 1; seed <= 40; seed++) {
    const rand = mulberry32(seed);
    const ks = new V3KeySpace();
    for (let i = 0; i < 400; i++) randomChange(ks, rand, 120);
    const expected = JSON.stringify(ks.toImage());
    const writer = ks.beginImage();
    let text = "";
    let slices = 0;
    for (;;) {
      const done = writer.step(1 + Math.floor(rand() * 3));
      text += writer.take();
      if (done) break;
      slices++;
      for (let i = Math.floor(rand() * 6); i > 0; i--) randomChange(ks, rand, 120);
    }
    assert.ok(slices > 20, `seed ${seed}: ${slices} slices`);
    assert.equal(text, expected, `seed ${seed}`);
    // The image restores to a key space with the same hash as at the start.
    const restored = V3KeySpace.fromImage(JSON.parse(text));
    assert.equal(JSON.stringify(restored.toImage()), expected, `seed ${seed}`);
  }
});

test("a compaction in the middle of the image keeps the records of keys not yet written", () => {
  const ks = new V3KeySpace();
  for (let round = 0; round < 3; round++) for (let i = 0; i < 50; i++) ks.put(putReq(`k${i.toString().padStart(2, "0")}`, `r${round}`));
  const expected = JSON.stringify(ks.toImage());
  const writer = ks.beginImage();
  assert.equal(writer.step(10), false);
  // Drops rounds 0 and 1 of every key, and k40..k49 entirely.
  ks.deleteRange(delReq("k40", { rangeEnd: b("k50") }));
  ks.compact(ks.revision);
  let text = writer.take();
  while (!writer.step(7)) text += writer.take();
  text += writer.take();
  assert.equal(text, expected);
  assert.notEqual(JSON.stringify(ks.toImage()), expected);
});
