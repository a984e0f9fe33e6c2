import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfChangeType, type ConfChange, type ConfState, type ProgressStatus } from "../raft/index.ts";
import type { PeerTransport } from "../transport/index.ts";
import { V2Store } from "../store/v2/store.ts";
import { MemberError, MemberErrorKind, ServerUnavailableError } from "./errors.ts";
import { LearnerNotReadyError, encodeMembers } from "./member-promote-wire.ts";
import { ReconfigCheckError } from "./reconfig-check.ts";
import { silentLogger } from "./logger.ts";
import { MemberAdmin, REMOVED_STOP_DELAY_MS, learnerReadiness, validateConfChange } from "./member-admin.ts";
import { Membership, type Member } from "./membership.ts";
import { Proposals, type ConfChangeContext } from "./proposals.ts";
import { ServerMetrics } from "./metrics/server-metrics.ts";

const a: Member = { id: 0xa, name: "a", peerUrls: ["http://127.0.0.1:2380"], clientUrls: ["http://127.0.0.1:2379"] };
const b: Member = { id: 0xb, name: "b", peerUrls: ["http://127.0.0.1:2480"], clientUrls: ["http://127.0.0.1:2479"] };
const learner: Member = { id: 0xc, name: "c", peerUrls: ["http://127.0.0.1:2580"], clientUrls: [], isLearner: true };

function cc(type: ConfChangeType, nodeId: number, ctx?: Partial<ConfChangeContext>): [ConfChange, ConfChangeContext] {
  const context: ConfChangeContext = { proposer: 1, reqId: 1, ...ctx };
  return [{ type, nodeId, context: Buffer.from(JSON.stringify(context)) }, context];
}

function kindOf(m: Membership, type: ConfChangeType, nodeId: number, ctx?: Partial<ConfChangeContext>): string | undefined {
  const [change, context] = cc(type, nodeId, ctx);
  return validateConfChange(m, change, context)?.kind;
}

test("apply-time validation refuses what etcd's ValidateConfigurationChange refuses", () => {
  const m = new Membership(1, [a, b, learner], { removed: [0xd] });
  const member = (over: Partial<Member>): Member => ({ id: 0xe, name: "", peerUrls: ["http://127.0.0.1:2680"], clientUrls: [], ...over });
  // A removed id, whatever the change.
  for (const type of [ConfChangeType.AddNode, ConfChangeType.AddLearnerNode, ConfChangeType.RemoveNode, ConfChangeType.UpdateNode]) {
    assert.equal(kindOf(m, type, 0xd, { member: member({ id: 0xd }) }), MemberErrorKind.removed);
  }
  assert.equal(kindOf(m, ConfChangeType.RemoveNode, 0xe), MemberErrorKind.notFound);
  assert.equal(kindOf(m, ConfChangeType.RemoveNode, 0xb), undefined);
  assert.equal(kindOf(m, ConfChangeType.UpdateNode, 0xe, { member: member({}) }), MemberErrorKind.notFound);
  // Adds: a taken peer URL (also written differently), a second learner, an id in use.
  assert.equal(kindOf(m, ConfChangeType.AddNode, 0xe, { member: member({}) }), undefined);
  assert.equal(kindOf(m, ConfChangeType.AddNode, 0xe, { member: member({ peerUrls: ["http://127.0.0.1:2480/"] }) }), MemberErrorKind.peerUrlExists);
  assert.equal(kindOf(m, ConfChangeType.AddLearnerNode, 0xe, { member: member({ isLearner: true }) }), MemberErrorKind.tooManyLearners);
  assert.equal(kindOf(new Membership(1, [a, b]), ConfChangeType.AddLearnerNode, 0xe, { member: member({ isLearner: true }) }), undefined);
  assert.equal(kindOf(m, ConfChangeType.AddLearnerNode, 0xb, { member: member({ id: 0xb, isLearner: true }) }), MemberErrorKind.idExists);
  // Updates: another member's URL (as the string is stored), or its own.
  assert.equal(kindOf(m, ConfChangeType.UpdateNode, 0xb, { member: { ...b, peerUrls: a.peerUrls } }), MemberErrorKind.peerUrlExists);
  assert.equal(kindOf(m, ConfChangeType.UpdateNode, 0xb, { member: { ...b, peerUrls: [...b.peerUrls, "http://127.0.0.1:2481"] } }), undefined);
  const { isLearner: _l, ...promoted } = learner;
  // Promotions: of a learner; of a voter or an unknown id refused; an older log's AddNode of a learner promotes it.
  assert.equal(kindOf(m, ConfChangeType.AddNode, 0xc, { member: promoted, promote: true }), undefined);
  assert.equal(kindOf(m, ConfChangeType.AddNode, 0xb, { member: b, promote: true }), MemberErrorKind.notLearner);
  assert.equal(kindOf(m, ConfChangeType.AddNode, 0xe, { member: member({}), promote: true }), MemberErrorKind.notFound);
  assert.equal(kindOf(m, ConfChangeType.AddNode, 0xc, { member: promoted }), undefined);
  assert.equal(kindOf(m, ConfChangeType.AddNode, 0xc, { member: promoted, promote: false }), MemberErrorKind.idExists);
});

type PeerAnswer = { status: number; body: Buffer };

/**
 * A MemberAdmin over a real membership, v2 store and Proposals; Raft is the list of what
 * reaches it. A leader's Raft progress has every member at `match` (10 unless given); a
 * follower's requests to the leader's peer port go to `peer`.
 */
function member(
  memberId: number,
  membership: Membership,
  opts: { leader?: boolean; leaderId?: number; match?: Record<number, number>; strict?: boolean; requestTimeoutMs?: number; peer?: (url: string) => Promise<PeerAnswer> } = {},
) {
  const store = new V2Store();
  const metrics = new ServerMetrics();
  const proposed: ConfChange[] = [];
  const toRaft: ConfChange[] = [];
  const transport: string[] = [];
  const requests: string[] = [];
  let removedSelf = 0;
  const proposals = new Proposals(
    {
      memberId,
      requestTimeoutMs: 5000,
      metrics: new ServerMetrics(),
      stopped: () => false,
      propose: () => {},
      proposeConfChange: (c) => void proposed.push(c),
      kick: () => {},
    },
    1000,
  );
  const admin = new MemberAdmin({
    memberId,
    strictReconfigCheck: opts.strict === true,
    log: silentLogger,
    membership: () => membership,
    store: () => store,
    transport: () =>
      ({
        addPeer: (id: number) => void transport.push(`add ${id.toString(16)}`),
        updatePeer: (id: number) => void transport.push(`update ${id.toString(16)}`),
        removePeer: (id: number) => void transport.push(`remove ${id.toString(16)}`),
        activeSince: () => 0,
        request: async (url: string) => {
          requests.push(url);
          if (opts.peer === undefined) throw new Error("connect ECONNREFUSED");
          return opts.peer(url);
        },
      }) as unknown as PeerTransport,
    proposals: () => proposals,
    applyToRaft: (c): ConfState => {
      toRaft.push(c);
      return { voters: [], learners: [] };
    },
    removed: () => void removedSelf++,
    isLeader: () => opts.leader === true,
    leaderId: () => (opts.leader === true ? memberId : (opts.leaderId ?? 0)),
    raftStatus: () => {
      if (opts.leader !== true) return { id: memberId };
      const progress = new Map(membership.ids().map((id) => [id, { match: opts.match?.[id] ?? 10 } as ProgressStatus]));
      return { id: memberId, progress };
    },
    requestTimeoutMs: opts.requestTimeoutMs ?? 5000,
    metrics,
  });
  return { admin, membership, store, proposed, toRaft, transport, requests, metrics, removedSelf: () => removedSelf };
}

test("a member that applies its own removal stops a second later, as etcd's stopWithDelay, so its answer leaves first", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const self = member(0xa, new Membership(1, [a, b]), { leader: true });
  const removal = self.admin.remove(0xa);
  for (const c of self.proposed) self.admin.apply(c);
  await removal;
  assert.equal(self.removedSelf(), 0, "answered, still running");
  t.mock.timers.tick(REMOVED_STOP_DELAY_MS - 1);
  assert.equal(self.removedSelf(), 0);
  t.mock.timers.tick(1);
  assert.equal(self.removedSelf(), 1);
  assert.deepEqual(self.membership.ids(), [0xb]);
});

test("two removals of one member both reach the log; the later one is refused on every member alike", async () => {
  const proposer = member(0xa, new Membership(1, [a, b, learner]));
  const other = member(0xb, new Membership(1, [a, b, learner]));
  const first = proposer.admin.remove(0xc);
  const second = proposer.admin.remove(0xc);
  assert.equal(proposer.proposed.length, 2, "nothing refuses the second before it is proposed (etcd checks at apply)");
  const indexBefore = proposer.store.index;
  for (const m of [proposer, other]) for (const c of proposer.proposed) m.admin.apply(c);
  await first;
  await assert.rejects(second, (err: unknown) => err instanceof MemberError && err.kind === MemberErrorKind.removed && err.message === "Member permanently removed: c");
  for (const m of [proposer, other]) {
    // The removal spent two v2 indexes, the refused one none; Raft saw the id, then a no-op.
    assert.equal(m.store.index, indexBefore + 2);
    assert.deepEqual(m.toRaft.map((c) => [c.type, c.nodeId]), [
      [ConfChangeType.RemoveNode, 0xc],
      [ConfChangeType.RemoveNode, 0],
    ]);
    assert.deepEqual(m.transport, ["remove c"]);
    assert.deepEqual(m.membership.ids(), [0xa, 0xb]);
    assert.deepEqual(m.membership.removedIds(), [0xc]);
  }
  assert.deepEqual(proposer.membership.toJSON(), other.membership.toJSON());
});

test("an add whose peer URL another add took meanwhile is refused at apply; the first stands", async () => {
  const m = member(0xa, new Membership(1, [a, b]));
  const first = m.admin.add(["http://127.0.0.1:2680"]);
  // Written differently: another id, the same URL.
  const second = m.admin.add(["http://127.0.0.1:2680/"]);
  const before = m.store.index;
  for (const c of m.proposed) m.admin.apply(c);
  const added = await first;
  await assert.rejects(second, (err: unknown) => err instanceof MemberError && err.kind === MemberErrorKind.peerUrlExists && err.message === "membership: peerURL exists");
  assert.equal(m.store.index, before + 1);
  assert.deepEqual(m.membership.ids(), [0xa, 0xb, added.id].sort((x, y) => x - y));
  assert.deepEqual(m.toRaft.map((c) => c.nodeId), [added.id, 0]);
  assert.deepEqual(m.transport, [`add ${added.id.toString(16)}`]);
});

test("an update of a member removed meanwhile is refused; an applied one changes only the peer URLs", async () => {
  const m = member(0xa, new Membership(1, [a, b, learner]), { leader: true });
  const update = m.admin.update(0xb, ["http://127.0.0.1:2490"]);
  const promote = m.admin.promote(0xc);
  const remove = m.admin.remove(0xc);
  const late = m.admin.update(0xc, ["http://127.0.0.1:2590"]);
  // The member publishes new attributes between the proposal and the apply of the update.
  m.membership.setAttributes(0xb, "b2", ["http://127.0.0.1:2499"]);
  for (const c of m.proposed) m.admin.apply(c);
  await update;
  await promote;
  await remove;
  await assert.rejects(late, (err: unknown) => err instanceof MemberError && err.kind === MemberErrorKind.removed);
  assert.deepEqual(m.membership.get(0xb), { ...b, name: "b2", clientUrls: ["http://127.0.0.1:2499"], peerUrls: ["http://127.0.0.1:2490"] });
  assert.deepEqual(m.toRaft.map((c) => c.nodeId), [0xb, 0xc, 0xc, 0]);
});

test("a refused change proposed by another member wakes no waiter here", async () => {
  const m = member(0xa, new Membership(1, [a, b]));
  const [change] = cc(ConfChangeType.RemoveNode, 0xe, { proposer: 0xb, reqId: 42 });
  m.admin.apply(change);
  assert.deepEqual(m.toRaft.map((c) => c.nodeId), [0]);
  assert.deepEqual(m.membership.ids(), [0xa, 0xb]);
  assert.deepEqual(m.membership.removedIds(), []);
});

test("a new cluster's bootstrap entries (no context) apply to the members it starts with, one v2 index each", () => {
  const m = member(0xa, new Membership(1, [a, b]));
  const before = m.store.index;
  for (const id of [0xa, 0xb]) m.admin.apply({ type: ConfChangeType.AddNode, nodeId: id, context: new Uint8Array(0) });
  assert.equal(m.store.index, before + 2);
  assert.deepEqual(m.toRaft.map((c) => c.nodeId), [0xa, 0xb]);
  assert.deepEqual(m.membership.list(), [a, b]);
});

test("a member that joined a running cluster replays every add from the first entry: its own, a learner's and its promotion apply, one v2 index each", () => {
  // The joined member (0xc) learned a, b and itself (promoted since) from a peer; a removed
  // member (0xd) came and went before it joined.
  const d: Member = { id: 0xd, name: "d", peerUrls: ["http://127.0.0.1:2680"], clientUrls: [] };
  const { isLearner: _learner, ...promoted } = learner;
  const known = Membership.joined({ clusterId: 1, members: [a, b, promoted], removed: [0xd] });
  const m = member(0xc, known);
  assert.deepEqual(m.membership.toJSON().members, [], "provisional members are not in the replicated state");
  assert.deepEqual(m.membership.knownJSON().members.map((x) => x.id), [0xa, 0xb, 0xc]);
  const before = m.store.index;
  const bootstrap = (id: number): ConfChange => ({ type: ConfChangeType.AddNode, nodeId: id, context: new Uint8Array(0) });
  m.admin.apply(bootstrap(0xa));
  m.admin.apply(bootstrap(0xb));
  m.admin.apply(cc(ConfChangeType.AddNode, 0xd, { member: d })[0]);
  m.admin.apply(cc(ConfChangeType.RemoveNode, 0xd)[0]);
  m.admin.apply(cc(ConfChangeType.AddLearnerNode, 0xc, { member: learner })[0]);
  assert.equal(m.membership.applied(0xc)?.isLearner, true);
  m.admin.apply(cc(ConfChangeType.AddNode, 0xc, { promote: true })[0]);
  // A removal takes two v2 indexes, as in etcd (the member deleted, the id recorded removed).
  assert.equal(m.store.index, before + 7, "every change applied, as on the members that were there");
  assert.deepEqual(m.toRaft.map((c) => c.nodeId), [0xa, 0xb, 0xd, 0xd, 0xc, 0xc], "none went to Raft as node 0 (refused)");
  assert.deepEqual(m.membership.toJSON().members, [a, b, promoted]);
  assert.deepEqual(m.membership.removedIds(), [0xd]);
  assert.deepEqual(m.transport, ["add a", "add b", "add d", "remove d"]);
});

test("a member restarted without a snapshot starts from its WAL's member list, provisional, and the replay applies each add once", () => {
  const m = member(0xa, new Membership(1, [a, b, learner], { provisional: true }));
  m.admin.apply({ type: ConfChangeType.AddNode, nodeId: 0xa, context: new Uint8Array(0) });
  m.admin.apply({ type: ConfChangeType.AddNode, nodeId: 0xb, context: new Uint8Array(0) });
  assert.equal(kindOf(m.membership, ConfChangeType.AddLearnerNode, 0xc, { member: learner }), undefined, "the learner's add is not 'ID exists'");
  assert.equal(kindOf(m.membership, ConfChangeType.AddNode, 0xb, { member: b }), MemberErrorKind.idExists, "an applied member's add still is");
  m.admin.apply(cc(ConfChangeType.AddLearnerNode, 0xc, { member: learner })[0]);
  assert.deepEqual(m.toRaft.map((c) => c.nodeId), [0xa, 0xb, 0xc]);
  assert.deepEqual(m.membership.toJSON().members.map((x) => x.id), [0xa, 0xb, 0xc]);
});

test("a promotion counts in etcd_server_learner_promote_successes on the leader only, as etcd's leader counts it", async () => {
  const leader = member(0xa, new Membership(1, [a, b, learner]), { leader: true });
  // The follower's request reaches the leader's peer route, which promotes there.
  const follower = member(0xb, new Membership(1, [a, b, learner]), {
    leaderId: 0xa,
    peer: async () => {
      const members = leader.admin.promote(learner.id);
      for (const m of [leader, follower]) for (const c of leader.proposed) m.admin.apply(c);
      return { status: 200, body: Buffer.from(encodeMembers(await members)) };
    },
  });
  const members = await follower.admin.promote(learner.id);
  assert.deepEqual(follower.requests, ["http://127.0.0.1:2380/members/promote/12"]);
  assert.equal(follower.proposed.length, 0, "a follower proposes no promotion");
  assert.deepEqual(members.map((m) => [m.id, m.isLearner === true]), [[0xa, false], [0xb, false], [0xc, false]]);
  assert.equal(leader.metrics.learnerPromoteSuccesses.value(), 1);
  assert.equal(follower.metrics.learnerPromoteSuccesses.value(), 0, "the follower that took the request does not count it");
  // An add of a voter is no promotion.
  const add = leader.admin.add(["http://127.0.0.1:2690"]);
  for (const c of leader.proposed.slice(1)) leader.admin.apply(c);
  await add;
  assert.equal(leader.metrics.learnerPromoteSuccesses.value(), 1);
});

test("etcd's isLearnerReady: only the leader knows; a learner below 90 % of the leader's match is not ready", () => {
  assert.equal(learnerReadiness({ id: 0xa }, 0xc), "notLeader");
  const status = (learnerMatch: number) => ({ id: 0xa, progress: new Map([[0xa, { match: 100 } as ProgressStatus], [0xc, { match: learnerMatch } as ProgressStatus]]) });
  assert.equal(learnerReadiness(status(0), 0xc), "notReady");
  assert.equal(learnerReadiness(status(89), 0xc), "notReady");
  assert.equal(learnerReadiness(status(90), 0xc), undefined);
  assert.equal(learnerReadiness(status(100), 0xc), undefined);
  // An id Raft does not track (unknown, removed) is left to apply to refuse.
  assert.equal(learnerReadiness(status(0), 0xe), undefined);
});

const failures = (metrics: ServerMetrics): Array<[string | undefined, number]> => metrics.learnerPromoteFailures.samples().map((x) => [x.labels.Reason, x.value]);

const NOT_READY = "etcdserver: can only promote a learner member which is in sync with leader";

test("the leader refuses a learner not in sync, proposing nothing, and counts the refusal by etcd's text", async () => {
  const m = member(0xa, new Membership(1, [a, b, learner]), { leader: true, match: { 0xa: 20, 0xb: 20, 0xc: 0 } });
  await assert.rejects(m.admin.promote(learner.id), (err: unknown) => err instanceof LearnerNotReadyError && err.message === NOT_READY);
  assert.equal(m.proposed.length, 0);
  assert.equal(m.membership.get(learner.id)?.isLearner, true);
  // An unknown id is proposed (etcd checks it at apply) and refused there: counted under etcd's text too.
  const unknown = m.admin.promote(0xe);
  for (const c of m.proposed) m.admin.apply(c);
  await assert.rejects(unknown, (err: unknown) => err instanceof MemberError && err.kind === MemberErrorKind.notFound);
  assert.deepEqual(failures(m.metrics), [
    [NOT_READY, 1],
    ["membership: ID not found", 1],
  ]);
  assert.equal(m.metrics.learnerPromoteSuccesses.value(), 0);
});

test("with --strict-reconfig-check the leader refuses a promotion that leaves fewer started voters than a quorum", async () => {
  // Two voters never started (no name) and one that did: with the learner, 2 started of 4.
  const unstarted = (id: number, port: number): Member => ({ id, name: "", peerUrls: [`http://127.0.0.1:${port}`], clientUrls: [] });
  const m = member(0xa, new Membership(1, [a, unstarted(0xd, 2780), unstarted(0xe, 2880), learner]), { leader: true, strict: true });
  await assert.rejects(m.admin.promote(learner.id), (err: unknown) => err instanceof ReconfigCheckError && err.kind === "notEnoughStarted");
  assert.equal(m.proposed.length, 0);
  const ok = member(0xa, new Membership(1, [a, b, learner]), { leader: true, strict: true });
  const done = ok.admin.promote(learner.id);
  for (const c of ok.proposed) ok.admin.apply(c);
  await done;
});

test("a follower returns the leader's refusals as they are, asks again after other answers, and counts nothing", async () => {
  const answers: PeerAnswer[] = [
    { status: 500, body: Buffer.from("etcdserver: request timed out\n") },
    { status: 412, body: Buffer.from(`${NOT_READY}\n`) },
  ];
  const f = member(0xb, new Membership(1, [a, b, learner]), { leaderId: 0xa, peer: async () => answers.shift() ?? { status: 599, body: Buffer.alloc(0) } });
  await assert.rejects(f.admin.promote(learner.id), (err: unknown) => err instanceof LearnerNotReadyError);
  assert.equal(f.requests.length, 2, "a timeout on the leader is asked again, the refusal returned");
  const voter = member(0xb, new Membership(1, [a, b, learner]), { leaderId: 0xa, peer: async () => ({ status: 412, body: Buffer.from("membership: can only promote a learner member\n") }) });
  await assert.rejects(voter.admin.promote(0xa), (err: unknown) => err instanceof MemberError && err.kind === MemberErrorKind.notLearner);
  const unknown = member(0xb, new Membership(1, [a, b, learner]), { leaderId: 0xa, peer: async () => ({ status: 404, body: Buffer.from("membership: ID not found\n") }) });
  await assert.rejects(unknown.admin.promote(0xe), (err: unknown) => err instanceof MemberError && err.kind === MemberErrorKind.notFound);
  for (const x of [f, voter, unknown]) assert.deepEqual(failures(x.metrics), []);
});

test("a follower that cannot reach a leader gives up at the request timeout: no leader, or timed out", async () => {
  const noLeader = member(0xb, new Membership(1, [a, b, learner]), { requestTimeoutMs: 150 });
  await assert.rejects(noLeader.admin.promote(learner.id), (err: unknown) => err instanceof ServerUnavailableError && err.message === "etcdserver: no leader");
  const unreachable = member(0xb, new Membership(1, [a, b, learner]), { leaderId: 0xa, requestTimeoutMs: 150 });
  await assert.rejects(unreachable.admin.promote(learner.id), (err: unknown) => err instanceof ServerUnavailableError && err.message === "etcdserver: request timed out");
  assert.ok(unreachable.requests.length >= 1);
});
