// Runs watchers' catch-up steps (WatchHub: a sink's more(), then resume()) between other
// work: each step scans a bounded stretch of history, and the queue runs steps in arrival
// order for about `turnMs` per turn of the event loop, then yields (setImmediate), so
// requests, writes and I/O interleave with the catch-up of watchers far behind. A step that
// asks for another is queued at the back: watchers catching up share the turns.
export type CatchUpStep = () => void;

export class CatchUpQueue {
  readonly #turnMs: number;
  readonly #now: () => number;
  #queue: Array<CatchUpStep | undefined> = [];
  #head = 0;
  #scheduled = false;

  constructor(opts: { turnMs?: number; now?: () => number } = {}) {
    this.#turnMs = opts.turnMs ?? 5;
    this.#now = opts.now ?? (() => performance.now());
  }

  /** Steps waiting to run. */
  get size(): number {
    return this.#queue.length - this.#head;
  }

  /** Runs `step` in a later turn of the event loop; it must not throw. */
  push(step: CatchUpStep): void {
    this.#queue.push(step);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#run);
  }

  readonly #run = (): void => {
    const start = this.#now();
    // Steps queued by the steps of this turn wait for the next one (each watcher one step a turn at most).
    const end = this.#queue.length;
    while (this.#head < end) {
      const step = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined;
      step();
      if (this.#now() - start >= this.#turnMs) break;
    }
    if (this.#head < this.#queue.length) {
      setImmediate(this.#run);
      return;
    }
    this.#queue = [];
    this.#head = 0;
    this.#scheduled = false;
  };
}

/** One for the process: the time budget is the event loop's, whichever stream the watcher is on. */
export const catchUpQueue = new CatchUpQueue();
