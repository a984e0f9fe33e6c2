// validateTxn and the edge checks: etcd's checkTxnRequest / checkIntervals answers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V3Error, V3Errors } from "../../api/v3-errors.ts";
import { checkDeleteRangeRequest, checkPutRequest, checkRangeRequest, validateTxn } from "./txn-check.ts";
import type { RequestOp, TxnRequest } from "./types.ts";
import { CompareResult } from "./types.ts";
import { FROM_KEY, b, cmpVersion, delReq, opDel, opPut, opRange, opTxn, putReq, rangeReq, txnReq } from "./v3.test-helper.ts";

const cases: { name: string; req: TxnRequest; maxOps?: number; err?: () => V3Error }[] = [
  { name: "distinct puts pass", req: txnReq({ success: [opPut("a", "1"), opPut("b", "1")] }) },
  { name: "the same key in success and failure passes", req: txnReq({ success: [opPut("a", "1")], failure: [opPut("a", "2")] }) },
  { name: "two puts of one key fail", req: txnReq({ success: [opPut("a", "1"), opPut("a", "2")] }), err: V3Errors.duplicateKey },
  { name: "a put inside a deleted range fails", req: txnReq({ success: [opDel("p/", { rangeEnd: b("p0") }), opPut("p/x", "1")] }), err: V3Errors.duplicateKey },
  { name: "a put after a delete of the same key fails", req: txnReq({ success: [opPut("k", "1"), opDel("k")] }), err: V3Errors.duplicateKey },
  { name: "a put outside a deleted range passes", req: txnReq({ success: [opDel("p/", { rangeEnd: b("p0") }), opPut("p0", "1")] }) },
  // etcd takes "\0" literally here: a from-key delete overlaps no put.
  { name: "a from-key delete does not overlap puts (etcd)", req: txnReq({ success: [opDel("a", { rangeEnd: FROM_KEY }), opPut("b", "1")] }) },
  { name: "two deletes of one key pass", req: txnReq({ success: [opDel("k"), opDel("k")] }) },
  { name: "ranges never conflict", req: txnReq({ success: [opPut("k", "1"), opRange("k")] }) },
  {
    name: "a put in a nested txn and the same put outside fail",
    req: txnReq({ success: [opPut("k", "1"), opTxn({ success: [opPut("k", "2")] })] }),
    err: V3Errors.duplicateKey,
  },
  {
    name: "a nested put inside an outer delete fails",
    req: txnReq({ success: [opDel("k"), opTxn({ failure: [opPut("k", "2")] })] }),
    err: V3Errors.duplicateKey,
  },
  {
    name: "the same key in both branches of a nested txn passes",
    req: txnReq({ success: [opTxn({ success: [opPut("k", "1")], failure: [opPut("k", "2")] })] }),
  },
  {
    name: "the same key in two sibling nested txns fails",
    req: txnReq({ success: [opTxn({ success: [opPut("k", "1")] }), opTxn({ failure: [opPut("k", "2")] })] }),
    err: V3Errors.duplicateKey,
  },
  {
    name: "an outer put inside a nested delete fails",
    req: txnReq({ success: [opPut("p/a", "1"), opTxn({ success: [opDel("p/", { rangeEnd: b("p0") })] })] }),
    err: V3Errors.duplicateKey,
  },
  { name: "too many ops fail", req: txnReq({ success: [opPut("a", "1"), opPut("b", "1"), opPut("c", "1")] }), maxOps: 2, err: V3Errors.tooManyOps },
  { name: "too many compares fail", req: txnReq({ compare: [cmpVersion("a", CompareResult.EQUAL, 0), cmpVersion("b", CompareResult.EQUAL, 0)] }), maxOps: 1, err: V3Errors.tooManyOps },
  {
    name: "the nested budget shrinks by the parent's ops",
    req: txnReq({ success: [opPut("a", "1"), opTxn({ success: [opPut("b", "1"), opPut("c", "1")] })] }),
    maxOps: 3,
    err: V3Errors.tooManyOps,
  },
  { name: "a compare without a key fails", req: txnReq({ compare: [cmpVersion("", CompareResult.EQUAL, 0)] }), err: V3Errors.emptyKey },
  { name: "a put without a key fails", req: txnReq({ failure: [opPut("", "x")] }), err: V3Errors.emptyKey },
  { name: "an empty op fails with key not found", req: txnReq({ success: [{} as RequestOp] }), err: V3Errors.keyNotFound },
  { name: "ignore_value with a value fails", req: txnReq({ success: [opPut("a", "x", { ignoreValue: true })] }), err: V3Errors.valueProvided },
  { name: "ignore_lease with a lease fails", req: txnReq({ success: [opPut("a", "x", { ignoreLease: true, lease: 3n })] }), err: V3Errors.leaseProvided },
];
for (const c of cases) {
  test(`validateTxn: ${c.name}`, () => {
    if (c.err === undefined) {
      validateTxn(c.req, c.maxOps);
      return;
    }
    const want = c.err();
    assert.throws(() => validateTxn(c.req, c.maxOps), (err: unknown) => err instanceof V3Error && err.message === want.message && err.code === want.code);
  });
}

test("edge checks reject empty keys and contradictory put options", () => {
  assert.throws(() => checkRangeRequest(rangeReq("")), /key is not provided/);
  assert.throws(() => checkDeleteRangeRequest(delReq("")), /key is not provided/);
  assert.throws(() => checkPutRequest(putReq("", "v")), /key is not provided/);
  assert.throws(() => checkPutRequest(putReq("k", "v", { ignoreValue: true })), /value is provided/);
  assert.throws(() => checkPutRequest(putReq("k", "", { ignoreLease: true, lease: 1n })), /lease is provided/);
  checkPutRequest(putReq("k", "", { ignoreValue: true, ignoreLease: true }));
});
