// bcrypt's computation (Provos and Mazières, 1999), as golang.org/x/crypto/bcrypt does it,
// with nothing around it: no queue, no thread, no I/O. All of it is inside one function
// that reads nothing from outside (only globals: Buffer, BigInt, typed arrays), so that
// bcrypt-pool.ts can start a worker thread from its source text (`bcryptCore.toString()`)
// in any build: the bundle's chunks, serve.cjs, tsc's output or tsx, with no worker file
// to find. The event loop's fallback (bcrypt.ts) calls the same function.
//
// bcrypt is Blowfish with an expensive key schedule: the state starts from the hex digits
// of pi, is keyed with the salt and password, then 2^cost times with each alone;
// "OrpheanBeholderScryDoubt" enciphered 64 times is the hash. The pi digits (18 + 1024
// words) are computed on first use instead of being carried as a table: ~40 ms of BigInt
// work, done once per process (sharedBcryptCore) and handed to each worker thread, which
// would otherwise redo it on its first job after every idle stop.

/** What bcryptCore makes. */
export interface BcryptCore {
  /**
   * The 31-character hash part bcrypt gives for `password` with `cost` and the 16-byte
   * salt, as a generator that pauses every `sliceRounds` key-schedule rounds: the event
   * loop's fallback yields to other work there, a worker thread runs straight through.
   */
  hashSteps(password: Uint8Array, cost: number, salt: Uint8Array): Generator<undefined, string, undefined>;
  /** The hash part computed straight through (a worker thread's way). */
  hashPartSync(password: Uint8Array, cost: number, salt: Uint8Array): string;
  /** bcrypt's base64 (its own alphabet, no padding). */
  encode64(b: Uint8Array): string;
  decode64(s: string): Buffer;
  /** Key-schedule rounds between pauses. */
  sliceRounds: number;
  /** Blowfish's initial state, pi's first 18 + 1024 fractional words (computed on the first call, unless given). */
  piWords(): Int32Array;
}

/**
 * bcrypt, self-contained (see the header: nothing outside this function is read).
 * @param pi another core's piWords(), so that this one need not compute them
 */
export function bcryptCore(pi?: Int32Array): BcryptCore {
  const P_WORDS = 18;
  const S_WORDS = 1024;
  const ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  /** Key-schedule rounds between yields: ~0.05 ms each at cost 10 on an idle core. */
  const SLICE_ROUNDS = 16;

  let piWords: Int32Array | undefined = pi !== undefined && pi.length === P_WORDS + S_WORDS ? pi : undefined;

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

  function encode64(b: Uint8Array): string {
    let out = "";
    for (const c of Buffer.from(b).toString("base64").replace(/=+$/, "")) out += ALPHABET[STD.indexOf(c)];
    return out;
  }

  function* hashSteps(password: Uint8Array, cost: number, salt: Uint8Array): Generator<undefined, string, undefined> {
    // The password with its terminating NUL; the schedule reads its first 72 bytes, as Go's does.
    const key = cyclicWords(Buffer.concat([Buffer.from(password), Buffer.alloc(1)]), P_WORDS);
    const saltKey = cyclicWords(salt, P_WORDS);
    const saltStream = cyclicWords(salt, 4);
    const words = thePiWords();
    const p = words.slice(0, P_WORDS);
    const s = words.slice(P_WORDS);
    const lr = new Int32Array(2);
    expand(p, s, key, saltStream, lr);
    const rounds = 2 ** cost;
    for (let i = 0; i < rounds; i++) {
      expand(p, s, key, undefined, lr);
      expand(p, s, saltKey, undefined, lr);
      if (i % SLICE_ROUNDS === SLICE_ROUNDS - 1) yield;
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

  function thePiWords(): Int32Array {
    piWords ??= piFraction(P_WORDS + S_WORDS);
    return piWords;
  }

  function hashPartSync(password: Uint8Array, cost: number, salt: Uint8Array): string {
    const steps = hashSteps(password, cost, salt);
    for (;;) {
      const r = steps.next();
      if (r.done === true) return r.value;
    }
  }

  return { hashSteps, hashPartSync, encode64, decode64, sliceRounds: SLICE_ROUNDS, piWords: thePiWords };
}

let shared: BcryptCore | undefined;

/** The process's one core on the main thread: the event loop's fallback, and the pi words every worker starts from. */
export function sharedBcryptCore(): BcryptCore {
  shared ??= bcryptCore();
  return shared;
}
