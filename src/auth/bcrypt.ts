// bcrypt verification, for the password hashes etcd stores (golang.org/x/crypto/bcrypt,
// `$2a$10$...`), which a restored etcd snapshot brings along: kvctl makes its own hashes
// with scrypt (password.ts) and only checks these.
//
// bcrypt is Blowfish with an expensive key schedule (Provos and Mazières, 1999): the
// state starts from the hex digits of pi, is keyed with the salt and password, then
// 2^cost times with each alone; "OrpheanBeholderScryDoubt" enciphered 64 times is the hash.
// The pi digits (18 + 1024 words) are computed once, on first use, instead of being
// carried as a table. The work yields to the event loop between slices of rounds: a
// verification at etcd's default cost 10 takes tens of milliseconds.
import { timingSafeEqual } from "node:crypto";
import { setImmediate } from "node:timers/promises";

const P_WORDS = 18;
const S_WORDS = 1024;
const ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HASH_FORMAT = /^\$2[aby]?\$(\d\d)\$([./A-Za-z0-9]{22})([./A-Za-z0-9]{31})$/;
/** Costs accepted: bcrypt's MinCost 4, and a bound that keeps a hostile hash from hanging a member. */
const MIN_COST = 4;
const MAX_COST = 20;

let piWords: Uint32Array | undefined;

/** The first `n` 32-bit words of pi's fractional part (Machin's formula, in fixed point). */
function piFraction(n: number): Uint32Array {
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
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = Number((frac >> BigInt((n - 1 - i) * 32)) & 0xffffffffn);
  return out;
}

function initialState(): Uint32Array {
  piWords ??= piFraction(P_WORDS + S_WORDS);
  return piWords.slice();
}

/** Blowfish state: P in [0, 18), the four S-boxes after it. */
class Blowfish {
  readonly s = initialState();

  private f(x: number): number {
    const s = this.s;
    return (((s[P_WORDS + (x >>> 24)]! + s[P_WORDS + 256 + ((x >>> 16) & 0xff)]!) ^ s[P_WORDS + 512 + ((x >>> 8) & 0xff)]!) + s[P_WORDS + 768 + (x & 0xff)]!) | 0;
  }

  encipher(lr: Int32Array | Uint32Array, at: number): void {
    const p = this.s;
    let l = lr[at]! ^ p[0]!;
    let r = lr[at + 1]!;
    for (let i = 0; i <= 14; i += 2) {
      r ^= this.f(l) ^ p[i + 1]!;
      l ^= this.f(r) ^ p[i + 2]!;
    }
    lr[at] = r ^ p[17]!;
    lr[at + 1] = l;
  }

  /** Blowfish's key schedule, with the salt mixed in (zero salt: the plain schedule). */
  expand(key: Uint8Array, salt: Uint8Array | undefined): void {
    const s = this.s;
    const word = (b: Uint8Array, at: { o: number }): number => {
      let w = 0;
      for (let i = 0; i < 4; i++) {
        w = (w << 8) | b[at.o]!;
        at.o = (at.o + 1) % b.length;
      }
      return w;
    };
    const kAt = { o: 0 };
    for (let i = 0; i < P_WORDS; i++) s[i] = s[i]! ^ word(key, kAt);
    const sAt = { o: 0 };
    const lr = new Uint32Array(2);
    for (let i = 0; i < P_WORDS + S_WORDS; i += 2) {
      if (salt !== undefined) {
        lr[0] = lr[0]! ^ word(salt, sAt);
        lr[1] = lr[1]! ^ word(salt, sAt);
      }
      this.encipher(lr, 0);
      s[i] = lr[0]!;
      s[i + 1] = lr[1]!;
    }
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

/** True when `encoded` has the form of a bcrypt hash ($2a$, $2b$, $2y$). */
export function isBcryptHash(encoded: string): boolean {
  return HASH_FORMAT.test(encoded);
}

/** The 31-character hash part bcrypt gives for `password` with `cost` and the 16-byte salt. */
export async function bcryptHashPart(password: Uint8Array, cost: number, salt: Buffer): Promise<string> {
  // The password with its terminating NUL, at most 72 bytes, as the C and Go code read it.
  const key = Buffer.concat([Buffer.from(password), Buffer.alloc(1)]).subarray(0, 72);
  const bf = new Blowfish();
  bf.expand(key, salt);
  const rounds = 2 ** cost;
  for (let i = 0; i < rounds; i++) {
    bf.expand(key, undefined);
    bf.expand(salt, undefined);
    if (i % 64 === 63) await setImmediate();
  }
  const text = Buffer.from("OrpheanBeholderScryDoubt");
  const lr = new Uint32Array(6);
  for (let i = 0; i < 6; i++) lr[i] = text.readUInt32BE(i * 4);
  for (let n = 0; n < 64; n++) for (let j = 0; j < 6; j += 2) bf.encipher(lr, j);
  const out = Buffer.alloc(24);
  for (let i = 0; i < 6; i++) out.writeUInt32BE(lr[i]!, i * 4);
  return encode64(out.subarray(0, 23));
}

/** Checks a password against a bcrypt hash in constant time; false for a malformed one. */
export async function verifyBcrypt(password: Uint8Array, encoded: string): Promise<boolean> {
  const m = HASH_FORMAT.exec(encoded);
  if (!m) return false;
  const cost = Number(m[1]);
  if (cost < MIN_COST || cost > MAX_COST) return false;
  const salt = decode64(m[2]!).subarray(0, 16);
  if (salt.length !== 16) return false;
  const got = Buffer.from(await bcryptHashPart(password, cost, salt));
  const want = Buffer.from(m[3]!);
  return got.length === want.length && timingSafeEqual(got, want);
}
