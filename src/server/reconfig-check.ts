// --strict-reconfig-check: etcd refuses a member add, remove or promotion that would leave the cluster
// without a quorum of started members, or that breaks the quorum this member is actually
// connected to (etcdserver/server.go mayAddMember / mayRemoveMember, membership's
// IsReadyToAddVotingMember / IsReadyToRemoveVotingMember). Pure: the caller passes the
// members, this member's peer links and the clock; kv-server.ts acts on the answer.
//
// "Started" is etcd's Member.IsStarted: the member published its name (a member added with
// `member add` has none until it runs). "Connected" is etcd's isConnectedSince: the link to
// the peer has been up since at least HEALTH_INTERVAL_MS ago, so a member right after a
// restart refuses changes for a few seconds, as etcd does. Learners are neither counted nor
// checked when removed.

/** etcd's HealthInterval: a peer link counts once it has been up this long. */
export const HEALTH_INTERVAL_MS = 5000;

export interface ReconfigMember {
  id: number;
  /** The member published its name (etcd's IsStarted). */
  started: boolean;
  isLearner: boolean;
}

export interface ReconfigView {
  selfId: number;
  members: readonly ReconfigMember[];
  /** When the link to a peer came up (same clock as `now`), undefined while it is down. */
  activeSince(id: number): number | undefined;
  now: number;
}

export type ReconfigRefusal = "notEnoughStarted" | "unhealthy";

/**
 * A refused membership change. `notEnoughStarted` is etcd's ErrNotEnoughStartedMembers,
 * `unhealthy` its ErrUnhealthy; the API layers give each etcd's status and body.
 */
export class ReconfigCheckError extends Error {
  override name = "ReconfigCheckError";
  readonly kind: ReconfigRefusal;
  constructor(kind: ReconfigRefusal) {
    super(kind === "notEnoughStarted" ? "etcdserver: re-configuration failed due to not enough started members" : "etcdserver: unhealthy cluster");
    this.kind = kind;
  }
}

function voters(v: ReconfigView): ReconfigMember[] {
  return v.members.filter((m) => !m.isLearner);
}

function connected(v: ReconfigView, id: number): boolean {
  if (id === v.selfId) return true;
  const since = v.activeSince(id);
  return since !== undefined && since <= v.now - HEALTH_INTERVAL_MS;
}

/** etcd's mayAddMember: undefined when the add may go ahead. */
export function checkAddMember(v: ReconfigView, newIsLearner: boolean): ReconfigRefusal | undefined {
  if (newIsLearner) return undefined;
  const vs = voters(v);
  const started = vs.filter((m) => m.started).length;
  const members = vs.length + 1;
  // etcd's exception: a second member joining a one-member cluster (restoring a cluster
  // from a single member, as its admin guide describes).
  const restoring = started === 1 && members === 2;
  if (!restoring && started < Math.floor(members / 2) + 1) return "notEnoughStarted";
  if (!vs.every((m) => connected(v, m.id))) return "unhealthy";
  return undefined;
}

/** etcd's mayRemoveMember: undefined when removing `id` may go ahead. */
export function checkRemoveMember(v: ReconfigView, id: number): ReconfigRefusal | undefined {
  const target = v.members.find((m) => m.id === id);
  if (target?.isLearner === true) return undefined;
  const rest = voters(v).filter((m) => m.id !== id);
  const started = rest.filter((m) => m.started).length;
  if (started < Math.floor(rest.length / 2) + 1) return "notEnoughStarted";
  // A member that is down is no part of the active quorum: removing it is safe.
  if (id !== v.selfId && v.activeSince(id) === undefined) return undefined;
  const vs = voters(v);
  const active = vs.filter((m) => connected(v, m.id)).length;
  if (active - 1 < 1 + Math.floor((vs.length - 1) / 2)) return "unhealthy";
  return undefined;
}

/**
 * etcd's IsReadyToPromoteMember: undefined when promoting a learner may go ahead. The
 * learner counts as a started voter already; the links are not checked.
 */
export function checkPromoteMember(v: ReconfigView): ReconfigRefusal | undefined {
  const vs = voters(v);
  const started = vs.filter((m) => m.started).length + 1;
  const members = vs.length + 1;
  return started < Math.floor(members / 2) + 1 ? "notEnoughStarted" : undefined;
}

/** What a member shows of itself to build a view: its id, the members, its peer links. */
export interface ReconfigHost {
  readonly memberId: number;
  readonly membership: { list(): readonly { id: number; name: string; isLearner?: boolean | undefined }[] };
  readonly transport: { activeSince(id: number): number | undefined };
}

/** The view etcd's checks judge, at `now` (the clock of transport.activeSince). */
export function reconfigViewOf(host: ReconfigHost, now: number): ReconfigView {
  const members = host.membership.list().map((m) => ({ id: m.id, started: m.name !== "", isLearner: m.isLearner === true }));
  return { selfId: host.memberId, members, activeSince: (id) => host.transport.activeSince(id), now };
}
