// The request-id waiter between propose and apply: a proposer registers its id, apply
// triggers it with the result. Apply runs on every member; only the proposer has a waiter.

export interface Waiter<T> {
  resolve(value: T): void;
  reject(err: unknown): void;
}

export class WaitRegistry<T> {
  #waiters = new Map<number, Waiter<T>>();

  register(id: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiters.set(id, { resolve, reject });
    });
  }

  trigger(id: number, value: T): void {
    const w = this.#waiters.get(id);
    if (w) {
      this.#waiters.delete(id);
      w.resolve(value);
    }
  }

  has(id: number): boolean {
    return this.#waiters.has(id);
  }

  fail(id: number, err: unknown): void {
    const w = this.#waiters.get(id);
    if (w) {
      this.#waiters.delete(id);
      w.reject(err);
    }
  }

  failAll(err: unknown): void {
    const all = [...this.#waiters.values()];
    this.#waiters.clear();
    for (const w of all) w.reject(err);
  }

  get size(): number {
    return this.#waiters.size;
  }
}

/** Request ids unique per member across restarts: boot time in ms, times 1024, plus a counter. */
export function requestIdGenerator(nowMs: number): () => number {
  let next = nowMs * 1024;
  return () => next++;
}
