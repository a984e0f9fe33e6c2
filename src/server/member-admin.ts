// Cluster membership administration: etcd's member add / promote / remove / update, and
// the apply of the membership changes they become (Raft conf-change entries).
//
// Invariants:
// - A change is proposed through the log and takes effect when its entry is applied, on
//   every member alike: membership, Raft's configuration and the peer links change together.
// - With --strict-reconfig-check, an add or a remove that could leave the cluster without a
//   quorum of started, connected members is refused before anything is proposed
//   (reconfig-check.ts), as etcd's mayAddMember / mayRemoveMember.
// - A conf change consumes a v2 index (etcd records membership in the v2 store), a removal
//   two (etcd deletes the member's record and records its id as removed).
// - A removed id stays removed (Membership keeps it, in snapshots too): changing or removing
//   it again is refused as etcd refuses it (ErrIDRemoved), not as an unknown id.
// - A member that applies its own removal stops (onRemoved), once.
import { ConfChangeType, type ConfChange, type ConfState } from "../raft/index.ts";
import type { PeerTransport } from "../transport/index.ts";
import type { V2Store } from "../store/v2/store.ts";
import { memberIdFor, type Member, type Membership } from "./membership.ts";
import { MemberError, MemberErrorKind } from "./errors.ts";
import { ReconfigCheckError, checkAddMember, checkRemoveMember, reconfigViewOf, type ReconfigRefusal, type ReconfigView } from "./reconfig-check.ts";
import type { ConfChangeContext, Proposals } from "./proposals.ts";
import type { Logger } from "./logger.ts";

/** What membership administration needs of its member. */
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
}

const hex = (id: number): string => (Number.isFinite(id) ? id.toString(16) : String(id));

function notFound(id: number): MemberError {
  return new MemberError(MemberErrorKind.notFound, `No such member: ${hex(id)}`);
}

function removedError(id: number): MemberError {
  return new MemberError(MemberErrorKind.removed, `Member permanently removed: ${hex(id)}`);
}

export class MemberAdmin {
  readonly #host: MemberAdminHost;

  constructor(host: MemberAdminHost) {
    this.#host = host;
  }

  /** Adds a member with these peer URLs (etcd's member add; a learner does not vote); resolves with it. */
  async add(peerUrls: string[], opts: { learner?: boolean } = {}): Promise<Member> {
    const membership = this.#host.membership();
    // etcd checks the quorum (mayAddMember) before it looks at the peer URLs (at apply).
    if (this.#host.strictReconfigCheck) this.#refuseIf(checkAddMember(this.#reconfigView(), opts.learner === true), { add: peerUrls });
    const wanted = new Set(peerUrls.map((u) => new URL(u).href));
    if (membership.list().some((m) => m.peerUrls.some((u) => wanted.has(new URL(u).href)))) {
      throw new MemberError(MemberErrorKind.peerUrlExists, "membership: peerURL exists");
    }
    const member: Member = { id: memberIdFor(peerUrls, `${membership.clusterId.toString(16)}/${Date.now()}`), name: "", peerUrls, clientUrls: [] };
    if (opts.learner === true) member.isLearner = true;
    await this.#host.proposals().proposeConfChange(opts.learner === true ? ConfChangeType.AddLearnerNode : ConfChangeType.AddNode, member.id, member);
    return member;
  }

  /** Makes a learner a voter (etcd's member promote). */
  async promote(id: number): Promise<void> {
    const m = this.#host.membership().get(id);
    if (this.#host.membership().isRemoved(id)) throw removedError(id);
    if (!m) throw notFound(id);
    if (m.isLearner !== true) throw new MemberError(MemberErrorKind.notLearner, "etcdserver: can only promote a learner member");
    const { isLearner: _learner, ...voter } = m;
    await this.#host.proposals().proposeConfChange(ConfChangeType.AddNode, id, voter);
  }

  async remove(id: number): Promise<void> {
    // etcd's order: mayRemoveMember first, the id looked up at apply: a cluster that could
    // not spare a voter refuses even an id that names no member.
    if (this.#host.strictReconfigCheck) this.#refuseIf(checkRemoveMember(this.#reconfigView(), id), { remove: id.toString(16) });
    if (this.#host.membership().isRemoved(id)) throw removedError(id);
    if (!this.#host.membership().get(id)) throw notFound(id);
    await this.#host.proposals().proposeConfChange(ConfChangeType.RemoveNode, id);
  }

  async update(id: number, peerUrls: string[]): Promise<void> {
    const m = this.#host.membership().get(id);
    if (this.#host.membership().isRemoved(id)) throw removedError(id);
    if (!m) throw notFound(id);
    // etcd's apply refuses peer URLs another member has (ErrPeerURLexists; it compares the strings).
    const others = new Set(this.#host.membership().list().filter((o) => o.id !== id).flatMap((o) => o.peerUrls));
    if (peerUrls.some((u) => others.has(u))) throw new MemberError(MemberErrorKind.peerUrlExists, "membership: peerURL exists");
    await this.#host.proposals().proposeConfChange(ConfChangeType.UpdateNode, id, { ...m, peerUrls });
  }

  /** Applies a committed conf change; returns Raft's new configuration. */
  apply(cc: ConfChange): ConfState {
    const host = this.#host;
    const confState = host.applyToRaft(cc);
    host.store().consumeIndex();
    const ctx = cc.context.length > 0 ? (JSON.parse(Buffer.from(cc.context).toString("utf8")) as ConfChangeContext) : undefined;
    const membership = host.membership();
    switch (cc.type) {
      case ConfChangeType.AddNode:
      case ConfChangeType.AddLearnerNode:
        if (ctx?.member) membership.add(ctx.member);
        if (cc.nodeId !== host.memberId && ctx?.member) host.transport().addPeer(cc.nodeId, ctx.member.peerUrls);
        break;
      case ConfChangeType.UpdateNode:
        if (ctx?.member) {
          membership.add(ctx.member);
          if (cc.nodeId !== host.memberId) host.transport().updatePeer(cc.nodeId, ctx.member.peerUrls);
        }
        break;
      case ConfChangeType.RemoveNode:
        host.store().consumeIndex();
        membership.remove(cc.nodeId);
        if (cc.nodeId === host.memberId) host.removed();
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
