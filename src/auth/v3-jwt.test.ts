import { test } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { V3Error, V3Errors } from "../api/v3-errors.ts";
import { JWT_SIGN_METHODS, V3JwtTokens } from "./v3-jwt.ts";
import { V3AuthState } from "./v3-auth-state.ts";
import { parseV3AuthOp } from "./v3-model.ts";

const T0 = 1_700_000_000_000;

function isInvalidToken(err: unknown): boolean {
  const want = V3Errors.invalidAuthToken();
  return err instanceof V3Error && err.code === want.code && err.message === want.message;
}

const pem = (k: KeyObject, type: "pkcs8" | "spki"): Buffer => Buffer.from(k.export({ format: "pem", type }) as string);

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const rsa2 = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ec = { ES256: generateKeyPairSync("ec", { namedCurve: "P-256" }), ES384: generateKeyPairSync("ec", { namedCurve: "P-384" }), ES512: generateKeyPairSync("ec", { namedCurve: "P-521" }) };

function keysFor(method: string): { privateKey: Buffer; publicKey?: Buffer } {
  if (method.startsWith("HS")) return { privateKey: Buffer.from("a shared secret") };
  const pair = method.startsWith("ES") ? ec[method as keyof typeof ec] : rsa;
  return { privateKey: pem(pair.privateKey, "pkcs8"), publicKey: pem(pair.publicKey, "spki") };
}

function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;
}

test("every method signs a token that a verify-only member (or the HMAC secret) accepts", () => {
  for (const method of JWT_SIGN_METHODS) {
    const keys = keysFor(method);
    const signer = new V3JwtTokens({ signMethod: method, ttlMs: 60_000, ...keys });
    const token = signer.sign("alice", 7, T0);
    const parts = token.split(".");
    assert.equal(parts.length, 3, method);
    assert.deepEqual(JSON.parse(Buffer.from(parts[0]!, "base64url").toString()), { alg: method, typ: "JWT" });
    // etcd's claims, in Go's marshalled (sorted) order.
    assert.equal(Buffer.from(parts[1]!, "base64url").toString(), `{"exp":${(T0 + 60_000) / 1000},"revision":7,"username":"alice"}`);
    const verifier = method.startsWith("HS") ? signer : new V3JwtTokens({ signMethod: method, ttlMs: 60_000, publicKey: keys.publicKey! });
    assert.equal(verifier.verifyOnly, !method.startsWith("HS"), method);
    assert.deepEqual(verifier.verify(token, T0 + 1000), { user: "alice", revision: 7 }, method);
  }
});

test("a tampered token is refused: claims, header alg, signature, segments", () => {
  const t = new V3JwtTokens({ signMethod: "RS256", ttlMs: 60_000, ...keysFor("RS256") });
  const token = t.sign("alice", 3, T0);
  const [h, c, s] = token.split(".") as [string, string, string];
  const forged = Buffer.from(JSON.stringify({ ...claimsOf(token), username: "root" })).toString("base64url");
  assert.throws(() => t.verify(`${h}.${forged}.${s}`, T0), isInvalidToken);
  const newerRev = Buffer.from(JSON.stringify({ ...claimsOf(token), revision: 99 })).toString("base64url");
  assert.throws(() => t.verify(`${h}.${newerRev}.${s}`, T0), isInvalidToken);
  const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
  assert.throws(() => t.verify(`${none}.${c}.`, T0), isInvalidToken);
  const flipped = Buffer.from(s, "base64url");
  flipped[0] = flipped[0]! ^ 1;
  assert.throws(() => t.verify(`${h}.${c}.${flipped.toString("base64url")}`, T0), isInvalidToken);
  assert.throws(() => t.verify(`${h}.${c}.${s}!`, T0), isInvalidToken);
  assert.throws(() => t.verify(`${h}.${c}`, T0), isInvalidToken);
  assert.throws(() => t.verify("abcdefghijklmnop.12", T0), isInvalidToken);
  // An HMAC token signed with the RSA public key as secret (the classic alg confusion) is refused.
  const hs = new V3JwtTokens({ signMethod: "HS256", ttlMs: 60_000, privateKey: keysFor("RS256").publicKey! });
  assert.throws(() => t.verify(hs.sign("root", 3, T0), T0), isInvalidToken);
});

test("a token is valid through its exp second and refused after", () => {
  const t = new V3JwtTokens({ signMethod: "ES256", ttlMs: 10_000, ...keysFor("ES256") });
  const token = t.sign("alice", 2, T0);
  assert.equal(t.verify(token, T0 + 10_999).user, "alice");
  assert.throws(() => t.verify(token, T0 + 11_000), isInvalidToken);
});

test("a token signed with another key, or another method, is refused", () => {
  const mine = new V3JwtTokens({ signMethod: "RS256", ttlMs: 60_000, publicKey: pem(rsa.publicKey, "spki") });
  const theirs = new V3JwtTokens({ signMethod: "RS256", ttlMs: 60_000, privateKey: pem(rsa2.privateKey, "pkcs8") });
  assert.throws(() => mine.verify(theirs.sign("alice", 1, T0), T0), isInvalidToken);
  const ps = new V3JwtTokens({ signMethod: "PS256", ttlMs: 60_000, privateKey: pem(rsa.privateKey, "pkcs8") });
  assert.throws(() => mine.verify(ps.sign("alice", 1, T0), T0), isInvalidToken);
  const hs = new V3JwtTokens({ signMethod: "HS256", ttlMs: 60_000, privateKey: Buffer.from("other secret") });
  assert.throws(() => new V3JwtTokens({ signMethod: "HS256", ttlMs: 60_000, privateKey: Buffer.from("a shared secret") }).verify(hs.sign("a", 1, T0), T0), isInvalidToken);
});

test("a verify-only member cannot sign (etcd's ErrVerifyOnly, code Unknown)", () => {
  const t = new V3JwtTokens({ signMethod: "RS256", ttlMs: 60_000, publicKey: pem(rsa.publicKey, "spki") });
  assert.throws(() => t.sign("alice", 1, T0), (err: unknown) => err instanceof V3Error && err.code === 2 && /verify-only key/.test(err.message));
});

test("key problems are refused at construction with etcd's messages", () => {
  assert.throws(() => new V3JwtTokens({ signMethod: "RS256", ttlMs: 1 }), /auth: missing key data/);
  assert.throws(() => new V3JwtTokens({ signMethod: "HS256", ttlMs: 1, publicKey: Buffer.from("x") }), /auth: missing key data/);
  assert.throws(() => new V3JwtTokens({ signMethod: "XX256", ttlMs: 1, privateKey: Buffer.from("x") }), /invalid auth signature method/);
  assert.throws(() => new V3JwtTokens({ signMethod: "RS256", ttlMs: 1, privateKey: Buffer.from("not pem") }), /must be PEM encoded/);
  assert.throws(() => new V3JwtTokens({ signMethod: "RS256", ttlMs: 1, privateKey: pem(ec.ES256.privateKey, "pkcs8") }), /not a valid RSA private key/);
  assert.throws(() => new V3JwtTokens({ signMethod: "ES384", ttlMs: 1, privateKey: pem(ec.ES256.privateKey, "pkcs8") }), /not a valid ECDSA private key/);
  assert.throws(() => new V3JwtTokens({ signMethod: "RS256", ttlMs: 1, privateKey: pem(rsa.privateKey, "pkcs8"), publicKey: pem(rsa2.publicKey, "spki") }), /keys don't match/);
});

test("a token from an older auth revision is refused by the permission check", () => {
  const t = new V3JwtTokens({ signMethod: "HS256", ttlMs: 60_000, privateKey: Buffer.from("s") });
  const s = new V3AuthState();
  s.apply({ kind: "userAdd", name: "root", passwordHash: "$scrypt$x", noPassword: false });
  s.apply({ kind: "userGrantRole", user: "root", role: "root" });
  s.apply({ kind: "authEnable" });
  const old = t.verify(t.sign("root", s.authRevision, T0), T0);
  s.isRangePermitted(old, Buffer.from("k"), Buffer.alloc(0));
  s.apply({ kind: "roleAdd", name: "r" });
  assert.throws(() => s.isRangePermitted(old, Buffer.from("k"), Buffer.alloc(0)), (err: unknown) => err instanceof V3Error && /revision of auth store is old/.test(err.message));
  const fresh = t.verify(t.sign("root", s.authRevision, T0), T0);
  s.isRangePermitted(fresh, Buffer.from("k"), Buffer.alloc(0));
});

test("an authenticate op without a prefix registers no simple token (the JWT path)", () => {
  const s = new V3AuthState();
  s.apply({ kind: "userAdd", name: "root", passwordHash: "$scrypt$x", noPassword: false });
  s.apply({ kind: "userGrantRole", user: "root", role: "root" });
  s.apply({ kind: "authEnable" });
  const op = parseV3AuthOp({ kind: "authenticate", name: "root", simpleTokenPrefix: "", time: T0, checkedRevision: s.authRevision });
  assert.deepEqual(s.apply(op as Extract<typeof op, { kind: "authenticate" }>, { index: 5 }), { kind: "authenticated", token: "" });
  assert.equal(s.tokens.size, 0);
});
