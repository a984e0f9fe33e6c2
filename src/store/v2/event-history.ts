// The last `capacity` (1000) events across all keys, for watches that start in the past
// (etcd's event_history.go + event_queue.go).
//
// Invariants: events are appended in strictly increasing index order; startIndex is the
// index of the oldest retained event and lastIndex of the newest (both 0 while empty).
// Refresh events are kept (they use an index) but never returned by a scan: a TTL refresh
// does not wake watchers.

import { V2Error, V2ErrorCode } from "../../api/v2-errors.ts";
import { Action, eventIndex, type V2Event } from "./event.ts";
import { isStrictlyBelow } from "./path.ts";

export const HISTORY_CAPACITY = 1000;

export interface ScanQuery {
  key: string;
  recursive: boolean;
  /** First index of interest (>= 1). */
  since: number;
}

export class EventHistory {
  readonly capacity: number;
  #events: (V2Event | undefined)[];
  #refresh: boolean[];
  /** Slot of the oldest event. */
  #front = 0;
  #size = 0;
  /**
   * True once an event was evicted. Only then is an old `since` "cleared": indexes below the
   * first event that were consumed by internal writes (not recorded) lost no event.
   * Restored histories that are full count as evicted (conservative).
   */
  #evicted = false;

  constructor(capacity = HISTORY_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`Invalid history capacity: ${capacity}`);
    this.capacity = capacity;
    this.#events = new Array<V2Event | undefined>(capacity);
    this.#refresh = new Array<boolean>(capacity).fill(false);
  }

  get size(): number {
    return this.#size;
  }

  /** Index of the oldest retained event (0 while empty). */
  get startIndex(): number {
    return this.#size === 0 ? 0 : eventIndex(this.#at(0));
  }

  /** Index of the newest event (0 while empty). */
  get lastIndex(): number {
    return this.#size === 0 ? 0 : eventIndex(this.#at(this.#size - 1));
  }

  add(e: V2Event, opts: { refresh: boolean }): void {
    const slot = (this.#front + this.#size) % this.capacity;
    this.#events[slot] = e;
    this.#refresh[slot] = opts.refresh;
    if (this.#size === this.capacity) {
      this.#front = (this.#front + 1) % this.capacity;
      this.#evicted = true;
    } else this.#size++;
  }

  /**
   * The first event with index >= since that concerns the query, or null when none is
   * retained yet (the watcher must wait). Throws V2Error 401 (index 0: the caller sets
   * the store index) when `since` is older than the history.
   */
  scan(q: ScanQuery): V2Event | null {
    for (let i = this.#firstAtOrAfter(q); i < this.#size; i++) {
      if (this.#matches(i, q)) return this.#at(i);
    }
    return null;
  }

  /** All retained events with index >= since that concern the query, oldest first. */
  scanAll(q: ScanQuery): V2Event[] {
    const out: V2Event[] = [];
    for (let i = this.#firstAtOrAfter(q); i < this.#size; i++) {
      if (this.#matches(i, q)) out.push(this.#at(i));
    }
    return out;
  }

  /** Retained events, oldest first, with their refresh flag (for snapshots). */
  entries(): { event: V2Event; refresh: boolean }[] {
    const out: { event: V2Event; refresh: boolean }[] = [];
    for (let i = 0; i < this.#size; i++) {
      const slot = (this.#front + i) % this.capacity;
      out.push({ event: this.#events[slot] as V2Event, refresh: this.#refresh[slot] === true });
    }
    return out;
  }

  clear(): void {
    this.#events.fill(undefined);
    this.#refresh.fill(false);
    this.#front = 0;
    this.#size = 0;
  }

  #at(i: number): V2Event {
    return this.#events[(this.#front + i) % this.capacity] as V2Event;
  }

  /** Logical position of the first event with index >= since; throws 401 if cleared. */
  #firstAtOrAfter(q: ScanQuery): number {
    const start = this.startIndex;
    if (q.since < start && (this.#evicted || this.#size === this.capacity)) {
      throw new V2Error(
        V2ErrorCode.EventIndexCleared,
        `the requested history has been cleared [${start}/${q.since}]`,
        0,
      );
    }
    // Indexes are increasing (and normally contiguous): binary search stays correct
    // even if some index produced no event.
    let lo = 0;
    let hi = this.#size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (eventIndex(this.#at(mid)) < q.since) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #matches(i: number, q: ScanQuery): boolean {
    const slot = (this.#front + i) % this.capacity;
    if (this.#refresh[slot] === true) return false;
    const e = this.#events[slot] as V2Event;
    return eventConcerns(e, q.key, q.recursive);
  }
}

/**
 * Whether a watcher on `key` wants event `e` from the history: the key itself; with
 * recursive, any descendant, hidden ones too (etcd's history scan does not hide them, only
 * live delivery does); and the delete/expire of a directory whose path the key starts
 * with. That last match is etcd's string prefix, not whole segments: a watch on "/foobar"
 * replaying history is woken by the delete of the directory "/foo", as on etcd (live
 * delivery walks segments and is not).
 */
export function eventConcerns(e: V2Event, key: string, recursive: boolean): boolean {
  const k = e.node.key ?? "/";
  if (k === key) return true;
  if (recursive && isStrictlyBelow(key, k)) return true;
  if ((e.action === Action.Delete || e.action === Action.Expire) && e.prevNode?.dir === true) {
    return key.startsWith(k);
  }
  return false;
}
