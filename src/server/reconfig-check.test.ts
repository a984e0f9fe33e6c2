import { test } from "node:test";
import assert from "node:assert/strict";
import { HEALTH_INTERVAL_MS, ReconfigCheckError, checkAddMember, checkRemoveMember, type ReconfigMember, type ReconfigView } from "./reconfig-check.ts";

const NOW = 100_000;
const LONG_AGO = NOW - HEALTH_INTERVAL_MS - 1;

function view(members: ReconfigMember[], links: Record<number, number | undefined> = {}, selfId = 1): ReconfigView {
  return { selfId, members, activeSince: (id) => links[id], now: NOW };
}
const voter = (id: number, started = true): ReconfigMember => ({ id, started, isLearner: false });
const learner = (id: number): ReconfigMember => ({ id, started: false, isLearner: true });

test("add: a second member to a one-member cluster is allowed (etcd's restore case)", () => {
  assert.equal(checkAddMember(view([voter(1)]), false), undefined);
});

test("add: a third voter while the second never started is refused: not enough started members", () => {
  assert.equal(checkAddMember(view([voter(1), voter(2, false)]), false), "notEnoughStarted");
  // Learners need no quorum check.
  assert.equal(checkAddMember(view([voter(1), voter(2, false)]), true), undefined);
});

test("add: every voter must have been connected for the health interval, else unhealthy", () => {
  const three = [voter(1), voter(2), voter(3)];
  assert.equal(checkAddMember(view(three, { 2: LONG_AGO, 3: LONG_AGO }), false), undefined);
  assert.equal(checkAddMember(view(three, { 2: LONG_AGO, 3: undefined }), false), "unhealthy", "a member is down");
  assert.equal(checkAddMember(view(three, { 2: LONG_AGO, 3: NOW - 1000 }), false), "unhealthy", "a link up for only a second");
  // Learners are not part of the quorum: a learner that is down does not matter.
  assert.equal(checkAddMember(view([...three, learner(4)], { 2: LONG_AGO, 3: LONG_AGO }), false), undefined);
});

test("remove: the rest must keep a quorum of started members", () => {
  // Two voters, the other never started: removing ourselves leaves no started member.
  assert.equal(checkRemoveMember(view([voter(1), voter(2, false)]), 1), "notEnoughStarted");
  // Removing the one that never started is fine (and it is down, so no link check).
  assert.equal(checkRemoveMember(view([voter(1), voter(2, false)]), 2), undefined);
});

test("remove: a member that is down may go; otherwise the connected members must keep a quorum without it", () => {
  const three = [voter(1), voter(2), voter(3)];
  assert.equal(checkRemoveMember(view(three, { 2: LONG_AGO, 3: undefined }), 3), undefined, "3 is down");
  assert.equal(checkRemoveMember(view(three, { 2: LONG_AGO, 3: LONG_AGO }), 3), undefined);
  // 3 is down and we remove 2 (up): only 1 and 2 are connected, 1 left of the 2 needed.
  assert.equal(checkRemoveMember(view(three, { 2: LONG_AGO, 3: undefined }), 2), "unhealthy");
  // Removing ourselves counts our own link as up.
  assert.equal(checkRemoveMember(view(three, { 2: LONG_AGO, 3: undefined }), 1), "unhealthy");
  assert.equal(checkRemoveMember(view(three, { 2: LONG_AGO, 3: LONG_AGO }), 1), undefined);
});

test("remove: a learner is removed without any check", () => {
  assert.equal(checkRemoveMember(view([voter(1), voter(2, false), learner(3)]), 3), undefined);
});

test("the refusals carry etcd's messages", () => {
  assert.equal(new ReconfigCheckError("notEnoughStarted").message, "etcdserver: re-configuration failed due to not enough started members");
  assert.equal(new ReconfigCheckError("unhealthy").message, "etcdserver: unhealthy cluster");
});
