// bcrypt as golang.org/x/crypto/bcrypt makes and checks it (`$2a$<cost>$` + 22 salt
// characters + 31 hash characters, bcrypt's own base64): etcd 3.4 stores v3 passwords so,
// and kvctl does too, so that an etcd restored from kvctl's snapshot file accepts them (and
// kvctl accepts the hashes an etcd snapshot brings). The computation is bcrypt-core.ts.
//
// A hash at etcd's default cost 10 is ~17 million Blowfish rounds: ~60 ms of CPU. It runs
// on worker threads (bcrypt-pool.ts, one per core, as etcd's goroutines run in parallel),
// at most one job per worker at a time, behind a bounded queue (bcrypt-queue.ts: a full one
// answers etcd's "too many requests", a waiting job whose caller gave up is dropped). If a
// worker cannot start, jobs run on the event loop instead, one at a time, in slices of
// SLICE_ROUNDS key-schedule rounds (~1 ms) with a yield between: a second job interleaved
// would double every slice's delay to the loop instead of finishing sooner.
import { availableParallelism } from "node:os";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { setImmediate } from "node:timers/promises";
import type { Worker } from "node:worker_threads";
import { sharedBcryptCore } from "./bcrypt-core.ts";
import { BcryptPool } from "./bcrypt-pool.ts";
import { BcryptQueue } from "./bcrypt-queue.ts";

const HASH_FORMAT = /^\$2[aby]?\$(\d\d)\$([./A-Za-z0-9]{22})([./A-Za-z0-9]{31})$/;
/** bcrypt's MinCost. */
export const BCRYPT_HASH_MIN_COST = 4;
/**
 * The highest cost hashed or checked. Go accepts up to 31, but cost 20 is already over a
 * minute per hash (and per login, in etcd as here); higher ones hash at 20, and a stored
 * hash above it is refused, so that a hostile one cannot occupy a thread for days.
 */
export const BCRYPT_HASH_MAX_COST = 20;
const SALT_BYTES = 16;
/**
 * Jobs waiting for a thread, at most: 64 cost-10 jobs are ~2 s of work on two cores, about
 * etcdctl's dial timeout; the callers past their deadline leave the queue before then.
 */
export const BCRYPT_MAX_QUEUED = 64;

/** Where bcrypt reports (the server's logger, injected: auth imports nothing of the server). */
export type BcryptWarn = (msg: string, fields: Record<string, unknown>) => void;

export interface BcryptOptions {
  /** The caller gave up (a gRPC deadline): a job not yet started is dropped, rejecting with the signal's reason. */
  signal?: AbortSignal | undefined;
}

let pool: BcryptPool | undefined;
let queue: BcryptQueue | undefined;
let poolSize = availableParallelism();
let maxQueued = BCRYPT_MAX_QUEUED;
let startWorker: (() => Worker) | undefined;
let warn: BcryptWarn | undefined;

/**
 * Sets where bcrypt reports its one warning: the worker threads failed (with why) and every
 * hash runs on the event loop from then on, one at a time (a member's logins slow down and
 * delay its other work, so an operator should be able to see why). Process-wide, as the pool is.
 * Returns its release: it unsets `w` unless another was set since (a stopping member lets go
 * of its logger; another member started in the same process keeps its own).
 */
export function setBcryptWarn(w: BcryptWarn | undefined): () => void {
  warn = w;
  return () => {
    if (warn === w) warn = undefined;
  };
}

function poolBroken(reason: string): void {
  warn?.("bcrypt worker threads failed; hashing passwords on the event loop from now on", { component: "auth", reason });
}

function theQueue(): BcryptQueue {
  queue ??= new BcryptQueue({ slots: poolSize > 0 ? poolSize : 1, maxQueued });
  return queue;
}

/**
 * Sets the worker count (0: always on the event loop) and the queue bound, replacing the
 * pool and queue (tests; the server keeps the defaults). Returns when the old workers stopped.
 */
export async function configureBcrypt(opts: { workers?: number; maxQueued?: number; start?: () => Worker }): Promise<void> {
  const old = pool;
  pool = undefined;
  queue = undefined;
  poolSize = Math.max(0, Math.trunc(opts.workers ?? availableParallelism()));
  maxQueued = opts.maxQueued ?? BCRYPT_MAX_QUEUED;
  startWorker = opts.start;
  await old?.close();
}

/** How the hashing runs now: worker threads started, whether they failed over to the loop, the queue. */
export function bcryptStatus(): { workers: number; onLoop: boolean; running: number; queued: number } {
  return { workers: pool?.started ?? 0, onLoop: poolSize === 0 || pool?.broken === true, running: queue?.running ?? 0, queued: queue?.queued ?? 0 };
}

/** One hash part through the queue: on a worker, or on the event loop when there is none. */
function queued(password: Uint8Array, cost: number, salt: Uint8Array, opts: BcryptOptions): Promise<string> {
  const q = theQueue();
  return q.run(async () => {
    if (poolSize > 0) {
      const p = (pool ??= new BcryptPool(poolSize, startWorker, undefined, poolBroken));
      if (!p.broken) {
        try {
          return await p.hashPart(password, cost, salt);
        } catch (err) {
          // A worker that failed: the answer is the same from the loop, only slower.
          if (!p.broken) throw err;
        }
      }
      // No worker: one job at a time on the loop (the header says why).
      q.setSlots(1);
    }
    return await bcryptHashPart(password, cost, salt);
  }, opts.signal);
}

/** A well-formed cost-10 hash no password is known to match: an unknown v3 user costs what etcd's default-cost hash does. */
export const BCRYPT_DECOY_HASH = `$2a$10$${".".repeat(22)}${".".repeat(31)}`;

/** True when `encoded` has the form of a bcrypt hash ($2a$, $2b$, $2y$). */
export function isBcryptHash(encoded: string): boolean {
  return HASH_FORMAT.test(encoded);
}

/** The 31-character hash part bcrypt gives for `password` with `cost` and the 16-byte salt, on the event loop in slices (not queued). */
export async function bcryptHashPart(password: Uint8Array, cost: number, salt: Uint8Array): Promise<string> {
  const steps = sharedBcryptCore().hashSteps(password, cost, salt);
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
    await setImmediate();
  }
}

/**
 * A new hash of `password` at `cost` (clamped to 4..BCRYPT_HASH_MAX_COST) with a random
 * salt, in Go's form: `$2a$10$` + 22 + 31 characters, what etcd's CompareHashAndPassword reads.
 */
export async function bcryptHash(password: Uint8Array, cost: number, opts: BcryptOptions = {}): Promise<string> {
  const c = Math.min(Math.max(Math.trunc(cost), BCRYPT_HASH_MIN_COST), BCRYPT_HASH_MAX_COST);
  const salt = randomBytes(SALT_BYTES);
  return `$2a$${String(c).padStart(2, "0")}$${sharedBcryptCore().encode64(salt)}${await queued(password, c, salt, opts)}`;
}

/** Checks a password against a bcrypt hash in constant time; false for a malformed one. */
export async function verifyBcrypt(password: Uint8Array, encoded: string, opts: BcryptOptions = {}): Promise<boolean> {
  const m = HASH_FORMAT.exec(encoded);
  if (!m) return false;
  const cost = Number(m[1]);
  if (cost < BCRYPT_HASH_MIN_COST || cost > BCRYPT_HASH_MAX_COST) return false;
  const salt = sharedBcryptCore().decode64(m[2]!).subarray(0, SALT_BYTES);
  if (salt.length !== SALT_BYTES) return false;
  const got = Buffer.from(await queued(password, cost, salt, opts));
  const want = Buffer.from(m[3]!);
  return got.length === want.length && timingSafeEqual(got, want);
}
