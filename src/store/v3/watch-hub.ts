// Watchers of the v3 key space, pure: no timers, no I/O. The server calls notify() with
// the changes of each applied revision, in order; a watcher gets ONE message per revision
// holding the events that match its range and filters (none sent when nothing matches).
//
// A watcher created with a start revision at or below the current revision first replays
// the history [start, current] from the store, in messages of up to 1000 revisions under
// the current revision (as etcd's catch-up), then follows live from current + 1. Live
// delivery skips revisions below the watcher's next revision, so the switch neither
// duplicates nor skips (even when notify() for the current revision comes after watch()).
//
// Catch-up is incremental when the sink asks for it (WatchSink.more): one step scans at
// most `catchUpStepRevisions` revisions of history (whatever it matches: a prefix that saw
// no traffic while a million revisions went by costs as much to scan as a busy one), then
// the watcher is held like a paused one — no live events, which would overtake its replay
// (etcd's unsynced group) — and the sink's more() asks the caller to resume() it later, so
// other work runs between steps. The hub has no timers: the caller decides when. A sink
// without more() is caught up in one go.
//
// Slow readers (etcd's victims): sinks must not block. A sink that cannot take a message
// of events (its client's stream holds too much unsent) returns false: the watcher is
// paused where that message began and gets nothing more, live or replayed, until the
// transport calls resume(), which catches it up from the store from that revision, in
// order, in batches that it may refuse again, then follows live. If what it still needs
// was compacted meanwhile, it gets the compacted answer and is canceled, as any watcher
// behind the compaction. So the hub never holds messages for a slow reader, and the
// transport holds at most what it took before refusing. A sink that throws loses its
// watcher.

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
  /**
   * `msg` may be handed to many sinks: read it, never modify it. false: a message with
   * events was not taken, the watcher pauses until resume() (progress and canceled
   * messages cannot be refused).
   */
  send(msg: WatchMessage): boolean | void;
  /**
   * The watcher's catch-up stopped at its step budget (not refused): it gets nothing until
   * resume(), which takes the next step. Called inside watch()/resume()/restore(); the
   * caller should resume it once other work had its turn (e.g. setImmediate). Without it,
   * catch-up runs to the end in one call.
   */
  more?(): void;
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
  /** Its sink refused events at `next`, or its catch-up step ended: nothing is sent until resume(). */
  paused: boolean;
  /** Events went out since the last progress tick: the next notification is elided. */
  sentEvents: boolean;
}

/** etcd's watchBatchMaxRevs: revisions per catch-up message. */
export const REPLAY_BATCH_REVISIONS = 1000;

/**
 * Event bytes (keys and values) past which a catch-up message ends early, so one message,
 * and what a paused watcher's transport holds, stays bounded however large the history
 * (etcd sends its 1000 revisions whatever their size).
 */
export const REPLAY_BATCH_BYTES = 1 << 20;

/**
 * Revisions of history one catch-up step scans at most (sinks with more()). A window of
 * 1000 revisions on a range costs about as much whether or not it matches, so the bound is
 * on revisions read, not events sent. 10 windows take a few milliseconds on an in-memory
 * index (etcd syncs at most 512 watchers every 100 ms, each over a bounded range).
 */
export const CATCH_UP_STEP_REVISIONS = 10 * REPLAY_BATCH_REVISIONS;

export class WatchHub {
  #history: WatchHistory;
  #watchers = new Map<number, Watcher>();
  #group = new WatcherGroup<Watcher>();
  #lastNotified = 0;
  #onSinkError: (id: number, err: unknown) => void;
  readonly #stepRevisions: number;

  constructor(history: WatchHistory, opts: { onSinkError?: (id: number, err: unknown) => void; catchUpStepRevisions?: number } = {}) {
    this.#history = history;
    this.#onSinkError = opts.onSinkError ?? (() => {});
    this.#stepRevisions = Math.max(REPLAY_BATCH_REVISIONS, opts.catchUpStepRevisions ?? CATCH_UP_STEP_REVISIONS);
  }

  get size(): number {
    return this.#watchers.size;
  }

  /**
   * Watchers held behind: catching up from history, or paused by their sink (etcd's
   * unsynced watchers and victims, its slow_watcher_total). Walks the watchers: for scrapes.
   */
  get behind(): number {
    let n = 0;
    for (const w of this.#watchers.values()) if (w.paused) n++;
    return n;
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
    // etcd keeps a negative start as the watcher's minRev: below any compaction (its
    // compactMainRev is -1 until one), and otherwise a live watcher, as 0.
    if (req.startRevision !== 0 && req.startRevision < compactRev && (req.startRevision > 0 || compactRev > 0)) {
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
      paused: false,
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
   * was compacted away (etcd moves all watchers to its unsynced group). A paused watcher
   * catches up when resumed.
   */
  restore(history: WatchHistory): void {
    this.#history = history;
    this.#lastNotified = history.revision;
    for (const w of [...this.#watchers.values()]) {
      if (this.#cancelIfCompacted(w) || w.paused) continue;
      this.#catchUp(w);
    }
  }

  /**
   * A paused watcher's transport can take messages again, or its catch-up step ended
   * (more()): take the next catch-up step from the store (it may pause again, or end its
   * step again, on the way), or cancel it with compact_revision when what it still needs
   * was compacted meanwhile. false when unknown or not paused.
   */
  resume(id: number): boolean {
    const w = this.#watchers.get(id);
    if (w === undefined || !w.paused) return false;
    w.paused = false;
    if (!this.#cancelIfCompacted(w)) this.#catchUp(w);
    return true;
  }

  /** Whether watcher `id` is paused (its sink refused events, or its catch-up step ended). */
  isPaused(id: number): boolean {
    return this.#watchers.get(id)?.paused === true;
  }

  /** etcd's syncWatchers for a watcher behind the compaction: the compacted answer, then gone. */
  #cancelIfCompacted(w: Watcher): boolean {
    const h = this.#history;
    if (w.next > h.revision || w.next >= h.compactRevision) return false;
    this.cancel(w.id);
    this.#deliver({ id: w.id, sink: w.sink }, { revision: h.revision, events: [], canceled: true, compactRevision: h.compactRevision });
    return true;
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
        if (w.paused || w.next > changes.revision || !passes(w, ev)) return;
        // Events are shared between watchers; one copy without prevKv serves all that did not ask.
        const out = w.prevKv || ev.prevKv === undefined ? ev : (bare ??= { type: ev.type, kv: ev.kv });
        const list = perWatcher.get(w);
        if (list === undefined) perWatcher.set(w, [out]);
        else list.push(out);
      });
    }
    for (const [w, events] of perWatcher) {
      if (w.active) this.#deliverEvents(w, { revision: changes.revision, events }, changes.revision);
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
      if (!w.paused && w.next <= revision && passes(w, ev)) targets.push(w);
    });
    if (targets.length === 0) return;
    const full: WatchMessage = { revision, events: [ev] };
    let bare: WatchMessage | undefined;
    for (const w of targets) {
      if (!w.active) continue;
      this.#deliverEvents(w, w.prevKv || ev.prevKv === undefined ? full : (bare ??= { revision, events: [{ type: ev.type, kv: ev.kv }] }), revision);
    }
  }

  /**
   * One tick of etcd's progress notification (--experimental-watch-progress-notify-interval):
   * an empty message at `revision` to every watcher created with progress_notify, except
   * one that received events since the previous tick (etcd's sendLoop elides it: the events
   * told the client as much). A paused watcher — refused, or still catching up — is behind
   * (etcd: unsynced or a victim) and gets none.
   */
  progress(revision: number): void {
    for (const w of [...this.#watchers.values()]) {
      if (!w.progressNotify || !w.active || w.paused) continue;
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
    if (!w.paused) this.#deliver(w, { revision, events: [] });
    return true;
  }

  /**
   * Replays [w.next, current] from the history; afterwards w follows live. Reads a window
   * of revisions at a time, so a watcher far behind never has its whole history in memory;
   * stops where the sink refuses (w stays paused at that batch's first revision), or,
   * for a sink with more(), once this step scanned its budget of revisions (w is held
   * paused at the next revision to scan, and more() asks for another step).
   */
  #catchUp(w: Watcher): void {
    const current = this.#history.revision;
    if (w.next > current) return;
    const budget = w.sink.more === undefined ? Infinity : this.#stepRevisions;
    // As etcd's syncWatchers: history goes out in batches of up to REPLAY_BATCH_REVISIONS
    // revisions (and REPLAY_BATCH_BYTES), each message under the current revision (clients
    // see one message, not one per past revision).
    let batch: V3Event[] = [];
    let batchFrom = w.next;
    let revs = 0;
    let bytes = 0;
    let scanned = 0;
    let from = w.next;
    for (; from <= current && scanned < budget; from += REPLAY_BATCH_REVISIONS) {
      const to = Math.min(current, from + REPLAY_BATCH_REVISIONS - 1);
      scanned += to - from + 1;
      const window = this.#history.eventsInRange({ from, to, key: w.key, rangeEnd: w.rangeEnd, prevKv: w.prevKv });
      for (const rev of window) {
        let matched = false;
        for (const e of rev.events) {
          if (!passes(w, e)) continue;
          batch.push(e);
          bytes += eventBytes(e);
          matched = true;
        }
        if (!matched) continue;
        if (++revs === REPLAY_BATCH_REVISIONS || bytes >= REPLAY_BATCH_BYTES) {
          if (!this.#deliverEvents(w, { revision: current, events: batch }, rev.revision, batchFrom)) return;
          batch = [];
          batchFrom = rev.revision + 1;
          revs = 0;
          bytes = 0;
        }
      }
    }
    // Scanned up to `from - 1` (current when done, else the end of the step's last window).
    const last = Math.min(current, from - 1);
    if (batch.length > 0 && !this.#deliverEvents(w, { revision: current, events: batch }, last, batchFrom)) return;
    w.next = last + 1;
    if (last === current) return;
    w.paused = true;
    try {
      w.sink.more?.();
    } catch (err) {
      if (this.#watchers.get(w.id) === w) this.cancel(w.id);
      this.#onSinkError(w.id, err);
    }
  }

  /**
   * Events up to revision `last`, from `first` (the live message's own revision by
   * default). Taken: w needs what follows `last`. Refused: w pauses at `first`. false
   * when w stopped (refused, or canceled by its sink).
   */
  #deliverEvents(w: Watcher, msg: WatchMessage, last: number, first = last): boolean {
    w.sentEvents = true;
    let taken: boolean | void = true;
    try {
      taken = w.sink.send(msg);
    } catch (err) {
      if (this.#watchers.get(w.id) === w) this.cancel(w.id);
      this.#onSinkError(w.id, err);
      return false;
    }
    if (taken === false) {
      w.next = first;
      w.paused = true;
      return false;
    }
    w.next = last + 1;
    return w.active;
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

/** What an event weighs in a catch-up batch: its keys and values. */
function eventBytes(e: V3Event): number {
  return e.kv.key.length + e.kv.value.length + (e.prevKv === undefined ? 0 : e.prevKv.key.length + e.prevKv.value.length);
}
