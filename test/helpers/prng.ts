// The seeded generator of randomized tests lives beside the unit tests (src/ compiles on
// its own); test/ uses the same one.
export { mulberry32, type Rng } from "../../src/prng.test-helper.ts";
