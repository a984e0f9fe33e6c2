// Store counters as etcd's v2store counts them, with REFERENCE.md's two deliberate
// differences (failed gets only; failed compareAndDelete counts as a failure).
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V2StoreStatsJSON } from "../../api/v2-types.ts";
import { V2Store } from "./store.ts";

const T0 = Date.UTC(2026, 0, 1);

/** Runs `op` (errors ignored) and returns the counters that changed. */
function delta(s: V2Store, op: () => unknown): Partial<V2StoreStatsJSON> {
  const before = s.statsJSON();
  try {
    op();
  } catch {
    // counted either way
  }
  const after = s.statsJSON();
  const out: Partial<V2StoreStatsJSON> = {};
  for (const k of Object.keys(after) as (keyof V2StoreStatsJSON)[]) {
    if (after[k] !== before[k]) out[k] = after[k] - before[k];
  }
  return out;
}

function seeded(): V2Store {
  const s = new V2Store();
  s.set("/f", { value: "v" }, T0);
  s.set("/d/x", { value: "1" }, T0);
  return s;
}

const cases: [name: string, op: (s: V2Store) => unknown, want: Partial<V2StoreStatsJSON>][] = [
  ["get ok", (s) => s.get("/f", {}, T0), { getsSuccess: 1 }],
  ["get missing", (s) => s.get("/nope", {}, T0), { getsFail: 1 }],
  ["set ok", (s) => s.set("/n", { value: "1" }, T0), { setsSuccess: 1 }],
  ["set over a dir", (s) => s.set("/d", { value: "1" }, T0), { setsFail: 1 }],
  ["set through a file", (s) => s.set("/f/x", { value: "1" }, T0), { setsFail: 1 }],
  ["set of the root", (s) => s.set("/", { value: "1" }, T0), { setsFail: 1 }],
  ["refresh of a missing key", (s) => s.set("/nope", { refresh: true, expireTime: T0 + 1000 }, T0), { setsFail: 1 }],
  ["create ok", (s) => s.create("/n", { value: "1" }, T0), { createSuccess: 1 }],
  ["in-order create ok", (s) => s.create("/d", { unique: true }, T0), { createSuccess: 1 }],
  ["create of an existing key", (s) => s.create("/f", { value: "1" }, T0), { createFail: 1 }],
  ["create through a file (etcd also counts setsFail)", (s) => s.create("/f/x", { value: "1" }, T0), { createFail: 1, setsFail: 1 }],
  ["in-order create under a file", (s) => s.create("/f", { unique: true }, T0), { createFail: 1, setsFail: 1 }],
  ["update ok", (s) => s.update("/f", { value: "2" }, T0), { updateSuccess: 1 }],
  ["update missing", (s) => s.update("/nope", { value: "2" }, T0), { updateFail: 1 }],
  ["update of the root (etcd counts a success)", (s) => s.update("/", { value: "2" }, T0), { updateSuccess: 1 }],
  ["update of a dir with a value (etcd counts a success)", (s) => s.update("/d", { value: "2" }, T0), { updateSuccess: 1 }],
  ["compareAndSwap ok", (s) => s.compareAndSwap("/f", { prevValue: "v", value: "2" }, T0), { compareAndSwapSuccess: 1 }],
  ["compareAndSwap mismatch", (s) => s.compareAndSwap("/f", { prevValue: "x", value: "2" }, T0), { compareAndSwapFail: 1 }],
  ["compareAndSwap on a dir", (s) => s.compareAndSwap("/d", { prevValue: "x" }, T0), { compareAndSwapFail: 1 }],
  ["compareAndSwap of the root (etcd counts a success)", (s) => s.compareAndSwap("/", { prevValue: "x" }, T0), { compareAndSwapSuccess: 1 }],
  ["delete ok", (s) => s.delete("/f", {}, T0), { deleteSuccess: 1 }],
  ["delete missing", (s) => s.delete("/nope", {}, T0), { deleteFail: 1 }],
  ["delete of a dir without flags", (s) => s.delete("/d", {}, T0), { deleteFail: 1 }],
  ["delete of the root (etcd counts a success)", (s) => s.delete("/", { recursive: true }, T0), { deleteSuccess: 1 }],
  ["compareAndDelete ok", (s) => s.compareAndDelete("/f", { prevValue: "v" }, T0), { compareAndDeleteSuccess: 1 }],
  ["compareAndDelete mismatch (etcd: success)", (s) => s.compareAndDelete("/f", { prevValue: "x" }, T0), { compareAndDeleteFail: 1 }],
  ["compareAndDelete on a dir (etcd: success)", (s) => s.compareAndDelete("/d", { prevValue: "x" }, T0), { compareAndDeleteFail: 1 }],
  ["compareAndDelete missing", (s) => s.compareAndDelete("/nope", { prevValue: "x" }, T0), { compareAndDeleteFail: 1 }],
  ["countGet(true)", (s) => s.countGet(true), { getsSuccess: 1 }],
  ["countGet(false)", (s) => s.countGet(false), { getsFail: 1 }],
  ["a stream watch", (s) => s.watch("/f", { stream: true }, () => {}), { watchers: 1 }],
];
for (const [name, op, want] of cases) {
  test(`stats count ${name} as ${JSON.stringify(want)}`, () => {
    const s = seeded();
    assert.deepEqual(delta(s, () => op(s)), want);
  });
}

test("stats count each expired node once in expireCount", () => {
  const s = new V2Store();
  s.set("/a", { value: "1", expireTime: T0 + 1000 }, T0);
  s.set("/b", { value: "1", expireTime: T0 + 1000 }, T0);
  assert.deepEqual(delta(s, () => s.deleteExpiredKeys(T0 + 1000)), { expireCount: 2 });
});

test("stats render in etcd's field order and start at zero", () => {
  const s = new V2Store();
  assert.equal(
    JSON.stringify(s.statsJSON()),
    '{"getsSuccess":0,"getsFail":0,"setsSuccess":0,"setsFail":0,"deleteSuccess":0,"deleteFail":0,"updateSuccess":0,"updateFail":0,"createSuccess":0,"createFail":0,"compareAndSwapSuccess":0,"compareAndSwapFail":0,"compareAndDeleteSuccess":0,"compareAndDeleteFail":0,"expireCount":0,"watchers":0}',
  );
});

test("reads count gets by kind, failed ones included (etcd_debugging_store_reads_total)", () => {
  const s = seeded();
  assert.deepEqual({ ...s.reads() }, { get: 0, getRecursive: 0 });
  s.get("/f", {}, T0);
  assert.throws(() => s.get("/nope", {}, T0));
  s.get("/d", { recursive: true }, T0);
  assert.throws(() => s.get("/nope", { recursive: true }, T0));
  s.get("/d", { recursive: false }, T0);
  s.countGet(true);
  assert.deepEqual({ ...s.reads() }, { get: 4, getRecursive: 2 });
});
