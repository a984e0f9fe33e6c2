// A follower's replication progress as the leader sees it (etcd's tracker/progress.go
// and state.go). Progress is a small state machine:
//
//   StateProbe      --ack-->                StateReplicate
//   StateReplicate  --reject/unreachable--> StateProbe
//   any             --entries compacted-->  StateSnapshot --applied/failed--> StateProbe
//
// Probe: at most one MsgApp per heartbeat interval, to find the match point.
// Replicate: optimistic pipelining, bounded by the Inflights window.
// Snapshot: nothing is sent until the snapshot is reported applied or failed.

import { Inflights } from "./inflights.ts";

export const ProgressState = {
  Probe: "StateProbe",
  Replicate: "StateReplicate",
  Snapshot: "StateSnapshot",
} as const;
export type ProgressState = (typeof ProgressState)[keyof typeof ProgressState];

export class Progress {
  /**
   * Highest index known to be in the follower's log.
   * Invariant: match < next.
   */
  match: number;
  /** Index of the next entry to send. */
  next: number;
  state: ProgressState = ProgressState.Probe;
  /** In StateSnapshot: index of the snapshot sent (0 otherwise). */
  pendingSnapshot = 0;
  /**
   * Whether we heard from the follower since the last check-quorum round. New
   * members start active so that check-quorum does not depose the leader at once.
   */
  recentActive = false;
  /** In StateProbe: a probe is outstanding, pause until an ack or a heartbeat response. */
  probeSent = false;
  /** MsgApps sent but not acknowledged (StateReplicate flow control). */
  inflights: Inflights;
  isLearner: boolean;

  constructor(init: { match: number; next: number; maxInflight: number; isLearner?: boolean; recentActive?: boolean }) {
    this.match = init.match;
    this.next = init.next;
    this.inflights = new Inflights(init.maxInflight);
    this.isLearner = init.isLearner ?? false;
    this.recentActive = init.recentActive ?? false;
  }

  /** Moves to `state`, clearing probeSent, pendingSnapshot and the inflights. */
  resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.state = state;
    this.inflights.reset();
  }

  probeAcked(): void {
    this.probeSent = false;
  }

  /**
   * Back to probing from match+1 — or, coming from a snapshot, from just after the
   * snapshot, which the follower now has.
   */
  becomeProbe(): void {
    if (this.state === ProgressState.Snapshot) {
      const pendingSnapshot = this.pendingSnapshot;
      this.resetState(ProgressState.Probe);
      this.next = Math.max(this.match + 1, pendingSnapshot + 1);
    } else {
      this.resetState(ProgressState.Probe);
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState(ProgressState.Replicate);
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState(ProgressState.Snapshot);
    this.pendingSnapshot = snapshotIndex;
  }

  /**
   * An MsgAppResp acknowledged index n. Returns false if the ack is stale (n <= match);
   * next still moves past n in either case.
   */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeAcked();
    }
    if (this.next < n + 1) this.next = n + 1;
    return updated;
  }

  /** Entries up to n are in flight: the next send starts after them. */
  optimisticUpdate(n: number): void {
    this.next = n + 1;
  }

  /**
   * The follower rejected an MsgApp at index `rejected`; `last` is its last index.
   * Returns false for stale rejections (duplicated / reordered messages), which leave
   * the progress untouched.
   */
  maybeDecrTo(rejected: number, last: number): boolean {
    if (this.state === ProgressState.Replicate) {
      // A rejection at or below match must be stale.
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    // While probing, only the rejection of the outstanding probe (at next-1) counts.
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, last + 1), 1);
    this.probeSent = false;
    return true;
  }

  /** Whether sending appends to this follower is throttled right now. */
  isPaused(): boolean {
    switch (this.state) {
      case ProgressState.Probe:
        return this.probeSent;
      case ProgressState.Replicate:
        return this.inflights.full();
      case ProgressState.Snapshot:
        return true;
    }
  }

  toString(): string {
    let s = `${this.state} match=${this.match} next=${this.next}`;
    if (this.isLearner) s += " learner";
    if (this.isPaused()) s += " paused";
    if (this.pendingSnapshot > 0) s += ` pendingSnap=${this.pendingSnapshot}`;
    if (!this.recentActive) s += " inactive";
    const n = this.inflights.count();
    if (n > 0) s += ` inflight=${n}${this.inflights.full() ? "[full]" : ""}`;
    return s;
  }
}
