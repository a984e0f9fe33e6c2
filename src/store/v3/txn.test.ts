// Txn: every compare target and result (missing keys and ranges too), branches, nested
// txns, one revision per txn, reads seeing earlier writes, all-or-nothing checks.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V3Error, V3Errors } from "../../api/v3-errors.ts";
import { MvccStore } from "./mvcc-store.ts";
import { isReadOnlyTxn, isSerializableTxn } from "./txn.ts";
import type { Compare, TxnResponse } from "./types.ts";
import { CompareResult as R, EventType } from "./types.ts";
import {
  b,
  cmpCreate,
  cmpLease,
  cmpMod,
  cmpValue,
  cmpVersion,
  delReq,
  keysOf,
  opDel,
  opPut,
  opRange,
  opTxn,
  putReq,
  rangeReq,
  txnReq,
} from "./v3.test-helper.ts";

const errorIs = (make: () => V3Error) => (err: unknown) => err instanceof V3Error && err.message === make().message;

/** k: create 2, mod 3, version 2, value "two", lease 7; p/a and p/b version 1. */
function seeded(): MvccStore {
  const s = new MvccStore();
  s.put(putReq("k", "one")); // 2
  s.put(putReq("k", "two", { lease: 7n })); // 3
  s.put(putReq("p/a", "x")); // 4
  s.put(putReq("p/b", "y")); // 5
  return s;
}

const compareCases: { name: string; cmp: Compare; ok: boolean }[] = [
  { name: "VERSION EQUAL", cmp: cmpVersion("k", R.EQUAL, 2), ok: true },
  { name: "VERSION NOT_EQUAL", cmp: cmpVersion("k", R.NOT_EQUAL, 2), ok: false },
  { name: "VERSION GREATER", cmp: cmpVersion("k", R.GREATER, 1), ok: true },
  { name: "VERSION LESS", cmp: cmpVersion("k", R.LESS, 2), ok: false },
  { name: "CREATE EQUAL", cmp: cmpCreate("k", R.EQUAL, 2), ok: true },
  { name: "CREATE GREATER", cmp: cmpCreate("k", R.GREATER, 2), ok: false },
  { name: "CREATE LESS", cmp: cmpCreate("k", R.LESS, 3), ok: true },
  { name: "CREATE NOT_EQUAL", cmp: cmpCreate("k", R.NOT_EQUAL, 3), ok: true },
  { name: "MOD EQUAL", cmp: cmpMod("k", R.EQUAL, 3), ok: true },
  { name: "MOD GREATER", cmp: cmpMod("k", R.GREATER, 2), ok: true },
  { name: "MOD LESS", cmp: cmpMod("k", R.LESS, 3), ok: false },
  { name: "MOD NOT_EQUAL", cmp: cmpMod("k", R.NOT_EQUAL, 3), ok: false },
  { name: "VALUE EQUAL", cmp: cmpValue("k", R.EQUAL, "two"), ok: true },
  { name: "VALUE NOT_EQUAL", cmp: cmpValue("k", R.NOT_EQUAL, "one"), ok: true },
  { name: "VALUE GREATER compares bytes", cmp: cmpValue("k", R.GREATER, "a"), ok: true },
  { name: "VALUE LESS compares bytes", cmp: cmpValue("k", R.LESS, "a"), ok: false },
  { name: "LEASE EQUAL", cmp: cmpLease("k", R.EQUAL, 7n), ok: true },
  { name: "LEASE GREATER", cmp: cmpLease("k", R.GREATER, 0n), ok: true },
  { name: "LEASE LESS", cmp: cmpLease("k", R.LESS, 7n), ok: false },
  { name: "LEASE NOT_EQUAL", cmp: cmpLease("k", R.NOT_EQUAL, 8n), ok: true },
  // A missing key: version / create / mod / lease 0, VALUE always false.
  { name: "missing key VERSION = 0", cmp: cmpVersion("nope", R.EQUAL, 0), ok: true },
  { name: "missing key CREATE = 0", cmp: cmpCreate("nope", R.EQUAL, 0), ok: true },
  { name: "missing key MOD < 1", cmp: cmpMod("nope", R.LESS, 1), ok: true },
  { name: "missing key LEASE = 0", cmp: cmpLease("nope", R.EQUAL, 0n), ok: true },
  { name: "missing key VALUE = empty is false", cmp: cmpValue("nope", R.EQUAL, ""), ok: false },
  { name: "missing key VALUE != x is false", cmp: cmpValue("nope", R.NOT_EQUAL, "x"), ok: false },
  // Over a range: every key must satisfy the compare.
  { name: "range VERSION = 1 holds for all", cmp: cmpVersion("p/", R.EQUAL, 1, b("p0")), ok: true },
  { name: "range MOD > 4 fails for one", cmp: cmpMod("p/", R.GREATER, 4, b("p0")), ok: false },
  { name: "range VALUE > w holds for all", cmp: cmpValue("p/", R.GREATER, "w", b("p0")), ok: true },
  { name: "range VALUE > x fails for one", cmp: cmpValue("p/", R.GREATER, "x", b("p0")), ok: false },
  { name: "empty range compares like a missing key", cmp: cmpVersion("q/", R.EQUAL, 0, b("q0")), ok: true },
  { name: "from-key range covers everything after", cmp: cmpVersion("p/", R.GREATER, 0, Buffer.from([0])), ok: true },
];
for (const c of compareCases) {
  test(`txn compare ${c.name} is ${c.ok}`, () => {
    const s = seeded();
    const r = s.txn(txnReq({ compare: [c.cmp], success: [opRange("k")], failure: [] }));
    assert.equal(r.response.succeeded, c.ok);
    assert.equal(r.response.responses.length, c.ok ? 1 : 0);
    assert.equal(r.response.revision, 5);
    assert.equal(r.changes, undefined);
  });
}

test("txn with no compare succeeds; all compares must hold", () => {
  const s = seeded();
  assert.equal(s.txn(txnReq()).response.succeeded, true);
  const both = [cmpVersion("k", R.EQUAL, 2), cmpValue("k", R.EQUAL, "nope")];
  assert.equal(s.txn(txnReq({ compare: both })).response.succeeded, false);
});

test("txn writes share one revision with increasing sub revisions", () => {
  const s = seeded();
  const r = s.txn(txnReq({ success: [opPut("t/a", "1"), opPut("t/b", "2"), opDel("p/a"), opRange("t/", { rangeEnd: b("t0") })] }));
  assert.equal(r.response.revision, 6);
  assert.equal(s.revision, 6);
  const [put1, put2, del, range] = r.response.responses;
  assert.deepEqual(put1, { put: { revision: 6 } });
  assert.deepEqual(put2, { put: { revision: 6 } });
  assert.deepEqual(del, { deleteRange: { revision: 6, deleted: 1, prevKvs: [] } });
  assert.ok(range !== undefined && "range" in range);
  assert.equal(range.range.revision, 6, "a range after writes answers the txn's revision");
  assert.deepEqual(keysOf(range.range.kvs), ["t/a", "t/b"], "ranges see the txn's earlier writes");
  assert.deepEqual(
    r.changes?.events.map((e) => [e.type, e.kv.key.toString(), e.kv.modRevision]),
    [
      [EventType.PUT, "t/a", 6],
      [EventType.PUT, "t/b", 6],
      [EventType.DELETE, "p/a", 6],
    ],
  );
  assert.equal(r.changes?.revision, 6);
});

test("txn failure branch runs when a compare fails, like etcd's golden txn", () => {
  const s = new MvccStore();
  s.put(putReq("v3-tx1/a", "one"));
  const t = (v: string) =>
    s.txn(txnReq({ compare: [cmpValue("v3-tx1/a", R.EQUAL, "one")], success: [opPut("v3-tx1/a", v)], failure: [opRange("v3-tx1/a")] }));
  assert.deepEqual(t("two").response, { revision: 3, succeeded: true, responses: [{ put: { revision: 3 } }] });
  const failed = t("three").response;
  assert.equal(failed.succeeded, false);
  assert.equal(failed.revision, 3);
  const first = failed.responses[0];
  assert.ok(first !== undefined && "range" in first);
  assert.equal(first.range.kvs[0]?.value.toString(), "two");
  assert.equal(first.range.revision, 3);
});

test("txn create-if-missing by CREATE = 0 works once", () => {
  const s = new MvccStore();
  const create = () =>
    s.txn(txnReq({ compare: [cmpCreate("lock", R.EQUAL, 0)], success: [opPut("lock", "me")], failure: [opRange("lock")] }));
  assert.equal(create().response.succeeded, true);
  assert.equal(create().response.succeeded, false);
  assert.equal(s.revision, 2);
});

test("a txn that changes nothing takes no revision", () => {
  const s = seeded();
  const r = s.txn(txnReq({ success: [opDel("missing"), opRange("k")] }));
  assert.equal(r.response.revision, 5);
  assert.equal(r.changes, undefined);
  const del = r.response.responses[0];
  assert.deepEqual(del, { deleteRange: { revision: 5, deleted: 0, prevKvs: [] } });
});

test("nested txns: compares see the state before the txn and responses nest", () => {
  const s = seeded();
  const r = s.txn(
    txnReq({
      success: [
        opPut("k", "changed"),
        // Evaluated before the put above: k is still "two".
        opTxn({ compare: [cmpValue("k", R.EQUAL, "two")], success: [opPut("n/ok", "1")], failure: [opPut("n/bad", "1")] }),
        opTxn({ compare: [cmpVersion("k", R.EQUAL, 99)], success: [], failure: [opRange("k"), opTxn({ success: [opDel("p/b")] })] }),
      ],
    }),
  );
  const res = r.response;
  assert.equal(res.revision, 6);
  const nested = res.responses.flatMap((x) => ("txn" in x ? [x.txn] : []));
  assert.equal(nested.length, 2);
  assert.deepEqual(nested[0], { revision: 0, succeeded: true, responses: [{ put: { revision: 6 } }] });
  const second = nested[1] as TxnResponse;
  assert.equal(second.succeeded, false);
  const inner = second.responses[0];
  assert.ok(inner !== undefined && "range" in inner);
  assert.equal(inner.range.kvs[0]?.value.toString(), "changed", "a nested range sees earlier writes");
  assert.deepEqual(second.responses[1], { txn: { revision: 0, succeeded: true, responses: [{ deleteRange: { revision: 6, deleted: 1, prevKvs: [] } }] } });
  assert.deepEqual(keysOf(s.range(rangeReq("n/", { rangeEnd: b("n0") })).kvs), ["n/ok"]);
  assert.equal(r.changes?.events.length, 3);
});

test("txn put with prev_kv inside a txn sees the earlier write of the same txn", () => {
  const s = seeded();
  const r = s.txn(txnReq({ success: [opDel("k"), opPut("k", "new", { prevKv: true })] }));
  const put = r.response.responses[1];
  assert.ok(put !== undefined && "put" in put);
  assert.equal(put.put.prevKv, undefined);
  assert.deepEqual(
    s.range(rangeReq("k")).kvs.map((kv) => [kv.createRevision, kv.version]),
    [[6, 1]],
    "deleted and re-created in one revision: a new generation",
  );
});

test("txn with a failing check writes nothing", () => {
  const s = seeded();
  const leased = new MvccStore({ leases: { exists: () => false, attach() {}, detach() {} } });
  const cases: { store: MvccStore; ops: ReturnType<typeof opPut>[]; err: () => V3Error }[] = [
    { store: s, ops: [opPut("a", "1"), opPut("missing", "", { ignoreValue: true })], err: V3Errors.keyNotFound },
    { store: s, ops: [opDel("k"), opPut("k", "", { ignoreValue: true })], err: V3Errors.keyNotFound },
    { store: s, ops: [opPut("fresh", "1"), opPut("fresh", "", { ignoreLease: true })], err: V3Errors.keyNotFound },
    { store: s, ops: [opPut("a", "1"), opRange("k", { revision: 99 })], err: V3Errors.futureRev },
    { store: leased, ops: [opPut("a", "1"), opPut("b", "1", { lease: 5n })], err: V3Errors.leaseNotFound },
  ];
  for (const c of cases) {
    const before = c.store.hash();
    assert.throws(() => c.store.txn(txnReq({ success: c.ops })), errorIs(c.err));
    assert.equal(c.store.hash(), before);
  }
});

test("txn range at a compacted revision fails", () => {
  const s = seeded();
  s.compact(4);
  assert.throws(() => s.txn(txnReq({ success: [opRange("k", { revision: 3 })] })), errorIs(V3Errors.compacted));
  assert.equal(s.txn(txnReq({ success: [opRange("k", { revision: 4 })] })).response.succeeded, true);
});

test("txn range at a negative revision: judged against etcd's compactMainRev (-1 until a compaction) before the txn runs, then read at the current revision", () => {
  const s = seeded();
  const current = s.txn(txnReq({ success: [opRange("k", { revision: -1 })] })).response;
  assert.equal(current.succeeded, true, "-1 before any compaction");
  assert.throws(() => s.txn(txnReq({ success: [opRange("k", { revision: -2 })] })), errorIs(V3Errors.compacted));
  s.compact(4);
  assert.throws(() => s.txn(txnReq({ success: [opRange("k", { revision: -1 })] })), errorIs(V3Errors.compacted));
  assert.equal(s.range(rangeReq("k", { revision: -1 })).kvs.length, 1, "a plain range reads -1 as the current revision");
});

test("an empty op in the chosen branch fails with key not found", () => {
  const s = seeded();
  const empty = {} as ReturnType<typeof opPut>;
  assert.throws(() => s.txn(txnReq({ success: [empty] })), errorIs(V3Errors.keyNotFound));
  assert.equal(s.txn(txnReq({ compare: [cmpVersion("k", R.EQUAL, 0)], success: [empty] })).response.succeeded, false);
});

test("deleteRange standalone answers prev_kvs and detaches nothing without a lessor", () => {
  const s = seeded();
  const r = s.deleteRange(delReq("p/", { rangeEnd: b("p0"), prevKv: true }));
  assert.deepEqual(keysOf(r.response.prevKvs), ["p/a", "p/b"]);
});

const readOnlyCases: { name: string; req: ReturnType<typeof txnReq>; readOnly: boolean }[] = [
  { name: "an empty txn", req: txnReq(), readOnly: true },
  { name: "ranges in both branches", req: txnReq({ success: [opRange("a")], failure: [opRange("b")] }), readOnly: true },
  // etcd 3.4's isTxnReadonly looks no deeper than the top level: a nested txn is a write.
  { name: "a nested txn of ranges only", req: txnReq({ success: [opTxn({ failure: [opRange("a")] })] }), readOnly: false },
  { name: "a put in the failure branch", req: txnReq({ success: [opRange("a")], failure: [opPut("a", "1")] }), readOnly: false },
  { name: "a delete inside a nested txn", req: txnReq({ success: [opTxn({ success: [opDel("a")] })] }), readOnly: false },
];
for (const c of readOnlyCases) {
  test(`isReadOnlyTxn is ${c.readOnly} for ${c.name}`, () => {
    assert.equal(isReadOnlyTxn(c.req), c.readOnly);
  });
}

const serializableCases: { name: string; req: ReturnType<typeof txnReq>; serializable: boolean }[] = [
  { name: "an empty txn", req: txnReq({ compare: [cmpVersion("a", R.EQUAL, 0)] }), serializable: true },
  {
    name: "serializable ranges in both branches",
    req: txnReq({ success: [opRange("a", { serializable: true })], failure: [opRange("b", { serializable: true })] }),
    serializable: true,
  },
  {
    name: "one linearizable range in the failure branch",
    req: txnReq({ success: [opRange("a", { serializable: true })], failure: [opRange("b")] }),
    serializable: false,
  },
  { name: "a put", req: txnReq({ success: [opRange("a", { serializable: true }), opPut("a", "1")] }), serializable: false },
  { name: "a nested txn of serializable ranges", req: txnReq({ success: [opTxn({ success: [opRange("a", { serializable: true })] })] }), serializable: false },
];
for (const c of serializableCases) {
  test(`isSerializableTxn is ${c.serializable} for ${c.name}`, () => {
    assert.equal(isSerializableTxn(c.req), c.serializable);
  });
}
