// The v2 hierarchical key-value store (etcd's v2store/store.go), pure: no clock, no timers,
// no I/O. Every op takes `now` (ms since the epoch, from the log entry), so applying the
// same entries gives the same state, indexes and save() bytes on every member.
//
// Invariants:
//   - #index is the index of the last op that changed the store; each successful write
//     (set, create, update, compareAndSwap, delete, compareAndDelete, each expired node)
//     uses exactly one index and records exactly one event in the history;
//   - a node has a TTL exactly when it is in #ttl (see node.ts);
//   - the root and the namespace dirs are read-only for set/update/delete/CAS.
// Stats follow etcd's counting, quirks included, except the two deliberate differences
// listed in REFERENCE.md (getsFail counts failed gets only; a failed compareAndDelete
// counts compareAndDeleteFail). The quirks kept are marked "etcd counts".

import { V2Error, V2ErrorCode } from "../../api/v2-errors.ts";
import type { V2NodeJSON, V2StoreStatsJSON } from "../../api/v2-types.ts";
import { Action, type V2Event, type V2Watcher, type WatchSink } from "./event.ts";
import { eventNode, isStale, MIN_EXPIRE_TIME, PERMANENT, renderNode, renderPrev, V2Node } from "./node.ts";
import { cleanPath, inOrderName } from "./path.ts";
import { decodeImage, encodeImage, IMAGE_VERSION, StoreImageWriter, type ImageVersion, type StoreImage } from "./snapshot.ts";
import { type V2Counter, V2Stats } from "./stats.ts";
import { TtlKeyHeap } from "./ttl-key-heap.ts";
import { WatcherHub } from "./watcher-hub.ts";

export type { V2Event, V2Watcher, WatchSink } from "./event.ts";

/** The key of an internal write's history entry: etcd's members namespace, never watched. */
const INTERNAL_KEY = "/0";

export interface ExpireOption {
  /** ms since the epoch; undefined = permanent. */
  expireTime?: number | undefined;
  /** Nanoseconds within expireTime's millisecond (0..999999), kept for the `expiration` etcd prints. */
  expireNs?: number | undefined;
  /** Keep the value, move the TTL, record the event without waking watchers. */
  refresh?: boolean | undefined;
}

export interface V2StoreOptions {
  /** Top-level dirs created at index 0 and read-only like the root (etcd: "/0", "/1"). */
  namespaces?: readonly string[];
  /** Events kept for watches from the past (default 1000). */
  historyCapacity?: number;
  /** Called when a watch sink throws (default: rethrown in a microtask). */
  onSinkError?: (err: unknown) => void;
}

/** A failed lookup: what the error would be, without paying for an Error object. */
interface Miss {
  code: typeof V2ErrorCode.KeyNotFound | typeof V2ErrorCode.NotDir;
  cause: string;
}

export class V2Store {
  #root: V2Node;
  #index = 0;
  /** An image being written a slice at a time: told about every node before it changes. */
  #writer: StoreImageWriter | undefined;
  #namespaces: readonly string[];
  #readOnly: Set<string>;
  #ttl = new TtlKeyHeap<V2Node>();
  #hub: WatcherHub;
  #stats = new V2Stats();

  constructor(opts: V2StoreOptions = {}) {
    const ns = opts.namespaces ?? [];
    for (const p of ns) {
      if (cleanPath(p) !== p || p === "/" || p.lastIndexOf("/") !== 0) throw new RangeError(`Invalid namespace: ${p}`);
    }
    this.#namespaces = [...ns];
    this.#readOnly = new Set(["/", ...ns]);
    this.#root = newRoot(ns);
    const hubOpts: { capacity?: number; onSinkError?: (err: unknown) => void } = {};
    if (opts.historyCapacity !== undefined) hubOpts.capacity = opts.historyCapacity;
    if (opts.onSinkError !== undefined) hubOpts.onSinkError = opts.onSinkError;
    this.#hub = new WatcherHub(hubOpts);
  }

  /** The current store index. */
  get index(): number {
    return this.#index;
  }

  get(path: string, opts: { recursive?: boolean | undefined; sorted?: boolean | undefined }, now: number): V2Event {
    this.#stats.read(opts.recursive === true);
    const found = this.#lookup(cleanPath(path));
    if (!(found instanceof V2Node)) this.#fail("getsFail", this.#error(found));
    const stale = this.#staleOnPath(found, now);
    if (stale !== undefined) this.#fail("getsFail", this.#error({ code: V2ErrorCode.KeyNotFound, cause: stale }));
    this.#stats.inc("getsSuccess");
    const node = renderNode(found, { depth: opts.recursive === true ? Infinity : 1, sorted: opts.sorted === true, now });
    return { action: Action.Get, node, etcdIndex: this.#index };
  }

  set(path: string, opts: { dir?: boolean | undefined; value?: string | undefined } & ExpireOption, now: number): V2Event {
    const p = cleanPath(path);
    const found = this.#lookup(p);
    let value = opts.value ?? "";
    if (!(found instanceof V2Node)) {
      if (found.code !== V2ErrorCode.KeyNotFound || opts.refresh === true) this.#fail("setsFail", this.#error(found));
    } else if (opts.refresh === true) {
      value = found.value;
    }
    let e: V2Event;
    try {
      e = this.#internalCreate(p, { dir: opts.dir === true, value, unique: false, replace: true, expireTime: opts.expireTime, expireNs: opts.expireNs, now }, Action.Set);
    } catch (err) {
      this.#fail("setsFail", err);
    }
    this.#stats.inc("setsSuccess");
    this.#publish(e, { refresh: opts.refresh === true });
    return e;
  }

  create(
    path: string,
    opts: { dir?: boolean | undefined; value?: string | undefined; unique?: boolean | undefined } & ExpireOption,
    now: number,
  ): V2Event {
    let e: V2Event;
    try {
      e = this.#internalCreate(
        cleanPath(path),
        { dir: opts.dir === true, value: opts.value ?? "", unique: opts.unique === true, replace: false, expireTime: opts.expireTime, expireNs: opts.expireNs, now },
        Action.Create,
      );
    } catch (err) {
      this.#fail("createFail", err);
    }
    this.#stats.inc("createSuccess");
    this.#hub.notify(e);
    return e;
  }

  /** Value and/or TTL of an existing node; on a dir only the TTL (its modifiedIndex stays). */
  update(path: string, opts: { value?: string | undefined } & ExpireOption, now: number): V2Event {
    const p = cleanPath(path);
    if (this.#readOnly.has(p)) this.#fail("updateSuccess", this.#rootReadOnly()); // etcd counts a success
    const n = this.#lookup(p);
    if (!(n instanceof V2Node)) this.#fail("updateFail", this.#error(n));
    const isDir = n.isDir();
    const given = opts.value ?? "";
    if (isDir && given !== "") this.#fail("updateSuccess", new V2Error(V2ErrorCode.NotFile, p, this.#index)); // etcd counts a success
    const value = opts.refresh === true ? n.value : given;
    const expireTime = normalizeExpire(opts.expireTime); // validated before anything changes
    const next = this.#index + 1;
    const prevNode = renderPrev(n, now);
    if (!isDir) {
      this.#touch(n);
      n.value = value;
      n.modifiedIndex = next;
    }
    this.#updateTtl(n, expireTime, expireNsOf(expireTime, opts.expireNs));
    const node = eventNode({
      key: p,
      dir: isDir,
      value: isDir ? undefined : value,
      expireTime: n.expireTime,
      expireNs: n.expireNs,
      now,
      modifiedIndex: next,
      createdIndex: n.createdIndex,
    });
    this.#index = next;
    const e: V2Event = { action: Action.Update, node, prevNode, etcdIndex: next };
    this.#stats.inc("updateSuccess");
    this.#publish(e, { refresh: opts.refresh === true });
    return e;
  }

  compareAndSwap(
    path: string,
    opts: { prevValue?: string | undefined; prevIndex?: number | undefined; value?: string | undefined } & ExpireOption,
    now: number,
  ): V2Event {
    const p = cleanPath(path);
    if (this.#readOnly.has(p)) this.#fail("compareAndSwapSuccess", this.#rootReadOnly()); // etcd counts a success
    const n = this.#lookup(p);
    if (!(n instanceof V2Node)) this.#fail("compareAndSwapFail", this.#error(n));
    if (n.isDir()) this.#fail("compareAndSwapFail", new V2Error(V2ErrorCode.NotFile, p, this.#index));
    const cause = compareFailure(n, opts.prevValue, opts.prevIndex);
    if (cause !== "") this.#fail("compareAndSwapFail", new V2Error(V2ErrorCode.TestFailed, cause, this.#index));
    const value = opts.refresh === true ? n.value : (opts.value ?? "");
    const expireTime = normalizeExpire(opts.expireTime);
    const next = this.#index + 1;
    const prevNode = renderPrev(n, now);
    this.#touch(n);
    n.value = value;
    n.modifiedIndex = next;
    this.#updateTtl(n, expireTime, expireNsOf(expireTime, opts.expireNs));
    const node = eventNode({ key: p, dir: false, value, expireTime: n.expireTime, expireNs: n.expireNs, now, modifiedIndex: next, createdIndex: n.createdIndex });
    this.#index = next;
    const e: V2Event = { action: Action.CompareAndSwap, node, prevNode, etcdIndex: next };
    this.#stats.inc("compareAndSwapSuccess");
    this.#publish(e, { refresh: opts.refresh === true });
    return e;
  }

  /** Deletes a file, or a dir with dir (empty) / recursive (any). */
  delete(path: string, opts: { dir?: boolean | undefined; recursive?: boolean | undefined }, now: number): V2Event {
    const p = cleanPath(path);
    if (this.#readOnly.has(p)) this.#fail("deleteSuccess", this.#rootReadOnly()); // etcd counts a success
    const recursive = opts.recursive === true;
    const dir = opts.dir === true || recursive;
    const n = this.#lookup(p);
    if (!(n instanceof V2Node)) this.#fail("deleteFail", this.#error(n));
    if (n.children !== null) {
      if (!dir) this.#fail("deleteFail", new V2Error(V2ErrorCode.NotFile, n.path, this.#index));
      if (n.children.size > 0 && !recursive) this.#fail("deleteFail", new V2Error(V2ErrorCode.DirNotEmpty, n.path, this.#index));
    }
    const e = this.#removeWithEvent(n, Action.Delete, now);
    this.#stats.inc("deleteSuccess");
    return e;
  }

  compareAndDelete(path: string, opts: { prevValue?: string | undefined; prevIndex?: number | undefined }, now: number): V2Event {
    const p = cleanPath(path);
    const n = this.#lookup(p);
    if (!(n instanceof V2Node)) this.#fail("compareAndDeleteFail", this.#error(n));
    // The root's cause is empty: etcd's "/1" is trimmed to "" by its HTTP layer.
    if (n.isDir()) this.#fail("compareAndDeleteFail", new V2Error(V2ErrorCode.NotFile, p === "/" ? "" : p, this.#index));
    const cause = compareFailure(n, opts.prevValue, opts.prevIndex);
    if (cause !== "") this.#fail("compareAndDeleteFail", new V2Error(V2ErrorCode.TestFailed, cause, this.#index));
    const e = this.#removeWithEvent(n, Action.CompareAndDelete, now);
    this.#stats.inc("compareAndDeleteSuccess");
    return e;
  }

  /**
   * Watches a key (recursive: its subtree). sinceIndex 0/undefined: events after now;
   * otherwise the first event >= sinceIndex, from history at once (delivered in a
   * microtask) or live later. Throws V2Error 401 when sinceIndex is older than history.
   */
  watch(
    path: string,
    opts: { recursive?: boolean | undefined; stream?: boolean | undefined; sinceIndex?: number | undefined },
    sink: WatchSink,
  ): V2Watcher {
    const since = opts.sinceIndex !== undefined && opts.sinceIndex > 0 ? opts.sinceIndex : this.#index + 1;
    return this.#hub.watch(
      cleanPath(path),
      { recursive: opts.recursive === true, stream: opts.stream === true, since, storeIndex: this.#index },
      sink,
    );
  }

  /**
   * Consumes one index for an internal write that is not part of the key space (a member
   * joining, a member publishing its attributes, a v2 auth change). etcd keeps those records
   * in the same store outside the keys' namespace, so v2 clients see the gaps; kvctl keeps
   * the same numbering. Each also takes its slot in the event history, as etcd's event does
   * (no watch of a key ever matches it): the 1000 events kept, and so the index below which
   * a watch is refused with 401, are etcd's. Deterministic: called only from apply.
   */
  consumeIndex(): number {
    this.#index += 1;
    const node = { key: INTERNAL_KEY, modifiedIndex: this.#index, createdIndex: this.#index };
    this.#hub.addRefresh({ action: Action.Set, node, etcdIndex: this.#index });
    return this.#index;
  }

  /**
   * Expires every node due at or before cutoff (ms), in (expireTime, expireNs, path) order;
   * one index each. A node due later within cutoff's millisecond waits for the next SYNC, as
   * it would on etcd's nanosecond clock.
   */
  deleteExpiredKeys(cutoff: number): void {
    if (Number.isNaN(cutoff)) throw new RangeError("Cannot expire keys: cutoff is NaN");
    for (;;) {
      const n = this.#ttl.top();
      if (n === undefined || n.expireTime > cutoff || (n.expireTime === cutoff && n.expireNs > 0)) return;
      this.#ttl.pop();
      // now = the expiration itself, to the nanosecond, renders the prevNode with its
      // expiration but no ttl (as etcd shows it); the ms alone left the ns as a ttl of 1.
      // A wrapped expiration (before 2000) is centuries past at etcd's now: its ttl shows
      // that distance, Go's saturated -9223372036 (the ms + ns sum lost the ns there).
      this.#removeWithEvent(n, Action.Expire, n.expireTime < MIN_EXPIRE_TIME ? cutoff : n.expireTime + n.expireNs / 1e6);
      this.#stats.inc("expireCount");
    }
  }

  hasTtlKeys(): boolean {
    return this.#ttl.size > 0;
  }

  /** The earliest expire time (ms since the epoch), or undefined: lets the leader skip idle SYNCs. */
  nextExpireTime(): number | undefined {
    return this.#ttl.top()?.expireTime;
  }

  statsJSON(): V2StoreStatsJSON {
    return this.#stats.toJSON(this.#hub.count);
  }

  /** Counts a get the server answered itself (e.g. a HEAD or quorum GET not run here). */
  countGet(ok: boolean, recursive = false): void {
    this.#stats.read(recursive);
    this.#stats.inc(ok ? "getsSuccess" : "getsFail");
  }

  /** Gets by kind, failed ones included (etcd_debugging_store_reads_total). */
  reads(): { readonly get: number; readonly getRecursive: number } {
    return this.#stats.reads;
  }

  /**
   * Image of the tree, index, TTLs and event history (not stats, not watchers) as one
   * string: version 1 unless asked (snapshot.ts), so it cannot hold a store larger than
   * V8's longest string. Large stores: imagePieces() or beginImage().
   */
  save(version: ImageVersion = IMAGE_VERSION): string {
    return encodeImage(this.#imageState(), version);
  }

  /**
   * The image of this moment in pieces of whole records (about `nodes` nodes each), made
   * as they are asked for. The store must not change until the last one is taken; it
   * does not abandon an image in progress (beginImage).
   */
  *imagePieces(version: ImageVersion, nodes = 4096): Generator<string> {
    const w = new StoreImageWriter(this.#imageState(), version);
    for (let done = false; !done; ) {
      done = w.step(nodes);
      yield w.take();
    }
  }

  /**
   * The image of this moment, to be written a slice at a time (writer.step) while the
   * store keeps changing. One at a time: a new one replaces the one in progress, and
   * recovery() abandons it (its step() then never completes: check `abandoned`).
   */
  beginImage(version: ImageVersion = IMAGE_VERSION): StoreImageWriter {
    this.#writer = new StoreImageWriter(this.#imageState(), version);
    return this.#writer;
  }

  /** True when w is no longer the store's image in progress (replaced, or the store recovered). */
  abandoned(w: StoreImageWriter): boolean {
    return this.#writer !== w && !w.finished;
  }

  #imageState(): StoreImage {
    return { index: this.#index, namespaces: this.#namespaces, root: this.#root, history: this.#hub.history.entries() };
  }

  /** Called before n's value, indexes or TTL change. */
  #touch(n: V2Node): void {
    this.#imaging()?.capture(n);
  }

  /** Called before dir's child `name` (n) is deleted (adding a child needs no call). */
  #leaving(dir: V2Node, name: string, n: V2Node): void {
    this.#imaging()?.childLeaving(dir, name, n);
  }

  /** The image writer still in progress, if any (a finished one is let go here). */
  #imaging(): StoreImageWriter | undefined {
    const w = this.#writer;
    if (w?.finished === true) this.#writer = undefined;
    return this.#writer;
  }

  /**
   * A new store from an image (stats start at zero, no watchers): its text or bytes in
   * either version, or one decodeImageLines() read from a larger snapshot (then owned by
   * the store).
   */
  static recover(image: string | Uint8Array | StoreImage, opts: Omit<V2StoreOptions, "namespaces"> = {}): V2Store {
    const img = typeof image === "string" || image instanceof Uint8Array ? decodeImage(image) : image;
    const s = new V2Store({ ...opts, namespaces: img.namespaces });
    s.#load(img);
    return s;
  }

  /** Replaces this store's state by an image; watchers and stats are kept (etcd's Recovery). */
  recovery(image: string | Uint8Array | StoreImage): void {
    const img = typeof image === "string" || image instanceof Uint8Array ? decodeImage(image) : image;
    this.#writer = undefined;
    this.#namespaces = [...img.namespaces];
    this.#readOnly = new Set(["/", ...img.namespaces]);
    this.#load(img);
  }

  #load(img: StoreImage): void {
    this.#root = img.root;
    this.#index = img.index;
    this.#ttl.clear();
    const stack: V2Node[] = [img.root];
    for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
      if (n.expireTime !== PERMANENT) this.#ttl.push(n);
      if (n.children !== null) for (const c of n.children.values()) stack.push(c);
    }
    this.#hub.history.clear();
    for (const { event, refresh } of img.history) this.#hub.history.add(event, { refresh });
  }

  /** The path of the top node from the root down to `n` that reads treat as gone (isStale), if any. */
  #staleOnPath(n: V2Node, now: number): string | undefined {
    let top: string | undefined;
    for (let cur: V2Node | null = n; cur !== null; cur = cur.parent) if (isStale(cur, now)) top = cur.path;
    return top;
  }

  /** Walks a clean path; a node, or the first missing component / the file in the way. */
  #lookup(p: string): V2Node | Miss {
    let cur = this.#root;
    if (p === "/") return cur;
    let from = 1;
    for (;;) {
      const slash = p.indexOf("/", from);
      const children = cur.children;
      if (children === null) return { code: V2ErrorCode.NotDir, cause: cur.path };
      const child = children.get(slash === -1 ? p.slice(from) : p.slice(from, slash));
      if (child === undefined) return { code: V2ErrorCode.KeyNotFound, cause: slash === -1 ? p : p.slice(0, slash) };
      if (slash === -1) return child;
      cur = child;
      from = slash + 1;
    }
  }

  #internalCreate(
    path: string,
    o: { dir: boolean; value: string; unique: boolean; replace: boolean; expireTime: number | undefined; expireNs: number | undefined; now: number },
    action: typeof Action.Set | typeof Action.Create,
  ): V2Event {
    const curr = this.#index;
    const next = curr + 1;
    const p = o.unique ? (path === "/" ? "/" : path + "/") + inOrderName(next) : path;
    if (this.#readOnly.has(p)) throw this.#rootReadOnly();
    let expireTime = normalizeExpire(o.expireTime);
    if (expireTime < MIN_EXPIRE_TIME) expireTime = PERMANENT; // etcd: times before 2000 mean permanent
    const expireNs = expireNsOf(expireTime, o.expireNs);
    const slash = p.lastIndexOf("/");
    const parent = this.#walkCreate(slash === 0 ? "/" : p.slice(0, slash), next);
    const name = p.slice(slash + 1);
    const children = parent.children as Map<string, V2Node>;
    const existing = children.get(name);
    let prevNode: V2NodeJSON | undefined;
    if (existing !== undefined) {
      if (!o.replace) throw new V2Error(V2ErrorCode.NodeExist, p, curr);
      if (existing.isDir()) throw new V2Error(V2ErrorCode.NotFile, p, curr);
      prevNode = renderPrev(existing, o.now);
      this.#leaving(parent, name, existing);
      children.delete(name); // re-added below: a replaced key moves to the end of the listing
      this.#ttl.remove(existing);
    }
    const n = new V2Node({ path: p, index: next, parent, expireTime, expireNs, value: o.dir ? undefined : o.value });
    children.set(name, n);
    if (expireTime !== PERMANENT) this.#ttl.push(n);
    this.#index = next;
    const node = eventNode({
      key: p,
      dir: o.dir,
      value: o.dir ? undefined : o.value,
      expireTime,
      expireNs,
      now: o.now,
      modifiedIndex: next,
      createdIndex: next,
    });
    return prevNode === undefined ? { action, node, etcdIndex: next } : { action, node, prevNode, etcdIndex: next };
  }

  /** The dir at clean path p, creating missing dirs (permanent, index `index`). */
  #walkCreate(p: string, index: number): V2Node {
    let cur = this.#root;
    if (p === "/") return cur;
    let from = 1;
    for (;;) {
      const slash = p.indexOf("/", from);
      const name = slash === -1 ? p.slice(from) : p.slice(from, slash);
      const children = cur.children as Map<string, V2Node>;
      let child = children.get(name);
      if (child === undefined) {
        child = new V2Node({ path: slash === -1 ? p : p.slice(0, slash), index, parent: cur, expireTime: PERMANENT });
        children.set(name, child);
      } else if (child.children === null) {
        this.#stats.inc("setsFail"); // etcd counts a create through a file as a failed set too
        throw new V2Error(V2ErrorCode.NotDir, child.path, this.#index);
      }
      if (slash === -1) return child;
      cur = child;
      from = slash + 1;
    }
  }

  /** Removes n (and its subtree) with one new index and publishes the event. */
  #removeWithEvent(n: V2Node, action: typeof Action.Delete | typeof Action.CompareAndDelete | typeof Action.Expire, now: number): V2Event {
    const next = this.#index + 1;
    const prevNode = renderPrev(n, now);
    const node: V2NodeJSON = { key: n.path };
    if (n.children !== null) node.dir = true;
    node.modifiedIndex = next;
    node.createdIndex = n.createdIndex;
    const removed: string[] | undefined = this.#hub.hasWatchers() ? [] : undefined;
    const name = n.path.slice(n.path.lastIndexOf("/") + 1);
    if (n.parent !== null) this.#leaving(n.parent, name, n);
    (n.parent?.children as Map<string, V2Node>).delete(name);
    this.#dropSubtree(n, removed);
    this.#index = next;
    const e: V2Event = { action, node, prevNode, etcdIndex: next };
    this.#hub.notify(e, removed);
    return e;
  }

  /** Takes a detached subtree out of the TTL heap; collects paths children-first. */
  #dropSubtree(n: V2Node, removed: string[] | undefined): void {
    if (n.children !== null) for (const c of n.children.values()) this.#dropSubtree(c, removed);
    this.#ttl.remove(n);
    removed?.push(n.path);
  }

  /** Moves n's TTL to t + ns (a normalized expire time; PERMANENT removes it). */
  #updateTtl(n: V2Node, t: number, ns: number): void {
    if (t === n.expireTime && ns === n.expireNs) return;
    this.#touch(n);
    const had = n.expireTime !== PERMANENT;
    n.expireTime = t;
    n.expireNs = ns;
    if (t === PERMANENT) this.#ttl.remove(n);
    else if (had) this.#ttl.update(n);
    else this.#ttl.push(n);
  }

  #publish(e: V2Event, o: { refresh: boolean }): void {
    if (o.refresh) this.#hub.addRefresh(e);
    else this.#hub.notify(e);
  }

  #error(m: Miss): V2Error {
    return new V2Error(m.code, m.cause, this.#index);
  }

  #rootReadOnly(): V2Error {
    return new V2Error(V2ErrorCode.RootReadOnly, "/", this.#index);
  }

  #fail(counter: V2Counter, err: unknown): never {
    this.#stats.inc(counter);
    throw err;
  }
}

function newRoot(namespaces: readonly string[]): V2Node {
  const root = new V2Node({ path: "/", index: 0, parent: null, expireTime: PERMANENT });
  for (const p of namespaces) {
    (root.children as Map<string, V2Node>).set(p.slice(1), new V2Node({ path: p, index: 0, parent: root, expireTime: PERMANENT }));
  }
  return root;
}

/** undefined / Infinity: permanent. NaN is a caller bug. */
function normalizeExpire(t: number | undefined): number {
  if (t === undefined || t === Infinity) return PERMANENT;
  if (Number.isNaN(t)) throw new RangeError("Invalid expireTime: NaN");
  return t;
}

/** The nanoseconds a node keeps: none without a TTL; a caller bug outside 0..999999. */
function expireNsOf(expireTime: number, ns: number | undefined): number {
  if (expireTime === PERMANENT || ns === undefined) return 0;
  if (!Number.isInteger(ns) || ns < 0 || ns >= 1_000_000) throw new RangeError(`Invalid expireNs: ${ns}`);
  return ns;
}

/** etcd's compare: empty prevValue / zero prevIndex always pass. "" when both pass. */
function compareFailure(n: V2Node, prevValue: string | undefined, prevIndex: number | undefined): string {
  const valueOk = prevValue === undefined || prevValue === "" || n.value === prevValue;
  const indexOk = prevIndex === undefined || prevIndex === 0 || n.modifiedIndex === prevIndex;
  if (valueOk && indexOk) return "";
  const v = `[${prevValue ?? ""} != ${n.value}]`;
  const i = `[${prevIndex ?? 0} != ${n.modifiedIndex}]`;
  if (!valueOk && !indexOk) return `${v} ${i}`;
  return valueOk ? i : v;
}
