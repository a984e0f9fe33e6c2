// Request checks done at the API edge before anything is proposed, as etcd's v3rpc
// (key.go: checkRangeRequest, checkPutRequest, checkDeleteRequest, checkTxnRequest,
// checkIntervals). They depend on the request only, never on the store.

import { V3Errors } from "../../api/v3-errors.ts";
import type { KeyId } from "./keys.ts";
import { keyId } from "./keys.ts";
import type { DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from "./types.ts";
import { NO_LEASE } from "./types.ts";

/** etcd's default --max-txn-ops. */
export const DEFAULT_MAX_TXN_OPS = 128;

export function checkRangeRequest(req: RangeRequest): void {
  if (req.key.length === 0) throw V3Errors.emptyKey();
}

export function checkPutRequest(req: PutRequest): void {
  if (req.key.length === 0) throw V3Errors.emptyKey();
  if (req.ignoreValue && req.value.length !== 0) throw V3Errors.valueProvided();
  if (req.ignoreLease && req.lease !== NO_LEASE) throw V3Errors.leaseProvided();
}

export function checkDeleteRangeRequest(req: DeleteRangeRequest): void {
  if (req.key.length === 0) throw V3Errors.emptyKey();
}

/**
 * etcd's Txn checks: too many operations (the budget shrinks with nesting), empty keys in
 * compares and ops, an empty op (`key not found`), then duplicate writes per branch.
 */
export function validateTxn(req: TxnRequest, maxOps: number = DEFAULT_MAX_TXN_OPS): void {
  checkTxnRequest(req, maxOps);
  // Overlaps are checked after the cheap checks, like etcd, to avoid quadratic work on junk.
  checkIntervals(req.success);
  checkIntervals(req.failure);
}

function checkTxnRequest(req: TxnRequest, maxOps: number): void {
  const opc = Math.max(req.compare.length, req.success.length, req.failure.length);
  if (opc > maxOps) throw V3Errors.tooManyOps();
  for (const c of req.compare) if (c.key.length === 0) throw V3Errors.emptyKey();
  for (const op of req.success) checkRequestOp(op, maxOps - opc);
  for (const op of req.failure) checkRequestOp(op, maxOps - opc);
}

function checkRequestOp(op: RequestOp, maxOps: number): void {
  // A decoded op may carry none of the four (an empty JSON object): etcd says "key not found".
  if ("range" in op && op.range !== undefined) return checkRangeRequest(op.range);
  if ("put" in op && op.put !== undefined) return checkPutRequest(op.put);
  if ("deleteRange" in op && op.deleteRange !== undefined) return checkDeleteRangeRequest(op.deleteRange);
  if ("txn" in op && op.txn !== undefined) return checkTxnRequest(op.txn, maxOps);
  throw V3Errors.keyNotFound();
}

/**
 * A deleted interval as etcd's adt.StringAffineInterval sees it: [begin, end), a point
 * being [key, key + "\0"). A range_end of "\0" is taken literally here, exactly as etcd
 * does, so a "from key" delete overlaps no put (etcd's behaviour, kept for compatibility).
 */
interface Interval {
  begin: KeyId;
  end: KeyId;
}

function intersectsPoint(dels: readonly Interval[], k: KeyId): boolean {
  return dels.some((iv) => iv.begin <= k && k < iv.end);
}

/**
 * The puts and deletes of one list of ops (and the txns nested in it); throws
 * duplicateKey when a key is put twice on one execution path or put inside a deleted
 * range. The order of the checks is etcd's, including what it does not catch (a put in
 * an earlier nested txn against a delete in a later sibling).
 */
function checkIntervals(ops: readonly RequestOp[]): { puts: Set<KeyId>; dels: Interval[] } {
  const dels: Interval[] = [];
  for (const op of ops) {
    if (!("deleteRange" in op) || op.deleteRange === undefined) continue;
    const k = keyId(op.deleteRange.key);
    const end = op.deleteRange.rangeEnd.length !== 0 ? keyId(op.deleteRange.rangeEnd) : `${k}\0`;
    dels.push({ begin: k, end });
  }

  const puts = new Set<KeyId>();
  for (const op of ops) {
    if (!("txn" in op) || op.txn === undefined) continue;
    const then = checkIntervals(op.txn.success);
    const otherwise = checkIntervals(op.txn.failure);
    for (const k of then.puts) {
      if (puts.has(k) || intersectsPoint(dels, k)) throw V3Errors.duplicateKey();
      puts.add(k);
    }
    for (const k of otherwise.puts) {
      // The same key in both branches is fine: only one branch runs.
      if (puts.has(k) && !then.puts.has(k)) throw V3Errors.duplicateKey();
      if (intersectsPoint(dels, k)) throw V3Errors.duplicateKey();
      puts.add(k);
    }
    dels.push(...then.dels, ...otherwise.dels);
  }

  for (const op of ops) {
    if (!("put" in op) || op.put === undefined) continue;
    const k = keyId(op.put.key);
    if (puts.has(k) || intersectsPoint(dels, k)) throw V3Errors.duplicateKey();
    puts.add(k);
  }
  return { puts, dels };
}
