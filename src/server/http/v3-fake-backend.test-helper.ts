// A small in-memory V3Backend for the gateway's tests: enough KV, lease, watch, cluster and
// auth behaviour to check the HTTP side (statuses, bodies, headers, streams). It is not a
// model of etcd: the real semantics live in store/v3 and the server.
import { V3Error, V3Errors } from "../../api/v3-errors.ts";
import type {
  DeleteRangeRequest,
  DeleteRangeResponse,
  KeyValue,
  LeaseGrantResponse,
  LeaseId,
  LeaseStatus,
  LeaseTimeToLiveResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  ResponseOp,
  RevisionEvents,
  TxnRequest,
  TxnResponse,
  V3Event,
  WatchCreate,
  WatchSink,
} from "../../store/v3/index.ts";
import type {
  V3AlarmMember,
  V3AlarmRequest,
  V3Backend,
  V3CallContext,
  V3Header,
  V3Member,
  V3Permission,
  V3Snapshot,
  V3Status,
  V3WatchRegistration,
} from "./v3-backend.ts";
import { snapshotOfBytes } from "./v3-backend.ts";

interface FakeWatcher {
  id: number;
  key: Buffer;
  rangeEnd: Buffer;
  sink: WatchSink;
  active: boolean;
  /** Its sink refused the revision `next` (as the real hub: nothing more until resumed). */
  paused: boolean;
  next: number;
}

const inRange = (k: Buffer, key: Buffer, end: Buffer): boolean => {
  if (end.length === 0) return k.equals(key);
  if (end.length === 1 && end[0] === 0) return Buffer.compare(k, key) >= 0;
  return Buffer.compare(k, key) >= 0 && Buffer.compare(k, end) < 0;
};

export class FakeV3Backend implements V3Backend {
  revision = 1;
  compactRevision = 0;
  readonly kvs = new Map<string, KeyValue>();
  readonly history: RevisionEvents[] = [];
  readonly leases = new Map<bigint, { ttl: number }>();
  readonly watchers = new Map<number, FakeWatcher>();
  readonly users = new Map<string, { password: string; roles: string[] }>();
  authEnabled = false;
  /** Every call's context, to check token handling. */
  readonly calls: Array<{ method: string; token: string | undefined }> = [];
  /** Thrown by the next call (then cleared). */
  failNext: V3Error | undefined;
  /** Watch creations refused with this error. */
  refuseWatch: V3Error | undefined;
  snapshotImage: Uint8Array = Buffer.from("snapshot-image");
  #nextWatch = 1;
  #nextLease = 1000n;

  header(revision?: number): V3Header {
    return { clusterId: "14841639068965178418", memberId: "10276657743932975437", revision: revision ?? this.revision, raftTerm: 2 };
  }

  #enter(method: string, ctx: V3CallContext | undefined): void {
    this.calls.push({ method, token: ctx?.token });
    const f = this.failNext;
    this.failNext = undefined;
    if (f !== undefined) throw f;
  }

  /** Applies one revision's changes and tells the watchers. */
  #commit(events: V3Event[]): void {
    if (events.length === 0) return;
    const batch: RevisionEvents = { revision: this.revision, events };
    this.history.push(batch);
    for (const w of this.watchers.values()) this.#notify(w, batch);
  }

  /** false when the watcher paused. */
  #notify(w: FakeWatcher, batch: RevisionEvents): boolean {
    if (w.paused) return false;
    const mine = batch.events.filter((e) => inRange(e.kv.key, w.key, w.rangeEnd));
    if (w.active && mine.length > 0 && w.sink.send({ revision: batch.revision, events: mine }) === false) {
      w.paused = true;
      w.next = batch.revision;
      return false;
    }
    w.next = batch.revision + 1;
    return true;
  }

  /** The real hub's resume, one revision per message: the compacted answer, or history from `next`. */
  #resume(w: FakeWatcher): void {
    if (!w.active || !w.paused) return;
    w.paused = false;
    if (w.next < this.compactRevision) {
      w.active = false;
      this.watchers.delete(w.id);
      w.sink.send({ revision: this.revision, events: [], canceled: true, compactRevision: this.compactRevision });
      return;
    }
    for (const b of this.history) if (b.revision >= w.next && !this.#notify(w, b)) return;
  }

  async range(req: RangeRequest, ctx: V3CallContext): Promise<RangeResponse> {
    this.#enter("range", ctx);
    if (req.revision > this.revision) throw V3Errors.futureRev();
    const all = [...this.kvs.values()].filter((kv) => inRange(kv.key, req.key, req.rangeEnd)).sort((a, b) => Buffer.compare(a.key, b.key));
    const limited = req.limit > 0 ? all.slice(0, req.limit) : all;
    const kvs = req.countOnly ? [] : limited.map((kv) => (req.keysOnly ? { ...kv, value: Buffer.alloc(0) } : kv));
    return { revision: this.revision, kvs, more: limited.length < all.length, count: all.length };
  }

  #put(req: PutRequest): { prev: KeyValue | undefined; kv: KeyValue } {
    const id = req.key.toString("latin1");
    const prev = this.kvs.get(id);
    if (req.ignoreValue && prev === undefined) throw V3Errors.keyNotFound();
    if (req.lease !== 0n && !this.leases.has(req.lease)) throw V3Errors.leaseNotFound();
    const kv: KeyValue = {
      key: req.key,
      createRevision: prev?.createRevision ?? this.revision + 1,
      modRevision: this.revision + 1,
      version: (prev?.version ?? 0) + 1,
      value: req.ignoreValue && prev !== undefined ? prev.value : req.value,
      lease: req.ignoreLease && prev !== undefined ? prev.lease : req.lease,
    };
    return { prev, kv };
  }

  async put(req: PutRequest, ctx: V3CallContext): Promise<PutResponse> {
    this.#enter("put", ctx);
    const { prev, kv } = this.#put(req);
    this.revision++;
    this.kvs.set(req.key.toString("latin1"), kv);
    this.#commit([{ type: 0, kv }]);
    return prev !== undefined && req.prevKv ? { revision: this.revision, prevKv: prev } : { revision: this.revision };
  }

  #delete(req: DeleteRangeRequest, rev: number): { deleted: KeyValue[]; events: V3Event[] } {
    const deleted = [...this.kvs.values()].filter((kv) => inRange(kv.key, req.key, req.rangeEnd)).sort((a, b) => Buffer.compare(a.key, b.key));
    for (const kv of deleted) this.kvs.delete(kv.key.toString("latin1"));
    const events = deleted.map((kv): V3Event => ({ type: 1, kv: { key: kv.key, createRevision: 0, modRevision: rev, version: 0, value: Buffer.alloc(0), lease: 0n } }));
    return { deleted, events };
  }

  async deleteRange(req: DeleteRangeRequest, ctx: V3CallContext): Promise<DeleteRangeResponse> {
    this.#enter("deleteRange", ctx);
    const { deleted, events } = this.#delete(req, this.revision + 1);
    if (deleted.length > 0) this.revision++;
    this.#commit(events);
    return { revision: this.revision, deleted: deleted.length, prevKvs: req.prevKv ? deleted : [] };
  }

  async txn(req: TxnRequest, ctx: V3CallContext): Promise<TxnResponse> {
    this.#enter("txn", ctx);
    const succeeded = req.compare.every((c) => {
      const kv = this.kvs.get(c.key.toString("latin1"));
      const actual = "version" in c ? kv?.version ?? 0 : "createRevision" in c ? kv?.createRevision ?? 0 : "modRevision" in c ? kv?.modRevision ?? 0 : undefined;
      const want = "version" in c ? c.version : "createRevision" in c ? c.createRevision : "modRevision" in c ? c.modRevision : undefined;
      if (actual === undefined || want === undefined) {
        if (!("value" in c) || kv === undefined) return false;
        const r = Buffer.compare(kv.value, c.value);
        return [r === 0, r > 0, r < 0, r !== 0][c.result]!;
      }
      return [actual === want, actual > want, actual < want, actual !== want][c.result]!;
    });
    const ops = succeeded ? req.success : req.failure;
    const writes = ops.some((op) => !("range" in op));
    const rev = writes ? this.revision + 1 : this.revision;
    const events: V3Event[] = [];
    const responses: ResponseOp[] = [];
    for (const op of ops) {
      if ("range" in op) {
        const r = await this.range(op.range, ctx);
        responses.push({ range: { ...r, revision: rev } });
      } else if ("put" in op) {
        const { prev, kv } = this.#put(op.put);
        const stamped = { ...kv, modRevision: rev, createRevision: prev?.createRevision ?? rev };
        this.kvs.set(op.put.key.toString("latin1"), stamped);
        events.push({ type: 0, kv: stamped });
        responses.push({ put: { revision: rev } });
      } else if ("deleteRange" in op) {
        const d = this.#delete(op.deleteRange, rev);
        events.push(...d.events);
        responses.push({ deleteRange: { revision: rev, deleted: d.deleted.length, prevKvs: [] } });
      }
    }
    if (writes) this.revision = rev;
    this.#commit(events);
    return { revision: this.revision, succeeded, responses };
  }

  async compact(req: { revision: number; physical: boolean }, ctx: V3CallContext): Promise<{ revision: number }> {
    this.#enter("compact", ctx);
    if (req.revision <= this.compactRevision) throw V3Errors.compacted();
    if (req.revision > this.revision) throw V3Errors.futureRev();
    this.compactRevision = req.revision;
    return { revision: this.revision };
  }

  async leaseGrant(req: { id: LeaseId; ttl: number }, ctx: V3CallContext): Promise<LeaseGrantResponse> {
    this.#enter("leaseGrant", ctx);
    const id = req.id === 0n ? this.#nextLease++ : req.id;
    if (this.leases.has(id)) throw V3Errors.leaseExist();
    const ttl = Math.max(2, req.ttl);
    this.leases.set(id, { ttl });
    return { revision: this.revision, id, ttl };
  }

  async leaseRevoke(id: LeaseId, ctx: V3CallContext): Promise<{ revision: number }> {
    this.#enter("leaseRevoke", ctx);
    if (!this.leases.delete(id)) throw V3Errors.leaseNotFound();
    return { revision: this.revision };
  }

  async leaseKeepAlive(id: LeaseId, ctx: V3CallContext): Promise<number | undefined> {
    this.#enter("leaseKeepAlive", ctx);
    return this.leases.get(id)?.ttl;
  }

  async leaseTimeToLive(req: { id: LeaseId; keys: boolean }, ctx: V3CallContext): Promise<LeaseTimeToLiveResponse | undefined> {
    this.#enter("leaseTimeToLive", ctx);
    const l = this.leases.get(req.id);
    if (l === undefined) return undefined;
    const keys = req.keys ? [...this.kvs.values()].filter((kv) => kv.lease === req.id).map((kv) => kv.key) : [];
    return { revision: this.revision, id: req.id, ttl: l.ttl - 1, grantedTtl: l.ttl, keys };
  }

  async leaseLeases(ctx: V3CallContext): Promise<LeaseStatus[]> {
    this.#enter("leaseLeases", ctx);
    return [...this.leases].map(([id, l]) => ({ id, ttl: l.ttl, expiry: 0 }));
  }

  async watch(create: Omit<WatchCreate, "id">, sink: WatchSink, ctx: V3CallContext): Promise<V3WatchRegistration> {
    this.#enter("watch", ctx);
    if (this.refuseWatch !== undefined) throw this.refuseWatch;
    const id = this.#nextWatch++;
    if (create.startRevision > 0 && create.startRevision < this.compactRevision) {
      sink.send({ revision: this.revision, events: [], canceled: true, compactRevision: this.compactRevision });
      return { id, status: "canceled", cancel: () => {}, resume: () => {} };
    }
    const w: FakeWatcher = { id, key: create.key, rangeEnd: create.rangeEnd, sink, active: true, paused: false, next: this.revision + 1 };
    // Replay synchronously, before the registration resolves (as the real hub does).
    if (create.startRevision > 0) for (const b of this.history) if (b.revision >= create.startRevision && !this.#notify(w, b)) break;
    this.watchers.set(id, w);
    return {
      id,
      status: "watching",
      cancel: () => {
        w.active = false;
        this.watchers.delete(id);
      },
      resume: () => this.#resume(w),
    };
  }

  /** A progress notification to every watcher (the server's periodic progress_notify). */
  progressAll(): void {
    for (const w of this.watchers.values()) w.sink.send({ revision: this.revision, events: [] });
  }

  #member(): V3Member {
    return { id: "10276657743932975437", name: "default", peerUrls: ["http://127.0.0.1:2380"], clientUrls: ["http://127.0.0.1:2379"], isLearner: false };
  }

  async memberList(_req: { linearizable: boolean }, ctx: V3CallContext): Promise<V3Member[]> {
    this.#enter("memberList", ctx);
    return [this.#member()];
  }

  async memberAdd(req: { peerUrls: string[]; isLearner: boolean }, ctx: V3CallContext): Promise<{ member: V3Member; members: V3Member[] }> {
    this.#enter("memberAdd", ctx);
    if (req.peerUrls.some((u) => !/^https?:\/\//.test(u))) throw V3Errors.memberBadURLs();
    const m: V3Member = { id: "42", name: "", peerUrls: req.peerUrls, clientUrls: [], isLearner: req.isLearner };
    return { member: m, members: [this.#member(), m] };
  }

  async memberRemove(id: string, ctx: V3CallContext): Promise<V3Member[]> {
    this.#enter("memberRemove", ctx);
    if (id !== "42") throw V3Errors.memberNotFound();
    return [this.#member()];
  }

  async memberUpdate(req: { id: string; peerUrls: string[] }, ctx: V3CallContext): Promise<V3Member[]> {
    return this.memberRemove(req.id, ctx);
  }

  async memberPromote(id: string, ctx: V3CallContext): Promise<V3Member[]> {
    return this.memberRemove(id, ctx);
  }

  async status(ctx: V3CallContext): Promise<V3Status> {
    this.#enter("status", ctx);
    return { version: "3.4.23", dbSize: 20480, leader: "10276657743932975437", raftIndex: 7, raftTerm: 2, raftAppliedIndex: 7, errors: [], dbSizeInUse: 16384, isLearner: false };
  }

  readonly alarms: V3AlarmMember[] = [];

  async alarm(req: V3AlarmRequest, ctx: V3CallContext): Promise<V3AlarmMember[]> {
    this.#enter("alarm", ctx);
    if (req.action === 1) this.alarms.push({ memberId: req.memberId, alarm: req.alarm });
    return [...this.alarms];
  }

  async defragment(ctx: V3CallContext): Promise<void> {
    this.#enter("defragment", ctx);
  }

  async hash(ctx: V3CallContext): Promise<{ hash: number; revision: number }> {
    this.#enter("hash", ctx);
    return { hash: 3347376250, revision: this.revision };
  }

  async hashKV(revision: number, ctx: V3CallContext): Promise<{ hash: number; revision: number; compactRevision: number }> {
    this.#enter("hashKV", ctx);
    if (revision > 0 && revision <= this.compactRevision) throw V3Errors.compacted();
    if (revision > this.revision) throw V3Errors.futureRev();
    return { hash: 1000 + (revision || this.revision), revision: this.revision, compactRevision: this.compactRevision || -1 };
  }

  async snapshot(ctx: V3CallContext): Promise<V3Snapshot> {
    this.#enter("snapshot", ctx);
    return snapshotOfBytes(this.snapshotImage);
  }

  async moveLeader(_targetId: string, ctx: V3CallContext): Promise<void> {
    this.#enter("moveLeader", ctx);
    throw V3Errors.badLeaderTransferee();
  }

  async authEnable(ctx: V3CallContext): Promise<void> {
    this.#enter("authEnable", ctx);
    if (!this.users.has("root")) throw V3Errors.rootUserNotExist();
    this.authEnabled = true;
  }

  async authDisable(ctx: V3CallContext): Promise<void> {
    this.#enter("authDisable", ctx);
    this.authEnabled = false;
  }

  async authenticate(name: string, password: string): Promise<string> {
    this.#enter("authenticate", undefined);
    if (!this.authEnabled) throw V3Errors.authNotEnabled();
    if (this.users.get(name)?.password !== password) throw V3Errors.authFailed();
    return `${name}.token`;
  }

  async userAdd(req: { name: string; password: string; noPassword: boolean }, ctx: V3CallContext): Promise<void> {
    this.#enter("userAdd", ctx);
    if (req.name === "") throw V3Errors.userEmpty();
    if (this.users.has(req.name)) throw V3Errors.userAlreadyExist();
    this.users.set(req.name, { password: req.password, roles: [] });
  }

  #user(name: string): { password: string; roles: string[] } {
    const u = this.users.get(name);
    if (u === undefined) throw V3Errors.userNotFound();
    return u;
  }

  async userGet(name: string, ctx: V3CallContext): Promise<string[]> {
    this.#enter("userGet", ctx);
    return this.#user(name).roles;
  }

  async userList(ctx: V3CallContext): Promise<string[]> {
    this.#enter("userList", ctx);
    return [...this.users.keys()].sort();
  }

  async userDelete(name: string, ctx: V3CallContext): Promise<void> {
    this.#enter("userDelete", ctx);
    this.#user(name);
    this.users.delete(name);
  }

  async userChangePassword(name: string, password: string, ctx: V3CallContext): Promise<void> {
    this.#enter("userChangePassword", ctx);
    this.#user(name).password = password;
  }

  async userGrantRole(req: { user: string; role: string }, ctx: V3CallContext): Promise<void> {
    this.#enter("userGrantRole", ctx);
    this.#user(req.user).roles.push(req.role);
  }

  async userRevokeRole(req: { name: string; role: string }, ctx: V3CallContext): Promise<void> {
    this.#enter("userRevokeRole", ctx);
    const u = this.#user(req.name);
    if (!u.roles.includes(req.role)) throw V3Errors.roleNotGranted();
    u.roles = u.roles.filter((r) => r !== req.role);
  }

  readonly roles = new Map<string, V3Permission[]>();

  async roleAdd(name: string, ctx: V3CallContext): Promise<void> {
    this.#enter("roleAdd", ctx);
    if (name === "") throw V3Errors.roleEmpty();
    if (this.roles.has(name)) throw V3Errors.roleAlreadyExist();
    this.roles.set(name, []);
  }

  #role(name: string): V3Permission[] {
    const r = this.roles.get(name);
    if (r === undefined) throw V3Errors.roleNotFound();
    return r;
  }

  async roleGet(role: string, ctx: V3CallContext): Promise<V3Permission[]> {
    this.#enter("roleGet", ctx);
    return this.#role(role);
  }

  async roleList(ctx: V3CallContext): Promise<string[]> {
    this.#enter("roleList", ctx);
    return [...this.roles.keys()].sort();
  }

  async roleDelete(role: string, ctx: V3CallContext): Promise<void> {
    this.#enter("roleDelete", ctx);
    this.#role(role);
    this.roles.delete(role);
  }

  async roleGrantPermission(req: { name: string; perm: V3Permission }, ctx: V3CallContext): Promise<void> {
    this.#enter("roleGrantPermission", ctx);
    this.#role(req.name).push(req.perm);
  }

  async roleRevokePermission(req: { role: string; key: Buffer; rangeEnd: Buffer }, ctx: V3CallContext): Promise<void> {
    this.#enter("roleRevokePermission", ctx);
    const perms = this.#role(req.role);
    const i = perms.findIndex((p) => p.key.equals(req.key) && p.rangeEnd.equals(req.rangeEnd));
    if (i < 0) throw V3Errors.permissionNotGranted();
    perms.splice(i, 1);
  }
}
