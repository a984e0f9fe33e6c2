// Which watchers an event's key concerns, without visiting every watcher (etcd's
// watcherGroup). Three indexes:
//   - single-key watchers: a map by key;
//   - prefix watchers (range_end = the prefix's end, what `--prefix` sends): a map by
//     prefix, probed with the event key's prefixes of the lengths in use;
//   - any other range (from-key, arbitrary intervals): a list, scanned.
// Each watcher is in exactly one index, so it is found at most once per event.

import type { KeyId, KeySpan } from "./keys.ts";
import { prefixEnd, spanContains } from "./keys.ts";

export interface Indexed {
  readonly span: KeySpan;
}

export class WatcherGroup<W extends Indexed> {
  #single = new Map<KeyId, Set<W>>();
  #prefix = new Map<KeyId, Set<W>>();
  /** How many prefix watchers use each prefix length; probed in ascending order. */
  #prefixLengths = new Map<number, number>();
  #sortedLengths: number[] = [];
  #ranges = new Set<W>();

  add(w: W): void {
    const s = w.span;
    if (s.kind === "single") return addTo(this.#single, s.key, w);
    if (isPrefix(s)) {
      addTo(this.#prefix, s.key, w);
      const n = this.#prefixLengths.get(s.key.length) ?? 0;
      this.#prefixLengths.set(s.key.length, n + 1);
      if (n === 0) this.#sortedLengths = [...this.#prefixLengths.keys()].sort((a, b) => a - b);
      return;
    }
    this.#ranges.add(w);
  }

  delete(w: W): void {
    const s = w.span;
    if (s.kind === "single") return void removeFrom(this.#single, s.key, w);
    if (isPrefix(s)) {
      if (!removeFrom(this.#prefix, s.key, w)) return;
      const n = this.#prefixLengths.get(s.key.length)! - 1;
      if (n > 0) {
        this.#prefixLengths.set(s.key.length, n);
      } else {
        this.#prefixLengths.delete(s.key.length);
        this.#sortedLengths = [...this.#prefixLengths.keys()].sort((a, b) => a - b);
      }
      return;
    }
    this.#ranges.delete(w);
  }

  /** Calls `f` once for every watcher whose span contains `key`. */
  forEachMatch(key: KeyId, f: (w: W) => void): void {
    this.#single.get(key)?.forEach(f);
    for (const len of this.#sortedLengths) {
      if (len > key.length) break;
      this.#prefix.get(key.slice(0, len))?.forEach(f);
    }
    for (const w of this.#ranges) if (spanContains(w.span, key)) f(w);
  }
}

/** An interval that is exactly "every key starting with span.key". */
function isPrefix(s: KeySpan): boolean {
  return s.kind === "interval" && s.key.length > 0 && prefixEnd(s.key) === s.end;
}

function addTo<W>(m: Map<KeyId, Set<W>>, k: KeyId, w: W): void {
  let set = m.get(k);
  if (set === undefined) m.set(k, (set = new Set()));
  set.add(w);
}

function removeFrom<W>(m: Map<KeyId, Set<W>>, k: KeyId, w: W): boolean {
  const set = m.get(k);
  if (set === undefined || !set.delete(w)) return false;
  if (set.size === 0) m.delete(k);
  return true;
}
