// Flow control window of one follower (etcd's tracker/inflights.go): the last index of
// each MsgApp sent but not yet acknowledged, oldest first, at most `size` of them.

import { invariant } from "../errors.ts";

/**
 * A ring buffer of in-flight MsgApp last indexes.
 * Invariant: count <= size; the indexes, read from start, are increasing.
 */
export class Inflights {
  #start = 0;
  #count = 0;
  readonly size: number;
  // Grown on demand up to `size` (thousands of idle followers should not cost memory).
  #buffer: number[] = [];

  constructor(size: number) {
    this.size = size;
  }

  clone(): Inflights {
    const c = new Inflights(this.size);
    c.#start = this.#start;
    c.#count = this.#count;
    c.#buffer = this.#buffer.slice();
    return c;
  }

  /** Records a MsgApp ending at `inflight`. Callers check full() first. */
  add(inflight: number): void {
    invariant(!this.full(), () => "cannot add into a Full inflights");
    let next = this.#start + this.#count;
    if (next >= this.size) next -= this.size;
    if (next >= this.#buffer.length) this.#grow();
    this.#buffer[next] = inflight;
    this.#count++;
  }

  #grow(): void {
    let newSize = this.#buffer.length * 2;
    if (newSize === 0) newSize = 1;
    else if (newSize > this.size) newSize = this.size;
    while (this.#buffer.length < newSize) this.#buffer.push(0);
  }

  /** Frees every in-flight message whose last index is <= to (they were acknowledged). */
  freeLE(to: number): void {
    if (this.#count === 0 || to < this.#buffer[this.#start]!) return;
    let idx = this.#start;
    let i = 0;
    for (; i < this.#count; i++) {
      if (to < this.#buffer[idx]!) break;
      idx++;
      if (idx >= this.size) idx -= this.size;
    }
    this.#count -= i;
    this.#start = idx;
    // Empty: restart at 0 so the buffer does not grow needlessly.
    if (this.#count === 0) this.#start = 0;
  }

  /** Frees the oldest in-flight message (a heartbeat response proves liveness). */
  freeFirstOne(): void {
    if (this.#count === 0) return;
    this.freeLE(this.#buffer[this.#start]!);
  }

  full(): boolean {
    return this.#count === this.size;
  }

  count(): number {
    return this.#count;
  }

  reset(): void {
    this.#count = 0;
    this.#start = 0;
  }
}
