// "A new leader is elected within 3 election timeouts of the leader's death": after a
// leader-kill the nemesis polls the surviving members' GET /v2/stats/leader every 20 ms and
// records how long after the SIGKILL one of them first answered it (it leads). The new leader
// itself is the first to know, so this is the earliest a client could see it.
// Resolution: the 20 ms poll plus one loopback round trip.

import { sleep, type Cluster } from "./cluster.ts";

const POLL_MS = 20;

export interface ElectionTiming {
  /** Milliseconds from the kill to a survivor leading (/v2/stats/leader 200); undefined: none before the cap. */
  newLeaderMs: number | undefined;
  capMs: number;
}

/** Polls every member but `dead` until one leads, or `capMs` after `killedAt` passes. */
export async function timeNewLeader(opts: { cluster: Cluster; dead: number; killedAt: number; capMs: number; now: () => number; signal: AbortSignal }): Promise<ElectionTiming> {
  const survivors = opts.cluster.members.filter((m) => m.index !== opts.dead).map((m) => m.index);
  while (!opts.signal.aborted && opts.now() - opts.killedAt < opts.capMs) {
    const round = opts.now();
    const seenAt = await Promise.all(survivors.map(async (i) => ((await opts.cluster.saysLeader(i, 500)) ? opts.now() : undefined)));
    const first = seenAt.filter((t): t is number => t !== undefined).sort((a, b) => a - b)[0];
    if (first !== undefined) return { newLeaderMs: first - opts.killedAt, capMs: opts.capMs };
    await sleep(Math.max(0, POLL_MS - (opts.now() - round)), opts.signal);
  }
  return { newLeaderMs: undefined, capMs: opts.capMs };
}

export interface ElectionSummary {
  count: number;
  maxMs: number | undefined;
  medianMs: number | undefined;
  limitMs: number;
  /** Human-readable: the kills whose new leader came later than the limit (or never). */
  slow: string[];
}

/** @param timings `notes` are appended to a slow election's line (e.g. a disk stall it overlapped) */
export function summarizeElections(timings: ReadonlyArray<{ target: string; timing: ElectionTiming; notes?: readonly string[] }>, limitMs: number): ElectionSummary {
  const ms = timings.map((t) => t.timing.newLeaderMs).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
  const mid = Math.floor(ms.length / 2);
  const median = ms.length === 0 ? undefined : ms.length % 2 === 1 ? ms[mid] : (ms[mid - 1]! + ms[mid]!) / 2;
  const slow = timings
    .filter((t) => t.timing.newLeaderMs === undefined || t.timing.newLeaderMs > limitMs)
    .map((t) => {
      const head = t.timing.newLeaderMs === undefined ? `${t.target}: no new leader within ${t.timing.capMs} ms` : `${t.target}: new leader after ${t.timing.newLeaderMs.toFixed(0)} ms`;
      return [head, ...(t.notes ?? [])].join(" — ");
    });
  return { count: timings.length, maxMs: ms.at(-1), medianMs: median, limitMs, slow };
}
