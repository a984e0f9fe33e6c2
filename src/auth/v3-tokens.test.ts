import { test } from "node:test";
import assert from "node:assert/strict";
import { GrpcCode, V3Error, V3Errors } from "../api/v3-errors.ts";
import { DEFAULT_SIMPLE_TOKEN_TTL_MS, V3SimpleTokens, formatSimpleToken, simpleTokenIndex } from "./v3-tokens.ts";
import { V3AuthState } from "./v3-auth-state.ts";
import type { V3AuthOp } from "./v3-model.ts";

function isInvalidToken(err: unknown): boolean {
  const want = V3Errors.invalidAuthToken();
  return err instanceof V3Error && err.code === want.code && err.message === want.message && err.code === GrpcCode.Unauthenticated;
}

const T0 = 1_700_000_000_000;

test("a token lives ttl after registration and no longer", () => {
  const t = new V3SimpleTokens({ ttlMs: 1000 });
  t.register("p.1", "alice", T0);
  assert.equal(t.userOf("p.1", T0 + 1000), "alice");
  const u = new V3SimpleTokens({ ttlMs: 1000 });
  u.register("p.1", "alice", T0);
  assert.throws(() => u.userOf("p.1", T0 + 1001), isInvalidToken);
  // Expired is final, even if a later lookup brings an earlier clock.
  assert.throws(() => u.userOf("p.1", T0), isInvalidToken);
});

test("a lookup refreshes the token: an active token outlives its first ttl", () => {
  const t = new V3SimpleTokens({ ttlMs: 1000 });
  t.register("p.1", "alice", T0);
  for (let now = T0 + 900; now <= T0 + 9000; now += 900) assert.equal(t.userOf("p.1", now), "alice");
  assert.throws(() => t.userOf("p.1", T0 + 9000 + 1001), isInvalidToken);
});

test("a lookup with an earlier clock never shortens a token's life", () => {
  const t = new V3SimpleTokens({ ttlMs: 1000 });
  t.register("p.1", "alice", T0 + 5000);
  t.userOf("p.1", T0);
  assert.equal(t.userOf("p.1", T0 + 6000), "alice");
});

test("the default ttl is etcd's five minutes", () => {
  const t = new V3SimpleTokens();
  assert.equal(t.ttlMs, DEFAULT_SIMPLE_TOKEN_TTL_MS);
  assert.equal(DEFAULT_SIMPLE_TOKEN_TTL_MS, 300_000);
  assert.throws(() => new V3SimpleTokens({ ttlMs: 0 }), /not positive/);
});

test("an unknown token is invalidAuthToken", () => {
  assert.throws(() => new V3SimpleTokens().userOf("nope.1", T0), isInvalidToken);
});

test("invalidateUser drops only that user's tokens", () => {
  const t = new V3SimpleTokens();
  t.register("a.1", "alice", T0);
  t.register("a.2", "alice", T0);
  t.register("b.3", "bob", T0);
  t.invalidateUser("alice");
  assert.equal(t.size, 1);
  assert.equal(t.userOf("b.3", T0), "bob");
});

test("register is idempotent for one user and an invariant violation across users", () => {
  const t = new V3SimpleTokens();
  t.register("a.1", "alice", T0);
  t.register("a.1", "alice", T0 + 10);
  assert.equal(t.size, 1);
  assert.throws(() => t.register("a.1", "bob", T0), /Invariant violated/);
});

test("sweep drops expired tokens only, and registration sweeps as the table grows", () => {
  const t = new V3SimpleTokens({ ttlMs: 1000 });
  t.register("old.1", "a", T0);
  t.register("new.2", "a", T0 + 900);
  assert.equal(t.sweep(T0 + 1500), 1);
  assert.equal(t.size, 1);
  const big = new V3SimpleTokens({ ttlMs: 10 });
  for (let i = 0; i < 5000; i++) big.register(`p.${i}`, "a", T0 + i * 100);
  assert.ok(big.size < 1100, `table kept ${big.size} tokens`);
});

interface IndexCase {
  token: string;
  index: number | undefined;
}

const indexCases: IndexCase[] = [
  { token: "abcdefghijklmnop.42", index: 42 },
  { token: "x.0", index: 0 },
  { token: "x.+7", index: 7 },
  { token: "x.-7", index: -7 },
  { token: "x", index: undefined },
  { token: "x.1.2", index: undefined },
  { token: "x.", index: undefined },
  { token: "x.1a", index: undefined },
  { token: "Bearer x.1 ", index: undefined },
];

for (const c of indexCases) {
  test(`simpleTokenIndex reads ${JSON.stringify(c.token)} as ${String(c.index)}`, () => {
    assert.equal(simpleTokenIndex(c.token), c.index);
  });
}

test("formatSimpleToken is etcd's <prefix>.<index>", () => {
  assert.equal(formatSimpleToken("AbC", 17), "AbC.17");
  assert.equal(simpleTokenIndex(formatSimpleToken("AbC", 17)), 17);
});

// ---- the life cycle through the state: what etcd invalidates ----------------------------

function enabledWithTokens(): { s: V3AuthState; rootToken: string; aliceToken: string } {
  const s = new V3AuthState({ tokenTtlMs: 60_000 });
  const setup: V3AuthOp[] = [
    { kind: "userAdd", name: "root", passwordHash: "h", noPassword: false },
    { kind: "userGrantRole", user: "root", role: "root" },
    { kind: "userAdd", name: "alice", passwordHash: "h", noPassword: false },
    { kind: "authEnable" },
  ];
  for (const op of setup) s.apply(op);
  const login = (name: string, index: number): string => {
    const r = s.apply({ kind: "authenticate", name, simpleTokenPrefix: `tok${name}`, time: T0, checkedRevision: s.authRevision }, { index });
    assert.equal(r.kind, "authenticated");
    return r.kind === "authenticated" ? r.token : "";
  };
  return { s, rootToken: login("root", 10), aliceToken: login("alice", 11) };
}

test("the state's tokens follow the ttl given to the state", () => {
  const { s, aliceToken } = enabledWithTokens();
  assert.equal(s.authInfoOf(aliceToken, T0 + 60_000).user, "alice");
  assert.throws(() => s.authInfoOf(aliceToken, T0 + 120_001), isInvalidToken);
});

test("deleting a user invalidates its tokens, and re-creating it does not revive them", () => {
  const { s, rootToken, aliceToken } = enabledWithTokens();
  s.apply({ kind: "userDelete", name: "alice" });
  s.apply({ kind: "userAdd", name: "alice", passwordHash: "h", noPassword: false });
  assert.throws(() => s.authInfoOf(aliceToken, T0), isInvalidToken);
  assert.equal(s.authInfoOf(rootToken, T0).user, "root");
});

test("changing a password invalidates the user's tokens", () => {
  const { s, rootToken, aliceToken } = enabledWithTokens();
  s.apply({ kind: "userChangePassword", name: "alice", passwordHash: "h2" });
  assert.throws(() => s.authInfoOf(aliceToken, T0), isInvalidToken);
  assert.equal(s.authInfoOf(rootToken, T0).user, "root");
});

test("role changes leave tokens valid (permissions are judged at use)", () => {
  const { s, aliceToken } = enabledWithTokens();
  s.apply({ kind: "roleAdd", name: "r" });
  s.apply({ kind: "userGrantRole", user: "alice", role: "r" });
  s.apply({ kind: "userRevokeRole", name: "alice", role: "r" });
  s.apply({ kind: "roleDelete", role: "r" });
  assert.equal(s.authInfoOf(aliceToken, T0).user, "alice");
});

test("disabling auth invalidates every token, and enabling again does not bring them back", () => {
  const { s, rootToken, aliceToken } = enabledWithTokens();
  s.apply({ kind: "authDisable" });
  assert.throws(() => s.authInfoOf(rootToken, T0), isInvalidToken);
  s.apply({ kind: "authEnable" });
  assert.throws(() => s.authInfoOf(aliceToken, T0), isInvalidToken);
  assert.equal(s.tokens.size, 0);
});

test("authInfoOf reports the auth revision current at lookup", () => {
  const { s, aliceToken } = enabledWithTokens();
  const before = s.authInfoOf(aliceToken, T0).revision;
  s.apply({ kind: "roleAdd", name: "r" });
  assert.equal(s.authInfoOf(aliceToken, T0).revision, before + 1);
});
