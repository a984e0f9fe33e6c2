import { test } from "node:test";
import assert from "node:assert/strict";
import { GrpcCode, V3Error, V3Errors } from "../api/v3-errors.ts";
import { PasswordVerifier, hashPassword, hashV3Password, verifyPassword } from "./password.ts";
import { V3AuthState } from "./v3-auth-state.ts";
import { authenticateOp, checkV3Password, newSimpleTokenPrefix } from "./v3-authenticate.ts";
import { noPasswordUser, type V3AuthOp } from "./v3-model.ts";
import { simpleTokenIndex } from "./v3-tokens.ts";

const FAST = { cost: { log2N: 10, r: 8, p: 1 } };

async function enabledState(): Promise<V3AuthState> {
  const s = new V3AuthState();
  const ops: V3AuthOp[] = [
    { kind: "userAdd", name: "root", passwordHash: await hashPassword("rootpw", FAST), noPassword: false },
    { kind: "userGrantRole", user: "root", role: "root" },
    { kind: "userAdd", name: "alice", passwordHash: await hashPassword("secret", FAST), noPassword: false },
    { kind: "userAdd", name: "np", passwordHash: null, noPassword: true },
    { kind: "authEnable" },
  ];
  for (const op of ops) s.apply(op);
  return s;
}

async function rejectsWith(p: Promise<unknown>, expected: V3Error): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof V3Error && err.message === expected.message && err.code === expected.code);
}

test("newSimpleTokenPrefix draws 16 letters", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const p = newSimpleTokenPrefix();
    assert.match(p, /^[a-zA-Z]{16}$/);
    seen.add(p);
  }
  assert.equal(seen.size, 50);
});

test("a full login: check the password, propose, apply, use the token", async () => {
  const s = await enabledState();
  const checkedRevision = await checkV3Password(s, { name: "alice", password: "secret" });
  assert.equal(checkedRevision, s.authRevision);
  const op = authenticateOp({ name: "alice", checkedRevision, time: 5_000 });
  assert.doesNotMatch(JSON.stringify(op), /secret/);
  const r = s.apply(op, { index: 77 });
  assert.equal(r.kind, "authenticated");
  const token = r.kind === "authenticated" ? r.token : "";
  assert.equal(simpleTokenIndex(token), 77);
  assert.equal(s.authInfoOf(token, 6_000).user, "alice");
});

test("a login whose state moved between check and apply gets no token", async () => {
  const s = await enabledState();
  const checkedRevision = await checkV3Password(s, { name: "alice", password: "secret" });
  s.apply({ kind: "userChangePassword", name: "alice", passwordHash: await hashPassword("new", FAST) });
  const r = s.apply(authenticateOp({ name: "alice", checkedRevision, time: 0 }), { index: 78 });
  assert.deepEqual(r, { kind: "authenticateStale", authRevision: s.authRevision });
  await rejectsWith(checkV3Password(s, { name: "alice", password: "secret" }), V3Errors.authFailed());
});

test("checkV3Password refuses in etcd's order", async () => {
  const disabled = new V3AuthState();
  disabled.apply({ kind: "userAdd", name: "alice", passwordHash: await hashPassword("secret", FAST), noPassword: false });
  await rejectsWith(checkV3Password(disabled, { name: "alice", password: "secret" }), V3Errors.authNotEnabled());
  const s = await enabledState();
  await rejectsWith(checkV3Password(s, { name: "alice", password: "wrong" }), V3Errors.authFailed());
  await rejectsWith(checkV3Password(s, { name: "np", password: "" }), noPasswordUser());
  assert.equal(noPasswordUser().code, GrpcCode.Unknown);
});

test("an unknown user costs one slow comparison, like a wrong password", async () => {
  const s = await enabledState();
  let calls = 0;
  const verify = async (): Promise<boolean> => {
    calls++;
    return false;
  };
  await rejectsWith(checkV3Password(s, { name: "nobody", password: "x" }, { verify }), V3Errors.authFailed());
  await rejectsWith(checkV3Password(s, { name: "alice", password: "x" }, { verify }), V3Errors.authFailed());
  assert.equal(calls, 2);
});

test("checkV3Password: repeated and concurrent logins of one user cost one comparison; a password change voids it", async () => {
  const s = await enabledState();
  let checks = 0;
  const verifier = new PasswordVerifier({ check: (pw, enc) => (checks++, verifyPassword(pw, enc)) });
  const login = (password: string): Promise<number> => checkV3Password(s, { name: "alice", password }, { verifier });
  await Promise.all([login("secret"), login("secret"), login("secret")]);
  await login("secret");
  assert.equal(checks, 1);
  await rejectsWith(login("wrong"), V3Errors.authFailed());
  await rejectsWith(checkV3Password(s, { name: "root", password: "secret" }, { verifier }), V3Errors.authFailed());
  assert.equal(checks, 3, "other credentials are checked");
  s.apply({ kind: "userChangePassword", name: "alice", passwordHash: await hashPassword("new", FAST) });
  await rejectsWith(login("secret"), V3Errors.authFailed());
  await login("new");
  assert.equal(checks, 5);
});

test("the caller's signal reaches the bcrypt queue: a check whose caller already gave up costs no hash", async () => {
  const s = new V3AuthState();
  s.apply({ kind: "userAdd", name: "root", passwordHash: await hashV3Password("rootpw", 4), noPassword: false });
  s.apply({ kind: "userGrantRole", user: "root", role: "root" });
  s.apply({ kind: "authEnable" });
  const ctl = new AbortController();
  const reason = new Error("deadline passed");
  ctl.abort(reason);
  const seen: Array<AbortSignal | undefined> = [];
  const verify = (pw: string | Uint8Array, enc: string, opts?: { signal?: AbortSignal | undefined }): Promise<boolean> => {
    seen.push(opts?.signal);
    return verifyPassword(pw, enc, opts);
  };
  await assert.rejects(checkV3Password(s, { name: "root", password: "rootpw" }, { verify, signal: ctl.signal }), (err: unknown) => err === reason);
  await assert.rejects(checkV3Password(s, { name: "nobody", password: "x" }, { verify, signal: ctl.signal }), (err: unknown) => err === reason);
  assert.deepEqual(seen, [ctl.signal, ctl.signal]);
  // The process's own cache path takes it too.
  await assert.rejects(checkV3Password(s, { name: "root", password: "rootpw" }, { verifier: new PasswordVerifier(), signal: ctl.signal }), (err: unknown) => err === reason);
  assert.equal(await checkV3Password(s, { name: "root", password: "rootpw" }), s.authRevision);
});
