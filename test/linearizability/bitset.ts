// The set of linearized operations, with an O(1) key for the memo table.
//
// The key is a Zobrist hash: each index owns two fixed pseudo-random 32-bit words, and the
// set's hash is the XOR of the words of its members, updated on every set/clear. Together
// with the member count that is ~64 bits; two different sets share a key with probability
// ~2^-64 per pair, negligible for the few million sets a search can visit. Joining the
// whole bitset into a string instead would cost O(n) per step.

function splitmix32(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Bitset {
  #words: Uint32Array;
  #zobristA: Uint32Array;
  #zobristB: Uint32Array;
  #hashA = 0;
  #hashB = 0;
  #count = 0;

  constructor(size: number) {
    this.#words = new Uint32Array(Math.ceil(size / 32) || 1);
    this.#zobristA = new Uint32Array(size);
    this.#zobristB = new Uint32Array(size);
    // Fixed seeds: the checker stays deterministic.
    const ra = splitmix32(0x243f6a88);
    const rb = splitmix32(0x85a308d3);
    for (let i = 0; i < size; i++) {
      this.#zobristA[i] = ra();
      this.#zobristB[i] = rb();
    }
  }

  has(i: number): boolean {
    return ((this.#words[i >>> 5]! >>> (i & 31)) & 1) === 1;
  }

  set(i: number): void {
    if (this.has(i)) return;
    this.#words[i >>> 5]! |= 1 << (i & 31);
    this.#flip(i);
    this.#count++;
  }

  clear(i: number): void {
    if (!this.has(i)) return;
    this.#words[i >>> 5]! &= ~(1 << (i & 31));
    this.#flip(i);
    this.#count--;
  }

  get count(): number {
    return this.#count;
  }

  /** A string that identifies the set (see the header for the collision bound). */
  key(): string {
    return `${this.#count}:${this.#hashA.toString(36)}:${this.#hashB.toString(36)}`;
  }

  #flip(i: number): void {
    this.#hashA = (this.#hashA ^ this.#zobristA[i]!) >>> 0;
    this.#hashB = (this.#hashB ^ this.#zobristB[i]!) >>> 0;
  }
}
