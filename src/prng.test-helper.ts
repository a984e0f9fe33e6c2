// mulberry32: the one seeded generator of the randomized tests (src/ and test/), so a
// failure can be replayed from the printed seed. src/raft keeps its own copy in
// raft.test-helper.ts: raft imports nothing outside its folder, tests included.
export type Rng = () => number;

/** Floats in [0, 1), the same sequence for the same seed on every machine. */
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
