// Why a proposal's request timeout passed, told as etcd 3.4.23's parseProposeCtxErr tells
// it. The answer is only a hint for the operator (all are code 14 on v3, 300 on v2), but
// clients and runbooks match these texts, and "possibly due to previous leader failure"
// tells a caller that retrying is safe once the new leader serves.
//
// etcd's rule, in this order:
// - the request began in the two election timeouts before this member became leader:
//   the previous leader likely died with the proposal (leader failure). etcd records the
//   election time only when the member itself becomes leader, so a follower never gives
//   this answer (measured: of two followers writing when the leader was killed, the one
//   elected answered "leader failure", the other the plain timeout);
// - this member leads and fewer than a quorum of members (itself included) have had their
//   link up since before the request began; or it follows and its link to the leader has
//   not been up since before then (connection lost);
// - otherwise, and when no leader is known, the plain "request timed out".
//
// Pure: the member hands in the times (one clock: the transport's, performance.now()).
// It runs only when a deadline has passed, never on the way of a request.
import type { TimeoutKind } from "./errors.ts";

export interface TimeoutView {
  /** When the request began. */
  readonly start: number;
  /** When this member last became leader (etcd's leadElectedTime); undefined if never. */
  readonly leaderElectedAt: number | undefined;
  /** The election timeout (etcd: ElectionTicks x TickMs). */
  readonly electionTimeoutMs: number;
  readonly selfId: number;
  /** The leader this member knows now; 0 for none. */
  readonly leaderId: number;
  /** Every member of the cluster, learners too (etcd counts cluster.Members()). */
  readonly memberIds: readonly number[];
  /** Since when the link to member `id` has been up; undefined while it is down. */
  activeSince(id: number): number | undefined;
}

/** Which of etcd's timeout errors a proposal whose request timeout passed gets. */
export function timeoutKind(v: TimeoutView): TimeoutKind {
  if (v.leaderElectedAt !== undefined) {
    const prevLeadLost = v.leaderElectedAt - 2 * v.electionTimeoutMs;
    // Both ends open, as etcd's start.After(prevLeadLost) && start.Before(curLeadElected).
    if (v.start > prevLeadLost && v.start < v.leaderElectedAt) return "timeoutDueToLeaderFail";
  }
  if (v.leaderId === 0) return "timeout";
  if (v.leaderId === v.selfId) {
    let connected = 0;
    for (const id of v.memberIds) if (id === v.selfId || connectedSince(v, id)) connected++;
    if (connected < Math.floor(v.memberIds.length / 2) + 1) return "timeoutDueToConnectionLost";
    return "timeout";
  }
  return connectedSince(v, v.leaderId) ? "timeout" : "timeoutDueToConnectionLost";
}

/** etcd's isConnectedSince: the link is up, and came up before the request began. */
function connectedSince(v: TimeoutView, id: number): boolean {
  const since = v.activeSince(id);
  return since !== undefined && since < v.start;
}
