// bcrypt's computation (Provos and Mazières, 1999), as golang.org/x/crypto/bcrypt does it,
// with nothing around it: no queue, no thread, no I/O. All of it is inside one function
// that reads nothing from outside (only globals: Buffer, BigInt, typed arrays), so that
// bcrypt-pool.ts can start a worker thread from its source text (`bcryptCore.toString()`)
// in any build: the bundle's chunks, serve.cjs, tsc's output or tsx, with no worker file
// to find. The event loop's fallback (bcrypt.ts) calls the same function.
//
// bcrypt is Blowfish with an expensive key schedule: the state starts from the hex digits
// of pi, is keyed with the salt and password, then 2^cost times with each alone;
// "OrpheanBeholderScryDoubt" enciphered 64 times is the hash. pi's words (18 + 1024) are a
// table, as in Go's blowfish/const.go (here 5.6 KB of base64, decoded in microseconds):
// computing them (Machin's formula in BigInt, which bcrypt.test.ts checks the table
// against) took ~40 ms, on the main thread or in each new worker, and whichever thread did
// it delayed a login by that much, or every request on the event loop.

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
  /** Blowfish's initial state, pi's first 18 + 1024 fractional words (the table, decoded on first use). */
  piWords(): Int32Array;
}

/** bcrypt, self-contained (see the header: nothing outside this function is read). */
export function bcryptCore(): BcryptCore {
  const P_WORDS = 18;
  const S_WORDS = 1024;
  const ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  /** Key-schedule rounds between yields: ~0.05 ms each at cost 10 on an idle core. */
  const SLICE_ROUNDS = 16;

  let piWords: Int32Array | undefined;

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
    if (piWords === undefined) {
      const b = Buffer.from(PI_BASE64, "base64");
      piWords = new Int32Array(P_WORDS + S_WORDS);
      for (let i = 0; i < piWords.length; i++) piWords[i] = b.readInt32BE(i * 4);
    }
    return piWords;
  }

  function hashPartSync(password: Uint8Array, cost: number, salt: Uint8Array): string {
    const steps = hashSteps(password, cost, salt);
    for (;;) {
      const r = steps.next();
      if (r.done === true) return r.value;
    }
  }

  // pi's fractional part from its first hex digits (243f6a88 85a308d3 ...), 32-bit words
  // big-endian: P's 18, then the four S-boxes' 256 each. Base64 skips the whitespace.
  const PI_BASE64 = `
    JD9qiIWjCNMTGYouA3BzRKQJOCIpnzHQCC76mOxObIlFKCHmONATd75UZs806QxswKwpt8l8UN0/hNW1tUcJF5IW1dmJefsb
    0TELppjftawv/XLb0Brft7jhr+1qJn6WunyQRfEsf5kkoZlHs5Fs9wgB8uKFjvwWY2kg2HFXTmmkWP6j9JM9fg2VdI9yjrZY
    cYvNWIIVSu57VKQdwlpZtZww1Tkq8mATxdGwIyhghfDKQXkYuNs474553LBgOhgObJ4Oi7Aeij7XFXfBvTFLJ3ivL9pVYFxg
    5lUl86pVq5RXSJhiY+gUQFXKOWoqqxC2tMxcNBFB6M6hVIavfHLpk7PuFBFjb7wqK6nFXXQYMfbOXD4Wm4eTHq/WujNsJM9c
    ejJTgSiVhnc7j0iYa0u5r8S/6BtmKCGTYdgJzPshqZFIfKxgXeyAMu+EXV3phXWx3CYjAutlG4gjiT6B05asxQ9tb/OD9EI5
    LgtEgqSEIARpyPBKnh+bXiHGaEL26WyaZwycYavTiPBqUaDS2FQvaJYPpyirUTOjbu8LbBN6O+S6O/BQfvsqmKHxZR05rwF2
    ZspZPoJDDoiM7oYZRW+ftH2EpcM7i16+4G912IXBIHNAGkSfVsFqpk7TqmI2P3cGG/7fckKbAj030Nck0AoSSNsP6tNJ8cCb
    B1NyyYCZG3sl1HnY9uje9+P+UBq2eUw7l2zgvQTABrrBqU+2QJ9gxF5cnsIZaiRjaPtvrz5sU7UTObLrO1Lsb238UR+bMJUs
    zIFFRK9evQm+49AE3jNK/WYPKAcZLkuzwMuoV0XIdA/SC185udP721V5wL0aYDIK1qEAxkAscnlnnyX++x+jzI6l6fjbMiL4
    PHUW3/1haxUvUB7IrQVSqzI9tfr9I4dgUzF7SD4A34KeXFe7ym+MoBqHVi7fF2nb1UKo9ih+/8OsZzLGjE9Vc2lbJ7C7yljI
    4f+jXbjwEaAQ+j2Y/SGDuEr8tWwt0dNbmlPkebb4RWXSjkm8S/uXkOHd8tqky34zYvsTQc7kxujvIMraNndMAdB+nv4r8R+0
    ldvaTa6QkZjqrY5xa5PVoNCO0dCvxyXgjjxbL451lLeP9uL78hIrZIiIuBKQDfAcT61eoGiPwxzRz/GRs6jBrS8vIhi+Dhd3
    6nUt/osCH6HloMwPtW906Bis89bOieKZtKhP4P0T4Ld8xDuB0q2o2RZfomaAlXcFk8xzFCEaFHfmrSBld7X6hsdUQvX7nTXP
    682vDHs+iaDWQRvTrh5+SQAlDi0gcbNeImgAu1e44K8kZDab8Am5HlVjkR1Z36aqeMFDidlaU38gfVuiAuW5xYMmA3Zilc+p
    EcgZaE5zSkGzRy3KexSpShtRAFKaUykV1g9XP7ybxuQrYKR2geZ0AAi6b7VXG+kf8pbsayoN2RW2Y2Uh57n5tv80BS7FhVZk
    U7AtXamfj6EIukeZboUHakt6cOm1sylE23UJLsQZJiOtbqawSafffZzuYLiP7bJm7KqMcWmaF/9WZFJswrGe4Rk2AqV1CUwp
    oFkTQOQYOj4/VJiaW0KdZWuP5NaZ9z/WodKcB+/oMPVNLTjm8CVdwUzdIIaEcOsmY4LpxgIezF4JaGs/PrrvyTyXGBRranCh
    aH81hFKg4oa3nFMFqlAHNz4HhBx/3q5cjn1E7FcW8riwOto38FAMDfAcHwQCALP/rgz1Gjy1dLIlg3pY3AkhvdGRE/l8qS/2
    lDJHcyL1RwE65eWBN8La3Mi1djSa892nqURhRg/QAw7syMc+pHUeQeI4zZk76g4vMoC7oRg+szFOVIs4T225CG9CDQP2CgS/
    LLgSkCSXfHlWebByvK+Jr96adx/ZkwgQs4uuEtzPPy5VEnIfLmtxJFAa3eafhM2HelhHGHQI2he8n5q86Ut9jOx67DrbhR36
    YwlDZsRkw9LvHBhHMhXZCN1DOzckwroWEqFNQyplxFFQlAACEzrk3XHf+J4QMU5Vgax31l8RGZsENVbx16PHazwRGDtZJKUJ
    8o/m7Zfx+/qeur8sHhU8bobjRXDq6W+xhg5eClo+KrN3H+ccTj0G+ill3LmZ5x0PgD6J1lJmyCUuTMl4nBCzasYVDrqU4up4
    pfw8Ux4KLfTy906nNh0rPRk5Jg8ZwnlgUiOnCPcTErbrrf5u6sMfZuO8RZWme8iDsX830QGM/yjDMt3vvmxapWVYIYVoq5gC
    7s6lD9svlTsq732tW24vhBUhtigpB2Fw7N1HdWGfFRATzKgw62G9lgM0/h6qA2PPtXNckExwojnVnp4Ly6reFO7MhrxgYiyn
    nKtcq7LzhG5kix6vGb3wyqAjabllWrtQQGhaMjwqtLMxnunVwCG495tUCxmHX6CZlfeZfmI9faj4N4ial+MtdxHtk18WaBKB
    DjWIKcfmH9aW3t+heFi6mVf1hKUbInJjm4PD/xrCRpbNswrrUy4wVI/ZSORtvDEoWOvy7zTG/+r+KO1h7nw8c11KFNnoZLfj
    QhBdFCA+E+BF7uK2o6qr6ttsTxX6y0/Qx0L0Qu9qu7VlTzsdQc0hBdgeeZ6GhU3H5EtHaj2BYlDPYqHyW40mRvyIg6DBx7aj
    fxUkw2nLdJJHhIoLVpKyhQlbvwCtGUidFGKxdCOCDgBYQo0qDFX16h2t9D4jP3BhM3Lwko2TfkHWX+zxbCI723zeN1nL7nRg
    QIXyp853Mm6mB4CEGfhQnujv2FVh2Zc1qWmnqsUMBsJaBKv8gAvK3J5Eei7DRTSE/dVnBQ4ensnbc9vTEFWIzWdf2nnjZ0NA
    xcQ0ZXE+ONg9KPie8W3/IBU+IeePsD1K5uOfK9uDrffpPVpolIFA9/ZMJhyUaSk0QRUg93YC1Pe89Gsu1KIAaNQIJHEzIPRq
    Q7fUt1AAYa8eOfYulyRFRhQhT3S/i4hATZX8HZa1ka9w9N3TZqAvRb+8CewDvZeFf6xt0DHLhQSW6yezVf05QdolR+arygqa
    KFB4JVMEKfQKLIba6bZt+2jcFGLXSGkAaA7ApCehje5PP/6i6IetjLWM4AZ69Na2qs4efNM3X+zOeKOZQGsqQiD+njXZ84W5
    7jnXqzsSTosdyfr3S20YViajZjHq45eyOm76dN1bQzJoQef3yngg+/sK9U7Y/rOXRUBWrLpIlSdVUzo6IIONh/5rqbfQlpVL
    VahnvKEVmljMqSljmeHbM6YqSlY/MSX5XvR+HJApMXz9+OgCBCcvcIC7FVwFKCzjlcEVSOTGbSJIwRM/xw+G3Af5ye5BBB8P
    QEd5pF2IbhcyX1Hr1ZvA0fK8wY9BETVkJXt4NGAqnGDf+OijH2NsGw4StMIC4TKer2ZP0crRgRVrI5XgMz6S4TskC2Luvrki
    hbKiDua6DZnecgyMLaL3KNASeEWVt5T9ZH0IYufM9fBUSaNvh31I+sOd/SfzPo0eCkdjQZku/3Q6b26r9Pj9N6gS3GCh6934
    mRvhTNtuaw3Ge1UQbWcsNydl1Dvc0OgE8SkNx8wA/6O1OQ+SaQ/tC2Z7n/vO232coJHPC9kVXqO7Ey+IUVutJHuUeb92O9br
    Nzkus8wRWXmAJuKX9C4xLWhCrafGais7EnVMzHgu8RxqEkI3t5JR5wahu+ZL+2NQGmsQGBHK7fo9Jb3Y4uHDyURCFlkKEhOG
    2QzsbtWr6ipkr2dO2oaoX76/6Yhk5MP+nbyAV/D3wIZgeHv4YANgTdH9g0b2OB+wd0WuBNc2/MyDQmsz8B6rcbCAQYc8AF5f
    d6BXvr3oriRVRkKZv1guYU5Y9I/y3f2i9HTvOIeJvcJTZvnDyLOOdLR18lVG/Nm5eusmYYsd34SEag55kV+V4kZuWY4gtFdw
    jNVVkckC3ky5C6zhu4IF0BGoYkh1dKmet38ZtuCp3AlmLQmhxDJGM+haHwIJ8L6MSpmgJR1u/hAauT0dC6Wk36GG8g8oaPFp
    3Lfag1c5Bv6h4s6bT81/UlARXgGnBoP6oAK1xA3m0Cea+Iwndz+GQcNgTAZhqAa18Bd6KMD1huAAYFiqMNx9YhHmntcjOOpj
    U8LdlMLCFjS7y+5WkLy23uv8faHOWR12bwXkCUt8AYg5cgo9fJJ8JIbjcl9yTZ25GsFbtNOeuPztVFV4CPyltdg9fNNNrQ/E
    HlDvXrFh5viihRTZbFETPG/Vx+dW4U7ENiq/zt3GyDfXmjI0kmOCEmcO+o5AYADgOjnON9P69c+rwnc3WsUtG1ywZ55PozdC
    04InQJm8m77VEY6dvw9zFdYtHH7HAMR7t4wbayGhkEWybrG+ajZutFdIqy+8lG55xqN20mVJwshTD/juRo3efdVzCh1M0E3G
    KTm726m6RlCslSbovl7jBKH61fBqLVGaY++M4pqG7iLAicK4QyQu9qUeA6qc8tCkg8Bhupvpak2P5RVQumRb1igmovmnOjrh
    S6mVhu9VYunHL+/T91L32j8Eb2l3+gpZgOSpFYewhgGbCeatOz7lk+mQ/VqeNNeXLPC32QIri1GW1aw6AX2mfdHPPtZ8fS0o
    H58lz63yuJta1rRyWoj1TOAprHHgGaXmR7Cs/e2T+pvo08SNKDtXzPjVZil5Ey4oeF8Bke11YFX3lg5E49NejBUFbdSI9G26
    A6FhJQVk8L3D654VPJBXopcnGuypOgcqGz9tmx5jIfX1nGb7JtzzGXUz2SixVf31A1Y0goq6PLsoUXcRwgrZ+KvMUWfMrZJf
    TegXUTgw3I43nVhikyD5kep6kML7PnvOUSHOZHdPvjKotuN+wyk9RkjeU2lkE+aAoq4IEN1tsiRphS39CQchZrOaRgpkRcDd
    WGzezxwgyK5bvvfdG1iNQMzSAX9rtOO73aJqfjpZ/0U+NQpEvLTN1XLqzqj6ZIS7jWYSrr88b0fSm+RjVC9dnq7Cdxv2TmNw
    dA4NjedbE1f4chZxr1N9XUBAywhOtOLMNNJGagEVr4ThsAQolZg6HQa4n7TObqBIbz87gjUgq4IBGh1LJ3In+GEVYLHnkz/c
    uzp5KzRFJb2giDnhUc55Sy8yybegH7rJ4BzIfrzH0fbPARHDoeiqxxqQh0nUT72a0Nrey9UK2jgDOcMqxpE2Z435MXzgsStP
    955Zt0P1uzry1Rn/J9lFnL+XIiwV5vwqD5H8cZuUFSX65ZNhzrac68KoZFkSuqjRtsEHXuMFagwQ0lBlywOkQuDsbg4WmNs7
    TJigvjJ46WSfH5Uy4NOS39OgNCuJcfIeGwp0QUujNIzFvnEgw3Yy2N81n42bmS8u5gtvRw/j8R3lTNpUHtrYkc5iec/NPn5v
    FhixZv0sHQWEj9LF9vsimfUj81emMnYjk6g1MVbMzQKs8IFiWnXrtW4WNpeI0nPM3pZikoG5SdBMUJAbccZWFObGx70yehQK
    ReHQBsPye5rJqlP9YqgPALslv+I1vdL2cRJpBbIEAiK2y898zXacK1MRPsAWQOPTOKu9YCVHrfC6OCCc90bOdnevocUgdWBg
    hcv+Torojdh6qvmwTPmqfhlIwlwC+4qMAcNq5Nbr4fmQ1PhpplzeoD8JJS3CCOaft05hMs534ltXj9/jOsNy5g==
  `;

  return { hashSteps, hashPartSync, encode64, decode64, sliceRounds: SLICE_ROUNDS, piWords: thePiWords };
}

let shared: BcryptCore | undefined;

/** The main thread's core: the event loop's fallback, and bcrypt's base64 for bcrypt.ts. */
export function sharedBcryptCore(): BcryptCore {
  shared ??= bcryptCore();
  return shared;
}
