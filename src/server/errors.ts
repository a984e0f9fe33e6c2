// Errors the member's core raises, in its own terms. The core knows no HTTP: each API's
// edge turns these into its wire shape in one place (http/respond.ts and the members
// handler for v2, v3-service.ts for the v3 gateway and gRPC).
import { V3Errors } from "../api/v3-errors.ts";

/** The member cannot serve the request now: no leader, stopping, a timeout. */
export class ServerUnavailableError extends Error {
  override name = "ServerUnavailableError";
}

/** etcd's request-timeout errors, named as their v3 answers in api/v3-errors.ts. */
export type TimeoutKind = "timeout" | "timeoutDueToLeaderFail" | "timeoutDueToConnectionLost" | "timeoutLeaderTransfer";

/**
 * A request whose timeout passed, with etcd's reason (timeout-cause.ts): the text is etcd's
 * on every API (v2's cause, v3's message), the v3 code the one V3Errors[kind] carries.
 */
export class RequestTimeoutError extends ServerUnavailableError {
  override name = "RequestTimeoutError";
  readonly kind: TimeoutKind;
  constructor(kind: TimeoutKind) {
    super(V3Errors[kind]().message);
    this.kind = kind;
  }
}

/**
 * No leader was known for the whole request timeout, so the entry never went into Raft.
 * etcd's v2 judges it as any timeout (with no leader: the plain one); its v3 returns the
 * context's own error, which grpc-go sends as Unknown "context deadline exceeded".
 */
export class NotProposedTimeoutError extends RequestTimeoutError {
  override name = "NotProposedTimeoutError";
  constructor() {
    super("timeout");
  }
}

/**
 * A linearizable read whose ReadIndex round was still unanswered when a new leader became
 * known (etcd 3.4's ErrLeaderChanged): the read did not happen, and the client may retry.
 */
export class LeaderChangedError extends ServerUnavailableError {
  override name = "LeaderChangedError";
  constructor() {
    super("etcdserver: leader changed");
  }
}

export const MemberErrorKind = {
  /** No member has this id. */
  notFound: "notFound",
  /** The id was a member's, and that member has been removed (ids are never reused). */
  removed: "removed",
  /** A member already has this id. */
  idExists: "idExists",
  /** Another member already has one of these peer URLs. */
  peerUrlExists: "peerUrlExists",
  /** Only a learner can be promoted. */
  notLearner: "notLearner",
  /** The cluster has as many learners as it may (etcd 3.4: one). */
  tooManyLearners: "tooManyLearners",
} as const;
export type MemberErrorKind = (typeof MemberErrorKind)[keyof typeof MemberErrorKind];

/**
 * A member change refused for what the membership is (member-admin.ts): before it is
 * proposed, or when its entry is applied (then on every member alike).
 */
export class MemberError extends Error {
  override name = "MemberError";
  readonly kind: MemberErrorKind;
  constructor(kind: MemberErrorKind, message: string) {
    super(message);
    this.kind = kind;
  }
}
