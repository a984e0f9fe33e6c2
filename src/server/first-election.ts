// What a member of several does about its first election while its peers come up (see
// KvServer's #advanceTicksWhenPeersUp). Pure: the caller probes the peers and acts.
//
// - etcd's adjustTicks: once any peer answers, fast-forward the election clock to two ticks
//   short of a timeout ("advance"), once.
// - On the very first start of a new cluster, every log holds the same bootstrap entries,
//   so any member can win: the member with the lowest id campaigns as soon as a quorum
//   (itself included) answers ("campaign"), instead of waiting out 2-11 more ticks. All
//   members agree on who that is, so there is no split vote; if it is down, the others
//   elect on their fast-forwarded clocks. On a restart logs differ, and etcd's rule stands.

export type FirstElectionStep = "campaign" | "advance" | "wait" | "done";

export interface FirstElectionState {
  /** The first start of a new cluster (raft bootstrapped from --initial-cluster). */
  fresh: boolean;
  memberId: number;
  /** Every voter's id, this member's included. */
  voters: readonly number[];
  /** Peers that answered the last probe. */
  peersUp: number;
  /** The clock was fast-forwarded already. */
  advanced: boolean;
}

export function firstElectionStep(s: FirstElectionState): FirstElectionStep {
  const first = s.fresh && s.voters.length > 1 && s.memberId === Math.min(...s.voters);
  const quorum = Math.floor(s.voters.length / 2) + 1;
  if (first && s.peersUp + 1 >= quorum) return "campaign";
  if (s.peersUp > 0 && !s.advanced) return "advance";
  // The first member keeps probing until a quorum is up; the others are done once advanced.
  return first || !s.advanced ? "wait" : "done";
}
