// How soon V8 optimizes the server's hot functions. A member's write path runs a few
// hundred functions (HTTP parsing, the v2 store, Raft, the WAL, the peer codec), and V8
// runs each in its interpreter and baseline code, with a generic inline cache behind
// every property load, until the function has spent its "interrupt budget" (66 KiB of
// bytecode executed by default) a few times; only then does TurboFan compile it, on a
// background thread. At one connection that took 1,500-2,000 writes: measured on three
// members (the harness' flags, serial v2 PUTs to the leader, CPU of all three members per
// 1,000 writes, three rounds, load 4-8), writes 1,000-2,000 cost 1,910-1,940 us of CPU
// each with V8's default and 1,030-1,230 us with a quarter of it (16 KiB); a member that
// had served 25 s of writes spent 863 us. The first writes cost more with the smaller
// budget (TurboFan compiles sooner, some functions with less feedback), and the steady
// state is the same: it is the warm-up that gets shorter. A budget of 8 KiB was no better.
//
// Set at run time, after serve.cjs was compiled from its code cache: V8 checks a cache
// against its flags, and would refuse one made with other flags.
import { setFlagsFromString } from "node:v8";

/** The interrupt budget (bytes of bytecode) the server runs with. */
export const SERVER_INTERRUPT_BUDGET = 16 * 1024;

/**
 * Lowers V8's interrupt budget for the rest of the process, unless node was started
 * with its own (`node --interrupt-budget=N`), which is left as given.
 */
export function tierUpSooner(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((a) => a.startsWith("--interrupt-budget") || a.startsWith("--interrupt_budget"))) return false;
  setFlagsFromString(`--interrupt-budget=${SERVER_INTERRUPT_BUDGET}`);
  return true;
}
