// Watchers keyed by the exact path they watch (etcd's watcher_hub.go + watcher.go).
//
// An event at "/a/b/c" looks up only "/", "/a", "/a/b" and "/a/b/c" (plus, for a delete
// or expire of a directory, the paths of the removed nodes): the cost of an event is its
// depth, not the number of watchers. Rules (etcd's):
//   - a watcher on the event's own key always gets it;
//   - a recursive watcher on an ancestor gets it unless the key is hidden below the
//     watched path ("/a/_h" or "/a/_h/x" for a watcher on "/a");
//   - a watcher on a node removed by a delete/expire of an ancestor dir gets that event;
//   - only events with index >= the watcher's sinceIndex count;
//   - a non-stream watcher is removed after its first event, a stream watcher stays.
// Live events are delivered synchronously, inside the mutating call; events found in the
// history are delivered in a microtask, after watch() has returned. Sinks must not
// mutate the store.

import { V2Error } from "../../api/v2-errors.ts";
import { eventIndex, withEtcdIndex, type V2Event, type V2Watcher, type WatchSink } from "./event.ts";
import { EventHistory, HISTORY_CAPACITY } from "./event-history.ts";
import { isHiddenBelow } from "./path.ts";

export interface HubWatchOptions {
  recursive: boolean;
  stream: boolean;
  /** First index of interest, >= 1 (the store maps 0 to its index + 1). */
  since: number;
  /** Store index now: the watcher's startIndex and the index of replayed events. */
  storeIndex: number;
}

export interface WatcherHubOptions {
  capacity?: number;
  /** Called when a sink throws (the watcher is removed first). Default: rethrow in a microtask. */
  onSinkError?: (err: unknown) => void;
}

class HubWatcher implements V2Watcher {
  readonly startIndex: number;
  readonly key: string;
  readonly recursive: boolean;
  readonly stream: boolean;
  sinceIndex: number;
  #sink: WatchSink;
  #hub: WatcherHub;
  #closed = false;
  registered = false;
  /** Replayed events waiting for their microtask; live events queue behind them. */
  #pending: V2Event[] | null = null;

  constructor(key: string, opts: HubWatchOptions, sink: WatchSink, hub: WatcherHub) {
    this.key = key;
    this.recursive = opts.recursive;
    this.stream = opts.stream;
    this.sinceIndex = opts.since;
    this.startIndex = opts.storeIndex;
    this.#sink = sink;
    this.#hub = hub;
  }

  remove(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pending = null;
    if (this.registered) this.#hub.detach(this);
  }

  /** Queues history events for delivery after watch() returns. */
  replay(events: V2Event[]): void {
    this.#pending = events;
    queueMicrotask(() => this.#flush());
  }

  /** Offers a live event; true when the watcher took it (etcd's watcher.notify). */
  offer(e: V2Event, original: boolean, deleted: boolean): boolean {
    if (this.#closed) return false;
    if (!(this.recursive || original || deleted) || eventIndex(e) < this.sinceIndex) return false;
    if (this.#pending !== null) {
      this.#pending.push(e);
      return true;
    }
    if (!this.stream) this.remove(); // before the sink runs: a re-entrant watch sees it gone
    this.#emit(e);
    return true;
  }

  #flush(): void {
    const queue = this.#pending;
    this.#pending = null;
    if (queue === null) return; // removed meanwhile
    for (const e of queue) {
      if (this.#closed) return;
      if (!this.stream) this.remove();
      this.#emit(e);
    }
  }

  #emit(e: V2Event): void {
    try {
      this.#sink(e);
    } catch (err) {
      this.remove();
      this.#hub.reportSinkError(err);
    }
  }
}

export class WatcherHub {
  readonly history: EventHistory;
  #byPath = new Map<string, Set<HubWatcher>>();
  #count = 0;
  #onSinkError: (err: unknown) => void;

  constructor(opts: WatcherHubOptions = {}) {
    this.history = new EventHistory(opts.capacity ?? HISTORY_CAPACITY);
    this.#onSinkError =
      opts.onSinkError ??
      ((err) =>
        queueMicrotask(() => {
          throw err;
        }));
  }

  /** Registered watchers (the `watchers` gauge of the store stats). */
  get count(): number {
    return this.#count;
  }

  /** True when any watcher is registered (lets the store skip collecting removed paths). */
  hasWatchers(): boolean {
    return this.#byPath.size > 0;
  }

  /**
   * Starts a watch on clean path `key`. A match in the history is delivered in a
   * microtask: a non-stream watcher is then done and never registered (as in etcd); a
   * stream watcher gets every matching retained event, then stays for live ones (etcd
   * sends only the first and then nothing: a dead stream). Throws V2Error 401 with
   * index = storeIndex when `since` is older than the history.
   */
  watch(key: string, opts: HubWatchOptions, sink: WatchSink): V2Watcher {
    const q = { key, recursive: opts.recursive, since: opts.since };
    let found: V2Event[];
    try {
      if (opts.stream) found = this.history.scanAll(q);
      else {
        const e = this.history.scan(q);
        found = e === null ? [] : [e];
      }
    } catch (err) {
      if (err instanceof V2Error) err.index = opts.storeIndex;
      throw err;
    }
    const w = new HubWatcher(key, opts, sink, this);
    if (found.length > 0) {
      w.replay(found.map((e) => withEtcdIndex(e, opts.storeIndex)));
      if (!opts.stream) return w;
      w.sinceIndex = opts.storeIndex + 1; // everything up to now is in the replay
    }
    this.#register(w);
    return w;
  }

  /** Records an event without waking anyone (a TTL refresh). */
  addRefresh(e: V2Event): void {
    this.history.add(e, { refresh: true });
  }

  /**
   * Records `e` and delivers it. `removed` lists the paths of the nodes a delete/expire
   * removed (descendants first, as etcd's Remove visits them); their watchers get the
   * event whatever their flags. Ancestors are then visited from "/" down to the key.
   */
  notify(e: V2Event, removed?: readonly string[]): void {
    this.history.add(e, { refresh: false });
    if (this.#byPath.size === 0) return;
    const key = e.node.key ?? "/";
    if (removed !== undefined) {
      // The key itself is visited below as the original path: skipping it here avoids
      // etcd's double delivery of a delete to a stream watcher on the deleted key.
      for (const p of removed) if (p !== key) this.#notifyAt(e, p, { original: false, deleted: true });
    }
    this.#notifyAt(e, "/", { original: key === "/", deleted: false });
    let from = 1;
    while (from < key.length) {
      const slash = key.indexOf("/", from);
      const p = slash === -1 ? key : key.slice(0, slash);
      this.#notifyAt(e, p, { original: slash === -1, deleted: false });
      if (slash === -1) break;
      from = slash + 1;
    }
  }

  /** Internal: unregisters a watcher (called by HubWatcher.remove). */
  detach(w: HubWatcher): void {
    if (!w.registered) return;
    w.registered = false;
    const set = this.#byPath.get(w.key);
    if (set === undefined || !set.delete(w)) return;
    this.#count--;
    if (set.size === 0) this.#byPath.delete(w.key);
  }

  /** Internal: a sink threw. */
  reportSinkError(err: unknown): void {
    this.#onSinkError(err);
  }

  #register(w: HubWatcher): void {
    let set = this.#byPath.get(w.key);
    if (set === undefined) {
      set = new Set();
      this.#byPath.set(w.key, set);
    }
    set.add(w);
    w.registered = true;
    this.#count++;
  }

  #notifyAt(e: V2Event, path: string, how: { original: boolean; deleted: boolean }): void {
    const set = this.#byPath.get(path);
    if (set === undefined) return;
    if (!how.original && !how.deleted && isHiddenBelow(path, e.node.key ?? "/")) return;
    // Set iteration tolerates removal; watchers added by a sink start after this event.
    for (const w of set) w.offer(e, how.original, how.deleted);
  }
}
