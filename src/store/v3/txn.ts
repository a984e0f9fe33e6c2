// The read-only half of a txn, done before any write (etcd's compareToPath, applyCompare
// and checkRequests): every compare on the path is evaluated against the state before the
// txn, nested ones included; then every op that will run is checked, so that applying
// the txn cannot fail halfway (a txn is all or nothing).

import { V3Errors } from "../../api/v3-errors.ts";
import type { StoredRecord } from "./key-index.ts";
import type { KeyId, KeySpan } from "./keys.ts";
import { keyId, keySpan, spanContains } from "./keys.ts";
import type { Compare, LeaseId, RangeRequest, RequestOp, TxnRequest } from "./types.ts";
import { CompareResult, CompareTarget, NO_LEASE } from "./types.ts";

/** What the checks read: the store as of the start of the txn. */
export interface TxnReadView {
  readonly revision: number;
  /** etcd's compactMainRev (-1 before the first compaction). */
  readonly firstRevision: number;
  /** The live records in `span` now, in key order. */
  visible(span: KeySpan): StoredRecord[];
  /** Whether lease `id` exists; always true when the store runs without a lessor. */
  leaseExists(id: LeaseId): boolean;
}

/**
 * Which branch each txn on the path takes, in execution order (etcd's txnPath): entry 0
 * is this txn, then the nested txns of the chosen branch, depth first.
 */
export function comparePath(view: TxnReadView, req: TxnRequest): boolean[] {
  const ok = req.compare.every((c) => applyCompare(view, c));
  const path = [ok];
  for (const op of ok ? req.success : req.failure) {
    if ("txn" in op && op.txn !== undefined) path.push(...comparePath(view, op.txn));
  }
  return path;
}

/**
 * etcd's applyCompare: every key in the compare's range must satisfy it. A missing key
 * compares as version / create / mod revision 0 and lease 0, and never matches on VALUE.
 */
export function applyCompare(view: TxnReadView, c: Compare): boolean {
  const records = view.visible(keySpan(c.key, c.rangeEnd));
  if (records.length === 0) {
    if (c.target === CompareTarget.VALUE) return false;
    return resultHolds(c, compareRecord(c, undefined));
  }
  return records.every((r) => resultHolds(c, compareRecord(c, r)));
}

function compareRecord(c: Compare, r: StoredRecord | undefined): number {
  switch (c.target) {
    case CompareTarget.VALUE:
      return Buffer.compare(r?.value ?? Buffer.alloc(0), c.value);
    case CompareTarget.CREATE:
      return Math.sign((r?.createRevision ?? 0) - c.createRevision);
    case CompareTarget.MOD:
      return Math.sign((r?.main ?? 0) - c.modRevision);
    case CompareTarget.VERSION:
      return Math.sign((r?.version ?? 0) - c.version);
    case CompareTarget.LEASE: {
      const lease = r?.lease ?? NO_LEASE;
      return lease < c.lease ? -1 : lease > c.lease ? 1 : 0;
    }
  }
}

function resultHolds(c: Compare, cmp: number): boolean {
  switch (c.result) {
    case CompareResult.EQUAL:
      return cmp === 0;
    case CompareResult.NOT_EQUAL:
      return cmp !== 0;
    case CompareResult.GREATER:
      return cmp > 0;
    case CompareResult.LESS:
      return cmp < 0;
  }
}

/** A txn's ops on its path, flattened in execution order (nested txns expanded). */
export type PathOp = Exclude<RequestOp, { txn: TxnRequest }>;

export function opsOnPath(req: TxnRequest, path: readonly boolean[]): PathOp[] {
  const out: PathOp[] = [];
  let next = 0;
  const walk = (t: TxnRequest): void => {
    const ok = path[next++];
    if (ok === undefined) throw new Error("mvcc: txn path shorter than the txn");
    for (const op of ok ? t.success : t.failure) {
      if ("txn" in op && op.txn !== undefined) walk(op.txn);
      else if (isPathOp(op)) out.push(op);
      // A decoded op may carry none of the four (an empty JSON object): etcd's answer.
      else throw V3Errors.keyNotFound();
    }
  };
  walk(req);
  return out;
}

function isPathOp(op: RequestOp): op is PathOp {
  return (
    ("range" in op && op.range !== undefined) ||
    ("put" in op && op.put !== undefined) ||
    ("deleteRange" in op && op.deleteRange !== undefined)
  );
}

/**
 * etcd 3.4's isTxnReadonly: ranges only, in both branches. A nested txn makes it a write
 * even when it holds only ranges, as there: it goes through the log (and the Raft size
 * limit), and the store runs its put checks. The one definition for the store, the
 * gateway and the server, so all three agree with etcd on which txns are reads.
 */
export function isReadOnlyTxn(req: TxnRequest): boolean {
  return req.success.every(isRangeOp) && req.failure.every(isRangeOp);
}

/**
 * etcd 3.4's isTxnSerializable: every op of both branches is a serializable range. A
 * read-only txn that is also serializable is served from the local key space with no
 * ReadIndex round, as a serializable Range is; an empty txn is both.
 */
export function isSerializableTxn(req: TxnRequest): boolean {
  const serializable = (op: RequestOp): boolean => isRangeOp(op) && op.range.serializable;
  return req.success.every(serializable) && req.failure.every(serializable);
}

function isRangeOp(op: RequestOp): op is { range: RangeRequest } {
  return "range" in op && op.range !== undefined;
}

/**
 * etcd's checkRequests for puts (only for txns that write) then ranges, against the state
 * before the txn. Also rejects, with the same error, what etcd would only discover while
 * applying (and crash on): an ignore_value / ignore_lease put of a key deleted earlier in
 * the same txn.
 */
export function checkPathOps(view: TxnReadView, ops: readonly PathOp[], opts: { writes: boolean }): void {
  if (opts.writes) {
    const effects: ({ put: KeyId } | { del: KeySpan })[] = [];
    const existsBefore = (k: KeyId) => view.visible({ kind: "single", key: k }).length > 0;
    const existsNow = (k: KeyId): boolean => {
      for (let i = effects.length - 1; i >= 0; i--) {
        const e = effects[i]!;
        if ("put" in e) {
          if (e.put === k) return true;
        } else if (spanContains(e.del, k)) {
          return false;
        }
      }
      return existsBefore(k);
    };
    for (const op of ops) {
      if ("deleteRange" in op && op.deleteRange !== undefined) {
        effects.push({ del: keySpan(op.deleteRange.key, op.deleteRange.rangeEnd) });
      }
      if (!("put" in op) || op.put === undefined) continue;
      const put = op.put;
      const k = keyId(put.key);
      if ((put.ignoreValue || put.ignoreLease) && !(existsBefore(k) && existsNow(k))) {
        throw V3Errors.keyNotFound();
      }
      if (put.lease !== NO_LEASE && !view.leaseExists(put.lease)) throw V3Errors.leaseNotFound();
      effects.push({ put: k });
    }
  }
  for (const op of ops) {
    if (!("range" in op) || op.range === undefined) continue;
    checkTxnRangeRevision(view, op.range.revision);
  }
}

/**
 * etcd's checkRequestRange, run before a txn: every non-zero revision is judged, a
 * negative one too, against etcd's compactMainRev (-1 until the first compaction): -1 is
 * refused as compacted once anything was, -2 always. (The range itself then reads a
 * negative revision as the current one.)
 */
export function checkTxnRangeRevision(view: { revision: number; firstRevision: number }, rev: number): void {
  if (rev === 0) return;
  if (rev > view.revision) throw V3Errors.futureRev();
  if (rev < (view.firstRevision > 0 ? view.firstRevision : -1)) throw V3Errors.compacted();
}

/** A range's revision against the store: 0 (or less) means the current revision. */
export function checkRangeRevision(view: { revision: number; firstRevision: number }, rev: number): void {
  if (rev <= 0) return;
  if (rev > view.revision) throw V3Errors.futureRev();
  if (rev < view.firstRevision) throw V3Errors.compacted();
}
