// Majority quorums (etcd's quorum/testdata/majority_*.txt, as tables).

import assert from "node:assert/strict";
import { test } from "node:test";
import { VoteResult, committedIndex, voteResult } from "./majority.ts";

const commitCases: Array<{ voters: number[]; acked: Record<number, number>; w: number }> = [
  { voters: [], acked: {}, w: Number.POSITIVE_INFINITY },
  { voters: [1], acked: {}, w: 0 },
  { voters: [1], acked: { 1: 12 }, w: 12 },
  { voters: [1, 2], acked: { 1: 12 }, w: 0 },
  { voters: [1, 2], acked: { 1: 12, 2: 5 }, w: 5 },
  { voters: [1, 2, 3], acked: { 1: 12, 2: 5 }, w: 5 },
  { voters: [1, 2, 3], acked: { 1: 12, 2: 5, 3: 4 }, w: 5 },
  { voters: [1, 2, 3, 4], acked: { 1: 12, 2: 5, 3: 4, 4: 9 }, w: 5 },
  { voters: [1, 2, 3, 4, 5], acked: { 1: 12, 2: 5, 3: 4, 4: 9, 5: 1 }, w: 5 },
  { voters: [1, 2, 3, 4, 5], acked: { 1: 12, 2: 12, 3: 4, 4: 9 }, w: 9 },
  // Acks from non-voters do not count.
  { voters: [1, 2, 3], acked: { 1: 12, 7: 100, 8: 100 }, w: 0 },
];
for (const [i, tt] of commitCases.entries()) {
  test(`committedIndex is what a majority of voters acked #${i}`, () => {
    assert.equal(committedIndex(new Set(tt.voters), (id) => tt.acked[id]), tt.w);
  });
}

const voteCases: Array<{ voters: number[]; votes: Array<[number, boolean]>; w: VoteResult }> = [
  { voters: [], votes: [], w: VoteResult.Won },
  { voters: [1], votes: [], w: VoteResult.Pending },
  { voters: [1], votes: [[1, false]], w: VoteResult.Lost },
  { voters: [1], votes: [[1, true]], w: VoteResult.Won },
  { voters: [1, 2], votes: [[1, true]], w: VoteResult.Pending },
  { voters: [1, 2], votes: [[1, true], [2, false]], w: VoteResult.Lost },
  { voters: [1, 2, 3], votes: [[1, true], [2, false]], w: VoteResult.Pending },
  { voters: [1, 2, 3], votes: [[1, true], [2, true]], w: VoteResult.Won },
  { voters: [1, 2, 3], votes: [[1, false], [2, false]], w: VoteResult.Lost },
  { voters: [1, 2, 3, 4], votes: [[1, true], [2, true]], w: VoteResult.Pending },
  { voters: [1, 2, 3, 4], votes: [[1, true], [2, true], [3, false], [4, false]], w: VoteResult.Lost },
  { voters: [1, 2, 3, 4, 5], votes: [[1, true], [2, true], [3, true]], w: VoteResult.Won },
  // Votes from outside the configuration are ignored.
  { voters: [1, 2, 3], votes: [[1, true], [9, true]], w: VoteResult.Pending },
];
for (const [i, tt] of voteCases.entries()) {
  test(`voteResult of ${tt.votes.length} votes among ${tt.voters.length} voters is ${tt.w} #${i}`, () => {
    assert.equal(voteResult(new Set(tt.voters), new Map(tt.votes)), tt.w);
  });
}
