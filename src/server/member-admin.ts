// Cluster membership administration: etcd's member add / promote / remove / update, and
// the apply of the membership changes they become (Raft conf-change entries).
//
// Invariants:
// - A change is proposed through the log and takes effect when its entry is applied, on
//   every member alike: membership, Raft's configuration and the peer links change together.
// - With --strict-reconfig-check, an add or a remove that could leave the cluster without a
//   quorum of started, connected members is refused before anything is proposed
//   (reconfig-check.ts), as etcd's mayAddMember / mayRemoveMember.
// - A committed change is checked against the membership when it is applied, as etcd's
//   applyConfChange runs ValidateConfigurationChange (validateConfChange): the membership is
//   replicated, so every member refuses the same entries. A refused change leaves the
//   membership and the v2 index as they were, goes to Raft as a no-op (node id 0, as etcd
//   zeroes cc.NodeID) and answers its proposer with etcd's error. Changes that etcd checks
//   only there (unknown or removed ids, peer URLs taken, too many learners) are not checked
//   before proposing either: two removals of one member both reach the log, and the later
//   one is refused when applied, spending a Raft index but no v2 index, as on etcd.
// - A conf change consumes a v2 index (etcd records membership in the v2 store), a removal
//   two (etcd deletes the member's record and records its id as removed).
// - A removed id stays removed (Membership keeps it, in snapshots too): changing or removing
//   it again is refused as etcd refuses it (ErrIDRemoved), not as an unknown id.
// - A member that applies its own removal stops (onRemoved), once, a second later (etcd's
//   stopWithDelay of 10 × 100 ms): the answer to the removal it proposed, and the commit the
//   others learn from its next heartbeats, leave before it does. Stopped at once, a leader
//   removing itself dropped its own answer: etcdctl printed "transport is closing" (exit 1)
//   where etcd prints "Member … removed".
// - A promotion is decided by the leader, the only member that knows (from its Raft progress)
//   whether the learner caught up: its log must be within 10 % of the leader's (etcd's
//   isLearnerReady, readyPercent 0.9). A follower forwards the request to the leader's peer
//   port (member-promote-wire.ts) and returns its answer. The id itself is checked at apply,
//   as etcd checks it. The leader counts each refusal in etcd_server_learner_promote_failures
//   under etcd's error text; a follower counts nothing, as etcd's.
import { ConfChangeType, type ConfChange, type ConfState } from "../raft/index.ts";
import type { PeerTransport } from "../transport/index.ts";
import type { V2Store } from "../store/v2/store.ts";
import { memberIdFor, type Member, type Membership } from "./membership.ts";
import { MemberError, MemberErrorKind } from "./errors.ts";
import { ReconfigCheckError, checkAddMember, checkPromoteMember, checkRemoveMember, reconfigViewOf, type ReconfigRefusal, type ReconfigView } from "./reconfig-check.ts";
import type { ConfChangeContext, Proposals } from "./proposals.ts";
import type { Logger } from "./logger.ts";
import { LearnerNotReadyError, PEER_PROMOTE_PREFIX, etcdErrorText, readPromoteAnswer } from "./member-promote-wire.ts";
import { ServerUnavailableError } from "./errors.ts";
import type { Status } from "../raft/index.ts";

/** What membership administration needs of its member. */
/** etcd's stopWithDelay after a member applied its own removal (10 × 100 ms, whatever --heartbeat-interval). */
export const REMOVED_STOP_DELAY_MS = 1000;

export interface MemberAdminHost {
  readonly memberId: number;
  readonly strictReconfigCheck: boolean;
  readonly log: Logger;
  membership(): Membership;
  store(): V2Store;
  transport(): PeerTransport;
  proposals(): Proposals;
  /** Raft's applyConfChange: the new configuration. */
  applyToRaft(cc: ConfChange): ConfState;
  /** This member is no longer part of the cluster. */
  removed(): void;
  /** How long after applying its own removal `removed` is called (REMOVED_STOP_DELAY_MS unless given). */
  removedStopDelayMs?: number;
  /** Whether this member leads now: a promotion it applies as leader is one etcd's leader counts. */
  isLeader(): boolean;
  /** The known leader's id, 0 if none. */
  leaderId(): number;
  /** Raft's status: its progress (each member's match) is there only on the leader. */
  raftStatus(): Pick<Status, "id" | "progress">;
  /** etcd's request timeout: how long a follower keeps asking the leader to promote. */
  readonly requestTimeoutMs: number;
  /** etcd_server_learner_promote_successes and _failures{Reason}. */
  readonly metrics: { readonly learnerPromoteSuccesses: { inc(): void }; readonly learnerPromoteFailures: { inc(labels: { Reason: string }): void } };
}

/** etcd's readyPercent: a learner may be promoted once its log holds this share of the leader's. */
const READY_PERCENT = 0.9;

/**
 * etcd's isLearnerReady: "notLeader" without Raft progress (only the leader has it),
 * "notReady" when the member's match is below 90 % of the leader's, else undefined. An id
 * without progress (unknown, removed) passes: apply refuses it.
 */
export function learnerReadiness(status: Pick<Status, "id" | "progress">, id: number): "notLeader" | "notReady" | undefined {
  const progress = status.progress;
  if (progress === undefined) return "notLeader";
  const member = progress.get(id);
  if (member === undefined) return undefined;
  const leaderMatch = progress.get(status.id)?.match ?? 0;
  return member.match < leaderMatch * READY_PERCENT ? "notReady" : undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The local promotion's answer when this member does not lead (etcd's ErrNotLeader, never returned to a client). */
const NOT_LEADER = Symbol("not leader");

const hex = (id: number): string => (Number.isFinite(id) ? id.toString(16) : String(id));

function notFound(id: number): MemberError {
  return new MemberError(MemberErrorKind.notFound, `No such member: ${hex(id)}`);
}

function removedError(id: number): MemberError {
  return new MemberError(MemberErrorKind.removed, `Member permanently removed: ${hex(id)}`);
}

/** etcd 3.4's maxLearners. */
const MAX_LEARNERS = 1;

/** A URL as the add check compares it; a text URL() refuses is compared as it is (apply must not throw). */
function peerUrlKey(u: string): string {
  try {
    return new URL(u).href;
  } catch {
    return u;
  }
}

/**
 * etcd's ValidateConfigurationChange: why `membership` refuses the committed change `cc`
 * (with its decoded context), or undefined. Pure, so every member decides alike. Whether an
 * AddNode promotes a learner is in its context; entries of older logs (and the self-add of
 * --force-new-cluster) do not say: there an AddNode of a learner is its promotion.
 */
export function validateConfChange(membership: Membership, cc: ConfChange, ctx: ConfChangeContext | undefined): MemberError | undefined {
  const id = cc.nodeId;
  if (membership.isRemoved(id)) return removedError(id);
  // Against the applied members only: a provisional one (membership.ts) is added by this very entry.
  const existing = membership.applied(id);
  const applied = membership.appliedList();
  switch (cc.type) {
    case ConfChangeType.AddNode:
    case ConfChangeType.AddLearnerNode: {
      // A new cluster's bootstrap entries (no context) add the members it starts with; etcd
      // checks them against a store still empty then, so they always pass.
      if (ctx === undefined && cc.type === ConfChangeType.AddNode) return undefined;
      const promote = ctx?.promote ?? (cc.type === ConfChangeType.AddNode && existing?.isLearner === true);
      if (promote) {
        if (existing === undefined) return notFound(id);
        if (existing.isLearner !== true) return new MemberError(MemberErrorKind.notLearner, "etcdserver: can only promote a learner member");
        return undefined;
      }
      if (existing !== undefined) return new MemberError(MemberErrorKind.idExists, "membership: ID exists");
      const taken = new Set(applied.flatMap((m) => m.peerUrls.map(peerUrlKey)));
      if ((ctx?.member?.peerUrls ?? []).some((u) => taken.has(peerUrlKey(u)))) return new MemberError(MemberErrorKind.peerUrlExists, "membership: peerURL exists");
      if (cc.type === ConfChangeType.AddLearnerNode || ctx?.member?.isLearner === true) {
        const learners = applied.filter((m) => m.isLearner === true).length;
        if (learners + 1 > MAX_LEARNERS) return new MemberError(MemberErrorKind.tooManyLearners, "membership: too many learner members in cluster");
      }
      return undefined;
    }
    case ConfChangeType.RemoveNode:
      return existing === undefined ? notFound(id) : undefined;
    case ConfChangeType.UpdateNode: {
      if (existing === undefined) return notFound(id);
      // As etcd: the strings as stored, without the add's URL normalisation.
      const others = new Set(applied.filter((m) => m.id !== id).flatMap((m) => m.peerUrls));
      if ((ctx?.member?.peerUrls ?? []).some((u) => others.has(u))) return new MemberError(MemberErrorKind.peerUrlExists, "membership: peerURL exists");
      return undefined;
    }
  }
  return undefined;
}

export class MemberAdmin {
  readonly #host: MemberAdminHost;

  constructor(host: MemberAdminHost) {
    this.#host = host;
  }

  /** Adds a member with these peer URLs (etcd's member add; a learner does not vote); resolves with it. */
  async add(peerUrls: string[], opts: { learner?: boolean } = {}): Promise<Member> {
    const membership = this.#host.membership();
    // etcd checks the quorum (mayAddMember) before proposing, the peer URLs when applying.
    if (this.#host.strictReconfigCheck) this.#refuseIf(checkAddMember(this.#reconfigView(), opts.learner === true), { add: peerUrls });
    const member: Member = { id: memberIdFor(peerUrls, `${membership.clusterId.toString(16)}/${Date.now()}`), name: "", peerUrls, clientUrls: [] };
    if (opts.learner === true) member.isLearner = true;
    const type = opts.learner === true ? ConfChangeType.AddLearnerNode : ConfChangeType.AddNode;
    await this.#host.proposals().proposeConfChange(type, member.id, member, { promote: false });
    return member;
  }

  /**
   * Makes a learner a voter (etcd's PromoteMember): on the leader, or forwarded to it.
   * Resolves with the members once the promotion applied on the member that decided it.
   */
  async promote(id: number): Promise<Member[]> {
    const deadline = performance.now() + this.#host.requestTimeoutMs;
    for (;;) {
      let local: Member[] | typeof NOT_LEADER;
      try {
        local = await this.#promoteAsLeader(id);
      } catch (err) {
        this.#host.metrics.learnerPromoteFailures.inc({ Reason: etcdErrorText(err) });
        throw err;
      }
      if (local !== NOT_LEADER) return local;
      const forwarded = await this.#forwardPromote(id, deadline);
      if (forwarded !== "leader") return forwarded;
      // This member leads now: decide here.
    }
  }

  async #promoteAsLeader(id: number): Promise<Member[] | typeof NOT_LEADER> {
    const host = this.#host;
    const readiness = learnerReadiness(host.raftStatus(), id);
    if (readiness === "notLeader") return NOT_LEADER;
    if (readiness === "notReady") throw new LearnerNotReadyError();
    if (host.strictReconfigCheck) this.#refuseIf(checkPromoteMember(this.#reconfigView()), { promote: hex(id) });
    // etcd's context names the id only: apply promotes the member as the membership has it.
    const m = host.membership().get(id) ?? { id, name: "", peerUrls: [], clientUrls: [] };
    const { isLearner: _learner, ...voter } = m;
    await host.proposals().proposeConfChange(ConfChangeType.AddNode, id, voter, { promote: true });
    return host.membership().list();
  }

  /**
   * etcd's forwarding loop: the leader's peer URLs in turn until one answers with something
   * asking again would not change, or the request times out. "leader" when this member
   * became the leader meanwhile.
   */
  async #forwardPromote(id: number, deadline: number): Promise<Member[] | "leader"> {
    const host = this.#host;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0) throw new ServerUnavailableError(host.leaderId() === 0 ? "etcdserver: no leader" : "etcdserver: request timed out");
      const leaderId = host.leaderId();
      if (leaderId === host.memberId && host.raftStatus().progress !== undefined) return "leader";
      const leader = leaderId === 0 ? undefined : host.membership().get(leaderId);
      for (const url of leaderId === host.memberId ? [] : (leader?.peerUrls ?? [])) {
        const remaining = deadline - performance.now();
        if (remaining <= 0) break;
        let answer: ReturnType<typeof readPromoteAnswer>;
        try {
          const res = await host.transport().request(new URL(PEER_PROMOTE_PREFIX + BigInt(id).toString(), url).href, new Uint8Array(0), remaining);
          answer = readPromoteAnswer(res.status, res.body.toString("utf8"));
        } catch (err) {
          // Unreachable, or an answer cut short: the next URL, then the leader again.
          host.log.debug("promote request to the leader failed", { url, error: String(err) });
          continue;
        }
        if (answer === "again") continue;
        if ("error" in answer) throw answer.error;
        return answer.members;
      }
      // No leader known, or none of its URLs gave an answer: wait a moment, as etcd's waitLeader.
      await sleep(Math.min(Math.max(deadline - performance.now(), 0), 100));
    }
  }

  async remove(id: number): Promise<void> {
    // etcd's order: mayRemoveMember first, the id looked up at apply: a cluster that could
    // not spare a voter refuses even an id that names no member.
    if (this.#host.strictReconfigCheck) this.#refuseIf(checkRemoveMember(this.#reconfigView(), id), { remove: id.toString(16) });
    // An id past 2^53 (NaN here) cannot travel in a conf change, and names no member.
    if (!Number.isSafeInteger(id)) throw notFound(id);
    await this.#host.proposals().proposeConfChange(ConfChangeType.RemoveNode, id);
  }

  async update(id: number, peerUrls: string[]): Promise<void> {
    if (!Number.isSafeInteger(id)) throw notFound(id);
    // The rest of the member as this member knows it; apply refuses the change if the id is
    // gone by then, or the URLs taken (validateConfChange), and changes only the peer URLs.
    const m = this.#host.membership().get(id) ?? { id, name: "", peerUrls: [], clientUrls: [] };
    await this.#host.proposals().proposeConfChange(ConfChangeType.UpdateNode, id, { ...m, peerUrls });
  }

  /** Applies a committed conf change, or refuses it (validateConfChange); returns Raft's configuration. */
  apply(cc: ConfChange): ConfState {
    const host = this.#host;
    const ctx = cc.context.length > 0 ? (JSON.parse(Buffer.from(cc.context).toString("utf8")) as ConfChangeContext) : undefined;
    const membership = host.membership();
    const refused = validateConfChange(membership, cc, ctx);
    if (refused !== undefined) {
      // Raft still has to apply the entry (it ends the pending change); node id 0 changes nothing.
      const unchanged = host.applyToRaft({ ...cc, nodeId: 0 });
      if (ctx !== undefined) host.proposals().confApplied(ctx, refused);
      return unchanged;
    }
    const confState = host.applyToRaft(cc);
    host.store().consumeIndex();
    switch (cc.type) {
      case ConfChangeType.AddNode:
      case ConfChangeType.AddLearnerNode: {
        const existing = membership.applied(cc.nodeId);
        if (existing?.isLearner === true) {
          // A promotion (validated above): the member as the membership has it, now a voter.
          const { isLearner: _learner, ...voter } = existing;
          membership.add(voter);
          // etcd counts a promotion on the leader, whose PromoteMember returns once it applied
          // (a follower forwards the request there); here the leader counts it as it applies it.
          if (host.isLeader()) host.metrics.learnerPromoteSuccesses.inc();
        } else if (existing === undefined) {
          // A new member, or a provisional one this entry adds (a bootstrap entry carries no
          // member: the one known from the flags or the joined cluster is the one it adds).
          const member = ctx?.member ?? membership.get(cc.nodeId);
          if (member !== undefined) {
            membership.add(member);
            if (cc.nodeId !== host.memberId) host.transport().addPeer(cc.nodeId, member.peerUrls);
          }
        }
        break;
      }
      case ConfChangeType.UpdateNode: {
        // Only the peer URLs change (etcd's UpdateRaftAttributes): name and client URLs are
        // what the member last published, whatever the proposer knew of them.
        const current = membership.get(cc.nodeId);
        if (ctx?.member && current !== undefined) {
          membership.add({ ...current, peerUrls: [...ctx.member.peerUrls] });
          if (cc.nodeId !== host.memberId) host.transport().updatePeer(cc.nodeId, ctx.member.peerUrls);
        }
        break;
      }
      case ConfChangeType.RemoveNode:
        host.store().consumeIndex();
        membership.remove(cc.nodeId);
        if (cc.nodeId === host.memberId) setTimeout(() => host.removed(), host.removedStopDelayMs ?? REMOVED_STOP_DELAY_MS);
        else host.transport().removePeer(cc.nodeId);
        break;
    }
    if (ctx !== undefined) host.proposals().confApplied(ctx);
    return confState;
  }

  /** What --strict-reconfig-check judges (reconfig-check.ts): the members, and our links to them. */
  #reconfigView(): ReconfigView {
    return reconfigViewOf({ memberId: this.#host.memberId, membership: this.#host.membership(), transport: this.#host.transport() }, performance.now());
  }

  #refuseIf(refusal: ReconfigRefusal | undefined, what: Record<string, unknown>): void {
    if (refusal === undefined) return;
    this.#host.log.warn("rejecting member change: it could leave the cluster without a quorum (--strict-reconfig-check)", { ...what, reason: refusal });
    throw new ReconfigCheckError(refusal);
  }
}
