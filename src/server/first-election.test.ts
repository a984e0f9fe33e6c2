import { test } from "node:test";
import assert from "node:assert/strict";
import { firstElectionStep } from "./first-election.ts";

const three = [30, 10, 20];

test("first start: the lowest id campaigns once a quorum is up; the others fast-forward", () => {
  assert.equal(firstElectionStep({ fresh: true, memberId: 10, voters: three, peersUp: 0, advanced: false }), "wait");
  assert.equal(firstElectionStep({ fresh: true, memberId: 10, voters: three, peersUp: 1, advanced: false }), "campaign");
  assert.equal(firstElectionStep({ fresh: true, memberId: 20, voters: three, peersUp: 1, advanced: false }), "advance");
  assert.equal(firstElectionStep({ fresh: true, memberId: 20, voters: three, peersUp: 2, advanced: true }), "done");
  assert.equal(firstElectionStep({ fresh: true, memberId: 30, voters: three, peersUp: 0, advanced: false }), "wait");
});

test("five members: the lowest id waits for two peers, fast-forwarding its clock meanwhile", () => {
  const five = [5, 4, 3, 2, 1];
  assert.equal(firstElectionStep({ fresh: true, memberId: 1, voters: five, peersUp: 1, advanced: false }), "advance");
  assert.equal(firstElectionStep({ fresh: true, memberId: 1, voters: five, peersUp: 1, advanced: true }), "wait");
  assert.equal(firstElectionStep({ fresh: true, memberId: 1, voters: five, peersUp: 2, advanced: true }), "campaign");
});

test("a restart never campaigns out of turn: etcd's fast-forward only", () => {
  assert.equal(firstElectionStep({ fresh: false, memberId: 10, voters: three, peersUp: 2, advanced: false }), "advance");
  assert.equal(firstElectionStep({ fresh: false, memberId: 10, voters: three, peersUp: 2, advanced: true }), "done");
  assert.equal(firstElectionStep({ fresh: false, memberId: 10, voters: three, peersUp: 0, advanced: false }), "wait");
});
