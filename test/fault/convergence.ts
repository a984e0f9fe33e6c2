// "All members converge to the same state": once faults are healed and no client runs,
// every member must reach the same applied index, and members at the same applied index
// must report the same hash of the replicated state (kvctl's peer endpoint GET /hash).
//
// One sample where every member reports the same appliedIndex decides: apply is
// deterministic, so equal indexes with different hashes is a divergence, not a race (each
// member computes its hash and index together, synchronously). Members that never agree on
// an index within the deadline did not converge either. etcd 3.4 has no /hash: skipped.

import { ServerKind, sleep, type Cluster, type StateHash } from "./cluster.ts";

export const ConvergenceVerdict = { converged: "converged", diverged: "diverged", stuck: "stuck", skipped: "skipped" } as const;
export type ConvergenceVerdict = (typeof ConvergenceVerdict)[keyof typeof ConvergenceVerdict];

export interface ConvergenceResult {
  verdict: ConvergenceVerdict;
  /** When it was checked, e.g. "after healing". */
  phase: string;
  waitedMs: number;
  /** The last sample, one per member (undefined: no answer). */
  members: Array<{ name: string; state: StateHash | undefined }>;
  note?: string;
}

export async function checkConvergence(opts: { cluster: Pick<Cluster, "members" | "stateHash">; server: ServerKind; phase: string; timeoutMs: number }): Promise<ConvergenceResult> {
  const { cluster } = opts;
  const t0 = Date.now();
  if (opts.server !== ServerKind.kvctl) {
    return { verdict: ConvergenceVerdict.skipped, phase: opts.phase, waitedMs: 0, members: [], note: `${opts.server} has no GET /hash on its peer port` };
  }
  for (;;) {
    const states = await Promise.all(cluster.members.map((m) => cluster.stateHash(m.index)));
    const members = cluster.members.map((m, i) => ({ name: m.name, state: states[i] }));
    const answered = states.filter((s): s is StateHash => s !== undefined);
    const waitedMs = Date.now() - t0;
    if (answered.length === states.length && new Set(answered.map((s) => s.appliedIndex)).size === 1) {
      const same = new Set(answered.map((s) => s.hash)).size === 1;
      return { verdict: same ? ConvergenceVerdict.converged : ConvergenceVerdict.diverged, phase: opts.phase, waitedMs, members };
    }
    if (waitedMs > opts.timeoutMs) {
      return { verdict: ConvergenceVerdict.stuck, phase: opts.phase, waitedMs, members, note: `no common applied index within ${opts.timeoutMs} ms` };
    }
    await sleep(100);
  }
}

/** One line for the verdict, then (unless it converged) one line per member. */
export function describeConvergence(r: ConvergenceResult): string[] {
  const head = `${r.phase}: ${r.verdict}`;
  if (r.verdict === ConvergenceVerdict.skipped) return [`${head} (${r.note ?? ""})`];
  const first = r.members[0]?.state;
  if (r.verdict === ConvergenceVerdict.converged && first !== undefined) {
    return [`${head}: ${r.members.length} members at applied index ${first.appliedIndex}, hash ${first.hash.slice(0, 16)}… (waited ${r.waitedMs} ms)`];
  }
  return [
    `${head}${r.note === undefined ? "" : ` (${r.note})`} after ${r.waitedMs} ms`,
    ...r.members.map(({ name, state }) =>
      state === undefined ? `  ${name}: no answer` : `  ${name}: applied ${state.appliedIndex} store ${state.storeIndex} hash ${state.hash}`,
    ),
  ];
}
