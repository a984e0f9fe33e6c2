// Configuration of a Raft node (etcd's raft.Config) and its validation.

import { invariant } from "./errors.ts";
import type { Storage } from "./storage.ts";
import type { RaftLogger } from "./types.ts";

export interface Config {
  /** This node's id; must be > 0. */
  id: number;
  storage: Storage;
  /**
   * Ticks without hearing from a leader before a follower campaigns; the actual
   * timeout is random in [electionTick, 2*electionTick). Must be > heartbeatTick.
   */
  electionTick: number;
  /** Ticks between the leader's heartbeats. */
  heartbeatTick: number;
  /** Last applied index when restarting: entries <= applied are not handed out again. */
  applied?: number;
  /** Max bytes of entries per MsgApp (at least one entry is always sent). Default 1 MiB. */
  maxSizePerMsg?: number;
  /** Max bytes of committed entries per Ready. Default: maxSizePerMsg. */
  maxCommittedSizePerReady?: number;
  /** Max unacknowledged MsgApps per follower in replicate state. Default 512. */
  maxInflightMsgs?: number;
  /** Leader steps down when it has not heard from a quorum for an election timeout. */
  checkQuorum?: boolean;
  /** Pre-vote (thesis §9.6): a partitioned node rejoining cannot force a new term. */
  preVote?: boolean;
  /**
   * A candidate waits for its votes a random [electionTick/2, electionTick) instead of
   * [electionTick, 2*electionTick) before campaigning again (not in etcd's raft). Only
   * liveness changes: after a split vote the candidates, who timed out first anyway,
   * retry before any follower's timer runs out, instead of drawing a whole new timeout.
   * Votes for the abandoned candidacy that arrive during the next pre-vote at the same
   * term still count (stepCandidate's lateVote), so a vote round trip longer than the
   * short wait does not lose the election.
   */
  quickCandidateRetry?: boolean;
  /** Followers drop proposals instead of forwarding them to the leader. */
  disableProposalForwarding?: boolean;
  /** Uniform in [0, 1); the only source of randomness (election timeouts). */
  random: () => number;
  logger?: RaftLogger;
  /** Tests only (etcd's unexported peers): initial voters when storage has none. */
  peers?: number[];
  /** Tests only: initial learners when storage has none. */
  learners?: number[];
}

export const defaultMaxSizePerMsg = 1024 * 1024;
export const defaultMaxInflightMsgs = 512;

export function validateConfig(c: Config): void {
  invariant(Number.isSafeInteger(c.id) && c.id > 0, () => "cannot use none as id");
  invariant(c.heartbeatTick > 0, () => "heartbeat tick must be greater than 0");
  invariant(c.electionTick > c.heartbeatTick, () => "election tick must be greater than heartbeat tick");
  invariant((c.maxInflightMsgs ?? defaultMaxInflightMsgs) > 0, () => "max inflight messages must be greater than 0");
}
