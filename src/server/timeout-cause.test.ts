import { test } from "node:test";
import assert from "node:assert/strict";
import { timeoutKind, type TimeoutView } from "./timeout-cause.ts";
import { NotProposedTimeoutError, RequestTimeoutError, ServerUnavailableError, type TimeoutKind } from "./errors.ts";
import { V3Errors } from "../api/v3-errors.ts";
import { proposalErrorParts } from "./http/respond.ts";

const ELECTION = 1000;
const SELF = 1;

/** A 3-member view; `links`: when each peer's link came up (absent: down). */
function view(over: Partial<Omit<TimeoutView, "activeSince">> & { links?: Record<number, number> }): TimeoutView {
  const links = over.links ?? { 2: 0, 3: 0 };
  return {
    start: 10_000,
    leaderElectedAt: undefined,
    electionTimeoutMs: ELECTION,
    selfId: SELF,
    leaderId: 2,
    memberIds: [1, 2, 3],
    ...over,
    activeSince: (id) => links[id],
  };
}

test("leader failure: begun in the two election timeouts before this member was elected, ends open", () => {
  const elected = 10_000 + 1500;
  const at = (start: number): TimeoutKind => timeoutKind(view({ start, leaderElectedAt: elected, leaderId: SELF }));
  assert.equal(at(elected - 1), "timeoutDueToLeaderFail");
  assert.equal(at(elected - 2 * ELECTION + 1), "timeoutDueToLeaderFail");
  // etcd's start.After(prevLeadLost) && start.Before(curLeadElected): neither end is in.
  assert.equal(at(elected - 2 * ELECTION), "timeout");
  assert.equal(at(elected), "timeout");
  assert.equal(at(elected + 1), "timeout", "begun under this leader: the links decide, and they are up");
});

test("leader failure is judged before the links: the new leader whose peers reconnected still says leader failure", () => {
  const v = view({ start: 10_000, leaderElectedAt: 10_500, leaderId: SELF, links: { 2: 10_400 } });
  assert.equal(timeoutKind(v), "timeoutDueToLeaderFail");
});

test("a follower: connection lost unless its link to the leader was up before the request began", () => {
  assert.equal(timeoutKind(view({ links: { 2: 9_999, 3: 20_000 } })), "timeout", "the other follower's link does not matter");
  assert.equal(timeoutKind(view({ links: { 2: 10_000, 3: 0 } })), "timeoutDueToConnectionLost", "up at the very start is not before it");
  assert.equal(timeoutKind(view({ links: { 3: 0 } })), "timeoutDueToConnectionLost", "down");
  // An election long ago does not make a follower's timeout a leader failure.
  assert.equal(timeoutKind(view({ leaderElectedAt: 1_000, links: { 2: 0, 3: 0 } })), "timeout");
});

test("a leader: connection lost when fewer than a quorum, itself counted, were connected since the start", () => {
  const lead = (links: Record<number, number>, memberIds = [1, 2, 3]): TimeoutKind =>
    timeoutKind(view({ leaderId: SELF, leaderElectedAt: 1_000, links, memberIds }));
  assert.equal(lead({ 2: 0 }), "timeout", "itself and one peer: 2 of 3");
  assert.equal(lead({ 2: 10_001, 3: 10_002 }), "timeoutDueToConnectionLost", "both peers came back after the start");
  assert.equal(lead({}), "timeoutDueToConnectionLost");
  assert.equal(lead({ 2: 0 }, [1, 2, 3, 4]), "timeoutDueToConnectionLost", "2 of 4 is no quorum");
  assert.equal(lead({}, [1]), "timeout", "a member alone is its own quorum");
});

test("no leader known: the plain timeout (etcd has no reason for it)", () => {
  assert.equal(timeoutKind(view({ leaderId: 0, links: {} })), "timeout");
});

test("the errors carry etcd's texts and codes: v3 code 14 (leader transfer: 2), v2 error 300 with the text as cause", () => {
  const texts: Record<TimeoutKind, [number, string]> = {
    timeout: [14, "etcdserver: request timed out"],
    timeoutDueToLeaderFail: [14, "etcdserver: request timed out, possibly due to previous leader failure"],
    timeoutDueToConnectionLost: [14, "etcdserver: request timed out, possibly due to connection lost"],
    timeoutLeaderTransfer: [2, "etcdserver: request timed out, leader transfer took too long"],
  };
  for (const [kind, [code, text]] of Object.entries(texts) as Array<[TimeoutKind, [number, string]]>) {
    const err = new RequestTimeoutError(kind);
    assert.ok(err instanceof ServerUnavailableError);
    assert.equal(err.message, text);
    const v3 = V3Errors[err.kind]();
    assert.equal(v3.code, code, kind);
    assert.equal(v3.message, text);
    const v2 = proposalErrorParts(err, "c1");
    assert.equal(v2.status, 500);
    assert.deepEqual(JSON.parse(v2.body), { errorCode: 300, message: "Raft Internal Error", cause: text, index: 0 });
  }
});

test("a write never proposed for want of a leader: v2 the plain timeout (v3 maps it to 'context deadline exceeded')", () => {
  const err = new NotProposedTimeoutError();
  assert.ok(err instanceof RequestTimeoutError);
  assert.equal(err.kind, "timeout");
  assert.equal(JSON.parse(proposalErrorParts(err, "c1").body).cause, "etcdserver: request timed out");
});
