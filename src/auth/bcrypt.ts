// bcrypt as golang.org/x/crypto/bcrypt makes and checks it (`$2a$<cost>$` + 22 salt
// characters + 31 hash characters, bcrypt's own base64): etcd 3.4 stores v3 passwords so,
// and kvctl does too, so that an etcd restored from kvctl's snapshot file accepts them (and
// kvctl accepts the hashes an etcd snapshot brings).
//
// bcrypt is Blowfish with an expensive key schedule (Provos and Mazières, 1999): the
// state starts from the hex digits of pi, is keyed with the salt and password, then
// 2^cost times with each alone; "OrpheanBeholderScryDoubt" enciphered 64 times is the hash.
// The pi digits (18 + 1024 words) are computed once, on first use, instead of being
// carried as a table.
//
// A hash at etcd's default cost 10 is ~17 million Blowfish rounds: tens of milliseconds of
// CPU. It runs on the event loop in slices of SLICE_ROUNDS key-schedule rounds (~1 ms),
// yielding between them, and one job at a time (hashes and checks share one lane): a second
// job interleaved would double every slice's delay to the loop instead of finishing sooner.
// A worker thread would take the work off the loop entirely, but the bundle (one file per
// chunk, serve.cjs) has no worker entry to start, and a UserAdd is rare; see README.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { setImmediate } from "node:timers/promises";

const P_WORDS = 18;
const S_WORDS = 1024;
const ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HASH_FORMAT = /^\$2[aby]?\$(\d\d)\$([./A-Za-z0-9]{22})([./A-Za-z0-9]{31})$/;
/** bcrypt's MinCost. */
export const BCRYPT_HASH_MIN_COST = 4;
/**
 * The highest cost hashed or checked. Go accepts up to 31, but cost 20 is already over a
 * minute per hash (and per login, in etcd as here); higher ones hash at 20, and a stored
 * hash above it is refused, so that a hostile one cannot occupy the lane for days.
 */
export const BCRYPT_HASH_MAX_COST = 20;
/** Key-schedule rounds between yields: ~0.05 ms each at cost 10 on an idle core. */
const SLICE_ROUNDS = 16;
const SALT_BYTES = 16;

let piWords: Int32Array | undefined;

/** The first `n` 32-bit words of pi's fractional part (Machin's formula, in fixed point). */
function piFraction(n: number): Int32Array {
  const bits = BigInt(n * 32 + 64);
  const one = 1n << bits;
  const arctanInv = (x: bigint): bigint => {
    const x2 = x * x;
    let term = one / x;
    let sum = term;
    for (let k = 1n; term !== 0n; k++) {
      term /= x2;
      sum += (k % 2n === 1n ? -term : term) / (2n * k + 1n);
    }
    return sum;
  };
  const pi = 16n * arctanInv(5n) - 4n * arctanInv(239n);
  const frac = (pi % one) >> 64n;
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = Number((frac >> BigInt((n - 1 - i) * 32)) & 0xffffffffn) | 0;
  return out;
}

/** `n` big-endian words read from `b` cyclically from its start, as Blowfish's key schedule reads a key. */
function cyclicWords(b: Uint8Array, n: number): Int32Array {
  const out = new Int32Array(n);
  let o = 0;
  for (let i = 0; i < n; i++) {
    let w = 0;
    for (let j = 0; j < 4; j++) {
      w = (w << 8) | b[o]!;
      o = (o + 1) % b.length;
    }
    out[i] = w;
  }
  return out;
}

/** One Blowfish encipherment of (l, r) into out[0], out[1]; p and s are the state's halves. */
function encipher(p: Int32Array, s: Int32Array, l: number, r: number, out: Int32Array): void {
  l ^= p[0]!;
  for (let k = 1; k <= 16; k += 2) {
    r ^= (((s[l >>> 24]! + s[256 | ((l >>> 16) & 0xff)]!) ^ s[512 | ((l >>> 8) & 0xff)]!) + s[768 | (l & 0xff)]!) ^ p[k]!;
    l ^= (((s[r >>> 24]! + s[256 | ((r >>> 16) & 0xff)]!) ^ s[512 | ((r >>> 8) & 0xff)]!) + s[768 | (r & 0xff)]!) ^ p[k + 1]!;
  }
  out[0] = r ^ p[17]!;
  out[1] = l;
}

/**
 * Blowfish's key schedule: P xored with the key's 18 words, then P and S replaced by the
 * chain of encipherments, each block first xored with the salt's next two words when there
 * is a salt (bcrypt's salted schedule; a salt is 4 words, so the stream repeats every 4).
 */
function expand(p: Int32Array, s: Int32Array, key: Int32Array, salt: Int32Array | undefined, lr: Int32Array): void {
  for (let i = 0; i < P_WORDS; i++) p[i] = p[i]! ^ key[i]!;
  let l = 0;
  let r = 0;
  for (let i = 0; i < P_WORDS; i += 2) {
    if (salt !== undefined) {
      l ^= salt[i & 3]!;
      r ^= salt[(i + 1) & 3]!;
    }
    encipher(p, s, l, r, lr);
    l = lr[0]!;
    r = lr[1]!;
    p[i] = l;
    p[i + 1] = r;
  }
  // P is final from here on: its words in locals, the rounds unrolled (most of bcrypt's time).
  const p0 = p[0]!;
  const p1 = p[1]!;
  const p2 = p[2]!;
  const p3 = p[3]!;
  const p4 = p[4]!;
  const p5 = p[5]!;
  const p6 = p[6]!;
  const p7 = p[7]!;
  const p8 = p[8]!;
  const p9 = p[9]!;
  const p10 = p[10]!;
  const p11 = p[11]!;
  const p12 = p[12]!;
  const p13 = p[13]!;
  const p14 = p[14]!;
  const p15 = p[15]!;
  const p16 = p[16]!;
  const p17 = p[17]!;
  for (let i = 0; i < S_WORDS; i += 2) {
    if (salt !== undefined) {
      l ^= salt[(i + P_WORDS) & 3]!;
      r ^= salt[(i + P_WORDS + 1) & 3]!;
    }
    l ^= p0;
    r ^= (((s[l >>> 24]! + s[256 | ((l >>> 16) & 0xff)]!) ^ s[512 | ((l >>> 8) & 0xff)]!) + s[768 | (l & 0xff)]!) ^ p1;
    l ^= (((s[r >>> 24]! + s[256 | ((r >>> 16) & 0xff)]!) ^ s[512 | ((r >>> 8) & 0xff)]!) + s[768 | (r & 0xff)]!) ^ p2;
    r ^= (((s[l >>> 24]! + s[256 | ((l >>> 16) & 0xff)]!) ^ s[512 | ((l >>> 8) & 0xff)]!) + s[768 | (l & 0xff)]!) ^ p3;
    l ^= (((s[r >>> 24]! + s[256 | ((r >>> 16) & 0xff)]!) ^ s[512 | ((r >>> 8) & 0xff)]!) + s[768 | (r & 0xff)]!) ^ p4;
    r ^= (((s[l >>> 24]! + s[256 | ((l >>> 16) & 0xff)]!) ^ s[512 | ((l >>> 8) & 0xff)]!) + s[768 | (l & 0xff)]!) ^ p5;
    l ^= (((s[r >>> 24]! + s[256 | ((r >>> 16) & 0xff)]!) ^ s[512 | ((r >>> 8) & 0xff)]!) + s[768 | (r & 0xff)]!) ^ p6;
    r ^= (((s[l >>> 24]! + s[256 | ((l >>> 16) & 0xff)]!) ^ s[512 | ((l >>> 8) & 0xff)]!) + s[768 | (l & 0xff)]!) ^ p7;
    l ^= (((s[r >>> 24]! + s[256 | ((r >>> 16) & 0xff)]!) ^ s[512 | ((r >>> 8) & 0xff)]!) + s[768 | (r & 0xff)]!) ^ p8;
    r ^= (((s[l >>> 24]! + s[256 | ((l >>> 16) & 0xff)]!) ^ s[512 | ((l >>> 8) & 0xff)]!) + s[768 | (l & 0xff)]!) ^ p9;
    l ^= (((s[r >>> 24]! + s[256 | ((r >>> 16) & 0xff)]!) ^ s[512 | ((r >>> 8) & 0xff)]!) + s[768 | (r & 0xff)]!) ^ p10;
    r ^= (((s[l >>> 24]! + s[256 | ((l >>> 16) & 0xff)]!) ^ s[512 | ((l >>> 8) & 0xff)]!) + s[768 | (l & 0xff)]!) ^ p11;
    l ^= (((s[r >>> 24]! + s[256 | ((r >>> 16) & 0xff)]!) ^ s[512 | ((r >>> 8) & 0xff)]!) + s[768 | (r & 0xff)]!) ^ p12;
    r ^= (((s[l >>> 24]! + s[256 | ((l >>> 16) & 0xff)]!) ^ s[512 | ((l >>> 8) & 0xff)]!) + s[768 | (l & 0xff)]!) ^ p13;
    l ^= (((s[r >>> 24]! + s[256 | ((r >>> 16) & 0xff)]!) ^ s[512 | ((r >>> 8) & 0xff)]!) + s[768 | (r & 0xff)]!) ^ p14;
    r ^= (((s[l >>> 24]! + s[256 | ((l >>> 16) & 0xff)]!) ^ s[512 | ((l >>> 8) & 0xff)]!) + s[768 | (l & 0xff)]!) ^ p15;
    l ^= (((s[r >>> 24]! + s[256 | ((r >>> 16) & 0xff)]!) ^ s[512 | ((r >>> 8) & 0xff)]!) + s[768 | (r & 0xff)]!) ^ p16;
    const t = r ^ p17;
    r = l;
    l = t;
    s[i] = l;
    s[i + 1] = r;
  }
}

function decode64(s: string): Buffer {
  let std = "";
  for (const c of s) std += STD[ALPHABET.indexOf(c)];
  return Buffer.from(std, "base64");
}

function encode64(b: Buffer): string {
  let out = "";
  for (const c of b.toString("base64").replace(/=+$/, "")) out += ALPHABET[STD.indexOf(c)];
  return out;
}

/** One job at a time (see the header); the queue is the promises waiting their turn. */
let laneTail: Promise<unknown> = Promise.resolve();

function inLane<T>(job: () => Promise<T>): Promise<T> {
  const run = laneTail.then(job, job);
  laneTail = run.catch(() => undefined);
  return run;
}

/** A well-formed cost-10 hash no password is known to match: an unknown v3 user costs what etcd's default-cost hash does. */
export const BCRYPT_DECOY_HASH = `$2a$10$${".".repeat(22)}${".".repeat(31)}`;

/** True when `encoded` has the form of a bcrypt hash ($2a$, $2b$, $2y$). */
export function isBcryptHash(encoded: string): boolean {
  return HASH_FORMAT.test(encoded);
}

/** The 31-character hash part bcrypt gives for `password` with `cost` and the 16-byte salt (not queued in the lane). */
export async function bcryptHashPart(password: Uint8Array, cost: number, salt: Uint8Array): Promise<string> {
  // The password with its terminating NUL; the schedule reads its first 72 bytes, as Go's does.
  const key = cyclicWords(Buffer.concat([Buffer.from(password), Buffer.alloc(1)]), P_WORDS);
  const saltKey = cyclicWords(salt, P_WORDS);
  const saltStream = cyclicWords(salt, 4);
  piWords ??= piFraction(P_WORDS + S_WORDS);
  const p = piWords.slice(0, P_WORDS);
  const s = piWords.slice(P_WORDS);
  const lr = new Int32Array(2);
  expand(p, s, key, saltStream, lr);
  const rounds = 2 ** cost;
  for (let i = 0; i < rounds; i++) {
    expand(p, s, key, undefined, lr);
    expand(p, s, saltKey, undefined, lr);
    if (i % SLICE_ROUNDS === SLICE_ROUNDS - 1) await setImmediate();
  }
  const text = Buffer.from("OrpheanBeholderScryDoubt");
  const out = Buffer.alloc(24);
  for (let j = 0; j < 6; j += 2) {
    lr[0] = text.readInt32BE(j * 4);
    lr[1] = text.readInt32BE(j * 4 + 4);
    for (let n = 0; n < 64; n++) encipher(p, s, lr[0]!, lr[1]!, lr);
    out.writeInt32BE(lr[0]!, j * 4);
    out.writeInt32BE(lr[1]!, j * 4 + 4);
  }
  return encode64(out.subarray(0, 23));
}

/**
 * A new hash of `password` at `cost` (clamped to 4..BCRYPT_HASH_MAX_COST) with a random
 * salt, in Go's form: `$2a$10$` + 22 + 31 characters, what etcd's CompareHashAndPassword reads.
 */
export function bcryptHash(password: Uint8Array, cost: number): Promise<string> {
  const c = Math.min(Math.max(Math.trunc(cost), BCRYPT_HASH_MIN_COST), BCRYPT_HASH_MAX_COST);
  const salt = randomBytes(SALT_BYTES);
  return inLane(async () => `$2a$${String(c).padStart(2, "0")}$${encode64(salt)}${await bcryptHashPart(password, c, salt)}`);
}

/** Checks a password against a bcrypt hash in constant time; false for a malformed one. */
export async function verifyBcrypt(password: Uint8Array, encoded: string): Promise<boolean> {
  const m = HASH_FORMAT.exec(encoded);
  if (!m) return false;
  const cost = Number(m[1]);
  if (cost < BCRYPT_HASH_MIN_COST || cost > BCRYPT_HASH_MAX_COST) return false;
  const salt = decode64(m[2]!).subarray(0, SALT_BYTES);
  if (salt.length !== SALT_BYTES) return false;
  const got = Buffer.from(await inLane(() => bcryptHashPart(password, cost, salt)));
  const want = Buffer.from(m[3]!);
  return got.length === want.length && timingSafeEqual(got, want);
}
