// Which calls etcd 3.4 lets through with auth on, and how it refuses the others, as
// python-etcd3 run against both showed: Status, MemberList and the lease keepalive and
// time-to-live read no token; LeaseGrant, Compact and Alarm serve a caller without one;
// Defragment, Hash, HashKV and Snapshot answer their admin refusal as the auth store's
// own error (code Unknown, "auth: …"); a put may not join a lease holding keys the caller
// cannot write.
import assert from "node:assert/strict";
import { test } from "node:test";
import { GrpcCode, V3Error, V3Errors } from "../api/v3-errors.ts";
import { V3AuthState, V3PermType, encodePermission, type V3AuthOp } from "../auth/index.ts";
import { AlarmAction, AlarmType, V3KeySpace } from "../store/v3/index.ts";
import { opPut, opRange, putReq, txnReq } from "../store/v3/v3.test-helper.ts";
import { ServerMetrics } from "./metrics/server-metrics.ts";
import { V3Service, type V3ServiceHost } from "./v3-service.ts";
import { applyCommand, type ApplyResult, type StateMachine } from "./apply.ts";
import { decodeCommand, encodeCommand, type CommandBody } from "./request.ts";

const b = (s: string): Buffer => Buffer.from(s, "latin1");

let nextId = 1;
/**
 * A key-space write as a member runs it: through the log's encoding, then apply, where a
 * stamped write is judged again. `before` applies what the log holds ahead of it.
 */
function applyWrite(v3: V3KeySpace, auth: V3AuthState, body: CommandBody, before?: () => void): ApplyResult {
  before?.();
  const cmd = decodeCommand(encodeCommand({ ...body, m: 22, id: nextId++ } as Parameters<typeof encodeCommand>[0]));
  return applyCommand({ v3, v3auth: auth } as unknown as StateMachine, cmd, 200);
}
const WRITES = new Set(["put", "deleteRange", "txn", "leaseRevoke", "auth"]);

/** root, and u1 who may write a/ only; auth enabled; u1's token returned. */
function authState(): { auth: V3AuthState; u1: string } {
  const auth = new V3AuthState();
  const ops: V3AuthOp[] = [
    { kind: "userAdd", name: "root", passwordHash: "h", noPassword: false },
    { kind: "userGrantRole", user: "root", role: "root" },
    { kind: "userAdd", name: "u1", passwordHash: "h", noPassword: false },
    { kind: "roleAdd", name: "r1" },
    { kind: "roleGrantPermission", name: "r1", perm: encodePermission({ permType: V3PermType.READWRITE, key: b("a/"), rangeEnd: b("a0") }) },
    { kind: "userGrantRole", user: "u1", role: "r1" },
    { kind: "authEnable" },
  ];
  for (const op of ops) auth.apply(op);
  const r = auth.apply({ kind: "authenticate", name: "u1", simpleTokenPrefix: "p", time: Date.now(), checkedRevision: auth.authRevision }, { index: 100 });
  assert.equal(r.kind, "authenticated");
  return { auth, u1: r.kind === "authenticated" ? r.token : "" };
}

function member(): { service: V3Service; proposed: string[]; u1: string; v3: V3KeySpace; auth: V3AuthState } {
  const { auth, u1 } = authState();
  const v3 = new V3KeySpace();
  const proposed: string[] = [];
  const kv = {
    config: { authToken: { type: "simple" } },
    clusterId: 11,
    memberId: 22,
    leaderId: 22,
    term: 3,
    commitIndex: 5,
    appliedIndex: 5,
    v3,
    v3auth: auth,
    metrics: new ServerMetrics(),
    membership: { list: () => [{ id: 22, name: "m", peerUrls: ["http://p"], clientUrls: ["http://c"] }], get: () => undefined },
    leases: { renew: () => 7, timeToLive: () => ({ id: 1n, ttl: 5, grantedTtl: 7, keys: [] }) },
    v3DbSizes: () => ({ size: 1, inUse: 1 }),
    quotaAvailable: () => true,
    linearizableRead: async () => undefined,
    defragment: async () => undefined,
    propose: async (body: CommandBody & { op: { k: string } }) => {
      proposed.push(body.op.k);
      if (WRITES.has(body.op.k)) return applyWrite(v3, auth, body);
      return { ok: true, v3: { revision: 9 }, lease: { id: 1n, ttl: 7 }, alarms: [] };
    },
  };
  return { service: new V3Service(kv as unknown as V3ServiceHost), proposed, u1, v3, auth };
}

const anonymous = { token: undefined };

/**
 * A member whose proposals apply at once, after `logAhead` (what the log holds ahead of the
 * write, committed through another member); counts its ReadIndex rounds.
 */
function applyingMember(
  auth: V3AuthState,
  logAhead: () => unknown,
  opts: { onRead?: () => unknown } = {},
): { service: V3Service; v3: V3KeySpace; proposed: string[]; rounds: () => number } {
  const v3 = new V3KeySpace();
  const proposed: string[] = [];
  let rounds = 0;
  const service = new V3Service({
    config: { authToken: { type: "simple" } },
    clusterId: 11,
    memberId: 22,
    term: 3,
    // At the index u1's token was registered at (authState): its lookup needs no catching up.
    appliedIndex: 100,
    v3,
    v3auth: auth,
    metrics: new ServerMetrics(),
    quotaAvailable: () => true,
    linearizableRead: async () => {
      rounds++;
      // What the round catches up with: entries committed before it, applied here now.
      opts.onRead?.();
    },
    propose: async (body: CommandBody) => {
      proposed.push(body.t === "v3" ? body.op.k : body.t);
      return applyWrite(v3, auth, body, logAhead);
    },
  } as unknown as V3ServiceHost);
  return { service, v3, proposed, rounds: () => rounds };
}
/** `fn` the first time only: an entry the log holds once, ahead of the first write. */
function once(fn: () => unknown): () => void {
  let done = false;
  return () => {
    if (!done) fn();
    done = true;
  };
}
const unknownError = (text: string): V3Error => new V3Error(GrpcCode.Unknown, text);

test("auth on, no token: Status, MemberList, keepalive and time-to-live are served without reading one", async () => {
  const m = member();
  assert.equal((await m.service.status(anonymous)).leader, "22");
  assert.equal((await m.service.memberList({ linearizable: false }, anonymous)).length, 1);
  assert.equal(await m.service.leaseKeepAlive(1n, anonymous), 7);
  assert.equal((await m.service.leaseTimeToLive({ id: 1n, keys: true }, anonymous))?.grantedTtl, 7);
  // Not even a bad token is looked at.
  assert.equal((await m.service.status({ token: "bogus" })).leader, "22");
  assert.equal(await m.service.leaseKeepAlive(1n, { token: "bogus" }), 7);
});

test("auth on, no token: LeaseGrant, Compact and Alarm go through the log; a bad token is refused", async () => {
  const m = member();
  await m.service.leaseGrant({ id: 0n, ttl: 5 }, anonymous);
  await m.service.compact({ revision: 1, physical: false }, anonymous);
  await m.service.alarm({ action: AlarmAction.ACTIVATE, memberId: "0", alarm: AlarmType.NOSPACE }, anonymous);
  assert.deepEqual(await m.service.alarm({ action: AlarmAction.GET, memberId: "0", alarm: AlarmType.NONE }, { token: m.u1 }), []);
  assert.deepEqual(m.proposed, ["leaseGrant", "compact", "alarm"]);
  await assert.rejects(m.service.leaseGrant({ id: 0n, ttl: 5 }, { token: "bogus" }), V3Errors.invalidAuthToken());
  // Alarm returns the auth store's error as it is.
  await assert.rejects(m.service.alarm({ action: AlarmAction.GET, memberId: "0", alarm: AlarmType.NONE }, { token: "bogus" }), unknownError("auth: invalid auth token"));
  // A put still needs a user: judged at apply, as etcd does (its entry carries no user).
  await assert.rejects(m.service.put(putReq("a/k", "v"), anonymous), V3Errors.userEmpty());
  assert.equal(m.v3.revision, 1);
});

test("auth on: Defragment, Hash, HashKV and Snapshot refuse a non-root caller with the auth store's error (code Unknown)", async () => {
  const m = member();
  const calls: Array<[string, (ctx: { token: string | undefined }) => Promise<unknown>]> = [
    ["defragment", (ctx) => m.service.defragment(ctx)],
    ["hash", (ctx) => m.service.hash(ctx)],
    ["hashKV", (ctx) => m.service.hashKV(0, ctx)],
    ["snapshot", (ctx) => m.service.snapshot(ctx)],
  ];
  for (const [name, call] of calls) {
    await assert.rejects(call(anonymous), unknownError("auth: user name is empty"), `${name} without a token`);
    await assert.rejects(call({ token: m.u1 }), unknownError("auth: permission denied"), `${name} by u1`);
    await assert.rejects(call({ token: "bogus" }), unknownError("auth: invalid auth token"), `${name} with a bad token`);
  }
  // A member change keeps its gRPC status.
  await assert.rejects(m.service.memberRemove("4242", { token: m.u1 }), V3Errors.permissionDenied());
});

test("auth on: a put may not join a lease that holds a key the caller cannot write; revoking it is refused alike, at apply", async () => {
  const m = member();
  m.v3.leaseGrant({ id: 5n, ttl: 60 }, Date.now());
  m.v3.put({ ...putReq("b/held", "1"), lease: 5n });
  await assert.rejects(m.service.put({ ...putReq("a/k", "v"), lease: 5n }, { token: m.u1 }), V3Errors.permissionDenied());
  await assert.rejects(m.service.leaseRevoke(5n, { token: m.u1 }), V3Errors.permissionDenied());
  await assert.rejects(m.service.leaseRevoke(5n, anonymous), V3Errors.userEmpty());
  // Judged where etcd judges them: at apply, so each went to the log; the lease lives on.
  assert.deepEqual(m.proposed, ["put", "leaseRevoke", "leaseRevoke"]);
  assert.deepEqual(m.v3.timeToLive(5n, Date.now(), { keys: true })?.keys, [b("b/held")]);
  // A lease with no keys, or keys the caller may write, takes the put.
  m.v3.leaseGrant({ id: 6n, ttl: 60 }, Date.now());
  m.v3.put({ ...putReq("a/held", "1"), lease: 6n });
  await m.service.put({ ...putReq("a/k", "v"), lease: 6n }, { token: m.u1 });
  await m.service.leaseRevoke(6n, { token: m.u1 });
  assert.equal(m.v3.timeToLive(6n, Date.now()), undefined);
  // A key-less lease is revoked for a caller without a token (etcd: served).
  m.v3.leaseGrant({ id: 7n, ttl: 60 }, Date.now());
  await m.service.leaseRevoke(7n, anonymous);
  assert.equal(m.v3.timeToLive(7n, Date.now()), undefined);
});

// etcd checks a put's permission when it applies it: an AuthDisable another member
// acknowledged is in effect for a put that a lagging member receives just after. Seen with
// etcd's Go client on 3 members (round robin): AuthDisable through one, a put without a
// token through another was refused with 'user name is empty' by kvctl, served by etcd.
test("auth on here, no token: the write goes to the log unjudged; an AuthDisable applied before it lets it through, else apply refuses it", async () => {
  const { auth } = authState();
  // The log holds the AuthDisable committed through another member ahead of the put.
  const { service, v3, proposed, rounds } = applyingMember(auth, () => auth.enabled && auth.apply({ kind: "authDisable" }));
  const put = await service.put(putReq("b", "1"), anonymous);
  assert.equal(put.revision, 2);
  assert.equal(v3.revision, 2);
  assert.equal(rounds(), 0, "no ReadIndex round");
  assert.deepEqual(proposed, ["put"]);
  // Still enabled when it applies: refused there.
  const still = member();
  await assert.rejects(still.service.put(putReq("a/x", "1"), anonymous), V3Errors.userEmpty());
  assert.deepEqual(still.proposed, ["put"]);
  assert.equal(still.v3.revision, 1);
});

test("auth off: a token is still looked up, as etcd's AuthInfoFromCtx does; disabling auth dropped them all", async () => {
  const m = member();
  m.auth.apply({ kind: "authDisable" });
  assert.equal(m.auth.enabled, false);
  const stale = { token: m.u1 };
  await assert.rejects(m.service.range({ key: b("a/k"), rangeEnd: Buffer.alloc(0), serializable: true } as Parameters<V3Service["range"]>[0], stale), V3Errors.invalidAuthToken());
  await assert.rejects(m.service.put(putReq("a/k", "v"), stale), V3Errors.invalidAuthToken());
  await assert.rejects(m.service.put(putReq("a/k", "v"), { token: "bogus" }), V3Errors.invalidAuthToken());
  await assert.rejects(m.service.leaseGrant({ id: 0n, ttl: 5 }, stale), V3Errors.invalidAuthToken());
  await assert.rejects(m.service.watch({ key: b("a/k"), rangeEnd: Buffer.alloc(0) } as Parameters<V3Service["watch"]>[0], { send: () => undefined, more: () => undefined } as unknown as Parameters<V3Service["watch"]>[1], stale), V3Errors.invalidAuthToken());
  assert.deepEqual(m.proposed, []);
  // Calls that read no token, and calls without one, are served.
  assert.equal((await m.service.status(stale)).leader, "22");
  assert.equal(await m.service.leaseKeepAlive(1n, stale), 7);
  await m.service.put(putReq("a/k", "v"), anonymous);
  assert.equal(m.v3.revision, 2);
  assert.deepEqual(m.proposed, ["put"]);
});

// etcd checks a write's permissions when it applies it: a revoke another member
// acknowledged is in effect for a write that a lagging member receives just after. Seen
// with etcd's Go client on 3 members: after RoleRevokePermission via the leader, a put
// through a follower was accepted 27 times in 30 by kvctl (checked before proposing, on
// the follower's state), never by etcd 3.4.23 (a JSON-gateway script: 27 'permission
// denied', 3 'revision of auth store is old'). Now the write carries u1 and the auth
// revision its token was looked up at; apply meets the revoke first and refuses it, with
// no ReadIndex round before proposing.
test("auth on: a write checked here before a revoke committed elsewhere is refused at apply with ErrAuthOldRevision", async () => {
  for (const write of ["put", "deleteRange", "txn"] as const) {
    const { auth, u1 } = authState();
    // The leader committed the revoke ahead of this write: apply meets it first.
    const { service, v3, proposed, rounds } = applyingMember(auth, once(() => auth.apply({ kind: "userRevokeRole", name: "u1", role: "r1" })));
    const ctx = { token: u1 };
    const call = () =>
      write === "put"
        ? service.put(putReq("a/x", "1"), ctx)
        : write === "deleteRange"
          ? service.deleteRange({ key: b("a/x"), rangeEnd: Buffer.alloc(0), prevKv: false }, ctx)
          : service.txn(txnReq({ success: [opPut("a/x", "1")] }), ctx);
    await assert.rejects(call(), V3Errors.authOldRevision(), write);
    assert.deepEqual(proposed, [write], write);
    assert.equal(rounds(), 0, `${write}: no ReadIndex round`);
    assert.equal(v3.revision, 1, write);
    // The revoke applied here now: the token's revision is current, apply refuses the
    // permission ('permission denied', as etcd once its member applied it).
    await assert.rejects(call(), V3Errors.permissionDenied(), `${write} after the revoke`);
    assert.deepEqual(proposed, [write, write], write);
  }
});

test("auth on: a write with no auth change before its turn applies, stamped with its caller", async () => {
  const m = member();
  await m.service.put(putReq("a/x", "1"), { token: m.u1 });
  await m.service.txn(txnReq({ success: [opPut("a/y", "1")] }), { token: m.u1 });
  await m.service.deleteRange({ key: b("a/x"), rangeEnd: Buffer.alloc(0), prevKv: false }, { token: m.u1 });
  assert.equal(m.v3.revision, 4);
  assert.deepEqual(m.proposed, ["put", "txn", "deleteRange"]);
});

// etcd 3.4.23's authMaintenanceServer.MoveLeader calls the server without an admin check.
test("auth on: MoveLeader reads no token; any caller, even without one, may move the leader", async () => {
  const m = member();
  const moved: number[] = [];
  const service = new V3Service({
    config: { authToken: { type: "simple" } },
    memberId: 22,
    isLeader: true,
    v3auth: m.auth,
    membership: { get: (id: number) => (id === 22 || id === 33 ? { id } : undefined) },
    transferLeadershipTo: async (id: number) => {
      moved.push(id);
    },
  } as unknown as V3ServiceHost);
  await service.moveLeader("33", anonymous);
  await service.moveLeader("33", { token: m.u1 });
  await service.moveLeader("33", { token: "bogus" });
  assert.deepEqual(moved, [33, 33, 33]);
});

// etcd 3.4.23, 3 members: AuthEnable via member 1, then a put without a token via member 3,
// 30 times: 30/30 'etcdserver: user name is empty' (code 3, gateway 400): its entry carries
// an empty user, which authApplierV3 refuses once auth is on, whatever member 3 had applied
// when it proposed it. kvctl served it when member 3 had not applied the AuthEnable yet.
test("auth off here, on at apply (an AuthEnable committed elsewhere ahead): a write, a revocation, an auth change without a token are refused there", async () => {
  const { auth } = authState();
  auth.apply({ kind: "authDisable" });
  const { service, v3, proposed, rounds } = applyingMember(auth, () => auth.enabled || auth.apply({ kind: "authEnable" }));
  v3.leaseGrant({ id: 5n, ttl: 60 }, Date.now());
  v3.put({ ...putReq("a/held", "1"), lease: 5n });
  const calls: Array<[string, () => Promise<unknown>]> = [
    ["put", () => service.put(putReq("a/x", "1"), anonymous)],
    ["deleteRange", () => service.deleteRange({ key: b("a/held"), rangeEnd: Buffer.alloc(0), prevKv: false }, anonymous)],
    ["txn", () => service.txn(txnReq({ success: [opPut("a/x", "1")] }), anonymous)],
    ["leaseRevoke", () => service.leaseRevoke(5n, anonymous)],
    ["userAdd", () => service.userAdd({ name: "u9", password: "", noPassword: true }, anonymous)],
  ];
  for (const [name, call] of calls) await assert.rejects(call(), V3Errors.userEmpty(), name);
  assert.deepEqual(proposed, ["put", "deleteRange", "txn", "leaseRevoke", "auth"]);
  assert.equal(rounds(), 0);
  assert.equal(v3.revision, 2, "nothing written");
  assert.deepEqual(v3.timeToLive(5n, Date.now(), { keys: true })?.keys, [b("a/held")]);
});

// etcd 3.4.23's Range: a linearizable one checks after its ReadIndex round, a serializable
// one at once, both against the member's applied auth store (doSerialize); Watch at once.
test("auth on, no token: a serializable range or a watch is refused at once, a linearizable range after its one round", async () => {
  const { auth } = authState();
  const { service, rounds } = applyingMember(auth, () => undefined);
  const range = (serializable: boolean) => service.range({ key: b("a/x"), rangeEnd: Buffer.alloc(0), serializable } as Parameters<V3Service["range"]>[0], anonymous);
  await assert.rejects(range(true), V3Errors.userEmpty());
  assert.equal(rounds(), 0, "serializable: no round");
  const sink = { send: () => undefined, more: () => undefined } as unknown as Parameters<V3Service["watch"]>[1];
  await assert.rejects(service.watch({ key: b("a/x"), rangeEnd: Buffer.alloc(0) } as Parameters<V3Service["watch"]>[0], sink, anonymous), V3Errors.userEmpty());
  assert.equal(rounds(), 0, "watch: no round");
  await assert.rejects(range(false), V3Errors.userEmpty());
  assert.equal(rounds(), 1, "linearizable: one round, not a second to catch up before refusing");
  await assert.rejects(service.txn(txnReq({ success: [opRange("a/x")] }), anonymous), V3Errors.userEmpty());
  assert.equal(rounds(), 2, "a read-only txn: one round");
});

test("auth on here, no token: an AuthDisable acknowledged elsewhere before a linearizable read is in effect after its round; an auth change meets it at apply", async () => {
  const { auth } = authState();
  const disable = once(() => auth.apply({ kind: "authDisable" }));
  const reader = applyingMember(auth, () => undefined, { onRead: disable });
  const res = await reader.service.range({ key: b("a/x"), rangeEnd: Buffer.alloc(0), serializable: false } as Parameters<V3Service["range"]>[0], anonymous);
  assert.equal(res.kvs.length, 0);
  assert.equal(reader.rounds(), 1);
  // An auth change without a token goes to the log: the AuthDisable ahead of it lets it by.
  const again = authState();
  const writer = applyingMember(again.auth, once(() => again.auth.apply({ kind: "authDisable" })));
  await writer.service.userAdd({ name: "u9", password: "", noPassword: true }, anonymous);
  assert.deepEqual(writer.proposed, ["auth"]);
  assert.equal(writer.rounds(), 0);
  assert.deepEqual(await writer.service.userList(anonymous), ["root", "u1", "u9"]);
});

// etcd 3.4.23, 3 members, RoleGrantPermission via member 1, then the user's put via member
// 3 with a token from before, 30 times: 29 served, 1 'revision of auth store is old'; never
// 'permission denied', which kvctl answered when member 3 had not applied the grant (it
// checked the write against its own state before proposing).
test("auth on: a write a grant committed elsewhere allows is not refused by a member that has not applied the grant", async () => {
  const { auth, u1 } = authState();
  const grant = once(() => auth.apply({ kind: "roleGrantPermission", name: "r1", perm: encodePermission({ permType: V3PermType.READWRITE, key: b("g"), rangeEnd: Buffer.alloc(0) }) }));
  const { service, v3, proposed } = applyingMember(auth, grant);
  // Stamped before the grant: apply refuses the stale revision, as etcd's.
  await assert.rejects(service.put(putReq("g", "1"), { token: u1 }), V3Errors.authOldRevision());
  assert.deepEqual(proposed, ["put"]);
  // Looked up after it: served.
  await service.put(putReq("g", "1"), { token: u1 });
  assert.equal(v3.revision, 2);
});

test("auth on: a read-only txn is judged after its ReadIndex round, as a range: a revoke it caught up with is in effect", async () => {
  const { auth, u1 } = authState();
  const revoke = once(() => auth.apply({ kind: "userRevokeRole", name: "u1", role: "r1" }));
  const { service, rounds } = applyingMember(auth, () => undefined, { onRead: revoke });
  await assert.rejects(service.txn(txnReq({ success: [opRange("a/x")] }), { token: u1 }), V3Errors.permissionDenied());
  assert.equal(rounds(), 1);
});
