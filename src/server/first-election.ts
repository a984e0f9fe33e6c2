// What a member of several does about its first election while its peers come up (see
// KvServer's #firstElection). Pure: the caller probes the peers, ticks and campaigns.
//
// - etcd's adjustTicks: once any peer answers, fast-forward the election clock to two ticks
//   short of a timeout, so a cluster started together elects in 2..electionTicks+1 ticks
//   instead of a whole timeout or more. etcd advances right after its clock starts; here
//   the first probe a peer answers may come seconds later on a loaded machine (members
//   busy loading code), so the clock is advanced TO two ticks short, counting the ticks it
//   has run, never BY that many: by that many put it past its randomized timeout and the
//   member campaigned at once, in the same milliseconds as the lowest id (below), whose
//   probe the same answers completed (three candidates of one term: a split vote).
// - One step further than etcd: the member with the lowest id campaigns as soon as a
//   quorum (itself included) answers, instead of waiting out more ticks (200 ms-1.1 s of a
//   cluster's start-up or restart). All members agree on who that is.
// - So the others hold back while the lowest id answers: they advance only to half a
//   timeout, which leaves its campaign at least half an election timeout to win. If it
//   cannot win (its log is behind: its pre-vote is refused without raising anyone's term)
//   they still elect 0.5-1.5 timeouts after their clock reached that half; if it stops
//   answering they take the rest of etcd's fast-forward at the next probe.
// - It is safe whatever the logs hold: campaigning always is in Raft, and with pre-vote a
//   member whose log is behind, or one that comes back to a cluster with a live leader (its
//   peers are in their check-quorum lease), is refused without raising anyone's term.
//   Without pre-vote (--pre-vote=false) a member restarting beside a live leader would raise
//   the term and depose it, so the early campaign (and with it the holding back) runs only
//   with pre-vote; etcd's fast-forward runs whenever --initial-election-tick-advance is on.

/**
 * What a member of several does about its first election, from its flags: "off" with
 * --initial-election-tick-advance=false (etcd's adjustTicks then waits the full election
 * timeout); "advance" for etcd's fast-forward alone; "advance-and-campaign" adds the lowest
 * id's early campaign, which is safe only with pre-vote. A member alone always campaigns at
 * once, whatever the flags (etcd fast-forwards a single node unconditionally): not here.
 */
export type FirstElectionMode = "off" | "advance" | "advance-and-campaign";

export function firstElectionMode(flags: { preVote: boolean; initialElectionTickAdvance: boolean }): FirstElectionMode {
  if (!flags.initialElectionTickAdvance) return "off";
  return flags.preVote ? "advance-and-campaign" : "advance";
}

/**
 * Campaign now; tick the election clock `ticks` more times now; probe again soon; hold back
 * (probe again, but only to notice the lowest id going away: no hurry, and the probes cost
 * CPU to members that are still starting); stop probing.
 */
export type FirstElectionStep = { do: "campaign" } | { do: "advance"; ticks: number } | { do: "wait" } | { do: "hold" } | { do: "done" };

export interface FirstElectionState {
  memberId: number;
  /** Every voter's id, this member's included. */
  voters: readonly number[];
  /** The voters other than this member that answered the last probe. */
  up: readonly number[];
  /** The election timeout in ticks (--election-timeout / --heartbeat-interval). */
  electionTicks: number;
  /**
   * Ticks the election clock has run since it started, advances included. Never less than
   * Raft's count (which a vote granted resets), so an advance never overshoots.
   */
  elapsed: number;
  /** The lowest id may campaign early (firstElectionMode "advance-and-campaign"); default true. */
  earlyCampaign?: boolean;
}

export function firstElectionStep(s: FirstElectionState): FirstElectionStep {
  if (s.voters.length <= 1) return { do: "wait" };
  const early = s.earlyCampaign !== false;
  const lowest = Math.min(...s.voters);
  const first = early && s.memberId === lowest;
  const quorum = Math.floor(s.voters.length / 2) + 1;
  if (first && s.up.length + 1 >= quorum) return { do: "campaign" };
  const whole = Math.max(0, s.electionTicks - 2);
  const holdBack = early && !first && s.up.includes(lowest);
  const target = s.up.length === 0 ? 0 : holdBack ? Math.min(whole, Math.floor(s.electionTicks / 2)) : whole;
  if (target > s.elapsed) return { do: "advance", ticks: target - s.elapsed };
  // The lowest id probes until a quorum is up; one holding back probes on, to take the rest
  // of the advance if the lowest id goes away; the others are done once at etcd's mark.
  if (first) return { do: "wait" };
  if (s.elapsed >= whole) return { do: "done" };
  return holdBack ? { do: "hold" } : { do: "wait" };
}
