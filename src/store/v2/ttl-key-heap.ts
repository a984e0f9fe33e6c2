// Min-heap of nodes with a TTL, ordered by expire time (etcd's ttl_key_heap.go).
//
// Each entry keeps its own slot in `heapIndex`, so remove/update are O(log n) without a
// side map. Ties on (expireTime, expireNs) are broken by path: the order is total, so the expiry
// sequence (and thus the indexes expire events get) is the same on a member that built
// its heap op by op and on one that rebuilt it from a snapshot.

export interface HeapEntry {
  expireTime: number;
  /** Nanoseconds within expireTime's millisecond: orders keys due in the same ms as etcd's heap does. */
  expireNs: number;
  path: string;
  /** Slot in the heap; -1 when not in it. Written only by the heap. */
  heapIndex: number;
}

function less(a: HeapEntry, b: HeapEntry): boolean {
  if (a.expireTime !== b.expireTime) return a.expireTime < b.expireTime;
  if (a.expireNs !== b.expireNs) return a.expireNs < b.expireNs;
  return a.path < b.path;
}

export class TtlKeyHeap<T extends HeapEntry> {
  #a: T[] = [];

  get size(): number {
    return this.#a.length;
  }

  /** The entry that expires first, or undefined when empty. */
  top(): T | undefined {
    return this.#a[0];
  }

  push(x: T): void {
    if (x.heapIndex !== -1) throw new Error(`Cannot push ${x.path}: already in the TTL heap`);
    x.heapIndex = this.#a.length;
    this.#a.push(x);
    this.#up(x.heapIndex);
  }

  pop(): T | undefined {
    const a = this.#a;
    const first = a[0];
    if (first === undefined) return undefined;
    this.#removeAt(0);
    return first;
  }

  /** Removes x if it is in the heap (a no-op otherwise). */
  remove(x: T): void {
    const i = x.heapIndex;
    if (i === -1 || this.#a[i] !== x) return;
    this.#removeAt(i);
  }

  /** Restores the heap order after x.expireTime changed (x must be in the heap). */
  update(x: T): void {
    const i = x.heapIndex;
    if (i === -1 || this.#a[i] !== x) return;
    if (!this.#up(i)) this.#down(i);
  }

  clear(): void {
    for (const x of this.#a) x.heapIndex = -1;
    this.#a = [];
  }

  #removeAt(i: number): void {
    const a = this.#a;
    const gone = a[i] as T;
    const last = a.pop() as T;
    gone.heapIndex = -1;
    if (i < a.length) {
      a[i] = last;
      last.heapIndex = i;
      if (!this.#up(i)) this.#down(i);
    }
  }

  /** Sifts slot i up; true when it moved. */
  #up(i: number): boolean {
    const a = this.#a;
    const x = a[i] as T;
    const start = i;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = a[p] as T;
      if (!less(x, parent)) break;
      a[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    a[i] = x;
    x.heapIndex = i;
    return i !== start;
  }

  #down(i: number): void {
    const a = this.#a;
    const n = a.length;
    const x = a[i] as T;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && less(a[r] as T, a[l] as T)) c = r;
      const child = a[c] as T;
      if (!less(child, x)) break;
      a[i] = child;
      child.heapIndex = i;
      i = c;
    }
    a[i] = x;
    x.heapIndex = i;
  }
}
