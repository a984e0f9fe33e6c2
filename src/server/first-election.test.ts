import { test } from "node:test";
import assert from "node:assert/strict";
import { firstElectionMode, firstElectionStep } from "./first-election.ts";

const three = [30, 10, 20];

test("three members: the lowest id campaigns once one peer is up; the others fast-forward once", () => {
  assert.equal(firstElectionStep({ memberId: 10, voters: three, peersUp: 0, advanced: false }), "wait");
  assert.equal(firstElectionStep({ memberId: 10, voters: three, peersUp: 1, advanced: false }), "campaign");
  assert.equal(firstElectionStep({ memberId: 20, voters: three, peersUp: 1, advanced: false }), "advance");
  assert.equal(firstElectionStep({ memberId: 20, voters: three, peersUp: 2, advanced: true }), "done");
  assert.equal(firstElectionStep({ memberId: 30, voters: three, peersUp: 0, advanced: false }), "wait");
});

test("five members: the lowest id waits for two peers, fast-forwarding its clock meanwhile", () => {
  const five = [5, 4, 3, 2, 1];
  assert.equal(firstElectionStep({ memberId: 1, voters: five, peersUp: 1, advanced: false }), "advance");
  assert.equal(firstElectionStep({ memberId: 1, voters: five, peersUp: 1, advanced: true }), "wait");
  assert.equal(firstElectionStep({ memberId: 1, voters: five, peersUp: 2, advanced: true }), "campaign");
  assert.equal(firstElectionStep({ memberId: 3, voters: five, peersUp: 4, advanced: true }), "done");
});

test("a member alone never campaigns from here (the server campaigns at once)", () => {
  assert.equal(firstElectionStep({ memberId: 7, voters: [7], peersUp: 0, advanced: false }), "wait");
});

test("the flags: --initial-election-tick-advance=false turns it all off; without pre-vote only etcd's fast-forward runs", () => {
  assert.equal(firstElectionMode({ preVote: true, initialElectionTickAdvance: true }), "advance-and-campaign");
  assert.equal(firstElectionMode({ preVote: false, initialElectionTickAdvance: true }), "advance");
  assert.equal(firstElectionMode({ preVote: true, initialElectionTickAdvance: false }), "off");
  assert.equal(firstElectionMode({ preVote: false, initialElectionTickAdvance: false }), "off");
});

test("without the early campaign the lowest id behaves like the others: fast-forward once, then done", () => {
  const s = { memberId: 10, voters: three, earlyCampaign: false };
  assert.equal(firstElectionStep({ ...s, peersUp: 0, advanced: false }), "wait");
  assert.equal(firstElectionStep({ ...s, peersUp: 2, advanced: false }), "advance");
  assert.equal(firstElectionStep({ ...s, peersUp: 2, advanced: true }), "done");
});
