// bcrypt's worker threads: etcd checks concurrent logins in parallel goroutines, and a
// cost-10 hash is ~60 ms of CPU, so logins of different users took turns on the event loop
// here. Up to `size` workers (os.availableParallelism()) are started as jobs need them;
// an idle worker is unref'd, so it never holds a process open, ref'd while it works, and
// stopped after a minute idle (each holds ~12 MB of RSS: a member measured 72 MB before
// any hash, 87 with one worker, 98 with two).
//
// A worker runs bcrypt-core.ts's function from its source text (eval), so there is no
// worker file to build or find: the bundle (chunks, serve.cjs), tsc's output and tsx all
// start it alike. A worker that cannot start or dies fails its job over to the caller
// (bcrypt.ts then computes on the event loop) and no worker is started again.
import { Worker } from "node:worker_threads";
import { bcryptCore } from "./bcrypt-core.ts";

/** One job sent to a worker. */
interface BcryptWorkerJob {
  id: number;
  password: Uint8Array;
  cost: number;
  salt: Uint8Array;
}

/** A worker's answer to a job. */
type BcryptWorkerReply = { id: number; part: string } | { id: number; error: string };

/**
 * The worker's program. `__name` is there for a transpiler that keeps function names
 * (tsx's esbuild does, calling a helper of the module it was in).
 */
export const BCRYPT_WORKER_SOURCE = `"use strict";
var __name = (target) => target;
const core = (${bcryptCore.toString()})();
const { parentPort } = require("node:worker_threads");
parentPort.on("message", (job) => {
  let reply;
  try {
    reply = { id: job.id, part: core.hashPartSync(job.password, job.cost, job.salt) };
  } catch (err) {
    reply = { id: job.id, error: err instanceof Error ? err.message : String(err) };
  }
  parentPort.postMessage(reply);
});
`;

/** A worker could not start or died: the caller computes the job itself. */
export class BcryptWorkerUnavailableError extends Error {
  override name = "BcryptWorkerUnavailableError";
}

interface Pending {
  resolve: (part: string) => void;
  reject: (err: unknown) => void;
}

interface PoolWorker {
  worker: Worker;
  pending: Pending | undefined;
  /** Stops it once it has been idle for the pool's idleMs (unref'd). */
  idleTimer: NodeJS.Timeout | undefined;
}

/** How long a worker may sit idle before it stops (logins come in bursts, one per etcdctl command). */
export const BCRYPT_WORKER_IDLE_MS = 60_000;

function startWorker(): Worker {
  // No flags of the parent's: --input-type=module would make the source an ES module
  // (without require), and a loader such as tsx has nothing to do here.
  return new Worker(BCRYPT_WORKER_SOURCE, { eval: true, execArgv: [] });
}

export class BcryptPool {
  readonly size: number;
  #idle: PoolWorker[] = [];
  #all = new Set<PoolWorker>();
  #nextId = 1;
  #broken = false;
  #start: () => Worker;
  #idleMs: number;
  #onBroken: ((reason: string) => void) | undefined;

  /**
   * @param start makes one worker (tests pass a failing one)
   * @param idleMs a worker idle this long stops, giving back its ~12 MB (RSS, measured);
   *   the next job starts one again (~20-30 ms of CPU)
   * @param onBroken called once, with the reason, when a worker fails and the pool gives up
   *   on threads (not when it is closed)
   */
  constructor(size: number, start: () => Worker = startWorker, idleMs = BCRYPT_WORKER_IDLE_MS, onBroken?: (reason: string) => void) {
    this.size = Math.max(1, Math.trunc(size));
    this.#start = start;
    this.#idleMs = idleMs;
    this.#onBroken = onBroken;
  }

  /** True once a worker failed: the callers compute on the event loop from then on. */
  get broken(): boolean {
    return this.#broken;
  }

  get started(): number {
    return this.#all.size;
  }

  /** One hash part on a worker thread. The caller runs at most `size` at once (bcrypt-queue.ts). */
  hashPart(password: Uint8Array, cost: number, salt: Uint8Array): Promise<string> {
    if (this.#broken) return Promise.reject(new BcryptWorkerUnavailableError("bcrypt workers failed"));
    let w = this.#idle.pop();
    if (w === undefined) {
      try {
        w = this.#spawn();
      } catch (err) {
        const why = `bcrypt worker did not start: ${err instanceof Error ? err.message : String(err)}`;
        this.#fail(why);
        return Promise.reject(new BcryptWorkerUnavailableError(why));
      }
    }
    const pw = w;
    clearTimeout(pw.idleTimer);
    pw.idleTimer = undefined;
    return new Promise<string>((resolve, reject) => {
      pw.pending = { resolve, reject };
      pw.worker.ref();
      const job: BcryptWorkerJob = { id: this.#nextId++, password: Uint8Array.from(password), cost, salt: Uint8Array.from(salt) };
      pw.worker.postMessage(job);
    });
  }

  /** Stops every worker (tests; a member never needs to: idle workers are unref'd). */
  async close(): Promise<void> {
    const all = [...this.#all];
    this.#all.clear();
    this.#idle = [];
    this.#broken = true;
    for (const w of all) {
      clearTimeout(w.idleTimer);
      w.pending?.reject(new BcryptWorkerUnavailableError("bcrypt workers closed"));
    }
    await Promise.all(all.map((w) => w.worker.terminate()));
  }

  #spawn(): PoolWorker {
    const w: PoolWorker = { worker: this.#start(), pending: undefined, idleTimer: undefined };
    this.#all.add(w);
    w.worker.on("message", (reply: BcryptWorkerReply) => {
      const p = w.pending;
      w.pending = undefined;
      w.worker.unref();
      if (this.#all.has(w)) {
        this.#idle.push(w);
        w.idleTimer = setTimeout(() => this.#retire(w), this.#idleMs).unref();
      }
      if (p === undefined) return;
      if ("part" in reply) p.resolve(reply.part);
      else p.reject(new Error(reply.error));
    });
    const lost = (why: string): void => {
      if (!this.#all.has(w)) return;
      this.#all.delete(w);
      this.#idle = this.#idle.filter((x) => x !== w);
      this.#fail(why);
      const p = w.pending;
      w.pending = undefined;
      p?.reject(new BcryptWorkerUnavailableError(why));
    };
    w.worker.on("error", (err) => lost(`bcrypt worker failed: ${err.message}`));
    w.worker.on("exit", (code) => lost(`bcrypt worker exited (${code})`));
    return w;
  }

  /** An idle worker stops: not a failure, the next job starts another. */
  #retire(w: PoolWorker): void {
    if (w.pending !== undefined || !this.#all.has(w)) return;
    this.#all.delete(w);
    this.#idle = this.#idle.filter((x) => x !== w);
    void w.worker.terminate();
  }

  #fail(why: string): void {
    if (!this.#broken) {
      this.#broken = true;
      this.#onBroken?.(why);
    }
    for (const w of this.#all) if (w.pending === undefined) void w.worker.terminate();
  }
}
