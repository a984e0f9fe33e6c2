// Ports for this folder's unit tests: each test file has its own slice of the range given
// to this work (23400-23449), so files running in parallel never race for one.
import { portIn } from "../../ports.test-helper.ts";

/** A port of [lo, hi] that is free now (probed by binding), never the same one twice. */
export function portPicker(lo: number, hi: number): () => Promise<number> {
  return () => portIn([lo, hi]);
}
