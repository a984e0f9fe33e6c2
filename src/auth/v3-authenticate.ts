// The edge half of v3 authentication (etcd's EtcdServer.Authenticate and
// authStore.CheckPassword): check the password against the local state, then propose an
// `authenticate` op carrying a fresh random token prefix — never the password. Applying the
// op registers `<prefix>.<index>` on every member (v3-auth-state.ts). If the state moved
// between the check and the apply, apply answers `authenticateStale` and the edge checks
// again, as etcd's loop does.
//
// Impure on purpose, and only here: random token prefixes and the KDF (node:crypto, bcrypt.ts).
import { randomInt } from "node:crypto";
import { V3Errors } from "../api/v3-errors.ts";
import { BCRYPT_DECOY_HASH } from "./bcrypt.ts";
import { PasswordVerifier, verifyPassword } from "./password.ts";
import { noPasswordUser, type V3AuthOp } from "./v3-model.ts";
import { SIMPLE_TOKEN_LETTERS, SIMPLE_TOKEN_PREFIX_LENGTH } from "./v3-tokens.ts";
import type { V3AuthState } from "./v3-auth-state.ts";

/** etcd's genTokenPrefix: 16 letters drawn uniformly with a cryptographic generator. */
export function newSimpleTokenPrefix(): string {
  let out = "";
  for (let i = 0; i < SIMPLE_TOKEN_PREFIX_LENGTH; i++) out += SIMPLE_TOKEN_LETTERS[randomInt(SIMPLE_TOKEN_LETTERS.length)];
  return out;
}

/** v3 hashes are bcrypt (password.ts hashV3Password): an unknown user costs as much as a wrong password. */
const DECOY_HASH = BCRYPT_DECOY_HASH;

/**
 * Logins this process verified (password.ts's PasswordVerifier, keyed by name and password):
 * the same credentials against the same stored hash cost one SHA-256, and concurrent ones
 * share one bcrypt run. etcd 3.4 runs bcrypt for every Authenticate, in parallel goroutines;
 * here bcrypt runs on one worker thread per core behind a bounded queue (bcrypt.ts), so
 * clients that each log in at once with one user (etcdctl does on every command) would
 * otherwise queue for seconds.
 * A password change or a re-created user changes the stored hash, which voids the entry.
 */
const verifiedLogins = new PasswordVerifier({ capacity: 1024 });

export interface V3PasswordCheckOptions {
  /** The slow comparison (default verifyPassword from password.ts: bcrypt, or scrypt for older hashes; constant time). */
  verify?: (password: string | Uint8Array, encoded: string, opts?: { signal?: AbortSignal | undefined }) => Promise<boolean>;
  /** The credential cache for the default comparison (default: this process's). */
  verifier?: PasswordVerifier;
  /** The caller gave up (its deadline passed): a comparison still queued is dropped, rejecting with the signal's reason. */
  signal?: AbortSignal | undefined;
}

function checkCached(verifier: PasswordVerifier, name: string, password: string | Uint8Array, encoded: string, signal: AbortSignal | undefined): Promise<boolean> {
  const bytes = typeof password === "string" ? Buffer.from(password, "utf8") : password;
  // base64 has no NUL, so the key's parts cannot run into each other.
  const key = verifier.tokenKey(`v3\u0000${name}\u0000${Buffer.from(bytes).toString("base64")}`);
  return verifier.verify(key, name, bytes, encoded, signal);
}

/**
 * etcd's CheckPassword, in its order: auth not enabled -> authNotEnabled (412); unknown
 * user -> authFailed (400, after decoy work); a noPassword user -> etcd's unmapped
 * ErrNoPasswordUser (code Unknown, 500); wrong password -> authFailed. Returns the auth
 * revision the check was made at: the `checkedRevision` of the authenticate op.
 */
export async function checkV3Password(state: V3AuthState, credentials: { name: string; password: string | Uint8Array }, opts: V3PasswordCheckOptions = {}): Promise<number> {
  const verify = opts.verify ?? verifyPassword;
  const verifier = opts.verify === undefined ? (opts.verifier ?? verifiedLogins) : undefined;
  if (!state.enabled) throw V3Errors.authNotEnabled();
  const user = state.getUser(credentials.name);
  if (user === undefined) {
    await verify(credentials.password, DECOY_HASH, { signal: opts.signal });
    throw V3Errors.authFailed();
  }
  if (user.noPassword || user.passwordHash === null) throw noPasswordUser();
  // Read before the (asynchronous) comparison: the revision the hash belongs to.
  const revision = state.authRevision;
  const ok = verifier === undefined ? await verify(credentials.password, user.passwordHash, { signal: opts.signal }) : await checkCached(verifier, credentials.name, credentials.password, user.passwordHash, opts.signal);
  if (!ok) throw V3Errors.authFailed();
  return revision;
}

/**
 * The op to propose once the password checked out: a fresh prefix (none for a JWT, which
 * the proposer signs once the op is applied), the proposer's clock.
 */
export function authenticateOp(opts: { name: string; checkedRevision: number; time: number; jwt?: boolean }): Extract<V3AuthOp, { kind: "authenticate" }> {
  return { kind: "authenticate", name: opts.name, simpleTokenPrefix: opts.jwt === true ? "" : newSimpleTokenPrefix(), time: opts.time, checkedRevision: opts.checkedRevision };
}
