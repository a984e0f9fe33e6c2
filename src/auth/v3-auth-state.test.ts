import { test } from "node:test";
import assert from "node:assert/strict";
import { V3Error, V3Errors } from "../api/v3-errors.ts";
import { V3AuthState } from "./v3-auth-state.ts";
import { V3PermType, encodePermission, type V3AuthInfo, type V3AuthOp, type V3PermTypeValue } from "./v3-model.ts";

const b = (s: string): Buffer => Buffer.from(s, "latin1");

function throwsV3(fn: () => unknown, expected: V3Error): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof V3Error, `expected a V3Error, got ${String(err)}`);
    assert.equal(err.message, expected.message);
    assert.equal(err.code, expected.code);
    return true;
  });
}

const userAdd = (name: string, passwordHash = `h-${name}`): V3AuthOp => ({ kind: "userAdd", name, passwordHash, noPassword: false });
const grantPerm = (name: string, permType: V3PermTypeValue, key: string, rangeEnd = ""): V3AuthOp => ({
  kind: "roleGrantPermission",
  name,
  perm: encodePermission({ permType, key: b(key), rangeEnd: b(rangeEnd) }),
});

function applyAll(s: V3AuthState, ops: V3AuthOp[]): void {
  for (const op of ops) s.apply(op);
}

/** root (with the root role), u1 with role r1, auth enabled. */
function enabledState(): V3AuthState {
  const s = new V3AuthState();
  applyAll(s, [userAdd("root"), { kind: "userGrantRole", user: "root", role: "root" }, userAdd("u1"), { kind: "roleAdd", name: "r1" }, { kind: "userGrantRole", user: "u1", role: "r1" }, { kind: "authEnable" }]);
  return s;
}

interface ErrorCase {
  name: string;
  setup: V3AuthOp[];
  enabled?: boolean;
  op: V3AuthOp;
  error: V3Error;
}

const withRoot: V3AuthOp[] = [userAdd("root"), { kind: "userGrantRole", user: "root", role: "root" }];

// Every error etcd 3.4 answers for the auth ops, in its order of checks.
const errorCases: ErrorCase[] = [
  { name: "userAdd refuses an empty name", setup: [], op: userAdd(""), error: V3Errors.userEmpty() },
  { name: "userAdd refuses an existing user", setup: [userAdd("u1")], op: userAdd("u1"), error: V3Errors.userAlreadyExist() },
  { name: "userDelete refuses a missing user", setup: [], op: { kind: "userDelete", name: "u1" }, error: V3Errors.userNotFound() },
  { name: "userDelete refuses root while enabled", setup: withRoot, enabled: true, op: { kind: "userDelete", name: "root" }, error: V3Errors.invalidAuthMgmt() },
  { name: "userChangePassword refuses a missing user", setup: [], op: { kind: "userChangePassword", name: "nobody", passwordHash: "h" }, error: V3Errors.userNotFound() },
  { name: "userGrantRole refuses a missing user before a missing role", setup: [], op: { kind: "userGrantRole", user: "u1", role: "nope" }, error: V3Errors.userNotFound() },
  { name: "userGrantRole refuses a missing role", setup: [userAdd("u1")], op: { kind: "userGrantRole", user: "u1", role: "nope" }, error: V3Errors.roleNotFound() },
  { name: "userRevokeRole refuses a missing user", setup: [], op: { kind: "userRevokeRole", name: "u1", role: "r1" }, error: V3Errors.userNotFound() },
  { name: "userRevokeRole refuses a role not granted", setup: [userAdd("u1")], op: { kind: "userRevokeRole", name: "u1", role: "r1" }, error: V3Errors.roleNotGranted() },
  { name: "userRevokeRole refuses root from root while enabled", setup: withRoot, enabled: true, op: { kind: "userRevokeRole", name: "root", role: "root" }, error: V3Errors.invalidAuthMgmt() },
  { name: "userGet refuses a missing user", setup: [], op: { kind: "userGet", name: "nobody" }, error: V3Errors.userNotFound() },
  { name: "roleAdd refuses an empty name", setup: [], op: { kind: "roleAdd", name: "" }, error: V3Errors.roleEmpty() },
  { name: "roleAdd refuses an existing role", setup: [{ kind: "roleAdd", name: "r1" }], op: { kind: "roleAdd", name: "r1" }, error: V3Errors.roleAlreadyExist() },
  { name: "roleDelete refuses a missing role", setup: [], op: { kind: "roleDelete", role: "r1" }, error: V3Errors.roleNotFound() },
  { name: "roleDelete refuses root while enabled", setup: [...withRoot, { kind: "roleAdd", name: "root" }], enabled: true, op: { kind: "roleDelete", role: "root" }, error: V3Errors.invalidAuthMgmt() },
  { name: "roleGet refuses a missing role", setup: [], op: { kind: "roleGet", role: "nope" }, error: V3Errors.roleNotFound() },
  { name: "roleGet refuses root when it was only granted, never added", setup: withRoot, op: { kind: "roleGet", role: "root" }, error: V3Errors.roleNotFound() },
  { name: "roleGrantPermission refuses a missing role", setup: [], op: grantPerm("nope", V3PermType.WRITE, "k"), error: V3Errors.roleNotFound() },
  { name: "roleRevokePermission refuses a missing role", setup: [], op: { kind: "roleRevokePermission", role: "nope", key: "aw==", rangeEnd: "" }, error: V3Errors.roleNotFound() },
  { name: "roleRevokePermission refuses a permission not granted", setup: [{ kind: "roleAdd", name: "r1" }], op: { kind: "roleRevokePermission", role: "r1", key: "aw==", rangeEnd: "" }, error: V3Errors.permissionNotGranted() },
  { name: "roleRevokePermission matches the range end exactly", setup: [{ kind: "roleAdd", name: "r1" }, grantPerm("r1", V3PermType.READ, "k", "z")], op: { kind: "roleRevokePermission", role: "r1", key: "aw==", rangeEnd: "" }, error: V3Errors.permissionNotGranted() },
  { name: "authEnable refuses without a root user", setup: [], op: { kind: "authEnable" }, error: V3Errors.rootUserNotExist() },
  { name: "authEnable refuses when root lacks the root role", setup: [userAdd("root")], op: { kind: "authEnable" }, error: V3Errors.rootRoleNotExist() },
  { name: "authenticate refuses while auth is disabled", setup: [userAdd("u1")], op: { kind: "authenticate", name: "u1", simpleTokenPrefix: "p", time: 0, checkedRevision: 2 }, error: V3Errors.authNotEnabled() },
  { name: "authenticate refuses an unknown user", setup: withRoot, enabled: true, op: { kind: "authenticate", name: "nobody", simpleTokenPrefix: "p", time: 0, checkedRevision: 3 }, error: V3Errors.authFailed() },
  { name: "authenticate refuses a noPassword user", setup: [...withRoot, { kind: "userAdd", name: "np", passwordHash: null, noPassword: true }], enabled: true, op: { kind: "authenticate", name: "np", simpleTokenPrefix: "p", time: 0, checkedRevision: 4 }, error: V3Errors.authFailed() },
];

for (const c of errorCases) {
  test(`${c.name} (and changes nothing)`, () => {
    const s = new V3AuthState();
    applyAll(s, c.setup);
    if (c.enabled === true) s.apply({ kind: "authEnable" });
    const before = JSON.stringify(s.toImage());
    throwsV3(() => s.apply(c.op, { index: 10 }), c.error);
    assert.equal(JSON.stringify(s.toImage()), before);
  });
}

test("a user and role life cycle answers like the recorded etcd scenario", () => {
  const s = new V3AuthState();
  assert.deepEqual(s.apply({ kind: "userList" }), { kind: "userList", users: [] });
  assert.deepEqual(s.apply({ kind: "roleList" }), { kind: "roleList", roles: [] });
  assert.deepEqual(s.apply(userAdd("u1")), { kind: "done", changed: true });
  s.apply({ kind: "userAdd", name: "u2", passwordHash: null, noPassword: true });
  assert.deepEqual(s.apply({ kind: "userGet", name: "u1" }), { kind: "userGet", roles: [] });
  s.apply({ kind: "userChangePassword", name: "u1", passwordHash: "h2" });
  assert.equal(s.getUser("u1")?.passwordHash, "h2");
  s.apply({ kind: "roleAdd", name: "r1" });
  s.apply(grantPerm("r1", V3PermType.WRITE, "k"));
  assert.deepEqual(s.apply({ kind: "roleGet", role: "r1" }), { kind: "roleGet", perm: [{ permType: V3PermType.WRITE, key: b("k"), rangeEnd: b("") }] });
  s.apply({ kind: "userGrantRole", user: "u1", role: "r1" });
  assert.deepEqual(s.apply({ kind: "userGet", name: "u1" }), { kind: "userGet", roles: ["r1"] });
  assert.deepEqual(s.apply({ kind: "userList" }), { kind: "userList", users: ["u1", "u2"] });
  assert.deepEqual(s.apply({ kind: "roleList" }), { kind: "roleList", roles: ["r1"] });
  s.apply({ kind: "roleRevokePermission", role: "r1", key: "aw==", rangeEnd: "" });
  assert.deepEqual(s.apply({ kind: "roleGet", role: "r1" }), { kind: "roleGet", perm: [] });
  s.apply({ kind: "userRevokeRole", name: "u1", role: "r1" });
  s.apply({ kind: "roleDelete", role: "r1" });
  s.apply({ kind: "userDelete", name: "u1" });
  assert.deepEqual(s.apply({ kind: "userList" }), { kind: "userList", users: ["u2"] });
});

test("authRevision starts at 1 and moves exactly when etcd commits one", () => {
  const s = new V3AuthState();
  const steps: Array<[V3AuthOp, number]> = [
    [userAdd("root"), 1],
    [{ kind: "userGrantRole", user: "root", role: "root" }, 1],
    [{ kind: "userGrantRole", user: "root", role: "root" }, 0], // already granted: ignored
    [{ kind: "roleAdd", name: "r" }, 1],
    [grantPerm("r", V3PermType.READ, "a"), 1],
    [grantPerm("r", V3PermType.READ, "a"), 1], // etcd rewrites the role even when nothing changes
    [{ kind: "roleGet", role: "r" }, 0],
    [{ kind: "userList" }, 0],
    [{ kind: "authEnable" }, 0], // etcd 3.4 does not commit a revision on enable
    [{ kind: "authEnable" }, 0],
    [{ kind: "authDisable" }, 1],
    [{ kind: "authDisable" }, 0],
    [{ kind: "userChangePassword", name: "root", passwordHash: "x" }, 1],
    [{ kind: "roleRevokePermission", role: "r", key: "YQ==", rangeEnd: "" }, 1],
    [{ kind: "roleDelete", role: "r" }, 1],
    [{ kind: "userDelete", name: "root" }, 1],
  ];
  let expected = 1;
  assert.equal(s.authRevision, 1);
  for (const [op, bump] of steps) {
    s.apply(op);
    expected += bump;
    assert.equal(s.authRevision, expected, `after ${JSON.stringify(op)}`);
  }
});

test("userGrantRole keeps roles a sorted set and grants root without a stored root role", () => {
  const s = new V3AuthState();
  applyAll(s, [userAdd("u"), { kind: "roleAdd", name: "zeta" }, { kind: "roleAdd", name: "alpha" }]);
  applyAll(s, [{ kind: "userGrantRole", user: "u", role: "zeta" }, { kind: "userGrantRole", user: "u", role: "root" }, { kind: "userGrantRole", user: "u", role: "alpha" }]);
  assert.deepEqual(s.apply({ kind: "userGrantRole", user: "u", role: "alpha" }), { kind: "done", changed: false });
  assert.deepEqual(s.getUser("u")?.roles, ["alpha", "root", "zeta"]);
  assert.equal(s.isAdmin("u"), true);
});

test("authEnable succeeds once root holds the root role, and a second enable is a no-op", () => {
  const s = new V3AuthState();
  applyAll(s, withRoot);
  assert.deepEqual(s.apply({ kind: "authEnable" }), { kind: "done", changed: true });
  assert.equal(s.enabled, true);
  assert.deepEqual(s.apply({ kind: "authEnable" }), { kind: "done", changed: false });
  assert.deepEqual(s.apply({ kind: "authDisable" }), { kind: "done", changed: true });
  assert.equal(s.enabled, false);
});

test("root management is allowed while auth is disabled", () => {
  const s = new V3AuthState();
  applyAll(s, [...withRoot, { kind: "roleAdd", name: "root" }]);
  s.apply({ kind: "userRevokeRole", name: "root", role: "root" });
  s.apply({ kind: "roleDelete", role: "root" });
  s.apply({ kind: "userDelete", name: "root" });
  assert.deepEqual(s.userNames(), []);
});

test("roleDelete takes the role away from every user", () => {
  const s = enabledState();
  s.apply({ kind: "userAdd", name: "u2", passwordHash: "h", noPassword: false });
  s.apply({ kind: "userGrantRole", user: "u2", role: "r1" });
  s.apply({ kind: "roleDelete", role: "r1" });
  assert.deepEqual(s.getUser("u1")?.roles, []);
  assert.deepEqual(s.getUser("u2")?.roles, []);
  assert.deepEqual(s.getUser("root")?.roles, ["root"]);
});

test("roleGrantPermission merges like etcd: same range updates the type, new ranges sort by key", () => {
  const s = new V3AuthState();
  applyAll(s, [{ kind: "roleAdd", name: "r" }, grantPerm("r", V3PermType.READ, "m"), grantPerm("r", V3PermType.READ, "c", "d"), grantPerm("r", V3PermType.WRITE, "c"), grantPerm("r", V3PermType.READWRITE, "c", "d"), grantPerm("r", V3PermType.READ, "a", "\0")]);
  const perm = s.apply({ kind: "roleGet", role: "r" }).perm.map((p) => [p.permType, p.key.toString("latin1"), p.rangeEnd.toString("latin1")]);
  assert.deepEqual(perm, [
    [V3PermType.READ, "a", "\0"],
    [V3PermType.READWRITE, "c", "d"],
    [V3PermType.WRITE, "c", ""],
    [V3PermType.READ, "m", ""],
  ]);
});

test("roleGet hands out copies: mutating a result does not touch the state", () => {
  const s = new V3AuthState();
  applyAll(s, [{ kind: "roleAdd", name: "r" }, grantPerm("r", V3PermType.READ, "k")]);
  s.apply({ kind: "roleGet", role: "r" }).perm[0]!.key.fill(0x41);
  assert.equal(s.getRole("r")?.keyPermissions[0]?.key.toString(), "k");
});

interface AuthorizeCase {
  name: string;
  info: V3AuthInfo | null;
  op: V3AuthOp;
  error: V3Error | null;
}

const authorizeCases: AuthorizeCase[] = [
  { name: "an admin op without a token", info: null, op: { kind: "roleAdd", name: "x" }, error: V3Errors.userEmpty() },
  { name: "an admin op by a user that does not exist", info: { user: "ghost", revision: 9 }, op: { kind: "userList" }, error: V3Errors.userNotFound() },
  { name: "an admin op by a non-root user", info: { user: "u1", revision: 9 }, op: { kind: "authDisable" }, error: V3Errors.permissionDenied() },
  { name: "an admin op by root", info: { user: "root", revision: 9 }, op: { kind: "userAdd", name: "x", passwordHash: "h", noPassword: false }, error: null },
  { name: "userGet of oneself", info: { user: "u1", revision: 9 }, op: { kind: "userGet", name: "u1" }, error: null },
  { name: "userGet of someone else", info: { user: "u1", revision: 9 }, op: { kind: "userGet", name: "root" }, error: V3Errors.permissionDenied() },
  { name: "roleGet of a role one holds", info: { user: "u1", revision: 9 }, op: { kind: "roleGet", role: "r1" }, error: null },
  { name: "roleGet of a role one does not hold", info: { user: "u1", revision: 9 }, op: { kind: "roleGet", role: "other" }, error: V3Errors.permissionDenied() },
  { name: "authenticate without a token", info: null, op: { kind: "authenticate", name: "u1", simpleTokenPrefix: "p", time: 0, checkedRevision: 1 }, error: null },
];

for (const c of authorizeCases) {
  test(`authorize ${c.error === null ? "allows" : "refuses"} ${c.name} while enabled`, () => {
    const s = enabledState();
    if (c.error === null) s.authorize(c.op, c.info);
    else throwsV3(() => s.authorize(c.op, c.info), c.error);
  });
}

test("authorize allows everything while auth is disabled", () => {
  const s = new V3AuthState();
  s.authorize({ kind: "authEnable" }, null);
  s.authorize({ kind: "userDelete", name: "x" }, { user: "nobody", revision: 1 });
});

test("authenticate registers <prefix>.<index> and answers stale when the state moved since the check", () => {
  const s = enabledState();
  const rev = s.authRevision;
  const r = s.apply({ kind: "authenticate", name: "u1", simpleTokenPrefix: "abcDEF", time: 1000, checkedRevision: rev }, { index: 42 });
  assert.deepEqual(r, { kind: "authenticated", token: "abcDEF.42" });
  assert.deepEqual(s.authInfoOf("abcDEF.42", 2000), { user: "u1", revision: rev });
  const stale = s.apply({ kind: "authenticate", name: "u1", simpleTokenPrefix: "xyz", time: 1000, checkedRevision: rev - 1 }, { index: 43 });
  assert.deepEqual(stale, { kind: "authenticateStale", authRevision: rev });
  assert.equal(s.tokens.size, 1);
});

test("authenticate without its log index is an invariant violation", () => {
  const s = enabledState();
  assert.throws(() => s.apply({ kind: "authenticate", name: "u1", simpleTokenPrefix: "p", time: 0, checkedRevision: s.authRevision }), /Invariant violated/);
});
