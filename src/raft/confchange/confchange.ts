// Single-step membership changes (etcd's confchange.Changer.Simple and Restore).
// One change at a time moves the voter set by at most one member, so any two
// consecutive configurations share a quorum member: no joint consensus needed (Raft
// thesis §4.1). The leader enforces "one pending change at a time" (raft.ts).

import { RaftInvariantError } from "../errors.ts";
import { Progress } from "../tracker/progress.ts";
import { ProgressTracker } from "../tracker/tracker.ts";
import { type ConfChangeType, type ConfState, ConfChangeType as CCT } from "../types.ts";

export interface SingleChange {
  type: ConfChangeType;
  nodeId: number;
}

function initProgress(trk: ProgressTracker, id: number, opts: { isLearner: boolean; lastIndex: number }): void {
  if (opts.isLearner) trk.learners.add(id);
  else trk.voters.add(id);
  trk.progress.set(
    id,
    new Progress({
      // Probing starts at the last index (etcd's choice: the new member usually has
      // nothing and the rejection hint then walks next down, or a snapshot follows).
      next: opts.lastIndex,
      match: 0,
      maxInflight: trk.maxInflight,
      isLearner: opts.isLearner,
      // Active from the start, so check-quorum does not count a member that had no
      // chance to talk to us yet as down.
      recentActive: true,
    }),
  );
}

/**
 * Applies one change to `trk` in place. nodeId 0 is a no-op (etcd's server zeroes the
 * id of a change it decided not to apply). Throws RaftInvariantError, leaving `trk`
 * untouched, if the change would remove the last voter.
 */
export function applySimpleChange(trk: ProgressTracker, cc: SingleChange, lastIndex: number): void {
  const id = cc.nodeId;
  if (id === 0) return;
  const leavesNoVoter =
    trk.voters.size === 1 &&
    trk.voters.has(id) &&
    (cc.type === CCT.RemoveNode || cc.type === CCT.AddLearnerNode);
  if (leavesNoVoter) throw new RaftInvariantError("removed all voters");
  const pr = trk.progress.get(id);
  switch (cc.type) {
    case CCT.AddNode:
      if (pr === undefined) {
        initProgress(trk, id, { isLearner: false, lastIndex });
      } else {
        // Promotion of a learner (or a repeat of an add: idempotent).
        pr.isLearner = false;
        trk.learners.delete(id);
        trk.voters.add(id);
      }
      return;
    case CCT.AddLearnerNode:
      if (pr === undefined) {
        initProgress(trk, id, { isLearner: true, lastIndex });
      } else if (!pr.isLearner) {
        // Demotion keeps the progress: the member still has its log.
        trk.voters.delete(id);
        trk.learners.add(id);
        pr.isLearner = true;
      }
      return;
    case CCT.RemoveNode:
      trk.voters.delete(id);
      trk.learners.delete(id);
      trk.progress.delete(id);
      return;
    case CCT.UpdateNode:
      return;
  }
}

/** A fresh tracker holding the membership of `cs` (etcd's confchange.Restore). */
export function restoreTracker(cs: ConfState, opts: { maxInflight: number; lastIndex: number }): ProgressTracker {
  const trk = new ProgressTracker(opts.maxInflight);
  for (const id of cs.voters) {
    if (cs.learners.includes(id)) throw new RaftInvariantError(`${id} is in both voters and learners`);
    applySimpleChange(trk, { type: CCT.AddNode, nodeId: id }, opts.lastIndex);
  }
  for (const id of cs.learners) applySimpleChange(trk, { type: CCT.AddLearnerNode, nodeId: id }, opts.lastIndex);
  return trk;
}
