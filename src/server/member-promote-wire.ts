// A member promotion forwarded to the leader over the peer port, as etcd 3.4's
// promoteMemberHTTP and its peer handler (/members/promote/<decimal id>): only the leader
// knows from its Raft progress whether a learner caught up, so a follower asks it there.
// Statuses as etcd's handler answers them: 200 with the members, 404 for an unknown id, 412
// for a voter or a learner not in sync. etcd answers any other error 500 "Internal Server
// Error" and its follower asks again until its request times out (re-proposing each time);
// kvctl's leader names the error in the 500's body instead, and the follower returns the
// ones that asking again would not change (a removed id, --strict-reconfig-check's refusals).
// Pure: no I/O here (member-admin.ts sends, http/peer-router.ts serves).
import { V3Error, V3Errors } from "../api/v3-errors.ts";
import { MemberError, MemberErrorKind } from "./errors.ts";
import type { Member } from "./membership.ts";
import { ReconfigCheckError } from "./reconfig-check.ts";

export const PEER_PROMOTE_PREFIX = "/members/promote/";

/**
 * etcd's ErrLearnerNotReady: the learner's log is not within 10 % of the leader's. A v3
 * error as it is (FailedPrecondition, the gateway's 412): the v3 API passes it on as it
 * passes every V3Error; the peer route answers it with its own status (promoteErrorAnswer).
 */
export class LearnerNotReadyError extends V3Error {
  override name = "LearnerNotReadyError";
  constructor() {
    const { code, message } = V3Errors.learnerNotReady();
    super(code, message);
  }
}

/** etcd's errors as their Error() reads, the label of etcd_server_learner_promote_failures. */
const MEMBERSHIP_TEXT: Record<MemberErrorKind, string> = {
  notFound: "membership: ID not found",
  removed: "membership: ID removed",
  idExists: "membership: ID exists",
  peerUrlExists: "membership: peerURL exists",
  notLearner: "membership: can only promote a learner member",
  tooManyLearners: "membership: too many learner members in cluster",
};

/** What etcd's err.Error() says for this refusal (MemberError messages are the v2 API's). */
export function etcdErrorText(err: unknown): string {
  if (err instanceof MemberError) return MEMBERSHIP_TEXT[err.kind];
  return err instanceof Error ? err.message : String(err);
}

/** etcd's auth errors as their Error() reads, by the gRPC text the client gets for each. */
const AUTH_TEXT: Record<string, string> = {
  "etcdserver: user name is empty": "auth: user name is empty",
  "etcdserver: user name not found": "auth: user not found",
  "etcdserver: permission denied": "auth: permission denied",
  "etcdserver: invalid auth token": "auth: invalid auth token",
  "etcdserver: revision of auth store is old": "auth: revision in header is old",
};

/** What etcd's err.Error() says for a caller refused before the promotion (the label etcd counts it under). */
export function authErrorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return AUTH_TEXT[text] ?? text;
}

/** The leader's answer to a forwarded promotion: status and text body (http.Error's, newline included). */
export function promoteErrorAnswer(err: unknown): { status: number; body: string } {
  if (err instanceof MemberError && err.kind === MemberErrorKind.notFound) return { status: 404, body: `${MEMBERSHIP_TEXT.notFound}\n` };
  if (err instanceof MemberError && err.kind === MemberErrorKind.notLearner) return { status: 412, body: `${MEMBERSHIP_TEXT.notLearner}\n` };
  if (err instanceof LearnerNotReadyError) return { status: 412, body: `${err.message}\n` };
  return { status: 500, body: `${etcdErrorText(err)}\n` };
}

/** etcd's JSON of a member (membership.Member): a learner flag only when set, empty attributes left out. */
export function encodeMembers(members: readonly Member[]): string {
  return JSON.stringify(
    members.map((m) => ({
      id: m.id,
      peerURLs: m.peerUrls,
      ...(m.isLearner === true ? { isLearner: true } : {}),
      ...(m.name === "" ? {} : { name: m.name }),
      ...(m.clientUrls.length === 0 ? {} : { clientURLs: m.clientUrls }),
    })),
  );
}

export function decodeMembers(body: string): Member[] {
  const raw = JSON.parse(body) as Array<{ id: number; peerURLs?: string[]; isLearner?: boolean; name?: string; clientURLs?: string[] }>;
  return raw.map((r) => ({
    id: r.id,
    name: r.name ?? "",
    peerUrls: r.peerURLs ?? [],
    clientUrls: r.clientURLs ?? [],
    ...(r.isLearner === true ? { isLearner: true } : {}),
  }));
}

/**
 * How the follower reads the leader's answer: the members, an error to return, or
 * "again" (etcd asks again until its request times out: a new leader, a timeout there).
 */
export function readPromoteAnswer(status: number, body: string): { members: Member[] } | { error: Error } | "again" {
  if (status === 200) return { members: decodeMembers(body) };
  if (status === 404) return { error: new MemberError(MemberErrorKind.notFound, MEMBERSHIP_TEXT.notFound) };
  if (status === 412) {
    const notReady = new LearnerNotReadyError();
    // As etcd's: both refusals share the status; the longer text first (it contains the other).
    if (body.includes(notReady.message)) return { error: notReady };
    if (body.includes(MEMBERSHIP_TEXT.notLearner)) return { error: new MemberError(MemberErrorKind.notLearner, "etcdserver: can only promote a learner member") };
    return "again";
  }
  if (status === 500) {
    const text = body.trim();
    if (text === MEMBERSHIP_TEXT.removed) return { error: new MemberError(MemberErrorKind.removed, text) };
    const reconfig = [new ReconfigCheckError("notEnoughStarted"), new ReconfigCheckError("unhealthy")].find((e) => e.message === text);
    if (reconfig !== undefined) return { error: reconfig };
  }
  return "again";
}
