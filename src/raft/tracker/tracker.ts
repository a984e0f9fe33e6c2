// The leader's (and candidate's) view of the membership (etcd's tracker/tracker.go):
// the voter and learner sets, one Progress per member, and the votes of an election.

import { VoteResult, committedIndex, voteResult } from "../quorum/majority.ts";
import type { ConfState } from "../types.ts";
import { sortNumbers } from "../util.ts";
import { Progress } from "./progress.ts";

/**
 * Invariant: voters and learners do not intersect.
 * Invariant: progress has exactly the ids of voters ∪ learners, and
 *            progress.get(id).isLearner === learners.has(id).
 */
export class ProgressTracker {
  voters = new Set<number>();
  learners = new Set<number>();
  progress = new Map<number, Progress>();
  /** Votes received in the current (pre-)election; only the first answer per id counts. */
  votes = new Map<number, boolean>();
  readonly maxInflight: number;

  constructor(maxInflight: number) {
    this.maxInflight = maxInflight;
  }

  confState(): ConfState {
    return { voters: this.voterNodes(), learners: this.learnerNodes() };
  }

  /** Exactly one voter (which must be us, if we are leader). */
  isSingleton(): boolean {
    return this.voters.size === 1;
  }

  /** Largest index replicated on a quorum of voters (by their match index). */
  committed(): number {
    return committedIndex(this.voters, (id) => this.progress.get(id)?.match);
  }

  /** Visits every member in increasing id order (deterministic message order). */
  visit(f: (id: number, pr: Progress) => void): void {
    const ids = sortNumbers([...this.progress.keys()]);
    for (const id of ids) f(id, this.progress.get(id)!);
  }

  /** Whether a quorum of voters was recently active (check-quorum). */
  quorumActive(): boolean {
    const votes = new Map<number, boolean>();
    this.visit((id, pr) => {
      if (!pr.isLearner) votes.set(id, pr.recentActive);
    });
    return voteResult(this.voters, votes) === VoteResult.Won;
  }

  voterNodes(): number[] {
    return sortNumbers([...this.voters]);
  }

  learnerNodes(): number[] {
    return sortNumbers([...this.learners]);
  }

  resetVotes(): void {
    this.votes = new Map();
  }

  /** Records id's answer unless it already answered in this election. */
  recordVote(id: number, granted: boolean): void {
    if (!this.votes.has(id)) this.votes.set(id, granted);
  }

  tallyVotes(): { granted: number; rejected: number; result: VoteResult } {
    let granted = 0;
    let rejected = 0;
    for (const [id, pr] of this.progress) {
      if (pr.isLearner) continue;
      const v = this.votes.get(id);
      if (v === undefined) continue;
      if (v) granted++;
      else rejected++;
    }
    return { granted, rejected, result: voteResult(this.voters, this.votes) };
  }
}
