// Password hashing and verification for v2 and v3 auth users.
//
// - v3 passwords are hashed with bcrypt at --bcrypt-cost (hashV3Password, bcrypt.ts), as
//   etcd 3.4 does: kvctl's snapshot file is etcd's bbolt database, and an etcd restored from
//   it checks its users' passwords with Go's bcrypt.
// - v2 passwords, and v3 ones from data dirs and snapshots made before, are scrypt:
//   `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt b64>$<key b64>` (PHC-style), a random 16-byte
//   salt and a 32-byte derived key. The form carries its parameters, so a hash made at any
//   cost (scryptCostForBcrypt was the v3 one) verifies under any other. v2 auth reaches no
//   etcd (kvctl's own snapshot bucket and data dirs carry it), so it keeps the KDF that
//   runs off the event loop.
// - verifyPassword takes either form. A hash is computed at the edge before proposing, so
//   the log, the snapshots and every member only ever see the hash.
// - Comparison is constant-time (crypto.timingSafeEqual) on the derived keys.
// - scrypt runs on libuv's thread pool (async, off the event loop). That pool also serves
//   the WAL's file operations, so at most KDF_SLOTS derivations run at a time: a flood of
//   wrong passwords queues here instead of starving fsync.
// - PasswordVerifier pays the KDF once per distinct credential: it remembers, in a bounded
//   LRU, that a credential token (the Authorization value) verified as a user against a
//   given stored hash. The memory holds a SHA-256 of the token under a per-process random
//   secret, never the password. An entry counts only while the user's stored hash is still
//   the one it matched, so a password change or a user deleted and re-created invalidates
//   it on every member without any message. A hit costs one SHA-256 and a map lookup.
//
// node:crypto is the only import: it is neither a clock nor I/O (randomness for salts and
// the cache secret is the one impurity, and it never reaches the replicated state).
import { hash, randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import { BCRYPT_HASH_MIN_COST, bcryptHash, isBcryptHash, verifyBcrypt } from "./bcrypt.ts";

export interface ScryptCost {
  /** log2 of scrypt's N (CPU/memory cost). */
  log2N: number;
  r: number;
  p: number;
}

/** N = 2^14, r = 8, p = 1: 16 MiB and tens of milliseconds per derivation (bcrypt cost 10's place). */
export const DEFAULT_SCRYPT_COST: Readonly<ScryptCost> = Object.freeze({ log2N: 14, r: 8, p: 1 });

/** bcrypt's MinCost and MaxCost (golang.org/x/crypto/bcrypt), the range etcd accepts; MinCost is bcrypt.ts's. */
export const BCRYPT_MIN_COST = BCRYPT_HASH_MIN_COST;
export const BCRYPT_MAX_COST = 31;
/** Largest N used (64 MiB per derivation at r = 8; two run at a time): beyond it, p grows. */
const MAX_LOG2N = 16;
/** Largest p used: costs above 22 hash as 22 (minutes per derivation already). */
const MAX_LOG2P = 10;

/**
 * The scrypt parameters standing for a bcrypt cost (etcd's --bcrypt-cost). Like bcrypt's,
 * the work doubles with each step: N = 2^(cost + 4), so cost 10, etcd's default, is kvctl's
 * default N = 2^14. Memory grows with N but not with p, so above N = 2^16 (cost 12) the
 * doubling goes on in p instead, up to p = 2^10 (cost 22).
 */
export function scryptCostForBcrypt(cost: number): ScryptCost {
  if (!Number.isInteger(cost) || cost < BCRYPT_MIN_COST || cost > BCRYPT_MAX_COST) {
    throw new RangeError(`bcrypt cost ${cost} is outside ${BCRYPT_MIN_COST}..${BCRYPT_MAX_COST}`);
  }
  const log2Work = cost + 4;
  const log2N = Math.min(log2Work, MAX_LOG2N);
  return { log2N, r: DEFAULT_SCRYPT_COST.r, p: 2 ** Math.min(log2Work - log2N, MAX_LOG2P) };
}

const SALT_BYTES = 16;
const KEY_BYTES = 32;
const KDF_SLOTS = 2;

/** Limits concurrent derivations (see the header). */
class Slots {
  #free: number;
  #waiting: Array<() => void> = [];
  constructor(n: number) {
    this.#free = n;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

const kdfSlots = new Slots(KDF_SLOTS);

function derive(password: Uint8Array, salt: Uint8Array, cost: ScryptCost): Promise<Buffer> {
  const N = 2 ** cost.log2N;
  // OpenSSL needs 128·r·(N + p) bytes and a little more; Node refuses anything above maxmem.
  const maxmem = 128 * cost.r * (2 * N + cost.p) + (1 << 20);
  return kdfSlots.run(
    () =>
      new Promise<Buffer>((resolve, reject) => {
        scrypt(password, salt, KEY_BYTES, { N, r: cost.r, p: cost.p, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
      }),
  );
}

function toBytes(password: string | Uint8Array): Uint8Array {
  return typeof password === "string" ? Buffer.from(password, "utf8") : password;
}

interface ParsedHash {
  cost: ScryptCost;
  salt: Buffer;
  key: Buffer;
}

const HASH_FORMAT = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,4})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

/** Parses a stored hash; undefined when it is not one (or its cost is outside sane bounds). */
function parseHash(encoded: string): ParsedHash | undefined {
  const m = HASH_FORMAT.exec(encoded);
  if (!m) return undefined;
  const cost = { log2N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  // Bounds keep a corrupt or hostile image from asking for gigabytes of memory; they admit
  // every cost scryptCostForBcrypt gives (N from 2^8, p up to 2^10) and older hashes (N up to 2^20).
  if (cost.log2N < 8 || cost.log2N > 20 || cost.r < 1 || cost.r > 16 || cost.p < 1 || cost.p > 2 ** MAX_LOG2P) return undefined;
  const salt = Buffer.from(m[4]!, "base64");
  const key = Buffer.from(m[5]!, "base64");
  if (salt.length < 8 || key.length !== KEY_BYTES) return undefined;
  return { cost, salt, key };
}

/** Hashes a password with a fresh random salt. */
export async function hashPassword(password: string | Uint8Array, opts: { cost?: ScryptCost } = {}): Promise<string> {
  const cost = opts.cost ?? DEFAULT_SCRYPT_COST;
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(toBytes(password), salt, cost);
  return `$scrypt$ln=${cost.log2N},r=${cost.r},p=${cost.p}$${salt.toString("base64")}$${key.toString("base64")}`;
}

/**
 * A v3 password's hash: bcrypt at `bcryptCost` (--bcrypt-cost; costs above 20 hash at 20),
 * Go's `$2a$` form, which etcd 3.4 checks. Runs on bcrypt's worker threads, behind its
 * bounded queue (bcrypt.ts).
 */
export function hashV3Password(password: string | Uint8Array, bcryptCost: number, opts: { signal?: AbortSignal | undefined } = {}): Promise<string> {
  return bcryptHash(toBytes(password), bcryptCost, opts);
}

/** A well-formed hash no password matches: unknown users cost as much as wrong passwords. */
const DECOY_HASH = `$scrypt$ln=${DEFAULT_SCRYPT_COST.log2N},r=${DEFAULT_SCRYPT_COST.r},p=${DEFAULT_SCRYPT_COST.p}$${Buffer.alloc(SALT_BYTES).toString("base64")}$${Buffer.alloc(KEY_BYTES).toString("base64")}`;

/** Checks a password against a stored hash in constant time; false for a malformed hash. */
export async function verifyPassword(password: string | Uint8Array, encoded: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<boolean> {
  // etcd's own hashes, brought by a restored etcd snapshot. Only bcrypt's queue drops a
  // cancelled check (scrypt runs on libuv's pool, two at a time, and is never queued long).
  if (isBcryptHash(encoded)) return verifyBcrypt(toBytes(password), encoded, opts);
  const parsed = parseHash(encoded);
  if (!parsed) return false;
  const key = await derive(toBytes(password), parsed.salt, parsed.cost);
  return timingSafeEqual(key, parsed.key);
}

/** A credential this process has verified: who it is, and the stored hash it matched. */
interface Verified {
  user: string;
  hash: string;
}

/** Verification with a bounded cache of credentials already verified (see the header). */
export class PasswordVerifier {
  /** Prefix of every cache-key hash: a per-process secret, so keys reveal nothing offline. */
  #secret = randomBytes(32).toString("base64") + "\u0000";
  /** token key -> what it was verified as; Map order = LRU order. */
  #verified = new Map<string, Verified>();
  #inflight = new Map<string, Promise<boolean>>();
  #capacity: number;
  #check: (password: Uint8Array, encoded: string, opts?: { signal?: AbortSignal | undefined }) => Promise<boolean>;

  /**
   * @param opts.capacity credentials remembered (LRU), default 1024
   * @param opts.check the slow verification (default verifyPassword; tests count calls)
   */
  constructor(opts: { capacity?: number; check?: (password: Uint8Array, encoded: string, opts?: { signal?: AbortSignal | undefined }) => Promise<boolean> } = {}) {
    this.#capacity = Math.max(1, opts.capacity ?? 1024);
    this.#check = opts.check ?? verifyPassword;
  }

  get size(): number {
    return this.#verified.size;
  }

  /**
   * The cache key of an opaque credential token (the HTTP layer passes the whole
   * `Authorization` value): a SHA-256 of it under the per-process secret. One fast hash
   * per request, and no clear credential is kept.
   */
  tokenKey(token: string): string {
    return hash("sha256", this.#secret + token, "base64");
  }

  /**
   * Synchronous: the user this token was verified as, while `currentHash(user)` is still
   * the hash it matched (a password change or a re-created user invalidates it).
   */
  cachedUser(key: string, currentHash: (user: string) => string | undefined): string | undefined {
    const v = this.#verified.get(key);
    if (v === undefined) return undefined;
    this.#verified.delete(key);
    if (currentHash(v.user) !== v.hash) return undefined; // stale: dropped
    this.#verified.set(key, v); // most recently used
    return v.user;
  }

  /**
   * Verifies `password` for `user` against `storedHash` and, on success, remembers the
   * token. `storedHash` undefined means no such user: false after the same work as a wrong
   * password. Concurrent checks of one token share one derivation; failures are not cached.
   * `signal`: the caller gave up, so a check still queued is dropped (bcrypt.ts); a caller
   * that shared a check dropped for another one's signal starts its own.
   */
  async verify(key: string, user: string, password: Uint8Array, storedHash: string | undefined, signal?: AbortSignal): Promise<boolean> {
    if (storedHash === undefined) {
      await this.#check(password, DECOY_HASH, { signal });
      return false;
    }
    if (this.cachedUser(key, () => storedHash) === user) return true;
    const flightKey = `${key}\u0000${storedHash}`;
    for (;;) {
      let pending = this.#inflight.get(flightKey);
      let own = false;
      if (!pending) {
        own = true;
        pending = this.#check(password, storedHash, { signal }).finally(() => this.#inflight.delete(flightKey));
        this.#inflight.set(flightKey, pending);
      }
      let ok: boolean;
      try {
        ok = await pending;
      } catch (err) {
        if (own || signal?.aborted === true) throw err;
        continue; // another caller's check, dropped for its signal (or failed): check again
      }
      if (ok) this.#remember(key, { user, hash: storedHash });
      return ok;
    }
  }

  /** Drops every cached credential of a user (after a password change or a delete). */
  forgetUser(user: string): void {
    for (const [key, v] of [...this.#verified]) if (v.user === user) this.#verified.delete(key);
  }

  #remember(key: string, v: Verified): void {
    this.#verified.delete(key);
    this.#verified.set(key, v);
    while (this.#verified.size > this.#capacity) {
      const oldest = this.#verified.keys().next().value;
      if (oldest === undefined) break;
      this.#verified.delete(oldest);
    }
  }
}
