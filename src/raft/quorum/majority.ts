// Majority quorums (etcd's quorum/majority.go), for single-step membership changes:
// the configuration is one set of voters, and a quorum is any floor(n/2)+1 of them.
// Joint consensus (two sets) is not implemented; see ../README.md.

import { sortNumbers } from "../util.ts";

/** Outcome of a vote count. Numbers match etcd's quorum.VoteResult. */
export const VoteResult = { Pending: 1, Lost: 2, Won: 3 } as const;
export type VoteResult = (typeof VoteResult)[keyof typeof VoteResult];

/**
 * Largest index acknowledged by a quorum of `voters`; `acked(id)` gives a voter's
 * acknowledged index (undefined = not known yet, counted as 0).
 * An empty voter set yields +Infinity by convention (it constrains nothing).
 */
export function committedIndex(voters: ReadonlySet<number>, acked: (id: number) => number | undefined): number {
  const n = voters.size;
  if (n === 0) return Number.POSITIVE_INFINITY;
  const srt: number[] = [];
  for (const id of voters) srt.push(acked(id) ?? 0);
  sortNumbers(srt);
  // From the top, n/2+1 voters have acked at least srt[pos].
  const pos = n - (Math.floor(n / 2) + 1);
  return srt[pos]!;
}

/**
 * Won once a quorum said yes, Lost once a quorum can no longer say yes, else Pending.
 * Votes from ids outside `voters` are ignored. An empty set wins by convention.
 */
export function voteResult(voters: ReadonlySet<number>, votes: ReadonlyMap<number, boolean>): VoteResult {
  if (voters.size === 0) return VoteResult.Won;
  let yes = 0;
  let no = 0;
  let missing = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === undefined) missing++;
    else if (v) yes++;
    else no++;
  }
  const q = Math.floor(voters.size / 2) + 1;
  if (yes >= q) return VoteResult.Won;
  if (yes + missing >= q) return VoteResult.Pending;
  return VoteResult.Lost;
}
