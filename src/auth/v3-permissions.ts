// Key-range permissions as etcd 3.4 decides them (auth/range_perm_cache.go and the
// BytesAffine intervals of pkg/adt), and the request-level checks of etcdserver/apply_auth.go.
//
// Intervals are half-open [begin, end) over byte strings in "affine" order: an EMPTY byte
// string sorts after every other one (it stands for +infinity). Hence:
//   - a permission with rangeEnd `\0` is [key, +inf) (every key >= key);
//   - a permission with an empty rangeEnd is the point [key, key+"\0") (just `key`);
//   - a permission whose key is empty starts at +inf and grants nothing (etcdctl sends
//     `\0` for "every key" for that reason).
// A user's permissions of one kind (read or write) are the union of its roles' intervals;
// READWRITE counts for both. We keep that union unified — sorted, disjoint, and with
// touching intervals merged ([a,b) + [b,c) = [a,c)) — so a request range is permitted iff
// ONE unified interval covers it, which is what etcd's interval tree `Contains` computes by
// walking overlapping intervals and checking they are contiguous. A single key is permitted
// iff some interval contains it (`Intersects` with the key's point interval).
import { V3PermType, type V3AuthInfo, type V3Permission } from "./v3-model.ts";

/** [begin, end) in affine order; invariant: begin < end. */
export interface V3Interval {
  begin: Buffer;
  end: Buffer;
}

/** A user's unified read and write intervals (etcd's unifiedRangePermissions). */
export interface V3UnifiedPermissions {
  read: readonly V3Interval[];
  write: readonly V3Interval[];
}

const EMPTY = Buffer.alloc(0);
const ZERO = Buffer.from([0]);

/** pkg/adt's BytesAffineComparable: byte order, except that empty is greater than everything. */
export function compareAffine(a: Buffer, b: Buffer): number {
  if (a.length === 0) return b.length === 0 ? 0 : 1;
  if (b.length === 0) return -1;
  return Buffer.compare(a, b);
}

function isZeroByte(b: Buffer): boolean {
  return b.length === 1 && b[0] === 0;
}

/** The interval one stored permission grants, or undefined when it grants nothing. */
export function permissionInterval(p: Pick<V3Permission, "key" | "rangeEnd">): V3Interval | undefined {
  let iv: V3Interval;
  if (p.rangeEnd.length === 0) iv = { begin: p.key, end: Buffer.concat([p.key, ZERO]) };
  else iv = { begin: p.key, end: isZeroByte(p.rangeEnd) ? EMPTY : p.rangeEnd };
  // An empty or inverted interval (empty key, or rangeEnd <= key) contains no key.
  return compareAffine(iv.begin, iv.end) < 0 ? iv : undefined;
}

/** Sorts and merges intervals: the result is sorted, disjoint, and no two touch. */
export function unifyIntervals(intervals: readonly V3Interval[]): V3Interval[] {
  const sorted = [...intervals].sort((x, y) => compareAffine(x.begin, y.begin));
  const out: V3Interval[] = [];
  for (const iv of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && compareAffine(iv.begin, last.end) <= 0) {
      if (compareAffine(iv.end, last.end) > 0) out[out.length - 1] = { begin: last.begin, end: iv.end };
    } else {
      out.push(iv);
    }
  }
  return out;
}

/** etcd's getMergedPerms: the union of the given roles' permissions, per kind. */
export function unifyPermissions(perms: Iterable<V3Permission>): V3UnifiedPermissions {
  const read: V3Interval[] = [];
  const write: V3Interval[] = [];
  for (const p of perms) {
    const iv = permissionInterval(p);
    if (iv === undefined) continue;
    // By the known types only: a type etcd does not know is stored but grants nothing.
    if (p.permType === V3PermType.READ || p.permType === V3PermType.READWRITE) read.push(iv);
    if (p.permType === V3PermType.WRITE || p.permType === V3PermType.READWRITE) write.push(iv);
  }
  return { read: unifyIntervals(read), write: unifyIntervals(write) };
}

/** Index of the last interval whose begin is <= key (affine), or -1. */
function lastStartingAtOrBefore(ivs: readonly V3Interval[], key: Buffer): number {
  let lo = 0;
  let hi = ivs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareAffine(ivs[mid]!.begin, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** Is the single key inside one of the unified intervals? */
export function keyCovered(ivs: readonly V3Interval[], key: Buffer): boolean {
  const iv = ivs[lastStartingAtOrBefore(ivs, key)];
  return iv !== undefined && compareAffine(key, iv.end) < 0;
}

/**
 * Is the request range [key, rangeEnd) covered by the unified intervals? `rangeEnd` `\0`
 * means "to the end of the key space". An empty rangeEnd is a single key (keyCovered).
 */
export function rangeCovered(ivs: readonly V3Interval[], key: Buffer, rangeEnd: Buffer): boolean {
  const q: V3Interval = { begin: key, end: isZeroByte(rangeEnd) ? EMPTY : rangeEnd };
  if (compareAffine(q.begin, q.end) >= 0) {
    // An inverted request selects no key. etcd's Contains still answers for it, over the
    // intervals its Interval.Compare calls overlapping; we walk them linearly (etcd's tree
    // walk may prune differently here, which cannot matter: no key is at stake).
    const overlapping = ivs.filter((iv) => !(compareAffine(q.begin, iv.begin) < 0 && compareAffine(q.end, iv.begin) <= 0) && compareAffine(q.begin, iv.end) < 0);
    const only = overlapping[0];
    return overlapping.length === 1 && compareAffine(only!.begin, q.begin) <= 0 && compareAffine(only!.end, q.end) >= 0;
  }
  // Unified intervals are disjoint and do not touch, so only the one starting at or
  // before q.begin can cover q, and it must reach q.end.
  const iv = ivs[lastStartingAtOrBefore(ivs, q.begin)];
  return iv !== undefined && compareAffine(iv.end, q.end) >= 0;
}

/** etcd's isRangeOpPermitted: a point check for an empty rangeEnd, else an interval check. */
export function rangePermitted(ivs: readonly V3Interval[], key: Buffer, rangeEnd: Buffer): boolean {
  return rangeEnd.length === 0 ? keyCovered(ivs, key) : rangeCovered(ivs, key, rangeEnd);
}

// ---- request-level checks (etcdserver/apply_auth.go) ----------------------------------

// The parts of src/store/v3/types.ts requests the checks read, as structural shapes: auth
// may not import the store (test/architecture.test.ts), and the store's RangeRequest,
// PutRequest, DeleteRangeRequest, Compare, RequestOp and TxnRequest are assignable to these
// (v3-permissions.test.ts passes the store's own types to prove it).
export interface V3RangeShape {
  key: Buffer;
  rangeEnd: Buffer;
}
export interface V3PutShape {
  key: Buffer;
  prevKv: boolean;
}
export interface V3DeleteRangeShape {
  key: Buffer;
  rangeEnd: Buffer;
  prevKv: boolean;
}
export type V3RequestOpShape = { range: V3RangeShape } | { put: V3PutShape } | { deleteRange: V3DeleteRangeShape } | { txn: V3TxnShape };
export interface V3TxnShape {
  compare: readonly V3RangeShape[];
  success: readonly V3RequestOpShape[];
  failure: readonly V3RequestOpShape[];
}

/** The three primitive checks; each throws etcd's V3Error when the access is refused. */
export interface V3PermissionChecker {
  isRangePermitted(info: V3AuthInfo | null, key: Buffer, rangeEnd: Buffer): void;
  isPutPermitted(info: V3AuthInfo | null, key: Buffer): void;
  isDeleteRangePermitted(info: V3AuthInfo | null, key: Buffer, rangeEnd: Buffer): void;
}

export function checkRangeRequest(c: V3PermissionChecker, info: V3AuthInfo | null, r: V3RangeShape): void {
  c.isRangePermitted(info, r.key, r.rangeEnd);
}

/** A put needs write on the key; `prevKv` also needs read on it (it returns the old value). */
export function checkPutRequest(c: V3PermissionChecker, info: V3AuthInfo | null, r: V3PutShape): void {
  c.isPutPermitted(info, r.key);
  if (r.prevKv) c.isRangePermitted(info, r.key, EMPTY);
}

/** A delete needs write on the range; `prevKv` also needs read on it. */
export function checkDeleteRangeRequest(c: V3PermissionChecker, info: V3AuthInfo | null, r: V3DeleteRangeShape): void {
  c.isDeleteRangePermitted(info, r.key, r.rangeEnd);
  if (r.prevKv) c.isRangePermitted(info, r.key, r.rangeEnd);
}

/**
 * Every key a txn can touch, in etcd's order: the compares (read), then the success ops,
 * then the failure ops — both branches, whichever runs. Two deliberate differences from
 * etcd 3.4, both closing reads it lets through: a nested txn is checked recursively (3.4
 * skips it), and a put with `prevKv` inside a txn needs read as it does outside one.
 */
export function checkTxnRequest(c: V3PermissionChecker, info: V3AuthInfo | null, txn: V3TxnShape): void {
  for (const cmp of txn.compare) checkCompare(c, info, cmp);
  checkRequestOps(c, info, txn.success);
  checkRequestOps(c, info, txn.failure);
}

function checkCompare(c: V3PermissionChecker, info: V3AuthInfo | null, cmp: V3RangeShape): void {
  c.isRangePermitted(info, cmp.key, cmp.rangeEnd);
}

function checkRequestOps(c: V3PermissionChecker, info: V3AuthInfo | null, ops: readonly V3RequestOpShape[]): void {
  for (const op of ops) {
    if ("range" in op) checkRangeRequest(c, info, op.range);
    else if ("put" in op) checkPutRequest(c, info, op.put);
    else if ("deleteRange" in op) {
      // etcd checks read before write inside a txn; both fail with the same error.
      if (op.deleteRange.prevKv) c.isRangePermitted(info, op.deleteRange.key, op.deleteRange.rangeEnd);
      c.isDeleteRangePermitted(info, op.deleteRange.key, op.deleteRange.rangeEnd);
    } else checkTxnRequest(c, info, op.txn);
  }
}

/**
 * etcd's checkLeasePuts: attaching a key to a lease (or revoking the lease) needs write on
 * every key already attached, since revoking the lease deletes them.
 */
export function checkLeaseKeys(c: V3PermissionChecker, info: V3AuthInfo | null, keys: Iterable<Buffer>): void {
  for (const key of keys) c.isPutPermitted(info, key);
}
