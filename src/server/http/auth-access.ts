// Who is calling, and may they do this? HTTP Basic credentials on /v2/keys, /v2/auth and
// member writes, decided as etcd's v2http does (client_auth.go):
// - auth disabled: nothing is checked, credentials are not even parsed;
// - no `Authorization` header (or an empty one): the guest role decides;
// - any other header must be valid Basic credentials of an existing user with the right
//   password, otherwise 401 even where guest would have been allowed;
// - a denied key request is a v2 error 110 (401, index 0); a denied admin request is
//   `{"message":"Insufficient credentials"}` (401).
// - with --client-cert-auth and no `Authorization` header, the caller is the
//   user named by a Common Name of the verified client certificate chain (leaf first);
//   a key request whose certificate names no user is the guest, an admin request is 401.
//   Only here, for v2: the v3 gateway never takes a user from a certificate (spec 5.1).
// Password checks go through the host's PasswordVerifier: the KDF runs once per distinct
// credential (the whole Authorization value), later requests cost one SHA-256 and a map lookup.
import type { IncomingMessage } from "node:http";
import type { PeerCertificate, TLSSocket } from "node:tls";
import { V2Error, V2ErrorCode } from "../../api/v2-errors.ts";
import type { PasswordVerifier, V2AuthState, V2Principal } from "../../auth/index.ts";
import { unescape } from "./form.ts";
import { HttpMessageError } from "./respond.ts";

/** What the access decisions use of the member (the server satisfies it as it is). */
export interface AuthAccessHost {
  /**
   * The replicated v2 auth state, read afresh at each use: a snapshot install may replace
   * the object, so nothing here keeps it across an await.
   */
  readonly auth: V2AuthState;
  /** The credential cache (edge state, not replicated: one per process). */
  readonly passwordVerifier: PasswordVerifier;
  readonly config: { readonly clientTls: { readonly clientCertAuth: boolean } };
}

export type Credential = { kind: "none" } | { kind: "basic"; user: string; password: Buffer } | { kind: "malformed" };

const MALFORMED: Credential = { kind: "malformed" };
const NONE: Credential = { kind: "none" };
const fatalUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Go's base64.StdEncoding.DecodeString: padded, strict alphabet, CR/LF ignored. */
function decodeStdBase64(s: string): Buffer | undefined {
  const t = s.replace(/[\r\n]/g, "");
  if (t.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(t)) return undefined;
  return Buffer.from(t, "base64");
}

/** Go's Request.BasicAuth on the `Authorization` header (scheme case-insensitive). */
export function parseAuthorization(header: string | undefined): Credential {
  if (header === undefined || header === "") return NONE;
  if (header.length < 6 || header.slice(0, 6).toLowerCase() !== "basic ") return MALFORMED;
  const bytes = decodeStdBase64(header.slice(6));
  if (bytes === undefined) return MALFORMED;
  const colon = bytes.indexOf(0x3a);
  if (colon < 0) return MALFORMED;
  let user: string;
  try {
    // A name that is not UTF-8 can name no user (user names come from JSON and URLs).
    user = fatalUtf8.decode(bytes.subarray(0, colon));
  } catch {
    return MALFORMED;
  }
  return { kind: "basic", user, password: bytes.subarray(colon + 1) };
}

/** Who is calling; for a user, also the stored hash the password matched (a change revokes). */
export interface Identity {
  principal: V2Principal;
  hash: string | undefined;
}

const GUEST: Identity = Object.freeze({ principal: Object.freeze({ kind: "guest" as const }), hash: undefined });

/** From the credential cache only: the identity, or undefined when the token is not cached. */
function cachedIdentity(server: AuthAccessHost, auth: V2AuthState, header: string): Identity | undefined {
  const verifier = server.passwordVerifier;
  const user = verifier.cachedUser(verifier.tokenKey(header), (u) => auth.passwordHash(u));
  return user === undefined ? undefined : { principal: { kind: "user", name: user }, hash: auth.passwordHash(user) };
}

async function verifyCredentials(server: AuthAccessHost, header: string): Promise<Identity | undefined> {
  const cred = parseAuthorization(header);
  if (cred.kind !== "basic") return undefined;
  const verifier = server.passwordVerifier;
  const hash = server.auth.passwordHash(cred.user);
  const ok = await verifier.verify(verifier.tokenKey(header), cred.user, cred.password, hash);
  // The password may have changed while the KDF ran: only the current hash counts.
  if (!ok || server.auth.passwordHash(cred.user) !== hash) return undefined;
  return { principal: { kind: "user", name: cred.user }, hash };
}

/**
 * Authenticates a request (auth enabled): the guest, a verified user, or undefined (401).
 * Synchronous for the guest and for a credential already verified (the hot path); a
 * promise only when the password must go through the KDF.
 */
export function authenticate(server: AuthAccessHost, header: string | undefined): Identity | undefined | Promise<Identity | undefined> {
  if (header === undefined || header === "") return GUEST;
  return cachedIdentity(server, server.auth, header) ?? verifyCredentials(server, header);
}

/** etcd's condition for the certificate rule: client cert auth on and no (or an empty) header. */
function usesCertificate(server: AuthAccessHost, header: string | undefined): boolean {
  return (header === undefined || header === "") && server.config.clientTls.clientCertAuth;
}

/**
 * etcd's userFromClientCertificate: the first Common Name along the peer's verified chain,
 * leaf first, that names an existing user. The TLS layer has already refused any
 * connection whose chain did not verify, so every certificate here is trusted.
 */
export function certificateIdentity(req: IncomingMessage, auth: V2AuthState): Identity | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== "function") return undefined;
  const seen = new Set<PeerCertificate>();
  // A self-signed root is its own issuer: stop at the first certificate seen twice.
  for (let cert: PeerCertificate | undefined = socket.getPeerCertificate(true); cert !== undefined && cert.raw !== undefined && !seen.has(cert); cert = (cert as { issuerCertificate?: PeerCertificate }).issuerCertificate) {
    seen.add(cert);
    const cn: unknown = cert.subject?.CN;
    if (typeof cn === "string" && auth.getUser(cn) !== undefined) {
      return { principal: { kind: "user", name: cn }, hash: auth.passwordHash(cn) };
    }
  }
  return undefined;
}

/** Synchronous authentication from the credential cache only (a miss counts as a failure). */
function authenticateCached(server: AuthAccessHost, auth: V2AuthState, header: string | undefined): Identity | undefined {
  if (header === undefined || header === "") return GUEST;
  return cachedIdentity(server, auth, header);
}

/**
 * authorizeKeyRequest for the fast lane's plain reads (keys-fast-get.ts), without a
 * request object: true (allowed), false (refused: the lane answers deniedKeyAccess()),
 * a promise of either when a password must go through the KDF first, or undefined when
 * only the router can tell (client certificate authentication).
 */
export function keyReadAllowed(server: AuthAccessHost, header: string | undefined, key: string, recursive: boolean): boolean | undefined | Promise<boolean> {
  if (!server.auth.enabled) return true;
  if (usesCertificate(server, header)) return undefined;
  // Decided on the state after the (possibly slow) password check, as authorizeKeyRequest does.
  const decide = (id: Identity | undefined): boolean => id !== undefined && server.auth.canAccess(id.principal, key, { write: false, recursive });
  const id = authenticate(server, header);
  return id instanceof Promise ? id.then(decide) : decide(id);
}

/** Is this still the same caller: the guest, or a user that exists with the same password hash? */
function stillValid(auth: V2AuthState, id: Identity): boolean {
  return id.principal.kind === "guest" || auth.passwordHash(id.principal.name) === id.hash;
}

export function insufficientCredentials(): HttpMessageError {
  return new HttpMessageError(401, "Insufficient credentials");
}

/** etcd's hasRootAccess, for /v2/auth/users* and /v2/auth/roles*: throws 401 unless root (or auth disabled). */
export async function requireRoot(req: IncomingMessage, server: AuthAccessHost): Promise<void> {
  if (!server.auth.enabled) return;
  const header = req.headers.authorization;
  const id = usesCertificate(server, header) ? certificateIdentity(req, server.auth) : await authenticate(server, header);
  if (id?.principal.kind !== "user" || !server.auth.isRoot(id.principal.name)) throw insufficientCredentials();
}

/**
 * etcd's hasWriteRootAccess (/v2/auth/enable, /v2/members): reads are free, writes need
 * root. Only the write methods those endpoints allow are guarded, so a method they refuse
 * still gets its 405 (etcd checks the method first).
 */
export async function requireRootForWrite(req: IncomingMessage, server: AuthAccessHost): Promise<void> {
  if (req.method !== "POST" && req.method !== "PUT" && req.method !== "DELETE") return;
  await requireRoot(req, server);
}

/** What a key request was allowed; watches ask again when they deliver. */
export interface KeyAccess {
  /**
   * Synchronous re-check against the current auth state (for watch delivery): false when
   * the caller has lost the access since (permission or role revoked, user deleted,
   * password changed, auth enabled over an unauthorised watch).
   */
  stillAllowed(): boolean;
}

export function deniedKeyAccess(): V2Error {
  return new V2Error(V2ErrorCode.Unauthorized, "Insufficient credentials", 0);
}

/** The key etcd checks: the decoded request path after `/v2/keys`, so bare `/v2/keys` is "". */
function requestKey(req: IncomingMessage, key: string): string {
  if (key !== "/") return key;
  const url = req.url ?? "";
  const q = url.indexOf("?");
  const decoded = unescape(q < 0 ? url : url.slice(0, q), false);
  return "value" in decoded && decoded.value === "/v2/keys" ? "" : key;
}

/**
 * etcd's hasKeyPrefixAccess for a /v2/keys request, called after parameter validation and
 * before the store, the log or the watcher hub. Throws (or rejects with) V2Error 110 when
 * denied. Synchronous unless a password must be verified: the keys hot path stays cheap.
 * @param opts.key the decoded key path the keys handler uses
 * @param opts.recursive the request's `recursive` flag (recursive access needs a `*` pattern)
 */
export function authorizeKeyRequest(req: IncomingMessage, opts: { server: AuthAccessHost; key: string; recursive: boolean }): KeyAccess | Promise<KeyAccess> {
  const { server } = opts;
  const access = { write: req.method !== "GET" && req.method !== "HEAD", recursive: opts.recursive };
  const key = requestKey(req, opts.key);
  /** Set when auth was enabled at the start: the identity the request was allowed for. */
  let allowed: Identity | undefined;
  const result: KeyAccess = {
    stillAllowed(): boolean {
      const now = server.auth;
      if (!now.enabled) return true;
      // A watch that started while auth was disabled was never authenticated: do it now.
      const header = req.headers.authorization;
      const id = allowed ?? (usesCertificate(server, header) ? (certificateIdentity(req, now) ?? GUEST) : authenticateCached(server, now, header));
      return id !== undefined && stillValid(now, id) && now.canAccess(id.principal, key, access);
    },
  };
  if (!server.auth.enabled) return result;
  const decide = (id: Identity | undefined): KeyAccess => {
    // Decided on the state after the (possibly slow) password check, not the one before it.
    if (id === undefined || !server.auth.canAccess(id.principal, key, access)) throw deniedKeyAccess();
    allowed = id;
    return result;
  };
  const header = req.headers.authorization;
  const id = usesCertificate(server, header) ? (certificateIdentity(req, server.auth) ?? GUEST) : authenticate(server, header);
  return id instanceof Promise ? id.then(decide) : decide(id);
}
