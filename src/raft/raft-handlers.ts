// The Raft state machine, part 4: how a follower handles its leader's MsgApp,
// MsgHeartbeat and MsgSnap (etcd's handleAppendEntries, handleHeartbeat,
// handleSnapshot, restore).

import { restoreTracker } from "./confchange/confchange.ts";
import type { Raft } from "./raft.ts";
import { type Message, type Snapshot, MessageType as MT, None, StateType, message } from "./types.ts";

/** §5.3: append if our log matches at (m.index, m.logTerm), else reject with a hint. */
export function handleAppendEntries(r: Raft, m: Message): void {
  if (m.index < r.raftLog.committed) {
    // Everything up to our commit index is settled; tell the leader where we are.
    r.send(message({ type: MT.MsgAppResp, to: m.from, index: r.raftLog.committed }));
    return;
  }
  const lastNewI = r.raftLog.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
  if (lastNewI !== undefined) {
    r.send(message({ type: MT.MsgAppResp, to: m.from, index: lastNewI }));
  } else {
    r.logger.debug(
      `${r.id} [logterm: ${r.raftLog.zeroTermOnErrCompacted(m.index)}, index: ${m.index}] rejected MsgApp [logterm: ${m.logTerm}, index: ${m.index}] from ${m.from}`,
    );
    // The hint (our last index) lets the leader skip straight past entries we lack.
    r.send(
      message({ type: MT.MsgAppResp, to: m.from, index: m.index, reject: true, rejectHint: r.raftLog.lastIndex() }),
    );
  }
}

export function handleHeartbeat(r: Raft, m: Message): void {
  // The leader caps m.commit at our match index, so this never outruns our log.
  r.raftLog.commitTo(m.commit);
  r.send(message({ type: MT.MsgHeartbeatResp, to: m.from, context: m.context }));
}

export function handleSnapshot(r: Raft, m: Message): void {
  const s = m.snapshot;
  if (s === undefined) return;
  const { index: sindex, term: sterm } = s.metadata;
  if (restore(r, s)) {
    r.logger.info(`${r.id} [commit: ${r.raftLog.committed}] restored snapshot [index: ${sindex}, term: ${sterm}]`);
    r.send(message({ type: MT.MsgAppResp, to: m.from, index: r.raftLog.lastIndex() }));
  } else {
    r.logger.info(`${r.id} [commit: ${r.raftLog.committed}] ignored snapshot [index: ${sindex}, term: ${sterm}]`);
    r.send(message({ type: MT.MsgAppResp, to: m.from, index: r.raftLog.committed }));
  }
}

/**
 * Replaces log and membership with the snapshot's. Returns false when the snapshot is
 * ignored: not newer than our commit index, we are not a follower, we are not in its
 * configuration, or our log already has its last entry (then commit just moves up).
 */
export function restore(r: Raft, s: Snapshot): boolean {
  if (s.metadata.index <= r.raftLog.committed) return false;
  if (r.state !== StateType.Follower) {
    // Defense in depth: a non-follower must never apply a snapshot.
    r.logger.warn(`${r.id} attempted to restore snapshot as leader; should never happen`);
    r.becomeFollower(r.term + 1, None);
    return false;
  }
  const cs = s.metadata.confState;
  if (!cs.voters.includes(r.id) && !cs.learners.includes(r.id)) {
    r.logger.warn(`${r.id} attempted to restore snapshot but it is not in the ConfState; should never happen`);
    return false;
  }
  if (r.raftLog.matchTerm(s.metadata.index, s.metadata.term)) {
    r.logger.info(
      `${r.id} [commit: ${r.raftLog.committed}, lastindex: ${r.raftLog.lastIndex()}, lastterm: ${r.raftLog.lastTerm()}] fast-forwarded commit to snapshot [index: ${s.metadata.index}, term: ${s.metadata.term}]`,
    );
    r.raftLog.commitTo(s.metadata.index);
    return false;
  }
  r.raftLog.restore(s);
  r.prs = restoreTracker(cs, { maxInflight: r.prs.maxInflight, lastIndex: r.raftLog.lastIndex() });
  r.afterConfigChange();
  const self = r.prs.progress.get(r.id)!;
  self.maybeUpdate(self.next - 1);
  r.logger.info(
    `${r.id} [commit: ${r.raftLog.committed}, lastindex: ${r.raftLog.lastIndex()}, lastterm: ${r.raftLog.lastTerm()}] restored snapshot [index: ${s.metadata.index}, term: ${s.metadata.term}]`,
  );
  return true;
}
