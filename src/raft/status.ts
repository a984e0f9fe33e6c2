// A copy of a node's state for monitoring and for the server's status endpoints
// (etcd's status.go). Progress is only known on the leader.

import type { Raft } from "./raft.ts";
import type { ProgressState } from "./tracker/progress.ts";
import { type ConfState, type HardState, type SoftState, StateType } from "./types.ts";

export interface ProgressStatus {
  match: number;
  next: number;
  state: ProgressState;
  pendingSnapshot: number;
  recentActive: boolean;
  probeSent: boolean;
  isLearner: boolean;
  /** Number of MsgApps in flight. */
  inflight: number;
}

export interface Status {
  id: number;
  hardState: HardState;
  softState: SoftState;
  applied: number;
  /** Target of a leadership transfer in progress, 0 if none. */
  leadTransferee: number;
  config: ConfState;
  /** Per-member replication progress; present only on the leader. */
  progress?: Map<number, ProgressStatus>;
}

export function getStatus(r: Raft): Status {
  const s: Status = {
    id: r.id,
    hardState: r.hardState(),
    softState: r.softState(),
    applied: r.raftLog.applied,
    leadTransferee: r.leadTransferee,
    config: r.prs.confState(),
  };
  if (r.state === StateType.Leader) {
    const progress = new Map<number, ProgressStatus>();
    r.prs.visit((id, pr) => {
      progress.set(id, {
        match: pr.match,
        next: pr.next,
        state: pr.state,
        pendingSnapshot: pr.pendingSnapshot,
        recentActive: pr.recentActive,
        probeSent: pr.probeSent,
        isLearner: pr.isLearner,
        inflight: pr.inflights.count(),
      });
    });
    s.progress = progress;
  }
  return s;
}
