// Tree nodes of the v2 store and their wire rendering (etcd's node.go + node_extern.go).
//
// A node is a file (children === null, the value in `value`) or a directory (children
// is a Map). Nodes are kept lean: one small class, no closures, children in a Map keyed by
// the last path segment. Invariants:
//   - path is clean (see path.ts) and equals parent.path + "/" + name (root: "/");
//   - parent.children.get(name) === this while the node is in the tree;
//   - expireTime === PERMANENT exactly when the node is not in the TTL heap
//     (heapIndex === -1); the heap owns heapIndex.

import type { V2NodeJSON } from "../../api/v2-types.ts";
import { formatRfc3339Nano, ttlSeconds } from "./format-time.ts";
import { compareKeys } from "./path.ts";

/** expireTime of a node without TTL. */
export const PERMANENT = 0;

/** Expire times before 2000-01-01 mean "permanent" on create/set (etcd's minExpireTime). */
export const MIN_EXPIRE_TIME = Date.UTC(2000, 0, 1);

export interface NodeInit {
  path: string;
  index: number;
  parent: V2Node | null;
  expireTime: number;
  /** Nanoseconds past expireTime's millisecond (0..999999); 0 when absent. */
  expireNs?: number | undefined;
  /** undefined: a directory. */
  value?: string | undefined;
}

export class V2Node {
  path: string;
  createdIndex: number;
  modifiedIndex: number;
  parent: V2Node | null;
  /** ms since the epoch (fractional only in data written before expireNs existed); PERMANENT when the node has no TTL. */
  expireTime: number;
  /** Nanoseconds within expireTime's millisecond, as etcd's Go clock stamped them (0..999999). */
  expireNs: number;
  /** The value of a file; "" for a directory. */
  value: string;
  /** The children of a directory; null for a file. */
  children: Map<string, V2Node> | null;
  /** Slot in the TTL heap, -1 when not in it. Owned by TtlKeyHeap. */
  heapIndex: number;
  /** The last image writer that wrote this node (StoreImageWriter's stamp), 0 for none. */
  imaged: number;

  constructor(init: NodeInit) {
    this.path = init.path;
    this.createdIndex = init.index;
    this.modifiedIndex = init.index;
    this.parent = init.parent;
    this.expireTime = init.expireTime;
    this.expireNs = init.expireNs ?? 0;
    this.value = init.value ?? "";
    this.children = init.value === undefined ? new Map() : null;
    this.heapIndex = -1;
    this.imaged = 0;
  }

  isDir(): boolean {
    return this.children !== null;
  }
}

export interface RenderOptions {
  /** 0: the node alone; 1: a dir with its children (each alone); Infinity: whole subtree. */
  depth: number;
  sorted: boolean;
  /** Time for the ttl field (ms since the epoch). */
  now: number;
}

/**
 * The wire form of a node (etcd's Repr / loadInternalNode). Field order follows etcd's
 * NodeExtern struct: key, value, dir, expiration, ttl, nodes, modifiedIndex, createdIndex.
 * Hidden children are never listed; an empty `nodes` is omitted; zero indexes and the
 * root's key are omitted (the root renders as {"dir":true,...}).
 */
export function renderNode(n: V2Node, opts: RenderOptions): V2NodeJSON {
  const out: V2NodeJSON = {};
  if (n.path !== "/") out.key = n.path;
  const children = n.children;
  if (children === null) out.value = n.value;
  else out.dir = true;
  if (n.expireTime !== PERMANENT) {
    out.expiration = formatRfc3339Nano(n.expireTime, n.expireNs);
    const ttl = ttlSeconds(n.expireTime, opts.now, n.expireNs);
    // 0 (due, not yet expired) is omitted as etcd's omitempty does; a negative ttl shows in
    // a write's prevNode, and on reads only for a wrapped TTL (isStale keeps the others out).
    if (ttl !== 0) out.ttl = ttl;
  }
  if (children !== null && opts.depth > 0 && children.size > 0) {
    const list = visibleChildren(children, opts.sorted, opts.now);
    if (list.length > 0) {
      const sub: RenderOptions = { depth: opts.depth - 1, sorted: opts.sorted, now: opts.now };
      const nodes: V2NodeJSON[] = new Array<V2NodeJSON>(list.length);
      for (let i = 0; i < list.length; i++) nodes[i] = renderNode(list[i] as V2Node, sub);
      out.nodes = nodes;
    }
  }
  if (n.modifiedIndex !== 0) out.modifiedIndex = n.modifiedIndex;
  if (n.createdIndex !== 0) out.createdIndex = n.createdIndex;
  return out;
}

/**
 * How long past its expiration a node is still shown. The leader's SYNC (every 500 ms)
 * removes a due node well within this on etcd; a node due longer ago is one no leader has
 * expired yet (a member restarted after the time ran out, before its first SYNC) and reads
 * treat it as gone, as etcd answers at once after a restart, never with a negative `ttl`.
 */
export const STALE_AFTER_MS = 1000;

/**
 * Is this node past its expiration by more than STALE_AFTER_MS at `now`? Not a node due
 * before 2000: only an update or CAS with a TTL that wrapped Go's int64 gets such a time
 * (set and create make it permanent), it was already past when written, and etcd shows it,
 * ttl -9223372036, until the next SYNC expires it, like any node due less than a period ago.
 */
export function isStale(n: V2Node, now: number): boolean {
  return n.expireTime >= MIN_EXPIRE_TIME && now - n.expireTime > STALE_AFTER_MS;
}

function visibleChildren(children: Map<string, V2Node>, sorted: boolean, now: number): V2Node[] {
  const list: V2Node[] = [];
  for (const [name, child] of children) {
    if (name.charCodeAt(0) !== 0x5f && !isStale(child, now)) list.push(child); // "_x" is hidden
  }
  if (sorted) list.sort((a, b) => compareKeys(a.path, b.path));
  return list;
}

/** The previous state of a node as events carry it (etcd's Repr(false, false)). */
export function renderPrev(n: V2Node, now: number): V2NodeJSON {
  return renderNode(n, { depth: 0, sorted: false, now });
}

export interface EventNodeInit {
  key: string;
  dir: boolean;
  /** Present on a file written by the op; omitted for deletes. */
  value?: string | undefined;
  expireTime: number;
  expireNs: number;
  now: number;
  modifiedIndex: number;
  createdIndex: number;
}

/** The `node` of a write event, in etcd's field order. */
export function eventNode(init: EventNodeInit): V2NodeJSON {
  const out: V2NodeJSON = { key: init.key };
  if (init.value !== undefined) out.value = init.value;
  if (init.dir) out.dir = true;
  if (init.expireTime !== PERMANENT) {
    out.expiration = formatRfc3339Nano(init.expireTime, init.expireNs);
    const ttl = ttlSeconds(init.expireTime, init.now, init.expireNs);
    if (ttl !== 0) out.ttl = ttl;
  }
  out.modifiedIndex = init.modifiedIndex;
  out.createdIndex = init.createdIndex;
  return out;
}
