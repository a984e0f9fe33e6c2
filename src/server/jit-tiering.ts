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
// How much TurboFan inlines into one function. V8 inlines callees until their bytecode adds
// up to 920 bytes; a request handler or the Ready loop then compiles as one large graph
// (30-60 ms of compiler time each under load). A member that runs for hours pays that once,
// but under the fault harness members are killed every half a minute or so, and each new
// process compiles its hot paths again: 300-1,300 TurboFan compiles per member life,
// ~28 % of the members' CPU (perf). With the cumulative budget at 300 bytes, 4-minute runs
// of the fault workload (5 members, all four faults, seed 5), alternated, load 3-5:
// 293 / 305 ops/s with V8's default, 357 / 333 / 336 with 300 and 316 with 150; the
// members' CPU per answered operation 2.79 / 2.90 ms against 2.31 / 2.56 / 2.57 (150:
// 2.59). One member's write rows (wrk, 1/16/64 connections, v2 PUT and v3 put, alternated)
// showed no difference beyond the noise.
//
// Set at run time, after serve.cjs was compiled from its code cache: V8 checks a cache
// against its flags, and would refuse one made with other flags.
import { setFlagsFromString } from "node:v8";

/** The interrupt budget (bytes of bytecode) the server runs with. */
export const SERVER_INTERRUPT_BUDGET = 16 * 1024;
/** Bytecode bytes TurboFan may inline into one function (V8's default: 920). */
export const SERVER_INLINE_BUDGET = 300;

/** Whether node's command line already sets V8's flag `name` (dashes or underscores). */
function given(execArgv: readonly string[], name: string): boolean {
  const dashed = `--${name}`;
  return execArgv.some((a) => {
    const arg = a.replaceAll("_", "-");
    return arg === dashed || arg.startsWith(`${dashed}=`);
  });
}

/**
 * Tunes V8's tiering for the rest of the process: a lower interrupt budget (hot functions
 * optimized sooner) and a smaller inlining budget (each optimization cheaper). A flag
 * given on node's command line (`node --interrupt-budget=N`) is left as given. Returns
 * the flags it set.
 */
export function tuneJitForServer(execArgv: readonly string[] = process.execArgv): string[] {
  const set: string[] = [];
  if (!given(execArgv, "interrupt-budget")) set.push(`--interrupt-budget=${SERVER_INTERRUPT_BUDGET}`);
  if (!given(execArgv, "max-inlined-bytecode-size-cumulative")) set.push(`--max-inlined-bytecode-size-cumulative=${SERVER_INLINE_BUDGET}`);
  for (const flag of set) setFlagsFromString(flag);
  return set;
}
