// save()/recover(): round trip of tree, index, TTLs and history; determinism of apply.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V2Error } from "../../api/v2-errors.ts";
import type { V2Event } from "./event.ts";
import { V2Store } from "./store.ts";
import { canonicalImage } from "./image.test-helper.ts";
import { mulberry32 } from "../../prng.test-helper.ts";

const T0 = Date.UTC(2026, 0, 1) + 0.25;

/** A random but reproducible op list: every op is a function of (store) with its own `now`. */
function randomOps(seed: number, count: number): ((s: V2Store) => string)[] {
  const rand = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const keys = ["/a", "/a/b", "/a/_h", "/d/x", "/d/y/z", "/q", "/ü/😀", "/d"];
  const ops: ((s: V2Store) => string)[] = [];
  let now = T0;
  for (let i = 0; i < count; i++) {
    now += Math.floor(rand() * 700) + rand();
    const t = now;
    const key = pick(keys);
    const ttl = rand() < 0.4 ? { expireTime: t + Math.floor(rand() * 5) * 1000 } : {};
    const value = `v${i}\n${pick(["", "ü", "😀"])}`;
    const kind = Math.floor(rand() * 9);
    ops.push((s) => {
      try {
        let e: V2Event | undefined;
        if (kind === 0) e = s.set(key, { value, ...ttl }, t);
        else if (kind === 1) e = s.set(key, { dir: true, ...ttl }, t);
        else if (kind === 2) e = s.create(key, { value, unique: i % 2 === 0, ...ttl }, t);
        else if (kind === 3) e = s.update(key, { value: i % 3 === 0 ? "" : value, ...ttl, refresh: i % 5 === 0 }, t);
        else if (kind === 4) e = s.compareAndSwap(key, { prevIndex: i % 4, value, ...ttl }, t);
        else if (kind === 5) e = s.delete(key, { recursive: i % 2 === 0, dir: i % 3 === 0 }, t);
        else if (kind === 6) e = s.compareAndDelete(key, { prevIndex: i % 3 }, t);
        else if (kind === 7) e = s.get(key, { recursive: true, sorted: true }, t);
        else s.deleteExpiredKeys(t);
        return e === undefined ? `sync ${s.index}` : JSON.stringify([e.action, e.node, e.prevNode, e.etcdIndex]);
      } catch (err) {
        if (err instanceof V2Error) return JSON.stringify(err);
        throw err;
      }
    });
  }
  return ops;
}

test("the same ops with the same times give byte-identical save() and identical answers", () => {
  const seed = Number(process.env["SEED"] ?? 7);
  const a = new V2Store();
  const b = new V2Store();
  const outA = randomOps(seed, 3000).map((op) => op(a));
  const outB = randomOps(seed, 3000).map((op) => op(b));
  assert.deepEqual(outA, outB, `seed ${seed}`);
  assert.equal(a.save(), b.save(), `seed ${seed}`);
  assert.ok(a.index > 500, "the run did real work");
});

test("a member recovered mid-way answers and saves exactly like one that applied everything", () => {
  const seed = Number(process.env["SEED"] ?? 11);
  const ops = randomOps(seed, 3000);
  const full = new V2Store();
  for (const op of ops.slice(0, 1700)) op(full);
  const image = full.save();
  const recovered = V2Store.recover(image);
  assert.equal(recovered.save(), image, `seed ${seed}: save(recover(x)) === x`);
  assert.equal(recovered.index, full.index);
  const rest = ops.slice(1700);
  const outFull = rest.map((op) => op(full));
  const outRec = rest.map((op) => op(recovered));
  assert.deepEqual(outRec, outFull, `seed ${seed}`);
  assert.equal(recovered.save(), full.save(), `seed ${seed}`);
});

test("recover restores tree, TTLs and history, but not stats", async () => {
  const s = new V2Store();
  s.set("/k", { value: "line1\nline2 😀" }, T0);
  s.set("/d/_h", { value: "hidden" }, T0);
  s.set("/t", { value: "ttl", expireTime: T0 + 5000 }, T0);
  s.set("/t", { refresh: true, expireTime: T0 + 6000 }, T0);
  s.update("/d", { expireTime: T0 + 9000 }, T0);
  const r = V2Store.recover(s.save());
  assert.deepEqual(r.statsJSON(), new V2Store().statsJSON());
  assert.deepEqual(r.get("/", { recursive: true, sorted: true }, T0), s.get("/", { recursive: true, sorted: true }, T0));
  assert.equal(r.get("/d/_h", {}, T0).node.value, "hidden");
  assert.equal(r.nextExpireTime(), T0 + 6000);
  // history survives: a watch from index 1 answers from it
  const got: V2Event[] = [];
  r.watch("/k", { sinceIndex: 1 }, (e) => got.push(e));
  await Promise.resolve();
  assert.deepEqual(got.map((e) => [e.node.value, e.etcdIndex]), [["line1\nline2 😀", 5]]);
  // the refresh event is in the history but still does not wake a history watch
  const t: V2Event[] = [];
  r.watch("/t", { sinceIndex: 4 }, (e) => t.push(e));
  await Promise.resolve();
  assert.equal(t.length, 0);
  // TTLs expire after recovery exactly as before
  const expired = (x: V2Store): string[] => {
    const out: string[] = [];
    x.watch("/", { recursive: true, stream: true }, (e) => out.push(`${e.action} ${e.node.key ?? ""} ${e.node.modifiedIndex ?? 0}`));
    x.deleteExpiredKeys(T0 + 10_000);
    return out;
  };
  const fromRecovered = expired(r);
  assert.deepEqual(fromRecovered, ["expire /t 6", "expire /d 7"]);
  assert.deepEqual(expired(s), fromRecovered);
});

test("recovery() replaces the state in place and keeps watchers and stats", () => {
  const donor = new V2Store();
  donor.set("/x", { value: "from snapshot" }, T0);
  donor.set("/x", { value: "again" }, T0);
  const s = new V2Store();
  s.get("/", {}, T0);
  const got: V2Event[] = [];
  s.watch("/x", { stream: true }, (e) => got.push(e));
  s.recovery(donor.save());
  assert.equal(s.index, 2);
  assert.equal(s.get("/x", {}, T0).node.value, "again");
  assert.equal(s.statsJSON().getsSuccess, 2);
  assert.equal(s.statsJSON().watchers, 1);
  s.set("/x", { value: "live" }, T0);
  assert.deepEqual(got.map((e) => e.etcdIndex), [3]);
});

test("the image keeps only the last 1000 events", () => {
  const s = new V2Store();
  for (let i = 0; i < 1200; i++) s.set("/k", { value: String(i) }, T0);
  const img = JSON.parse(s.save()) as { history: unknown[] };
  assert.equal(img.history.length, 1000);
  const r = V2Store.recover(s.save());
  assert.throws(() => r.watch("/k", { sinceIndex: 200 }, () => {}), (err: unknown) => err instanceof V2Error && err.cause_ === "the requested history has been cleared [201/200]");
});

const badImages: [name: string, text: string, message: RegExp][] = [
  ["not JSON", "{", /invalid JSON/],
  ["wrong version", '{"v":9}', /unsupported version 9/],
  ["bad index", '{"v":1,"index":-1}', /bad index/],
  ["file root", '{"v":1,"index":0,"ns":[],"root":["",0,0,0,"x"],"history":[]}', /root is not a directory/],
  ["bad child name", '{"v":1,"index":0,"ns":[],"root":["",0,0,0,[["a/b",1,1,0,"x"]]],"history":[]}', /bad child name/],
  ["bad event", '{"v":1,"index":0,"ns":[],"root":["",0,0,0,[]],"history":[["nope",{},0,0]]}', /bad action/],
];
for (const [name, text, message] of badImages) {
  test(`recover rejects an image with ${name}`, () => {
    assert.throws(() => V2Store.recover(text), message);
  });
}

test("an image written a slice at a time while ops keep changing the store is the store of its start", () => {
  const base = Number(process.env["SEED"] ?? 100);
  let copiedSomewhere = 0;
  for (let seed = base; seed < base + 40; seed++) {
    const rand = mulberry32(seed);
    const ops = randomOps(seed, 2500);
    const s = new V2Store();
    const warm = 500 + Math.floor(rand() * 1500);
    for (const op of ops.slice(0, warm)) op(s);
    const expected = s.save();
    const w = s.beginImage();
    let i = warm;
    // One op between slices of 1-3 nodes: every change lands in the middle of the walk.
    while (!w.step(1 + Math.floor(rand() * 3))) {
      copiedSomewhere = Math.max(copiedSomewhere, w.copied);
      const op = ops[i++];
      if (op !== undefined) op(s);
    }
    const image = w.text();
    // The content of the start; children deleted during the walk come last in their directory.
    assert.equal(canonicalImage(image), canonicalImage(expected), `seed ${seed}`);
    assert.equal(s.abandoned(w), false);
    // What a member does with a snapshot: the image, then the entries after its index. The
    // result is the store, byte for byte (order included).
    const replayed = V2Store.recover(image);
    for (const op of ops.slice(warm, i)) op(replayed);
    assert.equal(replayed.save(), s.save(), `seed ${seed}: image + later ops = the store`);
    for (const op of ops.slice(i)) op(s); // the finished writer is let go on the next change
    assert.equal(V2Store.recover(expected).save(), expected, `seed ${seed}: the image recovers`);
  }
  assert.ok(copiedSomewhere > 0, "some node changed before the writer reached it");
});

test("a write to a directory of 20k keys during its image records one child, not the directory", () => {
  const s = new V2Store();
  for (let i = 0; i < 20_000; i++) s.set(`/flat/k${i}`, { value: "v" }, T0);
  const expected = s.save();
  const w = s.beginImage();
  w.step(10_000); // half-way through /flat
  const ops: ((st: V2Store) => void)[] = [
    (st) => st.set("/flat/k5", { value: "new" }, T0), // written already: nothing to record
    (st) => st.set("/flat/k15000", { value: "new" }, T0), // not yet written: replaced, so recorded
    (st) => st.set("/flat/added", { value: "x" }, T0), // added after the start: skipped
    (st) => st.delete("/flat/k15001", {}, T0), // not yet written: recorded
  ];
  for (const op of ops) op(s);
  assert.equal(w.copied, 2);
  const image = w.finish();
  assert.notEqual(image, expected, "k15000 and k15001 come last in /flat");
  assert.equal(canonicalImage(image), canonicalImage(expected));
  const replayed = V2Store.recover(image);
  for (const op of ops) op(replayed);
  assert.equal(replayed.save(), s.save(), "image + the ops after it = the store, in order");
});

test("keys added during the image count against a step's budget", () => {
  const s = new V2Store();
  s.set("/flat/old", { value: "v" }, T0);
  const expected = s.save();
  const w = s.beginImage();
  for (let i = 0; i < 1000; i++) s.set(`/flat/new${i}`, { value: "v" }, T0);
  let steps = 0;
  while (!w.step(10)) steps++;
  // 1,000 skips at 10 a step: about 100 steps, not the single step the one old key needs.
  assert.ok(steps >= 99, `steps: ${steps}`);
  assert.equal(w.text(), expected);
});

test("recovery, or a newer image, abandons the image in progress", () => {
  const s = new V2Store();
  for (let i = 0; i < 50; i++) s.set(`/dir/k${i}`, { value: String(i) }, T0);
  const image = s.save();
  const w1 = s.beginImage();
  const w2 = s.beginImage();
  assert.equal(s.abandoned(w1), true);
  assert.equal(s.abandoned(w2), false);
  s.recovery(image);
  assert.equal(s.abandoned(w2), true);
  assert.throws(() => w2.text(), /not complete/);
});
