// The queue in front of bcrypt's threads: at most `slots` jobs run at once (one per worker
// thread, or one on the event loop), at most `maxQueued` wait, and a waiting job whose
// caller gave up (its AbortSignal fired: a gRPC deadline passed) leaves the queue without
// costing any CPU. Pure scheduling: the jobs bring their own work.
//
// etcd 3.4 has no such bound: every Authenticate runs bcrypt in its own goroutine, so a
// flood of wrong passwords is unbounded CPU there. A full queue here answers etcd's
// overload error, ErrTooManyRequests (rpctypes.ErrGRPCRequestTooManyRequests) ("etcdserver: too many requests",
// ResourceExhausted; the gateway's 429), which etcd sends when its applies fall too far
// behind its commits (etcdserver/v3_server.go, maxGapBetweenApplyAndCommitIndex).
import { GrpcCode, V3Error } from "../api/v3-errors.ts";

/** The queue was full: etcd's ErrTooManyRequests (rpctypes.ErrGRPCRequestTooManyRequests). */
export class BcryptBusyError extends V3Error {
  override name = "BcryptBusyError";
  constructor() {
    super(GrpcCode.ResourceExhausted, "etcdserver: too many requests");
  }
}

/** The caller gave up before the job started (its signal carried no Error reason). */
export class BcryptCancelledError extends V3Error {
  override name = "BcryptCancelledError";
  constructor() {
    super(GrpcCode.Cancelled, "context canceled");
  }
}

interface Waiting {
  start: () => void;
  reject: (err: unknown) => void;
}

export class BcryptQueue {
  #slots: number;
  #maxQueued: number;
  #running = 0;
  #waiting: Waiting[] = [];

  constructor(opts: { slots: number; maxQueued: number }) {
    this.#slots = Math.max(1, Math.trunc(opts.slots));
    this.#maxQueued = Math.max(0, Math.trunc(opts.maxQueued));
  }

  /** Jobs running now. */
  get running(): number {
    return this.#running;
  }

  /** Jobs waiting for a slot. */
  get queued(): number {
    return this.#waiting.length;
  }

  get slots(): number {
    return this.#slots;
  }

  /** Fewer or more jobs at once (the pool fell back to the event loop); running ones finish. */
  setSlots(n: number): void {
    this.#slots = Math.max(1, Math.trunc(n));
    this.#next();
  }

  /**
   * Runs `job` when a slot is free. Rejects with BcryptBusyError at once when `maxQueued`
   * jobs already wait, and with the signal's reason (or BcryptCancelledError) when the
   * signal fires before the job started; a started job runs to its end.
   */
  run<T>(job: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted === true) return Promise.reject(cancelReason(signal));
    if (this.#running < this.#slots && this.#waiting.length === 0) return this.#start(job);
    if (this.#waiting.length >= this.#maxQueued) return Promise.reject(new BcryptBusyError());
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.#waiting.indexOf(entry);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(cancelReason(signal!));
      };
      const entry: Waiting = {
        start: () => {
          signal?.removeEventListener("abort", onAbort);
          this.#start(job).then(resolve, reject);
        },
        reject,
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(entry);
    });
  }

  #start<T>(job: () => Promise<T>): Promise<T> {
    this.#running++;
    let p: Promise<T>;
    try {
      p = job();
    } catch (err) {
      p = Promise.reject(err);
    }
    return p.finally(() => {
      this.#running--;
      this.#next();
    });
  }

  #next(): void {
    while (this.#running < this.#slots) {
      const w = this.#waiting.shift();
      if (w === undefined) return;
      w.start();
    }
  }
}

function cancelReason(signal: AbortSignal): unknown {
  return signal.reason instanceof Error ? signal.reason : new BcryptCancelledError();
}
