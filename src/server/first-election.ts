// What a member of several does about its first election while its peers come up (see
// KvServer's #firstElection). Pure: the caller probes the peers and acts.
//
// - etcd's adjustTicks: once any peer answers, fast-forward the election clock to two ticks
//   short of a timeout ("advance"), once.
// - One step further than etcd: the member with the lowest id campaigns as soon as a
//   quorum (itself included) answers ("campaign"), instead of waiting out 2-11 more ticks
//   (200 ms-1.1 s of a cluster's start-up or restart). All members agree on who that is, so
//   there is no split vote. It is safe whatever the logs hold: campaigning always is in
//   Raft, and with pre-vote a member whose log is behind, or one that comes back to a
//   cluster with a live leader (its peers are in their check-quorum lease), is refused
//   without raising anyone's term; the others then elect on their fast-forwarded clocks,
//   as they do when the lowest id is down. Without pre-vote (--pre-vote=false) that
//   argument fails: a member restarting beside a live leader would raise the term and
//   depose it. So the early campaign runs only with pre-vote; the fast-forward, as etcd's,
//   runs whenever --initial-election-tick-advance is on (its default).

export type FirstElectionStep = "campaign" | "advance" | "wait" | "done";

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

export interface FirstElectionState {
  memberId: number;
  /** Every voter's id, this member's included. */
  voters: readonly number[];
  /** Voters other than this member that answered the last probe. */
  peersUp: number;
  /** The clock was fast-forwarded already. */
  advanced: boolean;
  /** The lowest id may campaign early (firstElectionMode "advance-and-campaign"); default true. */
  earlyCampaign?: boolean;
}

export function firstElectionStep(s: FirstElectionState): FirstElectionStep {
  const first = s.earlyCampaign !== false && s.voters.length > 1 && s.memberId === Math.min(...s.voters);
  const quorum = Math.floor(s.voters.length / 2) + 1;
  if (first && s.peersUp + 1 >= quorum) return "campaign";
  if (s.peersUp > 0 && !s.advanced) return "advance";
  // The first member keeps probing until a quorum is up; the others are done once advanced.
  return first || !s.advanced ? "wait" : "done";
}
