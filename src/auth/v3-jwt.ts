// etcd 3.4's JWT token provider (auth/jwt.go, auth/options.go, on golang-jwt v3), with
// node:crypto instead of a JWT library. A token is `<header>.<claims>.<signature>`, each
// base64url without padding; the header is {"alg":<method>,"typ":"JWT"} and the claims
// {"exp":<unix seconds>,"revision":<auth revision>,"username":<name>} — Go marshals maps
// with sorted keys, so the bytes are etcd's too.
//
// Unlike simple tokens, a JWT is not in any table: any member holding the public key (or
// the HMAC secret) accepts it until `exp`, and the auth revision it carries is what the
// permission checks compare with the state's (an older one is "revision of auth store is
// old", so a token outlives no user or role change).
//
// Keys arrive as bytes (the server reads the files); time is passed in (ms since the epoch).
import { createHmac, createPrivateKey, createPublicKey, constants, sign as cryptoSign, verify as cryptoVerify, timingSafeEqual, type KeyObject } from "node:crypto";
import { GrpcCode, V3Error, V3Errors } from "../api/v3-errors.ts";
import type { V3AuthInfo } from "./v3-model.ts";

type Family = "HS" | "RS" | "PS" | "ES";

/** golang-jwt's methods etcd 3.4 can use (EdDSA has no key parser in its options.go). */
const METHODS: Readonly<Record<string, { family: Family; hash: string; curve?: string }>> = {
  HS256: { family: "HS", hash: "sha256" },
  HS384: { family: "HS", hash: "sha384" },
  HS512: { family: "HS", hash: "sha512" },
  RS256: { family: "RS", hash: "sha256" },
  RS384: { family: "RS", hash: "sha384" },
  RS512: { family: "RS", hash: "sha512" },
  PS256: { family: "PS", hash: "sha256" },
  PS384: { family: "PS", hash: "sha384" },
  PS512: { family: "PS", hash: "sha512" },
  ES256: { family: "ES", hash: "sha256", curve: "prime256v1" },
  ES384: { family: "ES", hash: "sha384", curve: "secp384r1" },
  ES512: { family: "ES", hash: "sha512", curve: "secp521r1" },
};

export const JWT_SIGN_METHODS: readonly string[] = Object.keys(METHODS);

/** etcd's jwtOptions after parsing: the key files' bytes, not their names. */
export interface V3JwtOptions {
  signMethod: string;
  privateKey?: Uint8Array;
  publicKey?: Uint8Array;
  /** Lifetime of a token (etcd's `ttl=`, default 5m). */
  ttlMs: number;
}

/** auth.ErrVerifyOnly: unmapped in etcd's rpctypes, so the client sees code Unknown. */
export function jwtVerifyOnly(): V3Error {
  return new V3Error(GrpcCode.Unknown, "auth: token signing attempted with verify-only key");
}

const B64URL = /^[A-Za-z0-9_-]*$/;

function b64(data: string | Buffer): string {
  return Buffer.from(data).toString("base64url");
}

/** Strict base64url: Node's decoder skips characters it does not know, golang-jwt's does not. */
function unb64(seg: string): Buffer | undefined {
  if (!B64URL.test(seg) || seg.length % 4 === 1) return undefined;
  return Buffer.from(seg, "base64url");
}

function jsonObject(seg: string): Record<string, unknown> | undefined {
  const raw = unb64(seg);
  if (raw === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(raw.toString("utf8"));
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function loadKey(kind: "private" | "public", family: "RS" | "PS" | "ES", pem: Uint8Array): KeyObject {
  const what = family === "ES" ? "ECDSA" : "RSA";
  if (!Buffer.from(pem).toString("latin1").includes("-----BEGIN")) {
    throw new Error(kind === "private" ? "Invalid Key: Key must be PEM encoded PKCS1 or PKCS8 private key" : "Invalid Key: Key must be PEM encoded PKCS1 or PKCS8 public key");
  }
  let key: KeyObject;
  try {
    key = kind === "private" ? createPrivateKey({ key: Buffer.from(pem), format: "pem" }) : createPublicKey({ key: Buffer.from(pem), format: "pem" });
  } catch {
    throw new Error(`Key is not a valid ${what} ${kind} key`);
  }
  const type = key.asymmetricKeyType;
  if (family === "ES" ? type !== "ec" : type !== "rsa") throw new Error(`Key is not a valid ${what} ${kind} key`);
  return key;
}

function samePublicKey(a: KeyObject, b: KeyObject): boolean {
  return a.export({ format: "der", type: "spki" }).equals(b.export({ format: "der", type: "spki" }));
}

export class V3JwtTokens {
  readonly signMethod: string;
  readonly ttlMs: number;
  readonly #family: Family;
  readonly #hash: string;
  readonly #privateKey: KeyObject | undefined;
  readonly #publicKey: KeyObject | undefined;
  readonly #secret: Buffer | undefined;

  /**
   * etcd's newTokenProviderJWT: throws (with etcd's messages) on an unknown method, missing
   * key data, or a key that does not parse for the method. Given both keys, the private one
   * signs and its own public half verifies, as in etcd. Two deliberate departures, both
   * refusing at start what would fail every request later: keys that do not match (etcd's
   * check is a no-op) and an EC key on another curve than the method's.
   */
  constructor(opts: V3JwtOptions) {
    const m = METHODS[opts.signMethod];
    if (m === undefined) throw new Error("auth: invalid auth signature method");
    if (!Number.isFinite(opts.ttlMs)) throw new Error(`invalid JWT ttl ${opts.ttlMs}`);
    this.signMethod = opts.signMethod;
    this.ttlMs = opts.ttlMs;
    this.#family = m.family;
    this.#hash = m.hash;
    const priv = opts.privateKey !== undefined && opts.privateKey.length > 0 ? opts.privateKey : undefined;
    const pub = opts.publicKey !== undefined && opts.publicKey.length > 0 ? opts.publicKey : undefined;
    if (m.family === "HS") {
      // etcd's hmacKey: the private key file's bytes are the secret; pub-key is ignored.
      if (priv === undefined) throw new Error("auth: missing key data");
      this.#secret = Buffer.from(priv);
      return;
    }
    const family = m.family;
    const privateKey = priv === undefined ? undefined : loadKey("private", family, priv);
    const publicKey = pub === undefined ? undefined : loadKey("public", family, pub);
    if (privateKey === undefined && publicKey === undefined) throw new Error("auth: missing key data");
    const derived = privateKey === undefined ? publicKey! : createPublicKey(privateKey);
    if (privateKey !== undefined && publicKey !== undefined && !samePublicKey(derived, publicKey)) throw new Error("auth: public and private keys don't match");
    if (m.curve !== undefined && derived.asymmetricKeyDetails?.namedCurve !== m.curve) throw new Error(`Key is not a valid ECDSA ${privateKey === undefined ? "public" : "private"} key`);
    this.#privateKey = privateKey;
    this.#publicKey = derived;
  }

  /** Only a public key was given: this member verifies tokens but cannot issue them. */
  get verifyOnly(): boolean {
    return this.#family !== "HS" && this.#privateKey === undefined;
  }

  /** etcd's tokenJWT.assign: a token for `user` at auth `revision`, expiring `ttl` after `now`. */
  sign(user: string, revision: number, now: number): string {
    if (this.verifyOnly) throw jwtVerifyOnly();
    const header = b64(JSON.stringify({ alg: this.signMethod, typ: "JWT" }));
    const claims = b64(JSON.stringify({ exp: Math.floor((now + this.ttlMs) / 1000), revision, username: user }));
    const input = `${header}.${claims}`;
    return `${input}.${this.#signature(Buffer.from(input))}`;
  }

  #signature(data: Buffer): string {
    switch (this.#family) {
      case "HS":
        return b64(createHmac(this.#hash, this.#secret!).update(data).digest());
      case "RS":
        return b64(cryptoSign(this.#hash, data, this.#privateKey!));
      case "PS":
        // golang-jwt signs with a salt as long as the hash (PSSSaltLengthEqualsHash).
        return b64(cryptoSign(this.#hash, data, { key: this.#privateKey!, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }));
      case "ES":
        // JWS wants r||s at fixed width, not DER.
        return b64(cryptoSign(this.#hash, data, { key: this.#privateKey!, dsaEncoding: "ieee-p1363" }));
    }
  }

  #verifySignature(data: Buffer, sig: Buffer): boolean {
    switch (this.#family) {
      case "HS": {
        const want = createHmac(this.#hash, this.#secret!).update(data).digest();
        return sig.length === want.length && timingSafeEqual(sig, want);
      }
      case "RS":
        return cryptoVerify(this.#hash, data, this.#publicKey!, sig);
      case "PS":
        // golang-jwt verifies with PSSSaltLengthAuto: tokens from other signers pass too.
        return cryptoVerify(this.#hash, data, { key: this.#publicKey!, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO }, sig);
      case "ES":
        return cryptoVerify(this.#hash, data, { key: this.#publicKey!, dsaEncoding: "ieee-p1363" }, sig);
    }
  }

  /**
   * etcd's tokenJWT.info: the user and auth revision a token carries. Throws
   * invalidAuthToken for anything golang-jwt's Parse refuses (segments, another alg, bad
   * signature, exp passed, nbf/iat in the future) and for claims etcd would crash on (a
   * username that is not a string, a revision that is not a non-negative integer).
   */
  verify(token: string, now: number): V3AuthInfo {
    const parts = token.split(".");
    if (parts.length !== 3) throw V3Errors.invalidAuthToken();
    const [h, c, s] = parts as [string, string, string];
    const header = jsonObject(h);
    const claims = jsonObject(c);
    const sig = unb64(s);
    if (header === undefined || claims === undefined || sig === undefined) throw V3Errors.invalidAuthToken();
    if (header["alg"] !== this.signMethod) throw V3Errors.invalidAuthToken();
    let ok: boolean;
    try {
      ok = this.#verifySignature(Buffer.from(`${h}.${c}`), sig);
    } catch {
      ok = false;
    }
    if (!ok) throw V3Errors.invalidAuthToken();
    const sec = Math.floor(now / 1000);
    const num = (k: string): number | undefined => {
      const v = claims[k];
      if (v === undefined) return undefined;
      if (typeof v !== "number" || !Number.isFinite(v)) throw V3Errors.invalidAuthToken();
      return v;
    };
    const exp = num("exp");
    const nbf = num("nbf");
    const iat = num("iat");
    if ((exp !== undefined && sec > exp) || (nbf !== undefined && sec < nbf) || (iat !== undefined && sec < iat)) throw V3Errors.invalidAuthToken();
    const user = claims["username"];
    const revision = claims["revision"];
    if (typeof user !== "string" || typeof revision !== "number" || !Number.isSafeInteger(revision) || revision < 0) throw V3Errors.invalidAuthToken();
    return { user, revision };
  }
}
