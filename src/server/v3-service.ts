// The v3 API on a member: what the JSON gateway calls. Writes become log entries (apply.ts
// runs them on every member); linearizable reads wait on Raft's ReadIndex and read the
// local key space; watches register in the member's hub. Access control is decided where
// etcd 3.4.23 decides it: a read, a watch, a member or maintenance call here, against this
// member's auth state (a linearizable read after its ReadIndex round); a write, a lease
// revocation and an auth change at apply only: their entry carries the caller and the
// auth revision its token was looked up at (etcd's RequestHeader), and apply judges it
// against the auth state of its log position, as etcd's authApplierV3. Requests arrive
// already checked as etcd's v3rpc checks them (the gateway does that, see
// http/v3-backend.ts); they are not checked again here.
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { GrpcCode, V3Error, V3Errors } from "../api/v3-errors.ts";
import { ReconfigCheckError } from "./reconfig-check.ts";
import {
  checkRangeRequest as checkRangePerm,
  checkTxnRequest as checkTxnPerm,
  checkV3Password,
  authenticateOp,
  hashV3Password,
  jwtVerifyOnly,
  simpleTokenIndex,
  type V3JwtTokens,
  type V3AuthInfo,
  type V3AuthOp,
  type V3AuthResults,
  type V3AuthState,
} from "../auth/index.ts";
import {
  AlarmAction,
  AlarmType,
  alarmName,
  MAX_LEASE_TTL,
  hashKV,
  isReadOnlyTxn,
  isSerializableTxn,
  type DeleteRangeRequest,
  type DeleteRangeResponse,
  type HashKvResult,
  type LeaseGrantResponse,
  type LeaseId,
  type LeaseStatus,
  type LeaseTimeToLiveResponse,
  type PutRequest,
  type PutResponse,
  type RangeRequest,
  type RangeResponse,
  type TxnRequest,
  type TxnResponse,
  type V3KeySpace,
  type WatchCreate,
  type WatchHub,
  type WatchSink,
} from "../store/v3/index.ts";
import type { V3AlarmMember, V3AlarmRequest, V3Snapshot, V3Backend, V3CallContext, V3Header, V3Member, V3Status, V3WatchRegistration } from "./http/v3-backend.ts";
import { ETCD_SERVER_VERSION } from "./version.ts";
import { jwtTokensOf } from "./config.ts";
import { encodePermission, type V3Permission } from "../auth/index.ts";
import type { Member } from "./membership.ts";
import type { V3Op } from "./v3-command.ts";
import { LeaderChangedError, MemberError, MemberErrorKind, NotProposedTimeoutError, RequestTimeoutError, ServerUnavailableError } from "./errors.ts";
import { DeadlineExceededError, beforeDeadline } from "./deadline.ts";
import type { ReadOptions } from "./read-index.ts";
import { v3AuthResultOf, v3ResultOf, type Applied, type V3Results } from "./v3-results.ts";
import type { ApplyResult } from "./apply.ts";
import { LEASE_OVERHEAD, costPut, costTxn, noSpaceAlarm } from "./quota.ts";
import type { CommandBody } from "./request.ts";
import type { Deadline } from "./deadline.ts";
import type { ServerConfig } from "./config.ts";
import type { Membership } from "./membership.ts";
import type { MemberAdmin } from "./member-admin.ts";
import { authErrorText } from "./member-promote-wire.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import type { ServerMetrics } from "./metrics/server-metrics.ts";

/**
 * What the v3 API uses of its member: the state it reads (the key space and v3 auth are
 * replaced when a snapshot is installed, so they are read through the host each time),
 * the log and ReadIndex, and the jobs it hands requests to.
 */
export interface V3ServiceHost {
  readonly config: Pick<ServerConfig, "authToken" | "bcryptCost">;
  readonly clusterId: number;
  readonly memberId: number;
  readonly leaderId: number;
  readonly isLeader: boolean;
  readonly term: number;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly v3: V3KeySpace;
  readonly v3auth: V3AuthState;
  readonly membership: Pick<Membership, "get" | "list">;
  readonly members: Pick<MemberAdmin, "add" | "remove" | "update" | "promote">;
  readonly leases: Pick<LeaseKeeper, "renew" | "timeToLive">;
  readonly watchHub: Pick<WatchHub, "watch" | "cancel" | "resume" | "requestProgress">;
  readonly metrics: Pick<ServerMetrics, "ranged" | "readOnlyTxn" | "learnerPromoteFailures" | "hashDuration" | "hashRevDuration">;
  propose(body: CommandBody, deadline?: Deadline): Promise<ApplyResult>;
  linearizableRead(opts?: ReadOptions): Promise<void>;
  /** --quota-backend-bytes: would a write of this cost fit? */
  quotaAvailable(cost: number): boolean;
  v3DbSizes(): { size: number; inUse: number };
  /** Resolves once this member's database deleted the records a physical compaction dropped. */
  compactionFinished(revision: number): Promise<void>;
  defragment(): Promise<void>;
  makeBackup(): Promise<{ path: string; size: number; release(): void }>;
  transferLeadershipTo(target: number, deadline?: Deadline): Promise<void>;
}


/** The reads etcd makes through linearizableReadLoop, which a new leader fails. */
const LOOP_READ: ReadOptions = { failOnLeaderChange: true };


/**
 * Did the call bring a token (checked even while auth is disabled, as etcd does)? An empty
 * one too: etcd's AuthInfoFromCtx looks it up and answers invalid auth token.
 */
function hasToken<C extends V3Caller>(ctx: C): ctx is C & { token: string } {
  return ctx.token !== undefined;
}

/** Neither a token nor a client certificate's name: an anonymous caller. */
function isAnonymous(ctx: V3Caller): boolean {
  return !hasToken(ctx) && ctx.commonName === undefined;
}


/** A random positive int64 lease ID (etcd lets the server choose when the request says 0). */
function newLeaseId(): LeaseId {
  const id = randomBytes(8).readBigUInt64BE() & 0x7fff_ffff_ffff_ffffn;
  return id === 0n ? 1n : id;
}

/**
 * A caller as the gRPC server knows it: besides the token, the Common Name of a verified
 * client certificate (--client-cert-auth), which names the user when there is no token,
 * as etcd's AuthInfoFromTLS. The JSON gateway never sets it (see http/gateway-cn.ts).
 */
export interface V3Caller extends V3CallContext {
  commonName?: string;
}

export class V3Service implements V3Backend {
  readonly #kv: V3ServiceHost;
  #nextWatchId = 1;

  /** --auth-token=jwt,...: tokens are signed and verified here instead of registered by apply. */
  readonly #jwt: V3JwtTokens | undefined;

  constructor(kv: V3ServiceHost) {
    this.#kv = kv;
    const t = kv.config.authToken;
    this.#jwt = t.type === "jwt" ? jwtTokensOf(t) : undefined;
  }

  /**
   * Membership changes only when an entry is applied (a conf change, a snapshot): the flag
   * is looked up again once the applied index moved, else it is one field read per call.
   */
  get isLearner(): boolean {
    const at = this.#kv.appliedIndex;
    if (at !== this.#learnerAt) {
      this.#learnerAt = at;
      this.#learner = this.#kv.membership.get(this.#kv.memberId)?.isLearner === true;
    }
    return this.#learner;
  }

  #learner = false;
  #learnerAt = -1;

  header(revision?: number): V3Header {
    const kv = this.#kv;
    // Every answer carries the ids as decimal strings: made again only when an id changes
    // (the cluster id is learnt once), not twice per call.
    let ids = this.#ids;
    if (ids.clusterNum !== kv.clusterId || ids.memberNum !== kv.memberId) {
      ids = this.#ids = { clusterNum: kv.clusterId, memberNum: kv.memberId, clusterId: BigInt(kv.clusterId).toString(), memberId: BigInt(kv.memberId).toString() };
    }
    return { clusterId: ids.clusterId, memberId: ids.memberId, revision: revision ?? kv.v3.revision, raftTerm: kv.term };
  }

  #ids = { clusterNum: Number.NaN, memberNum: Number.NaN, clusterId: "", memberId: "" };

  /**
   * The caller of a call judged here, against this member's auth state as it is now: null
   * while auth is disabled; with auth on, a call with neither a token nor a certificate
   * name is refused at once ("user name is empty"), a bad token is 401. As etcd 3.4.23,
   * whose Range and read-only Txn check in doSerialize (after the ReadIndex round of a
   * linearizable one), Watch at its creation, member and maintenance calls before anything
   * else, all against the member's applied auth store. So an anonymous linearizable read
   * pays one round, after which an AuthDisable acknowledged through another member before
   * the call is in effect here; an anonymous serializable read, a watch or a member call
   * is refused at once by a member that has not applied it yet, as etcd's is. Writes,
   * lease revocations and auth changes do not come here: apply judges those (#caller),
   * so an AuthDisable committed ahead of them lets them through.
   */
  async authInfo(ctx: V3Caller): Promise<V3AuthInfo | null> {
    const auth = this.#kv.v3auth;
    if (!hasToken(ctx)) {
      if (!auth.enabled) return null;
      if (ctx.commonName !== undefined) return { user: ctx.commonName, revision: auth.authRevision };
      throw V3Errors.userEmpty();
    }
    return await this.#tokenInfo(ctx);
  }

  /**
   * The token's user and auth revision. A token is looked up while auth is disabled too, as
   * etcd's AuthInfoFromCtx does: disabling auth dropped every simple token, so a client
   * still sending one (patroni after auth was turned off) is refused until it authenticates
   * again and learns auth is off.
   */
  async #tokenInfo(ctx: V3Caller & { token: string }): Promise<V3AuthInfo> {
    const token = ctx.token;
    // A JWT stands on its own: its signature, its exp, and the auth revision it carries
    // (which the permission checks compare with the state's).
    if (this.#jwt !== undefined) return this.#jwt.verify(token, Date.now());
    // A token issued through another member names a log index this member may not have
    // applied yet: catch up before looking it up.
    const index = simpleTokenIndex(token);
    if (index !== undefined && index > this.#kv.appliedIndex) await this.#read(ctx);
    return this.#kv.v3auth.authInfoOf(token, Date.now());
  }

  /**
   * etcd's AuthInfoFromCtx, judging nothing: the caller a write, a lease revocation or an
   * auth change carries into its entry for apply to judge (null: neither a token nor a
   * certificate name, which apply refuses while auth is on there), and the caller of the
   * calls that check no permission (LeaseGrant, Compact, Alarm). Whatever this member's
   * auth state: an AuthEnable or AuthDisable committed through another member ahead of
   * the entry is in effect for it. Only a token that names nobody is refused here.
   */
  async #caller(ctx: V3Caller): Promise<V3AuthInfo | null> {
    if (hasToken(ctx)) return await this.#tokenInfo(ctx);
    if (ctx.commonName !== undefined) return { user: ctx.commonName, revision: this.#kv.v3auth.authRevision };
    return null;
  }

  /**
   * A ReadIndex round; `ctx`'s deadline ends the wait (etcd's linearizableReadNotify returns
   * ctx.Err()). LOOP_READ for the reads etcd makes through its linearizable read loop
   * (Range, a read-only Txn, a linearizable MemberList), which a new leader fails; the
   * others here are reads etcd 3.4 makes through the log, or none at all.
   */
  async #read(ctx?: V3CallContext, opts?: ReadOptions): Promise<void> {
    try {
      await beforeDeadline(this.#kv.linearizableRead(opts), ctx?.deadline);
    } catch (err) {
      throw toV3Error(err);
    }
  }

  /** A v3 command through the log; its answer as apply gives it for that command. */
  async #propose<K extends keyof V3Results>(op: Extract<V3Op, { k: K }>, ctx?: V3CallContext): Promise<V3Results[K]> {
    return v3ResultOf(op, await this.#proposeAny(op, ctx));
  }

  /** An auth command through the log: v3 auth's result for the op's kind. */
  async #proposeAuth<K extends V3AuthOp["kind"]>(op: Extract<V3AuthOp, { kind: K }>, info: V3AuthInfo | null, ctx?: V3CallContext): Promise<V3AuthResults[K]> {
    return v3AuthResultOf(op, await this.#proposeAny({ k: "auth", op, info }, ctx));
  }

  async #proposeAny(op: V3Op, ctx?: V3CallContext): Promise<Applied> {
    let res;
    try {
      res = await this.#kv.propose({ t: "v3", time: Date.now(), op }, ctx?.deadline);
    } catch (err) {
      throw toV3Error(err);
    }
    return appliedOrThrow(res);
  }

  // Range and Put are the hot calls: a range with auth off and no token, a put without a
  // token (apply judges it) and with room under the quota, run without the async steps
  // below, whose every await costs a promise and a microtask turn (~1.4 KB allocated per
  // put). Same checks, same errors, same order; a failure is a rejection, never a
  // synchronous throw.
  range(req: RangeRequest, ctx: V3CallContext): Promise<RangeResponse> {
    const auth = this.#kv.v3auth;
    if (auth.enabled || hasToken(ctx)) return this.#rangeAuth(req, ctx);
    try {
      checkRangePerm(auth, null, req);
      if (req.serializable) return Promise.resolve(this.#ranged(req));
      return beforeDeadline(this.#kv.linearizableRead(LOOP_READ), ctx.deadline).then(
        () => this.#ranged(req),
        (err: unknown) => {
          throw toV3Error(err);
        },
      );
    } catch (err) {
      return Promise.reject(toV3Error(err));
    }
  }

  async #rangeAuth(req: RangeRequest, ctx: V3CallContext): Promise<RangeResponse> {
    // As etcd's Range: the ReadIndex round first, then the permission check, so a change
    // of permissions acknowledged before the call is in effect for it; a serializable one
    // is judged at once (see authInfo).
    if (!req.serializable) await this.#read(ctx, LOOP_READ);
    const info = await this.authInfo(ctx);
    checkRangePerm(this.#kv.v3auth, info, req);
    return this.#ranged(req);
  }

  #ranged(req: RangeRequest): RangeResponse {
    this.#kv.metrics.ranged();
    return this.#kv.v3.range(req);
  }

  /**
   * A write is judged at apply only, as etcd's authApplierV3 (its v3rpc and EtcdServer.Put
   * check nothing but the token): a check here, against this member's state, would refuse
   * a write that a grant committed through another member allows when the write applies
   * (etcd 3.4.23, 3 members, RoleGrantPermission via member 1 then the user's put via
   * member 3 with a token from before: 29/30 served, 1/30 'revision of auth store is old').
   * A caller without a token goes to the log too, stamped anonymous, with auth on or off
   * here: apply refuses it while auth is on there.
   */
  put(req: PutRequest, ctx: V3Caller): Promise<PutResponse> {
    if (!isAnonymous(ctx) || !this.#kv.quotaAvailable(costPut(req))) return this.#putChecked(req, ctx);
    try {
      // The anonymous stamp fits the log's binary put (request.ts).
      return this.#kv.propose({ t: "v3", time: Date.now(), op: { k: "put", r: req, a: null } }, ctx.deadline).then(appliedPut, rethrowV3);
    } catch (err) {
      return Promise.reject(toV3Error(err));
    }
  }

  async #putChecked(req: PutRequest, ctx: V3Caller): Promise<PutResponse> {
    const a = await this.#caller(ctx);
    await this.#checkQuota(costPut(req));
    return await this.#propose({ k: "put", r: req, a }, ctx);
  }

  /**
   * etcd's quotaAlarmer: a write that would take the database past --quota-backend-bytes
   * is refused, and the NOSPACE alarm is raised through the log, so every member refuses
   * such writes from then on (the key space checks the alarm when it applies them).
   */
  async #checkQuota(cost: number): Promise<void> {
    if (this.#kv.quotaAvailable(cost)) return;
    if (this.#kv.v3.alarms(AlarmType.NOSPACE).length === 0) await this.#propose(noSpaceAlarm(this.#kv.memberId)).catch(() => undefined);
    throw V3Errors.noSpace();
  }

  /** Judged at apply, as a put. */
  async deleteRange(req: DeleteRangeRequest, ctx: V3CallContext): Promise<DeleteRangeResponse> {
    return await this.#propose({ k: "deleteRange", r: req, a: await this.#caller(ctx) }, ctx);
  }

  async txn(req: TxnRequest, ctx: V3CallContext): Promise<TxnResponse> {
    if (!isReadOnlyTxn(req)) {
      const a = await this.#caller(ctx);
      await this.#checkQuota(costTxn(req));
      return await this.#propose({ k: "txn", r: req, a }, ctx);
    }
    await this.#checkQuota(costTxn(req));
    // etcd serves a txn without writes as a read: no log entry, no revision; and one
    // whose ranges are all serializable as a serializable Range, with no ReadIndex round.
    // Judged as a Range: after the round, against the state it caught up with.
    if (!isSerializableTxn(req)) await this.#read(ctx, LOOP_READ);
    checkTxnPerm(this.#kv.v3auth, await this.authInfo(ctx), req);
    const res = this.#kv.v3.txn(req).response;
    this.#kv.metrics.readOnlyTxn(req, res);
    return res;
  }

  /** etcd checks no permission for a compaction: any caller, one without a token too. */
  async compact(req: { revision: number; physical: boolean }, ctx: V3CallContext): Promise<{ revision: number }> {
    await this.#caller(ctx);
    const r = await this.#propose({ k: "compact", r: { revision: req.revision, physical: req.physical } }, ctx);
    // etcd answers a physical compaction once this member's database deleted its records.
    if (req.physical) await this.#kv.compactionFinished(req.revision);
    return r;
  }

  /** etcd checks no permission for a grant (a new lease holds no key): any caller. */
  async leaseGrant(req: { id: LeaseId; ttl: number }, ctx: V3CallContext): Promise<LeaseGrantResponse> {
    await this.#caller(ctx);
    if (req.ttl > MAX_LEASE_TTL) throw V3Errors.leaseTTLTooLarge();
    const id = req.id === 0n ? newLeaseId() : req.id;
    await this.#checkQuota(LEASE_OVERHEAD);
    return await this.#propose({ k: "leaseGrant", id, ttl: req.ttl }, ctx);
  }

  /**
   * Judged at apply, as etcd's authApplierV3.LeaseRevoke: with auth on there, the caller
   * must be able to write every key the lease holds (revoking it deletes them); a lease
   * without keys asks nothing. A refused revocation leaves the lease, its keys and its
   * deadline (etcd 3.4.23: 'etcdserver: permission denied', or 'user name is empty'
   * without a token; the lease lives on).
   */
  async leaseRevoke(id: LeaseId, ctx: V3CallContext): Promise<{ revision: number }> {
    return await this.#propose({ k: "leaseRevoke", id, a: await this.#caller(ctx) }, ctx);
  }

  /**
   * Keepalive: the granted TTL, or undefined for a lease that does not exist (any more).
   * Renewed in the leader's memory, never through the log; a follower forwards it to the
   * leader's peer port (lease-keeper.ts). etcd 3.4 reads no token for it (nor for
   * TimeToLive and Leases): any caller may.
   */
  async leaseKeepAlive(id: LeaseId, _ctx: V3CallContext): Promise<number | undefined> {
    return this.#kv.leases.renew(id);
  }

  /** The seconds left as the leader's deadlines say (a follower asks the leader, as etcd does). */
  async leaseTimeToLive(req: { id: LeaseId; keys: boolean }, _ctx: V3CallContext): Promise<LeaseTimeToLiveResponse | undefined> {
    return this.#kv.leases.timeToLive(req.id, req.keys);
  }

  async leaseLeases(ctx: V3CallContext): Promise<LeaseStatus[]> {
    await this.#read(ctx);
    return this.#kv.v3.leases();
  }

  /**
   * An auth change or read through the log, judged at apply against the caller only, as
   * etcd's authApplierV3 (needAdminPermission): a caller without a token is refused there
   * ('user name is empty') if auth is on at the entry's turn, whatever this member has
   * applied, and a non-root caller on a lagging member meets the state its entry applies to.
   */
  async auth<K extends V3AuthOp["kind"]>(op: Extract<V3AuthOp, { kind: K }>, ctx: V3CallContext): Promise<V3AuthResults[K]> {
    const info = await this.#caller(ctx);
    return await this.#proposeAuth(op, info, ctx);
  }

  /**
   * User add / change password: the password is hashed here; only the hash enters the log.
   * A hash still queued for bcrypt when the caller's deadline passes is dropped.
   */
  async userAdd(req: { name: string; password: string; noPassword: boolean }, ctx: V3CallContext): Promise<void> {
    if (req.name === "") throw V3Errors.userEmpty();
    const passwordHash = req.noPassword ? null : await whileWanted(ctx, (signal) => hashV3Password(req.password, this.#kv.config.bcryptCost, { signal }));
    await this.auth({ kind: "userAdd", name: req.name, passwordHash, noPassword: req.noPassword }, ctx);
  }

  async userChangePassword(name: string, password: string, ctx: V3CallContext): Promise<void> {
    const passwordHash = await whileWanted(ctx, (signal) => hashV3Password(password, this.#kv.config.bcryptCost, { signal }));
    await this.auth({ kind: "userChangePassword", name, passwordHash }, ctx);
  }

  /**
   * etcd's Authenticate: check the password here, register the token through the log; retry
   * when auth moved meanwhile. A check still queued for bcrypt when the caller's deadline
   * passes or its client goes away is dropped (etcd's goroutine would hash for a client
   * that is gone).
   */
  authenticate(name: string, password: string, ctx?: V3CallContext): Promise<string> {
    return whileWanted(ctx, (signal) => this.#authenticate(name, password, signal));
  }

  async #authenticate(name: string, password: string, signal: AbortSignal | undefined): Promise<string> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const checkedRevision = await checkV3Password(this.#kv.v3auth, { name, password }, { signal });
      const jwt = this.#jwt;
      if (jwt?.verifyOnly === true) throw jwtVerifyOnly();
      const op = authenticateOp({ name, checkedRevision, time: Date.now(), jwt: jwt !== undefined });
      const r = await this.#proposeAuth(op, null);
      // Applied at checkedRevision (a stale one is answered authenticateStale), so that is the token's revision.
      if (r.kind === "authenticated") return jwt === undefined ? r.token : jwt.sign(name, checkedRevision, Date.now());
    }
    throw V3Errors.authOldRevision();
  }

  /**
   * Registers a watcher on this member's hub. Returns its hub id and a cancel function;
   * a permission failure throws (the gateway answers it as etcd does).
   */
  async watch(create: Omit<WatchCreate, "id">, sink: WatchSink, ctx: V3CallContext): Promise<V3WatchRegistration> {
    const info = await this.authInfo(ctx);
    this.#kv.v3auth.isRangePermitted(info, create.key, create.rangeEnd);
    const id = this.#nextWatchId++;
    const status = this.#kv.watchHub.watch({ ...create, id }, sink);
    const hub = this.#kv.watchHub;
    return { id, status, cancel: () => void hub.cancel(id), resume: () => void hub.resume(id) };
  }

  async authEnable(ctx: V3CallContext): Promise<void> {
    await this.auth({ kind: "authEnable" }, ctx);
  }

  async authDisable(ctx: V3CallContext): Promise<void> {
    await this.auth({ kind: "authDisable" }, ctx);
  }

  async userGet(name: string, ctx: V3CallContext): Promise<string[]> {
    return (await this.auth({ kind: "userGet", name }, ctx)).roles;
  }

  async userList(ctx: V3CallContext): Promise<string[]> {
    return (await this.auth({ kind: "userList" }, ctx)).users;
  }

  async userDelete(name: string, ctx: V3CallContext): Promise<void> {
    await this.auth({ kind: "userDelete", name }, ctx);
  }

  async userGrantRole(req: { user: string; role: string }, ctx: V3CallContext): Promise<void> {
    await this.auth({ kind: "userGrantRole", user: req.user, role: req.role }, ctx);
  }

  async userRevokeRole(req: { name: string; role: string }, ctx: V3CallContext): Promise<void> {
    await this.auth({ kind: "userRevokeRole", name: req.name, role: req.role }, ctx);
  }

  async roleAdd(name: string, ctx: V3CallContext): Promise<void> {
    await this.auth({ kind: "roleAdd", name }, ctx);
  }

  async roleGet(role: string, ctx: V3CallContext): Promise<V3Permission[]> {
    return (await this.auth({ kind: "roleGet", role }, ctx)).perm;
  }

  async roleList(ctx: V3CallContext): Promise<string[]> {
    return (await this.auth({ kind: "roleList" }, ctx)).roles;
  }

  async roleDelete(role: string, ctx: V3CallContext): Promise<void> {
    await this.auth({ kind: "roleDelete", role }, ctx);
  }

  async roleGrantPermission(req: { name: string; perm: V3Permission }, ctx: V3CallContext): Promise<void> {
    await this.auth({ kind: "roleGrantPermission", name: req.name, perm: encodePermission(req.perm) }, ctx);
  }

  async roleRevokePermission(req: { role: string; key: Buffer; rangeEnd: Buffer }, ctx: V3CallContext): Promise<void> {
    await this.auth({ kind: "roleRevokePermission", role: req.role, key: req.key.toString("base64"), rangeEnd: req.rangeEnd.toString("base64") }, ctx);
  }

  // ---- cluster and maintenance ----------------------------------------------------------

  #member(m: Member): V3Member {
    return { id: BigInt(m.id).toString(), name: m.name, peerUrls: m.peerUrls, clientUrls: m.clientUrls, isLearner: m.isLearner === true };
  }

  #members(): V3Member[] {
    return this.#kv.membership.list().map((m) => this.#member(m));
  }

  /** Membership changes need the root role when auth is on (etcd's admin check). */
  async #admin(ctx: V3CallContext): Promise<void> {
    this.#kv.v3auth.isAdminPermitted(await this.authInfo(ctx));
  }

  /**
   * etcd's authMaintenanceServer (Defragment, Hash, HashKV, Snapshot): the admin check's
   * error goes back as it is, code Unknown and the auth store's text ("auth: permission
   * denied"), where the same refusal of a member change is a gRPC status.
   */
  async #maintenanceAdmin(ctx: V3CallContext): Promise<void> {
    await asAuthStoreError(() => this.#admin(ctx));
  }

  /** etcd 3.4's MemberList reads no token: any caller may list. */
  async memberList(req: { linearizable: boolean }, ctx: V3CallContext): Promise<V3Member[]> {
    // etcd 3.5's field, read through the same loop there.
    if (req.linearizable) await this.#read(ctx, LOOP_READ);
    return this.#members();
  }

  async memberAdd(req: { peerUrls: string[]; isLearner: boolean }, ctx: V3CallContext): Promise<{ member: V3Member; members: V3Member[] }> {
    // etcd's ClusterServer parses the URLs before the server checks the caller.
    for (const u of req.peerUrls) {
      if (!/^https?:\/\/[^/]+/.test(u)) throw V3Errors.memberBadURLs();
    }
    if (req.peerUrls.length === 0) throw V3Errors.memberBadURLs();
    await this.#admin(ctx);
    const member = await this.#membership(() => this.#kv.members.add(req.peerUrls, { learner: req.isLearner }));
    return { member: this.#member(member), members: this.#members() };
  }

  async memberRemove(id: string, ctx: V3CallContext): Promise<V3Member[]> {
    await this.#admin(ctx);
    await this.#membership(() => this.#kv.members.remove(parseMemberId(id)));
    return this.#members();
  }

  async memberUpdate(req: { id: string; peerUrls: string[] }, ctx: V3CallContext): Promise<V3Member[]> {
    await this.#admin(ctx);
    await this.#membership(() => this.#kv.members.update(parseMemberId(req.id), req.peerUrls));
    return this.#members();
  }

  /** The members as the member that decided the promotion (the leader) had them once applied. */
  async memberPromote(id: string, ctx: V3CallContext): Promise<V3Member[]> {
    try {
      await this.#admin(ctx);
    } catch (err) {
      // etcd's PromoteMember checks the caller first and counts a refusal there, on any member.
      this.#kv.metrics.learnerPromoteFailures.inc({ Reason: authErrorText(err) });
      throw err;
    }
    const members = await this.#membership(() => this.#kv.members.promote(parseMemberId(id)));
    return members.map((m) => this.#member(m));
  }

  /** Member administration's errors in the v3 API's terms. */
  async #membership<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      // etcd 3.4 returns ErrNotEnoughStartedMembers as a plain error (code Unknown, the
      // gateway's 500), while ErrUnhealthy is its gRPC status (Unavailable, 503).
      if (err instanceof ReconfigCheckError) throw err.kind === "unhealthy" ? V3Errors.unhealthy() : new V3Error(GrpcCode.Unknown, err.message);
      if (err instanceof MemberError) {
        // etcd's gRPC table maps ErrIDRemoved to the same ErrGRPCMemberNotFound.
        if (err.kind === MemberErrorKind.notFound || err.kind === MemberErrorKind.removed) throw V3Errors.memberNotFound();
        if (err.kind === MemberErrorKind.peerUrlExists) throw V3Errors.peerURLExist();
        if (err.kind === MemberErrorKind.idExists) throw V3Errors.memberExist();
        if (err.kind === MemberErrorKind.tooManyLearners) throw V3Errors.tooManyLearners();
        throw V3Errors.memberNotLearner();
      }
      throw toV3Error(err);
    }
  }

  /** etcd 3.4's Status reads no token: any caller may ask. */
  async status(_ctx: V3CallContext): Promise<V3Status> {
    const { size, inUse } = this.#kv.v3DbSizes();
    const me = this.#kv.membership.get(this.#kv.memberId);
    const errors = this.#kv.v3.alarms().map((a) => `memberID:${a.memberId} alarm:${alarmName(a.alarm)} `);
    return {
      version: ETCD_SERVER_VERSION,
      dbSize: size,
      leader: BigInt(this.#kv.leaderId).toString(),
      raftIndex: this.#kv.commitIndex,
      raftTerm: this.#kv.term,
      raftAppliedIndex: this.#kv.appliedIndex,
      errors,
      dbSizeInUse: inUse,
      isLearner: me?.isLearner === true,
    };
  }

  /**
   * etcd's Alarm: GET lists the raised alarms (every type for NONE); ACTIVATE and
   * DEACTIVATE go through the log and answer the alarm they touched. Disarming NOSPACE
   * lifts the cap at once; if the database is still over quota, the next write raises it
   * again, as in etcd. etcd 3.4 checks no permission for it: any caller, one without a
   * token too, may raise and disarm alarms; a token it cannot read is refused with the
   * auth store's own error, not a gRPC status (its Alarm returns the error as it is).
   */
  async alarm(req: V3AlarmRequest, ctx: V3CallContext): Promise<V3AlarmMember[]> {
    await asAuthStoreError(() => this.#caller(ctx));
    if (req.action === AlarmAction.GET) {
      await this.#read(ctx);
      return this.#kv.v3.alarms(req.alarm);
    }
    return await this.#propose({ k: "alarm", r: { action: req.action, memberId: req.memberId, alarm: req.alarm } }, ctx);
  }

  /** etcd's Defragment: this member's database file rewritten without its free pages. */
  async defragment(ctx: V3CallContext): Promise<void> {
    await this.#maintenanceAdmin(ctx);
    await this.#kv.defragment();
  }

  async hash(ctx: V3CallContext): Promise<{ hash: number; revision: number }> {
    await this.#maintenanceAdmin(ctx);
    const start = performance.now();
    const hash = parseInt(this.#kv.v3.hash().slice(0, 8), 16);
    this.#kv.metrics.hashDuration.observe((performance.now() - start) / 1000);
    return { hash, revision: this.#kv.v3.revision };
  }

  async hashKV(revision: number, ctx: V3CallContext): Promise<HashKvResult> {
    await this.#maintenanceAdmin(ctx);
    const start = performance.now();
    const r = hashKV(this.#kv.v3, revision); // a compacted or future revision throws: not observed, as etcd's
    this.#kv.metrics.hashRevDuration.observe((performance.now() - start) / 1000);
    return r;
  }

  /** A backup of the whole replicated state at a linearizable point, served from a file in the data dir. */
  async snapshot(ctx: V3CallContext): Promise<V3Snapshot> {
    await this.#maintenanceAdmin(ctx);
    await this.#read(ctx);
    const backup = await this.#kv.makeBackup();
    return {
      size: backup.size,
      chunks: () => createReadStream(backup.path, { highWaterMark: 1024 * 1024 }),
      release: backup.release,
    };
  }

  /** etcd 3.4's authMaintenanceServer passes MoveLeader through: no token is read, any caller may move the leader. */
  async moveLeader(targetId: string, ctx: V3CallContext): Promise<void> {
    if (!this.#kv.isLeader) throw V3Errors.notLeader();
    // etcd's MoveLeader asks IsMemberExist of any ID, 0 included: no member, a bad transferee.
    const target = /^[0-9]+$/.test(targetId) ? Number(targetId) : 0;
    const member = Number.isSafeInteger(target) && target !== 0 ? this.#kv.membership.get(target) : undefined;
    if (!member || member.isLearner) throw V3Errors.badLeaderTransferee();
    // etcd 3.4 answers a move to the leader itself with success: Raft drops the
    // transfer, and the wait for the transferee to lead is over at once
    if (target === this.#kv.memberId) return;
    await this.#kv.transferLeadershipTo(target, ctx.deadline);
  }

  /** A progress message to one watcher of this member (etcd's progress_request). */
  requestProgress(id: number): boolean {
    return this.#kv.watchHub.requestProgress(id, this.#kv.v3.revision);
  }
}

/** Runs `fn`; an auth refusal it throws becomes etcd's auth store error as grpc-go sends an error that is not a status: code Unknown, the store's text. */
async function asAuthStoreError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof V3Error && authErrorText(err) !== err.message) throw new V3Error(GrpcCode.Unknown, authErrorText(err));
    throw err;
  }
}

/** Member IDs arrive as decimal uint64 strings; ours fit in 53 bits. */
function parseMemberId(id: string): number {
  const n = Number(id);
  if (!/^[0-9]+$/.test(id) || !Number.isSafeInteger(n) || n === 0) throw V3Errors.memberNotFound();
  return n;
}

/** Raft-side failures in the v3 API's terms (etcd: "etcdserver: request timed out", code 14). */
/** #proposeAny's answer for a put, as a `then` callback (no closure per call). */
/** A command's outcome: applied, or its refusal thrown as a V3Error. */
function appliedOrThrow(res: ApplyResult): Applied {
  if (!res.ok) throw res.error instanceof V3Error ? res.error : new V3Error(2, res.error.message);
  return res;
}

function appliedPut(res: ApplyResult): PutResponse {
  return appliedOrThrow(res).v3 as PutResponse;
}

/**
 * Runs `work` with a signal that fires when the caller gives up: its deadline passes
 * (etcd's context error) or its client went away (`ctx.signal`). bcrypt's queue drops a
 * job not yet started on it (auth/bcrypt.ts).
 */
async function whileWanted<T>(ctx: V3CallContext | undefined, work: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
  const expired = ctx?.deadline === undefined ? undefined : new AbortController();
  const off = expired === undefined ? undefined : ctx?.deadline?.onExpire(() => expired.abort(V3Errors.contextDeadlineExceeded()));
  const gone = ctx?.signal;
  const signal = expired === undefined ? gone : gone === undefined ? expired.signal : AbortSignal.any([expired.signal, gone]);
  try {
    return await work(signal);
  } finally {
    off?.();
  }
}

function rethrowV3(err: unknown): never {
  throw toV3Error(err);
}

function toV3Error(err: unknown): unknown {
  if (err instanceof V3Error) return err;
  if (err instanceof LeaderChangedError) return V3Errors.leaderChanged();
  if (err instanceof DeadlineExceededError) return err.proposed ? V3Errors.timeout() : V3Errors.contextDeadlineExceeded();
  if (err instanceof NotProposedTimeoutError) return V3Errors.contextDeadlineExceeded();
  if (err instanceof RequestTimeoutError) return V3Errors[err.kind]();
  if (err instanceof ServerUnavailableError) {
    if (/stopped/.test(err.message)) return V3Errors.stopped();
    return V3Errors.timeout();
  }
  return err;
}
