// Reading the key index at a revision, and the RangeRequest options applied afterwards
// the way etcd's applierV3backend.Range does: `count` is the number of keys in the range
// at that revision BEFORE the min/max filters and the limit; filters, then sort, then
// truncation to `limit` (setting `more`).

import { BTree } from "./btree.ts";
import type { KeyIndex, StoredRecord } from "./key-index.ts";
import { toKeyValue } from "./key-index.ts";
import type { KeyId, KeySpan } from "./keys.ts";
import { compareKeyIds } from "./keys.ts";
import type { RangeRequest, RangeResponse } from "./types.ts";
import { SortOrder, SortTarget } from "./types.ts";

export type KeyTree = BTree<KeyId, KeyIndex>;

export function newKeyTree(): KeyTree {
  return new BTree<KeyId, KeyIndex>(undefined, compareKeyIds);
}

/** Every key index whose key lies in `span`, in key order. */
export function* indexesIn(tree: KeyTree, span: KeySpan): Generator<KeyIndex> {
  if (span.kind === "single") {
    const ki = tree.get(span.key);
    if (ki !== undefined) yield ki;
    return;
  }
  for (const [id, ki] of tree.entries(span.key)) {
    if (span.kind === "interval" && id >= span.end) return;
    yield ki;
  }
}

/**
 * The records visible at `rev` in `span`, in key order, and how many there are. With
 * `limit` > 0 at most `limit` records are collected (the count still covers all keys);
 * with `countOnly` none are.
 */
export function visibleIn(
  tree: KeyTree,
  span: KeySpan,
  opts: { rev: number; limit: number; countOnly: boolean },
): { records: StoredRecord[]; count: number } {
  const records: StoredRecord[] = [];
  let count = 0;
  for (const ki of indexesIn(tree, span)) {
    const r = ki.visibleAt(opts.rev);
    if (r === undefined) continue;
    count++;
    if (!opts.countOnly && (opts.limit <= 0 || records.length < opts.limit)) records.push(r);
  }
  return { records, count };
}

/** True when the request needs every record before it can truncate (filters or sorting). */
function needsAll(req: RangeRequest): boolean {
  return (
    req.sortOrder !== SortOrder.NONE ||
    req.minModRevision !== 0 ||
    req.maxModRevision !== 0 ||
    req.minCreateRevision !== 0 ||
    req.maxCreateRevision !== 0
  );
}

/** Serves `req` at revision `rev` (already checked against compaction and the current revision). */
export function rangeAt(
  tree: KeyTree,
  req: RangeRequest,
  opts: { span: KeySpan; rev: number; headerRevision: number },
): RangeResponse {
  // Like etcd: one extra record tells whether the answer was truncated.
  const limit = needsAll(req) || req.limit <= 0 ? 0 : req.limit + 1;
  const { records, count } = visibleIn(tree, opts.span, { rev: opts.rev, limit, countOnly: req.countOnly });
  let kept = records.filter(
    (r) =>
      (req.maxModRevision === 0 || r.main <= req.maxModRevision) &&
      (req.minModRevision === 0 || r.main >= req.minModRevision) &&
      (req.maxCreateRevision === 0 || r.createRevision <= req.maxCreateRevision) &&
      (req.minCreateRevision === 0 || r.createRevision >= req.minCreateRevision),
  );
  kept = sortRecords(kept, req);
  let more = false;
  if (req.limit > 0 && kept.length > req.limit) {
    kept = kept.slice(0, req.limit);
    more = true;
  }
  return {
    revision: opts.headerRevision,
    kvs: kept.map((r) => toKeyValue(r, { keysOnly: req.keysOnly })),
    more,
    count,
  };
}

/**
 * etcd sorts ascending by default for any target but KEY (records come in key order).
 * The sort is stable and DESCEND negates the comparison, so ties stay in key order, which
 * is what etcd's (insertion) sort gives for small answers.
 */
function sortRecords(records: StoredRecord[], req: RangeRequest): StoredRecord[] {
  let order: number = req.sortOrder;
  if (req.sortTarget !== SortTarget.KEY && order === SortOrder.NONE) order = SortOrder.ASCEND;
  if (order === SortOrder.NONE) return records;
  const cmp = comparator(req.sortTarget);
  const sign = order === SortOrder.DESCEND ? -1 : 1;
  return records.slice().sort((a, b) => sign * cmp(a, b));
}

function comparator(target: number): (a: StoredRecord, b: StoredRecord) => number {
  switch (target) {
    case SortTarget.VERSION:
      return (a, b) => a.version - b.version;
    case SortTarget.CREATE:
      return (a, b) => a.createRevision - b.createRevision;
    case SortTarget.MOD:
      return (a, b) => a.main - b.main;
    case SortTarget.VALUE:
      return (a, b) => Buffer.compare(a.value, b.value);
    default:
      return (a, b) => compareKeyIds(a.id, b.id);
  }
}
