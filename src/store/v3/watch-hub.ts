// Watchers of the v3 key space, pure: no timers, no I/O. The server calls notify() with
// the changes of each applied revision, in order; a watcher gets ONE message per revision
// holding the events that match its range and filters (none sent when nothing matches).
//
// A watcher created with a start revision at or below the current revision first replays
// the history [start, current] from the store, synchronously inside watch(), in messages
// of up to 1000 revisions under the current revision (as etcd's catch-up), then follows
// live from current + 1. Nothing can be applied between the two (single thread), and live
// delivery skips revisions below the watcher's next revision, so the switch neither
// duplicates nor skips (even when notify() for the current revision comes after watch()).
//
// Slow readers: sinks must not block; the HTTP layer owns buffering and cancels a watcher
// whose reader falls behind. A sink that throws loses its watcher.

import type { HistoryQuery } from "./mvcc-store.ts";
import type { KeySpan } from "./keys.ts";
import { keyId, keySpan } from "./keys.ts";
import type { RevisionEvents, V3Event } from "./types.ts";
import { EventType } from "./types.ts";
import { WatcherGroup } from "./watcher-group.ts";

/** What the hub reads from the store (MvccStore and V3KeySpace both provide it). */
export interface WatchHistory {
  readonly revision: number;
  readonly compactRevision: number;
  eventsInRange(q: HistoryQuery): RevisionEvents[];
}

export interface WatchCreate {
  /** Chosen by the caller, unique within the hub. */
  id: number;
  key: Buffer;
  /** Same rules as a range: empty = the key, "\0" = from key, else [key, rangeEnd). */
  rangeEnd: Buffer;
  /** 0 = from the next revision. */
  startRevision: number;
  prevKv: boolean;
  filters: { noPut: boolean; noDelete: boolean };
  progressNotify: boolean;
}

/**
 * One message to a watcher: the events of one revision, or an empty progress message, or
 * the final cancellation of a watcher whose start revision was compacted (etcd answers
 * `canceled: true` with `compact_revision`). `revision` is the header revision.
 */
export interface WatchMessage {
  revision: number;
  events: V3Event[];
  canceled?: true;
  compactRevision?: number;
}

export interface WatchSink {
  /** `msg` may be handed to many sinks: read it, never modify it. */
  send(msg: WatchMessage): void;
}

interface Watcher {
  readonly id: number;
  readonly span: KeySpan;
  readonly key: Buffer;
  readonly rangeEnd: Buffer;
  readonly prevKv: boolean;
  readonly noPut: boolean;
  readonly noDelete: boolean;
  readonly progressNotify: boolean;
  readonly sink: WatchSink;
  /** The lowest revision this watcher still needs (etcd's minRev). */
  next: number;
  active: boolean;
  /** Events went out since the last progress tick: the next notification is elided. */
  sentEvents: boolean;
}

/** etcd's watchBatchMaxRevs: revisions per catch-up message. */
export const REPLAY_BATCH_REVISIONS = 1000;

export class WatchHub {
  #history: WatchHistory;
  #watchers = new Map<number, Watcher>();
  #group = new WatcherGroup<Watcher>();
  #lastNotified = 0;
  #onSinkError: (id: number, err: unknown) => void;

  constructor(history: WatchHistory, opts: { onSinkError?: (id: number, err: unknown) => void } = {}) {
    this.#history = history;
    this.#onSinkError = opts.onSinkError ?? (() => {});
  }

  get size(): number {
    return this.#watchers.size;
  }

  has(id: number): boolean {
    return this.#watchers.has(id);
  }

  /**
   * Registers a watcher; replays history first when startRevision <= current revision.
   * A start below the compaction revision (etcd: minRev < compactRev) sends one
   * canceled message with the compaction revision and registers nothing.
   */
  watch(req: WatchCreate, sink: WatchSink): "watching" | "canceled" {
    if (this.#watchers.has(req.id)) throw new Error(`watch hub: duplicate watcher id ${req.id}`);
    const current = this.#history.revision;
    const compactRev = this.#history.compactRevision;
    if (req.startRevision > 0 && req.startRevision < compactRev) {
      this.#deliver({ id: req.id, sink }, { revision: current, events: [], canceled: true, compactRevision: compactRev });
      return "canceled";
    }
    const w: Watcher = {
      id: req.id,
      span: keySpan(req.key, req.rangeEnd),
      key: Buffer.from(req.key),
      rangeEnd: Buffer.from(req.rangeEnd),
      prevKv: req.prevKv,
      noPut: req.filters.noPut,
      noDelete: req.filters.noDelete,
      progressNotify: req.progressNotify,
      sink,
      next: req.startRevision > 0 ? req.startRevision : current + 1,
      active: true,
      sentEvents: false,
    };
    this.#watchers.set(w.id, w);
    this.#group.add(w);
    this.#catchUp(w);
    return w.active ? "watching" : "canceled";
  }

  /**
   * The server replaced the store (a snapshot was installed): every watcher catches up
   * from the new history, or is canceled with compact_revision when what it still needs
   * was compacted away (etcd moves all watchers to its unsynced group).
   */
  restore(history: WatchHistory): void {
    this.#history = history;
    this.#lastNotified = history.revision;
    for (const w of [...this.#watchers.values()]) {
      if (w.next <= history.revision && w.next < history.compactRevision) {
        this.cancel(w.id);
        const msg: WatchMessage = { revision: history.revision, events: [], canceled: true, compactRevision: history.compactRevision };
        this.#deliver({ id: w.id, sink: w.sink }, msg);
        continue;
      }
      this.#catchUp(w);
    }
  }

  /** Removes a watcher; false when unknown (already canceled). */
  cancel(id: number): boolean {
    const w = this.#watchers.get(id);
    if (w === undefined) return false;
    w.active = false;
    this.#watchers.delete(id);
    this.#group.delete(w);
    return true;
  }

  /** Delivers one applied revision's changes. Revisions must be notified in increasing order. */
  notify(changes: RevisionEvents): void {
    if (changes.revision <= this.#lastNotified) {
      throw new Error(`watch hub: revision ${changes.revision} notified after ${this.#lastNotified}`);
    }
    this.#lastNotified = changes.revision;
    if (changes.events.length === 1) {
      this.#notifyOne(changes.revision, changes.events[0]!);
      return;
    }
    const perWatcher = new Map<Watcher, V3Event[]>();
    for (const ev of changes.events) {
      let bare: V3Event | undefined;
      this.#group.forEachMatch(keyId(ev.kv.key), (w) => {
        if (w.next > changes.revision || !passes(w, ev)) return;
        // Events are shared between watchers; one copy without prevKv serves all that did not ask.
        const out = w.prevKv || ev.prevKv === undefined ? ev : (bare ??= { type: ev.type, kv: ev.kv });
        const list = perWatcher.get(w);
        if (list === undefined) perWatcher.set(w, [out]);
        else list.push(out);
      });
    }
    for (const [w, events] of perWatcher) {
      w.next = changes.revision + 1;
      if (w.active) this.#deliverEvents(w, { revision: changes.revision, events });
    }
  }

  /**
   * A revision of one event (most writes): every watcher that gets it gets one of two
   * shared messages (with or without prevKv) instead of one of its own, so a fan-out to
   * many watchers allocates nothing per watcher, and a transport can tell by identity that
   * it already encoded those events (sinks must not modify a message). Watchers are
   * collected before any sink runs: a sink that throws cancels its watcher, which edits
   * the group.
   */
  #notifyOne(revision: number, ev: V3Event): void {
    const targets: Watcher[] = [];
    this.#group.forEachMatch(keyId(ev.kv.key), (w) => {
      if (w.next <= revision && passes(w, ev)) targets.push(w);
    });
    if (targets.length === 0) return;
    const full: WatchMessage = { revision, events: [ev] };
    let bare: WatchMessage | undefined;
    for (const w of targets) {
      w.next = revision + 1;
      if (!w.active) continue;
      this.#deliverEvents(w, w.prevKv || ev.prevKv === undefined ? full : (bare ??= { revision, events: [{ type: ev.type, kv: ev.kv }] }));
    }
  }

  /**
   * One tick of etcd's progress notification (--experimental-watch-progress-notify-interval):
   * an empty message at `revision` to every watcher created with progress_notify, except
   * one that received events since the previous tick (etcd's sendLoop elides it: the events
   * told the client as much). Watchers here have always caught up (the hub replays history
   * inside watch()), so all are "synced" in etcd's sense.
   */
  progress(revision: number): void {
    for (const w of [...this.#watchers.values()]) {
      if (!w.progressNotify || !w.active) continue;
      if (w.sentEvents) {
        w.sentEvents = false;
        continue;
      }
      this.#deliver(w, { revision, events: [] });
    }
  }

  /** One progress message to watcher `id` (a client's progress request); false when unknown. */
  requestProgress(id: number, revision: number): boolean {
    const w = this.#watchers.get(id);
    if (w === undefined) return false;
    this.#deliver(w, { revision, events: [] });
    return true;
  }

  /** Replays [w.next, current] from the history; afterwards w follows live. */
  #catchUp(w: Watcher): void {
    const current = this.#history.revision;
    if (w.next > current) return;
    const history = this.#history.eventsInRange({
      from: w.next,
      to: current,
      key: w.key,
      rangeEnd: w.rangeEnd,
      prevKv: w.prevKv,
    });
    // As etcd's syncWatchers: history goes out in batches of up to REPLAY_BATCH_REVISIONS
    // revisions, each message under the current revision (clients see one message, not
    // one per past revision).
    let batch: V3Event[] = [];
    let revs = 0;
    for (const rev of history) {
      const events = rev.events.filter((e) => passes(w, e));
      if (events.length === 0) continue;
      batch.push(...events);
      if (++revs === REPLAY_BATCH_REVISIONS) {
        this.#deliverEvents(w, { revision: current, events: batch });
        if (!w.active) return;
        batch = [];
        revs = 0;
      }
    }
    if (batch.length > 0) this.#deliverEvents(w, { revision: current, events: batch });
    if (!w.active) return;
    w.next = current + 1;
  }

  #deliverEvents(w: Watcher, msg: WatchMessage): void {
    w.sentEvents = true;
    this.#deliver(w, msg);
  }

  /** Sends to one sink; a sink that throws loses its watcher (if registered). */
  #deliver(to: { id: number; sink: WatchSink }, msg: WatchMessage): void {
    try {
      to.sink.send(msg);
    } catch (err) {
      if (this.#watchers.get(to.id) === to) this.cancel(to.id);
      this.#onSinkError(to.id, err);
    }
  }
}

function passes(w: Watcher, ev: V3Event): boolean {
  return ev.type === EventType.PUT ? !w.noPut : !w.noDelete;
}
