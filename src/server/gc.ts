// A full, compacting garbage collection once the member is idle, for the moments the
// server knows a large part of the heap just became garbage: the raft log entries a
// snapshot compacted away (~110 MiB at 100k entries of 1 KiB; their slabs are unmapped
// once collected, see raft/entry-arena.ts). V8 collects when allocation goes on, so a
// member that turns idle after such a moment kept that memory resident until its next
// writes (V8's memory reducer did not run either: still resident 10 s later). Compacting:
// the key index lives on old-space pages among promoted request garbage, and a plain full
// GC left 84 MiB of old space committed for 31 MiB live (100k keys); compacted, 32 MiB.
//
// The collection is one pause (~0.2 s at 100k keys, ~0.7 s at 300k on a busy two-core
// machine), so it waits for an idle moment: while the member is busy, V8's own
// (incremental) collections free the entries anyway.

import { performance, type EventLoopUtilization } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** How often the event loop's utilisation is sampled, and below which the member is idle. */
const POLL_MS = 250;
const IDLE_BELOW = 0.1;
/** After this long without an idle moment, V8 will have collected on its own. */
const GIVE_UP_MS = 60_000;

let gc: (() => void) | null | undefined;
let waiting = false;

function exposedGc(): (() => void) | null {
  if (gc === undefined) {
    try {
      setFlagsFromString("--expose-gc");
      gc = runInNewContext("gc") as () => void;
    } catch {
      gc = null;
    }
  }
  return gc;
}

/** Collects (and compacts) now; false where V8 does not expose gc. */
export function collectGarbage(): boolean {
  const run = exposedGc();
  if (run === null) return false;
  setFlagsFromString("--compact-on-every-full-gc");
  try {
    run();
  } finally {
    setFlagsFromString("--no-compact-on-every-full-gc");
  }
  return true;
}

/**
 * Collects at the first moment the event loop was idle for a poll interval, within a
 * minute; `done` hears how long the pause took. A second call while one waits adds nothing.
 */
export function collectGarbageWhenIdle(done?: (ms: number) => void): void {
  if (waiting) return;
  waiting = true;
  const started = performance.now();
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const poll = (): void => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (busy < IDLE_BELOW) {
      waiting = false;
      const t0 = performance.now();
      if (collectGarbage()) done?.(performance.now() - t0);
    } else if (performance.now() - started < GIVE_UP_MS) {
      setTimeout(poll, POLL_MS).unref();
    } else {
      waiting = false;
    }
  };
  setTimeout(poll, POLL_MS).unref();
}
