// A v3 write stamped with its caller is judged again when it applies, against the auth
// state of its log position, as etcd 3.4.23's authApplierV3 does. Seen on etcd 3.4.23 with
// 3 members: a token looked up on member 3, RoleRevokePermission through member 1, then a
// put through member 3 with that token: 27 of 30 'permission denied' (member 3 had applied
// the revoke when it looked the token up), 3 'revision of auth store is old' (it had not;
// apply refused the stale revision). None accepted.
import assert from "node:assert/strict";
import { test } from "node:test";
import { GrpcCode, V3Error, V3Errors } from "../api/v3-errors.ts";
import { V3AuthState, V3PermType, encodePermission, type V3AuthInfo, type V3AuthOp } from "../auth/index.ts";
import { V3KeySpace, CompareResult } from "../store/v3/index.ts";
import { b, cmpVersion, delReq, opDel, opPut, putReq, rangeReq, txnReq } from "../store/v3/v3.test-helper.ts";
import { applyCommand, type ApplyResult, type StateMachine } from "./apply.ts";
import { decodeCommand, encodeCommand, peekKeySpaceCommand } from "./request.ts";
import type { V3Op } from "./v3-command.ts";

/** root; u1 may read and write a/, only write w/, only read r/; auth on. */
function machine(): { sm: StateMachine; v3: V3KeySpace; auth: V3AuthState; u1: () => V3AuthInfo } {
  const auth = new V3AuthState();
  const grant = (permType: number, key: string, end: string): V3AuthOp => ({ kind: "roleGrantPermission", name: "r1", perm: encodePermission({ permType, key: b(key), rangeEnd: b(end) }) });
  const ops: V3AuthOp[] = [
    { kind: "userAdd", name: "root", passwordHash: "h", noPassword: false },
    { kind: "userGrantRole", user: "root", role: "root" },
    { kind: "userAdd", name: "u1", passwordHash: "h", noPassword: false },
    { kind: "roleAdd", name: "r1" },
    grant(V3PermType.READWRITE, "a/", "a0"),
    grant(V3PermType.WRITE, "w/", "w0"),
    grant(V3PermType.READ, "r/", "r0"),
    { kind: "userGrantRole", user: "u1", role: "r1" },
    { kind: "authEnable" },
  ];
  for (const op of ops) auth.apply(op);
  const v3 = new V3KeySpace();
  // apply reads only the key space and v3 auth for a v3 write.
  const sm = { v3, v3auth: auth } as unknown as StateMachine;
  return { sm, v3, auth, u1: () => ({ user: "u1", revision: auth.authRevision }) };
}

let nextId = 1;
/** Through the log's encoding, as every member applies it. */
function apply(sm: StateMachine, op: V3Op): ApplyResult {
  const cmd = decodeCommand(encodeCommand({ t: "v3", m: 1, id: nextId++, time: 1_000, op }));
  return applyCommand(sm, cmd, nextId);
}

function refused(r: ApplyResult, err: V3Error, what: string): void {
  assert.equal(r.ok, false, what);
  if (!r.ok) assert.deepEqual(r.error, err, what);
}

test("a write stamped before an auth change is refused at apply with ErrAuthOldRevision; one stamped at the current revision applies", () => {
  const { sm, v3, auth, u1 } = machine();
  const stamp = u1();
  assert.equal(apply(sm, { k: "put", r: putReq("a/x", "1"), a: stamp }).ok, true);
  assert.equal(v3.revision, 2);
  // Any auth change moves the revision, a revoke or not: the stamp is stale.
  auth.apply({ kind: "roleRevokePermission", role: "r1", key: b("a/").toString("base64"), rangeEnd: b("a0").toString("base64") });
  const writes: V3Op[] = [
    { k: "put", r: putReq("a/x", "2"), a: stamp },
    { k: "deleteRange", r: delReq("a/x"), a: stamp },
    { k: "txn", r: txnReq({ success: [opPut("a/x", "3")] }), a: stamp },
  ];
  for (const op of writes) refused(apply(sm, op), V3Errors.authOldRevision(), op.k);
  assert.equal(V3Errors.authOldRevision().code, GrpcCode.InvalidArgument);
  assert.equal(v3.revision, 2, "a refused write takes no revision");
  // Stamped at the new revision: judged by the permissions, which no longer grant a/.
  refused(apply(sm, { k: "put", r: putReq("a/x", "4"), a: u1() }), V3Errors.permissionDenied(), "after the revoke");
  // root passes at the current revision, as any user with the permission.
  assert.equal(apply(sm, { k: "put", r: putReq("a/x", "5"), a: { user: "root", revision: auth.authRevision } }).ok, true);
});

test("the stamp's permissions: a put needs write, and read too with prevKv; a delete alike", () => {
  const { sm, u1 } = machine();
  assert.equal(apply(sm, { k: "put", r: putReq("w/x", "1"), a: u1() }).ok, true);
  refused(apply(sm, { k: "put", r: putReq("w/x", "1", { prevKv: true }), a: u1() }), V3Errors.permissionDenied(), "put prevKv on write-only");
  refused(apply(sm, { k: "put", r: putReq("r/x", "1"), a: u1() }), V3Errors.permissionDenied(), "put on read-only");
  refused(apply(sm, { k: "deleteRange", r: delReq("w/x", { prevKv: true }), a: u1() }), V3Errors.permissionDenied(), "delete prevKv on write-only");
  assert.equal(apply(sm, { k: "deleteRange", r: delReq("w/x"), a: u1() }).ok, true);
  refused(apply(sm, { k: "put", r: putReq("a/x", "1"), a: { user: "ghost", revision: 99 } }), V3Errors.permissionDenied(), "unknown user");
});

test("a txn: the compares need read, and every op of both branches its permission (etcd checks both, whichever runs)", () => {
  const { sm, v3, u1 } = machine();
  const ok = apply(sm, { k: "txn", r: txnReq({ compare: [cmpVersion("a/c", CompareResult.EQUAL, 0)], success: [opPut("a/x", "1")], failure: [opDel("a/y")] }), a: u1() });
  assert.equal(ok.ok, true);
  assert.equal(v3.revision, 2);
  // A compare on a write-only key.
  refused(apply(sm, { k: "txn", r: txnReq({ compare: [cmpVersion("w/c", CompareResult.EQUAL, 0)], success: [opPut("a/x", "1")] }), a: u1() }), V3Errors.permissionDenied(), "compare");
  // The success branch runs, but the failure branch writes a read-only key.
  refused(apply(sm, { k: "txn", r: txnReq({ success: [opPut("a/x", "2")], failure: [opPut("r/x", "1")] }), a: u1() }), V3Errors.permissionDenied(), "failure branch");
  // A delete with prevKv in a branch needs read.
  refused(apply(sm, { k: "txn", r: txnReq({ success: [opDel("w/x", { prevKv: true })] }), a: u1() }), V3Errors.permissionDenied(), "delete prevKv");
  assert.equal(v3.revision, 2);
});

test("a put onto a lease that holds a key the stamped caller cannot write is refused at apply (etcd's checkLeasePuts)", () => {
  const { sm, v3, u1 } = machine();
  v3.leaseGrant({ id: 5n, ttl: 60 }, 1_000);
  v3.put(putReq("r/held", "1", { lease: 5n }));
  refused(apply(sm, { k: "put", r: putReq("a/k", "v", { lease: 5n }), a: u1() }), V3Errors.permissionDenied(), "lease holds r/held");
  v3.leaseGrant({ id: 6n, ttl: 60 }, 1_000);
  v3.put(putReq("a/held", "1", { lease: 6n }));
  assert.equal(apply(sm, { k: "put", r: putReq("a/k", "v", { lease: 6n }), a: u1() }).ok, true);
});

test("a caller without a token (null stamp) is refused while auth is on at apply, served once an AuthDisable applied before it", () => {
  const { sm, auth } = machine();
  refused(apply(sm, { k: "put", r: putReq("a/x", "1"), a: null }), V3Errors.userEmpty(), "auth on");
  auth.apply({ kind: "authDisable" });
  assert.equal(apply(sm, { k: "put", r: putReq("a/x", "1"), a: null }).ok, true);
  // Any stamp passes with auth off, a stale one too (etcd's isOpPermitted returns first).
  assert.equal(apply(sm, { k: "put", r: putReq("r/x", "1"), a: { user: "u1", revision: 1 } }).ok, true);
});

test("an unstamped write (an older log's, checked before it was proposed) is not judged at apply", () => {
  const { sm } = machine();
  assert.equal(apply(sm, { k: "put", r: putReq("r/x", "1") }).ok, true);
  assert.equal(apply(sm, { k: "txn", r: txnReq({ success: [opPut("r/x", "1")] }) }).ok, true);
});

test("log form: a stamped put travels as JSON with its stamp, an unstamped put keeps the binary form", () => {
  const stamped = encodeCommand({ t: "v3", m: 1, id: 7, time: 5, op: { k: "put", r: putReq("a/x", "1", { lease: 3n }), a: { user: "ü", revision: 4 } } });
  assert.equal(stamped[0], "{".charCodeAt(0));
  const back = decodeCommand(stamped);
  assert.ok(back.t === "v3" && back.op.k === "put");
  if (back.t === "v3" && back.op.k === "put") {
    assert.deepEqual(back.op.a, { user: "ü", revision: 4 });
    assert.deepEqual(back.op.r, putReq("a/x", "1", { lease: 3n }));
  }
  // A replay still sees it as a key-space command (skipped below the database's index).
  assert.deepEqual(peekKeySpaceCommand(stamped), { t: "v3-head", m: 1, id: 7 });
  const anon = decodeCommand(encodeCommand({ t: "v3", m: 1, id: 8, time: 5, op: { k: "deleteRange", r: delReq("a/x"), a: null } }));
  assert.ok(anon.t === "v3" && anon.op.k === "deleteRange" && anon.op.a === null);
  const plain = encodeCommand({ t: "v3", m: 1, id: 9, time: 5, op: { k: "put", r: putReq("a/x", "1") } });
  assert.equal(plain[0], 0x01);
  const plainBack = decodeCommand(plain);
  assert.ok(plainBack.t === "v3" && plainBack.op.k === "put" && !("a" in plainBack.op));
});

// etcd 3.4.23, 3 members, a lease holding b/held (which u1 may not write), auth on: u1's
// LeaseRevoke answered 'etcdserver: permission denied' (code 7, gateway 403), one without a
// token 'etcdserver: user name is empty' (code 3, 400); the lease lived on with its key. A
// key-less lease was revoked for a caller without a token.
test("a lease revocation: the stamped caller must be able to write every key of the lease; refused, the lease and its keys stay", () => {
  const { sm, v3, u1 } = machine();
  v3.leaseGrant({ id: 5n, ttl: 60 }, 1_000);
  v3.put(putReq("r/held", "1", { lease: 5n }));
  refused(apply(sm, { k: "leaseRevoke", id: 5n, a: u1() }), V3Errors.permissionDenied(), "u1 may not write r/held");
  refused(apply(sm, { k: "leaseRevoke", id: 5n, a: null }), V3Errors.userEmpty(), "no token");
  assert.deepEqual(v3.timeToLive(5n, 1_000, { keys: true })?.keys, [b("r/held")]);
  assert.equal(v3.range(rangeReq("r/held")).kvs.length, 1);
  // root may; and the leader's own revocation of an expired lease (unstamped, etcd's WithRoot) too.
  v3.leaseGrant({ id: 6n, ttl: 60 }, 1_000);
  v3.put(putReq("r/held2", "1", { lease: 6n }));
  assert.equal(apply(sm, { k: "leaseRevoke", id: 6n }).ok, true);
  assert.equal(v3.timeToLive(6n, 1_000), undefined);
  // A lease without keys asks nothing, not even a user; an unknown one is not found.
  v3.leaseGrant({ id: 7n, ttl: 60 }, 1_000);
  assert.equal(apply(sm, { k: "leaseRevoke", id: 7n, a: null }).ok, true);
  refused(apply(sm, { k: "leaseRevoke", id: 8n, a: null }), V3Errors.leaseNotFound(), "unknown lease");
  // Keys the caller may write: revoked.
  v3.leaseGrant({ id: 9n, ttl: 60 }, 1_000);
  v3.put(putReq("a/held", "1", { lease: 9n }));
  assert.equal(apply(sm, { k: "leaseRevoke", id: 9n, a: u1() }).ok, true);
  assert.equal(v3.range(rangeReq("a/held")).kvs.length, 0);
});

test("log form: an anonymous put keeps the binary form with its stamp (judged at apply); a revoke carries its stamp", () => {
  const anon = encodeCommand({ t: "v3", m: 1, id: 10, time: 5, op: { k: "put", r: putReq("a/x", "1", { prevKv: true }), a: null } });
  assert.equal(anon[0], 0x01);
  const back = decodeCommand(anon);
  assert.ok(back.t === "v3" && back.op.k === "put" && back.op.a === null && back.op.r.prevKv);
  assert.deepEqual(peekKeySpaceCommand(anon), { t: "v3-head", m: 1, id: 10 });
  const revoke = decodeCommand(encodeCommand({ t: "v3", m: 1, id: 11, time: 5, op: { k: "leaseRevoke", id: 5n, a: { user: "u1", revision: 3 } } }));
  assert.ok(revoke.t === "v3" && revoke.op.k === "leaseRevoke");
  if (revoke.t === "v3" && revoke.op.k === "leaseRevoke") assert.deepEqual(revoke.op, { k: "leaseRevoke", id: 5n, a: { user: "u1", revision: 3 } });
});

// The member that proposed it had not applied an AuthEnable committed through another
// member: its entry says only that the caller brought no token. etcd 3.4.23, 3 members,
// AuthEnable via member 1 then a put without a token via member 3, 30 times: 30/30
// 'etcdserver: user name is empty' (code 3, gateway 400).
test("an anonymous put proposed while auth was off at its member is refused when auth is on at apply", () => {
  const { sm, v3, auth } = machine();
  auth.apply({ kind: "authDisable" });
  const op = decodeCommand(encodeCommand({ t: "v3", m: 1, id: 12, time: 5, op: { k: "put", r: putReq("a/x", "1"), a: null } }));
  assert.equal(applyCommand(sm, op, 12).ok, true, "auth off at apply: served");
  auth.apply({ kind: "authEnable" });
  refused(applyCommand(sm, op, 13), V3Errors.userEmpty(), "auth on at apply");
  refused(apply(sm, { k: "deleteRange", r: delReq("a/x"), a: null }), V3Errors.userEmpty(), "delete");
  refused(apply(sm, { k: "txn", r: txnReq({ success: [opPut("a/x", "3")] }), a: null }), V3Errors.userEmpty(), "txn");
  assert.equal(v3.revision, 2);
});
