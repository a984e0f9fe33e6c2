// mulberry32: a tiny seeded generator for randomized tests, so a failure can be replayed
// from the printed seed. Unit tests under src/ keep their own copies: src/ compiles on
// its own (rootDir), and src/raft imports nothing outside itself.
export type Rng = () => number;

export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
