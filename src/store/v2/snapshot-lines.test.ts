// The version-2 image (a line per node and per event): round trips of every kind of node,
// the same state as version 1, slices written while the store changes, malformed input,
// and the bound that makes large stores loadable: decoding never makes a string (nor
// parses JSON) longer than one line, whatever the image's size.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V2Store } from "./store.ts";
import { decodeImage, ImageLines, IMAGE_VERSION, LINES_VERSION } from "./snapshot.ts";
import { canonicalImage } from "./image.test-helper.ts";
import { mulberry32 } from "../../prng.test-helper.ts";
import { measureStrings } from "../../string-sizes.test-helper.ts";

const T0 = Date.UTC(2026, 0, 1) + 0.25;

/** A store with every kind of node and event the image must keep. */
function everyKind(): V2Store {
  const s = new V2Store({ namespaces: ["/0", "/1"] });
  s.set("/dir/sub/file", { value: "v" }, T0);
  s.set("/empty", { dir: true }, T0);
  s.set("/empty2/inner", { dir: true }, T0);
  s.set("/_hidden", { value: "h" }, T0);
  s.set("/dir/_hdir/x", { value: "y" }, T0);
  s.set("/ttl-ms", { value: "t", expireTime: T0 + 60_000 }, T0);
  s.set("/ttl-ns", { value: "t", expireTime: Math.floor(T0) + 60_000, expireNs: 621_324 }, T0);
  s.set("/ttl-dir", { dir: true, expireTime: Math.floor(T0) + 90_000, expireNs: 1 }, T0);
  for (let i = 0; i < 3; i++) s.create("/queue", { value: `job${i}`, unique: true }, T0 + i);
  s.set("/1/ns-key", { value: "in a namespace" }, T0);
  s.set("/odd", { value: 'q"u\\o\nte\r\u0000😀ü\ud800 \u2028' }, T0);
  tryOp(() => s.set("/", { value: "" }, T0)); // refused: changes nothing
  return s;
}

function tryOp(f: () => unknown): void {
  try {
    f();
  } catch {
    // refused ops change nothing
  }
}

test("every kind of node round-trips through version 2, byte for byte, and holds version 1's state", () => {
  const s = everyKind();
  s.update("/ttl-ms", { expireTime: T0 + 70_000, refresh: true }, T0 + 5);
  s.compareAndSwap("/odd", { prevValue: 'q"u\\o\nte\r\u0000😀ü\ud800 \u2028', value: "swapped" }, T0 + 6);
  s.delete("/dir/sub/file", {}, T0 + 7);

  const v2 = s.save(LINES_VERSION);
  assert.ok(v2.startsWith('{"v":2,"index":'), v2.slice(0, 40));
  const lines = v2.split("\n");
  assert.equal(lines.at(-1), "", "every line ends with a newline");
  assert.ok(lines.includes('[1,"empty",2,2,0]'), "an empty directory is a line of its own");
  assert.ok(lines.some((l) => l.startsWith('[1,"ttl-ns",') && l.includes(`"${(BigInt(Math.floor(T0) + 60_000) * 1_000_000n + 621_324n).toString()}"`)), "ns expirations as decimal strings");
  assert.ok(lines.some((l) => l.startsWith('[2,"00000000000000000009",')), "in-order keys keep their names");

  const r = V2Store.recover(v2);
  assert.equal(r.save(LINES_VERSION), v2, "version 2: save(recover(x)) === x");
  assert.equal(r.save(), s.save(), "the same state as version 1, in the same order");
  assert.equal(V2Store.recover(s.save()).save(LINES_VERSION), v2, "version 1 -> version 2 is the same image");
  // The recovered store behaves: TTLs in the heap (with their ns), hidden keys, history, queue order.
  assert.equal(r.nextExpireTime(), s.nextExpireTime());
  assert.deepEqual(r.get("/ttl-ns", {}, T0).node, s.get("/ttl-ns", {}, T0).node);
  assert.deepEqual(r.get("/queue", { recursive: true, sorted: true }, T0).node, s.get("/queue", { recursive: true, sorted: true }, T0).node);
  assert.deepEqual(r.get("/", { recursive: true }, T0).node, s.get("/", { recursive: true }, T0).node);
  const ev = r.deleteExpiredKeys(T0 + 100_000);
  assert.deepEqual(ev, s.deleteExpiredKeys(T0 + 100_000));
  assert.equal(r.save(LINES_VERSION), s.save(LINES_VERSION));
  // In pieces (the state hash and backups): the same bytes as one save().
  assert.equal([...s.imagePieces(IMAGE_VERSION, 3)].join(""), s.save(), "the hash's version-1 bytes are unchanged");
  assert.equal([...s.imagePieces(LINES_VERSION, 3)].join(""), s.save(LINES_VERSION));
  // Bytes in, too (what a snapshot hands over).
  assert.equal(V2Store.recover(Buffer.from(v2)).save(LINES_VERSION), v2);
});

test("random op sequences: version 2 round-trips and equals version 1", () => {
  const base = Number(process.env["SEED"] ?? 300);
  for (let seed = base; seed < base + 30; seed++) {
    const rand = mulberry32(seed);
    const s = new V2Store();
    let now = T0;
    const keys = ["/a", "/a/b", "/a/_h", "/d/x", "/d/y/z", "/q", "/ü/😀", "/d", "/e/f/g/h"];
    for (let i = 0; i < 1500; i++) {
      now += Math.floor(rand() * 700) + rand();
      const key = keys[Math.floor(rand() * keys.length)] as string;
      const ttl = rand() < 0.4 ? { expireTime: Math.floor(now) + Math.floor(rand() * 5) * 1000, expireNs: rand() < 0.5 ? Math.floor(rand() * 1e6) : 0 } : {};
      const kind = Math.floor(rand() * 7);
      tryOp(() => {
        if (kind === 0) s.set(key, { value: `v${i}\n`, ...ttl }, now);
        else if (kind === 1) s.set(key, { dir: true, ...ttl }, now);
        else if (kind === 2) s.create(key, { value: `c${i}`, unique: true, ...ttl }, now);
        else if (kind === 3) s.update(key, { value: `u${i}`, ...ttl, refresh: i % 5 === 0 }, now);
        else if (kind === 4) s.delete(key, { recursive: true, dir: true }, now);
        else if (kind === 5) s.compareAndDelete(key, { prevIndex: i % 3 }, now);
        else s.deleteExpiredKeys(now);
      });
    }
    const v2 = s.save(LINES_VERSION);
    assert.equal(V2Store.recover(v2).save(LINES_VERSION), v2, `seed ${seed}`);
    assert.equal(V2Store.recover(v2).save(), s.save(), `seed ${seed}`);
  }
});

test("a version-2 image written a slice at a time while the store changes is the store of its start", () => {
  const base = Number(process.env["SEED"] ?? 500);
  for (let seed = base; seed < base + 20; seed++) {
    const rand = mulberry32(seed);
    const s = new V2Store();
    for (let i = 0; i < 400; i++) s.set(`/d${i % 5}/s${i % 3}/k${i}`, { value: `v${i}` }, T0);
    const expected = s.save();
    const w = s.beginImage(LINES_VERSION);
    const later: ((st: V2Store) => void)[] = [];
    let parts = "";
    let i = 0;
    while (!w.step(1 + Math.floor(rand() * 3))) {
      parts += w.take();
      const k = i++;
      const key = `/d${k % 5}/s${k % 3}/k${Math.floor(rand() * 500)}`;
      const op = rand() < 0.3 ? (st: V2Store) => tryOp(() => st.delete(key, {}, T0)) : rand() < 0.1 ? (st: V2Store) => tryOp(() => st.delete(`/d${k % 5}`, { dir: true, recursive: true }, T0)) : (st: V2Store) => tryOp(() => st.set(key, { value: `n${k}` }, T0));
      later.push(op);
      op(s);
    }
    parts += w.take();
    assert.equal(canonicalImage(V2Store.recover(parts).save()), canonicalImage(expected), `seed ${seed}`);
    const replayed = V2Store.recover(parts);
    for (const op of later) op(replayed);
    assert.equal(replayed.save(LINES_VERSION), s.save(LINES_VERSION), `seed ${seed}: image + later ops = the store`);
  }
});

test("malformed or truncated version-2 images fail with 'Cannot parse v2 store image', never anything else", () => {
  const good = Buffer.from(everyKindWithHistory().save(LINES_VERSION));
  // Every cut: at each byte of the image.
  for (let n = 0; n < good.length; n++) {
    assert.throws(() => decodeImage(good.subarray(0, n)), /Error: Cannot parse v2 store image: /, `cut at ${n}`);
  }
  const head = '{"v":2,"index":5,"ns":[]}\n';
  const root = '[0,"",0,0,0]\n';
  const bad: [string, string, RegExp][] = [
    ["wrong version", '{"v":3,"index":0,"ns":[]}\n', /unsupported version 3/],
    ["bad index", '{"v":2,"index":-1,"ns":[]}\n', /bad index/],
    ["file root", head + '[0,"",0,0,0,"x"]\n{"nodes":1,"history":0}\n', /root is not a directory/],
    ["root not at depth 0", head + '[1,"",0,0,0]\n{"nodes":1,"history":0}\n', /bad root line/],
    ["skipped depth", head + root + '[2,"a",1,1,0,"x"]\n{"nodes":2,"history":0}\n', /bad depth in node line 2/],
    ["child of a file", head + root + '[1,"f",1,1,0,"x"]\n[2,"g",1,1,0,"x"]\n{"nodes":3,"history":0}\n', /bad depth in node line 3/],
    ["bad name", head + root + '[1,"a/b",1,1,0,"x"]\n{"nodes":2,"history":0}\n', /bad child name under \//],
    ["duplicate", head + root + '[1,"a",1,1,0,"x"]\n[1,"a",2,2,0,"y"]\n{"nodes":3,"history":0}\n', /duplicate child a under \//],
    ["bad value", head + root + '[1,"a",1,1,0,7]\n{"nodes":2,"history":0}\n', /bad value at \/a/],
    ["bad expire", head + root + '[1,"a",1,1,"01",""]\n{"nodes":2,"history":0}\n', /bad expireTime at \/a/],
    ["bad indexes", head + root + '[1,"a",-1,1,0,""]\n{"nodes":2,"history":0}\n', /bad indexes at \/a/],
    ["not JSON", head + root + "[1,\n", /invalid JSON in node 2/],
    ["a node missing", head + root + '[1,"a",1,1,0,""]\n{"nodes":3,"history":0}\n', /the tree has 2 nodes, its end says 3/],
    ["an event missing", head + root + '{"nodes":1,"history":1}\n', /truncated: the image ends inside the history/],
    ["bad event", head + root + '{"nodes":1,"history":1}\n["nope",{},0,0]\n', /bad action in history event 0/],
    ["data after", head + root + '{"nodes":1,"history":0}\n[]\n', /data after the image's last line/],
    ["no end of the tree", head + root + '[1,"a",1,1,0,""]\n', /truncated: the image ends inside the tree/],
  ];
  for (const [name, text, message] of bad) {
    assert.throws(() => decodeImage(Buffer.from(text)), (err: unknown) => err instanceof Error && /^Cannot parse v2 store image: /.test(err.message) && message.test(err.message), name);
    assert.throws(() => V2Store.recover(text), message, `${name} (as text)`);
  }
  // Random damage: either a valid image or the clear error, never a crash.
  const rand = mulberry32(9);
  for (let i = 0; i < 3000; i++) {
    const b = Buffer.from(good);
    for (let k = 0; k < 3; k++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
    try {
      decodeImage(b);
    } catch (err) {
      assert.ok(err instanceof Error && err.message.startsWith("Cannot parse v2 store image: "), `damage ${i}: ${String(err)}`);
    }
  }
});

test("version-1 images (old snapshots and backups) still load, ns expirations included", () => {
  const ns = (BigInt(Date.UTC(2026, 0, 2)) * 1_000_000n + 123_456n).toString();
  const v1 = `{"v":1,"index":4,"ns":["/0","/1"],"root":["",0,0,0,[["0",0,0,0,[]],["1",0,0,0,[]],["a",1,2,"${ns}","x"],["d",3,3,0,[["_h",4,4,0,"y"]]]]],"history":[["set",{"key":"/d/_h","value":"y","modifiedIndex":4,"createdIndex":4},0,0]]}`;
  const r = V2Store.recover(v1);
  assert.equal(r.save(IMAGE_VERSION), v1);
  assert.equal(V2Store.recover(Buffer.from(v1)).save(IMAGE_VERSION), v1);
  assert.equal(V2Store.recover(r.save(LINES_VERSION)).save(IMAGE_VERSION), v1);
  assert.equal(r.get("/a", {}, Date.UTC(2026, 0, 1)).node.expiration, "2026-01-02T00:00:00.000123456Z");
});

test("decoding makes no string and parses no JSON longer than one line, whatever the image's size", () => {
  // Why this proves a store larger than V8's longest string (0x1fffffe8 chars) loads: the
  // only strings the decoder makes from the bytes are single lines, so the image's total
  // size never reaches a string. Measured here on a 4 MB image of 4,000 lines.
  const s = new V2Store();
  const value = "v".repeat(1000);
  for (let i = 0; i < 4000; i++) s.set(`/d${i % 10}/k${i}`, { value, ...(i % 7 === 0 ? { expireTime: Math.floor(T0) + 1e6, expireNs: i } : {}) }, T0);
  const bytes = Buffer.concat([...s.imagePieces(LINES_VERSION, 100)].map((p) => Buffer.from(p)));
  const longestLine = Math.max(...bytes.toString().split("\n").map((l) => Buffer.byteLength(l)));
  assert.ok(bytes.length > 4_000_000 && longestLine < 1200, `${bytes.length} bytes, longest line ${longestLine}`);

  const { result: r, longestString, longestParse, strings } = measureStrings(() => {
    const lines = new ImageLines(bytes);
    while (lines.next() !== undefined);
    return V2Store.recover(bytes);
  });
  assert.ok(strings > 4000, `the bytes were read a line at a time (${strings} strings)`);
  assert.ok(longestString <= longestLine, `longest string ${longestString} <= longest line ${longestLine}`);
  assert.ok(longestParse <= longestLine, `longest JSON.parse input ${longestParse} <= longest line ${longestLine}`);
  assert.equal(r.save(LINES_VERSION), s.save(LINES_VERSION));
});

function everyKindWithHistory(): V2Store {
  const s = everyKind();
  s.update("/ttl-ms", { expireTime: T0 + 70_000, refresh: true }, T0 + 5);
  s.delete("/dir/sub/file", {}, T0 + 7);
  return s;
}
