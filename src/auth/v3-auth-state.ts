// The replicated v3 access-control state (etcd 3.4's auth/store.go): users, roles with
// key-range permissions, the enabled flag and the auth revision. Every change is a log
// entry applied here, in log order, on every member.
//
// Invariants:
// - apply is deterministic: no clock, no randomness (hashes, token prefixes and the
//   authenticate time arrive in the entry; the log index is passed in). A failure throws a
//   V3Error and changes nothing.
// - authRevision starts at 1 (etcd commits revision 1 when it creates the store) and goes
//   up by one with every change that etcd commits: every successful user/role mutation and
//   auth disable. As in etcd 3.4, auth enable does not bump it, and neither do a grant of
//   a role the user already has, a no-op enable/disable, reads, or authenticate.
// - Stored records are replaced, never mutated, so getters can hand them out (read-only).
// - user.roles is a sorted set (Go order); role.keyPermissions is sorted by key (bytes),
//   equal keys in grant order, and holds at most one entry per (key, rangeEnd).
// - While enabled, user `root` exists and holds role `root` (enable requires it; deleting
//   the user, revoking its root role and deleting role `root` are refused while enabled).
// - The token table (this.tokens) is not replicated state: it is never in the image.
import { V3Errors } from "../api/v3-errors.ts";
import {
  V3_ROOT_ROLE,
  V3_ROOT_USER,
  authOldRevision,
  decodePermission,
  encodePermission,
  type V3AuthInfo,
  type V3AuthOp,
  type V3AuthOpKind,
  type V3AuthResult,
  type V3AuthResults,
  type V3Done,
  type V3Permission,
  type V3Role,
  type V3User,
} from "./v3-model.ts";
import { rangePermitted, unifyPermissions, type V3PermissionChecker, type V3UnifiedPermissions } from "./v3-permissions.ts";
import { formatSimpleToken, V3SimpleTokens } from "./v3-tokens.ts";
import { parseV3AuthImage, type V3AuthImage } from "./v3-image.ts";
import { compareGoStrings } from "./v2-permissions.ts";

/** What apply needs beyond the op: the entry's log index (authenticate names its token after it). */
export interface V3ApplyContext {
  index?: number;
}

export interface V3AuthStateOptions {
  /** Idle lifetime of simple tokens, default 5 minutes (etcd's --auth-token-ttl). */
  tokenTtlMs?: number;
}

const DONE: Readonly<V3Done> = Object.freeze({ kind: "done", changed: true });
const UNCHANGED: Readonly<V3Done> = Object.freeze({ kind: "done", changed: false });

function hasRootRole(u: V3User): boolean {
  return u.roles.includes(V3_ROOT_ROLE);
}

function copyPermission(p: V3Permission): V3Permission {
  return { permType: p.permType, key: Buffer.from(p.key), rangeEnd: Buffer.from(p.rangeEnd) };
}

/** Auth ops that need the root role while auth is enabled (etcd's needAdminPermission). */
const ADMIN_OPS: ReadonlySet<V3AuthOpKind> = new Set<V3AuthOpKind>([
  "authEnable", "authDisable", "userAdd", "userDelete", "userChangePassword", "userGrantRole", "userRevokeRole",
  "roleAdd", "roleGrantPermission", "roleRevokePermission", "roleDelete", "userList", "roleList",
]);

export class V3AuthState implements V3PermissionChecker {
  #users = new Map<string, V3User>();
  #roles = new Map<string, V3Role>();
  #enabled = false;
  #revision = 1;
  /** etcd's rangePermCache: unified permissions per user, dropped on every change. */
  #unified = new Map<string, V3UnifiedPermissions>();
  /** Simple tokens: local to this member, not replicated, not in the image. */
  readonly tokens: V3SimpleTokens;

  constructor(opts: V3AuthStateOptions = {}) {
    this.tokens = new V3SimpleTokens(opts.tokenTtlMs === undefined ? {} : { ttlMs: opts.tokenTtlMs });
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  get authRevision(): number {
    return this.#revision;
  }

  getUser(name: string): Readonly<V3User> | undefined {
    return this.#users.get(name);
  }

  getRole(name: string): Readonly<V3Role> | undefined {
    return this.#roles.get(name);
  }

  /** User names in Go's sort order (etcd lists its bucket in byte order). */
  userNames(): string[] {
    return [...this.#users.keys()].sort(compareGoStrings);
  }

  roleNames(): string[] {
    return [...this.#roles.keys()].sort(compareGoStrings);
  }

  /** etcd's HasRole: false for a user that does not exist. */
  hasRole(user: string, role: string): boolean {
    return this.#users.get(user)?.roles.includes(role) ?? false;
  }

  /** Does the user hold the root role (the right to manage auth)? */
  isAdmin(user: string): boolean {
    const u = this.#users.get(user);
    return u !== undefined && hasRootRole(u);
  }

  /**
   * The identity a token stands for (etcd's AuthInfoFromCtx for simple tokens): the user
   * and the current auth revision. Refreshes the token; throws invalidAuthToken (also while
   * auth is disabled: the table is empty then, as in etcd).
   */
  authInfoOf(token: string, now: number): V3AuthInfo {
    return { user: this.tokens.userOf(token, now), revision: this.#revision };
  }

  // ---- permission checks (etcd's isOpPermitted / IsAdminPermitted) -------------------

  isRangePermitted(info: V3AuthInfo | null, key: Buffer, rangeEnd: Buffer): void {
    this.#checkOp(info, key, rangeEnd, "read");
  }

  isPutPermitted(info: V3AuthInfo | null, key: Buffer): void {
    this.#checkOp(info, key, Buffer.alloc(0), "write");
  }

  isDeleteRangePermitted(info: V3AuthInfo | null, key: Buffer, rangeEnd: Buffer): void {
    this.#checkOp(info, key, rangeEnd, "write");
  }

  /** etcd's IsAdminPermitted: no token -> userEmpty, unknown user -> userNotFound, no root role -> permissionDenied. */
  isAdminPermitted(info: V3AuthInfo | null): void {
    if (!this.#enabled) return;
    if (info === null || info.user === "") throw V3Errors.userEmpty();
    const u = this.#users.get(info.user);
    if (u === undefined) throw V3Errors.userNotFound();
    if (!hasRootRole(u)) throw V3Errors.permissionDenied();
  }

  /**
   * May `info` run this auth op? (etcd's authApplierV3, at apply time, with the identity
   * the entry carries.) Admin ops need the root role; a user may get itself, and a role
   * it holds, without it. Authenticate needs nothing. Call before apply.
   */
  authorize(op: V3AuthOp, info: V3AuthInfo | null): void {
    if (ADMIN_OPS.has(op.kind)) return this.isAdminPermitted(info);
    const caller = info?.user ?? "";
    try {
      if (op.kind === "userGet" || op.kind === "roleGet") this.isAdminPermitted(info);
    } catch (err) {
      if (op.kind === "userGet" && op.name === caller) return;
      if (op.kind === "roleGet" && this.hasRole(caller, op.role)) return;
      throw err;
    }
  }

  #checkOp(info: V3AuthInfo | null, key: Buffer, rangeEnd: Buffer, kind: "read" | "write"): void {
    if (!this.#enabled) return;
    if (info === null || info.revision === 0) throw V3Errors.userEmpty();
    // The auth state changed after the request's token was looked up: its permissions
    // may have been revoked since, so the request is refused rather than judged late.
    if (info.revision < this.#revision) throw authOldRevision();
    const u = this.#users.get(info.user);
    if (u === undefined) throw V3Errors.permissionDenied();
    if (hasRootRole(u)) return;
    if (!rangePermitted(this.#unifiedOf(u)[kind], key, rangeEnd)) throw V3Errors.permissionDenied();
  }

  #unifiedOf(u: V3User): V3UnifiedPermissions {
    let p = this.#unified.get(u.name);
    if (p === undefined) {
      // A granted role that does not exist grants nothing (etcd skips it).
      p = unifyPermissions(u.roles.flatMap((r) => this.#roles.get(r)?.keyPermissions ?? []));
      this.#unified.set(u.name, p);
    }
    return p;
  }

  // ---- apply ---------------------------------------------------------------------------

  /** Applies one logged op; throws a V3Error (and changes nothing) when etcd would refuse it. */
  apply<K extends V3AuthOpKind>(op: Extract<V3AuthOp, { kind: K }>, ctx: V3ApplyContext = {}): V3AuthResults[K] {
    return this.#apply(op, ctx) as V3AuthResults[K];
  }

  #apply(op: V3AuthOp, ctx: V3ApplyContext): V3AuthResult {
    switch (op.kind) {
      case "authEnable":
        return this.#authEnable();
      case "authDisable":
        if (!this.#enabled) return UNCHANGED;
        this.#enabled = false;
        this.#bump();
        this.tokens.clear();
        return DONE;
      case "authenticate":
        return this.#authenticate(op, ctx);
      case "userAdd":
        if (op.name === "") throw V3Errors.userEmpty();
        if (this.#users.has(op.name)) throw V3Errors.userAlreadyExist();
        this.#users.set(op.name, { name: op.name, passwordHash: op.noPassword ? null : op.passwordHash, noPassword: op.noPassword, roles: [] });
        return this.#bump();
      case "userDelete":
        if (this.#enabled && op.name === V3_ROOT_USER) throw V3Errors.invalidAuthMgmt();
        if (!this.#users.delete(op.name)) throw V3Errors.userNotFound();
        this.tokens.invalidateUser(op.name);
        return this.#bump();
      case "userChangePassword": {
        const u = this.#user(op.name);
        // etcd keeps the user's options: a noPassword user gets a hash but still cannot log in.
        this.#users.set(op.name, { ...u, passwordHash: op.passwordHash });
        this.tokens.invalidateUser(op.name);
        return this.#bump();
      }
      case "userGrantRole": {
        const u = this.#user(op.user);
        // The root role needs no stored role: holding its name is what makes an admin.
        if (op.role !== V3_ROOT_ROLE && !this.#roles.has(op.role)) throw V3Errors.roleNotFound();
        if (u.roles.includes(op.role)) return UNCHANGED;
        this.#users.set(op.user, { ...u, roles: [...u.roles, op.role].sort(compareGoStrings) });
        return this.#bump();
      }
      case "userRevokeRole": {
        if (this.#enabled && op.name === V3_ROOT_USER && op.role === V3_ROOT_ROLE) throw V3Errors.invalidAuthMgmt();
        const u = this.#user(op.name);
        if (!u.roles.includes(op.role)) throw V3Errors.roleNotGranted();
        this.#users.set(op.name, { ...u, roles: u.roles.filter((r) => r !== op.role) });
        return this.#bump();
      }
      case "userGet":
        return { kind: "userGet", roles: [...this.#user(op.name).roles] };
      case "userList":
        return { kind: "userList", users: this.userNames() };
      case "roleAdd":
        if (op.name === "") throw V3Errors.roleEmpty();
        if (this.#roles.has(op.name)) throw V3Errors.roleAlreadyExist();
        this.#roles.set(op.name, { name: op.name, keyPermissions: [] });
        return this.#bump();
      case "roleDelete":
        return this.#roleDelete(op.role);
      case "roleGet":
        return { kind: "roleGet", perm: this.#role(op.role).keyPermissions.map(copyPermission) };
      case "roleList":
        return { kind: "roleList", roles: this.roleNames() };
      case "roleGrantPermission":
        return this.#roleGrantPermission(op.name, decodePermission(op.perm));
      case "roleRevokePermission": {
        const role = this.#role(op.role);
        const key = Buffer.from(op.key, "base64");
        const rangeEnd = Buffer.from(op.rangeEnd, "base64");
        const kept = role.keyPermissions.filter((p) => !p.key.equals(key) || !p.rangeEnd.equals(rangeEnd));
        if (kept.length === role.keyPermissions.length) throw V3Errors.permissionNotGranted();
        this.#roles.set(op.role, { name: op.role, keyPermissions: kept });
        return this.#bump();
      }
    }
  }

  #user(name: string): V3User {
    const u = this.#users.get(name);
    if (u === undefined) throw V3Errors.userNotFound();
    return u;
  }

  #role(name: string): V3Role {
    const r = this.#roles.get(name);
    if (r === undefined) throw V3Errors.roleNotFound();
    return r;
  }

  /** etcd's commitRevision (plus the refresh of its permission cache). */
  #bump(): V3Done {
    this.#revision++;
    this.#unified.clear();
    return DONE;
  }

  #authEnable(): V3Done {
    if (this.#enabled) return UNCHANGED; // etcd: "already enabled; ignored"
    const root = this.#users.get(V3_ROOT_USER);
    if (root === undefined) throw V3Errors.rootUserNotExist();
    if (!hasRootRole(root)) throw V3Errors.rootRoleNotExist();
    this.#enabled = true;
    // Disable emptied the table already; clearing again keeps the rule obvious: no token
    // survives from one enabled period into the next.
    this.tokens.clear();
    return DONE;
  }

  #authenticate(op: Extract<V3AuthOp, { kind: "authenticate" }>, ctx: V3ApplyContext): V3AuthResults["authenticate"] {
    if (ctx.index === undefined) throw new Error("Invariant violated: authenticate applied without its log index");
    if (!this.#enabled) throw V3Errors.authNotEnabled();
    const u = this.#users.get(op.name);
    if (u === undefined || u.noPassword) throw V3Errors.authFailed();
    // The password was checked against the state at checkedRevision. If anything changed
    // since (a password change, a delete and re-create…), no token is issued and the
    // proposer checks again — etcd's retry loop in EtcdServer.Authenticate, decided here so
    // every member agrees and no unusable token is registered.
    if (op.checkedRevision !== this.#revision) return { kind: "authenticateStale", authRevision: this.#revision };
    if (op.simpleTokenPrefix === "") return { kind: "authenticated", token: "" };
    const token = formatSimpleToken(op.simpleTokenPrefix, ctx.index);
    this.tokens.register(token, op.name, op.time);
    return { kind: "authenticated", token };
  }

  #roleDelete(name: string): V3Done {
    if (this.#enabled && name === V3_ROOT_ROLE) throw V3Errors.invalidAuthMgmt();
    if (!this.#roles.delete(name)) throw V3Errors.roleNotFound();
    // etcd also takes the role away from every user holding it.
    for (const u of this.#users.values()) {
      if (u.roles.includes(name)) this.#users.set(u.name, { ...u, roles: u.roles.filter((r) => r !== name) });
    }
    return this.#bump();
  }

  /**
   * etcd's RoleGrantPermission: granting an existing (key, rangeEnd) again only replaces its
   * type; a new one is inserted in key order. (etcd looks only at the first permission with
   * an equal key and can store a duplicate when two share a key; we look at all of them.)
   */
  #roleGrantPermission(name: string, perm: V3Permission): V3Done {
    const role = this.#role(name);
    const same = role.keyPermissions.findIndex((p) => p.key.equals(perm.key) && p.rangeEnd.equals(perm.rangeEnd));
    let perms: V3Permission[];
    if (same >= 0) {
      perms = role.keyPermissions.map((p, i) => (i === same ? { ...p, permType: perm.permType } : p));
    } else {
      // Array.prototype.sort is stable: equal keys stay in grant order on every member.
      perms = [...role.keyPermissions, perm].sort((a, b) => Buffer.compare(a.key, b.key));
    }
    this.#roles.set(name, { name, keyPermissions: perms });
    return this.#bump();
  }

  // ---- snapshots -----------------------------------------------------------------------

  /** The snapshot image: plain JSON, sorted, so equal states give equal images. No tokens. */
  toImage(): V3AuthImage {
    return {
      version: 1,
      enabled: this.#enabled,
      authRevision: this.#revision,
      users: this.userNames().map((n) => {
        const u = this.#users.get(n)!;
        return { name: u.name, passwordHash: u.passwordHash, noPassword: u.noPassword, roles: [...u.roles] };
      }),
      roles: this.roleNames().map((n) => {
        const r = this.#roles.get(n)!;
        return { name: r.name, keyPermissions: r.keyPermissions.map(encodePermission) };
      }),
    };
  }

  /** A state rebuilt from an image (with an empty token table); throws on an image that is not one. */
  static fromImage(image: unknown, opts: V3AuthStateOptions = {}): V3AuthState {
    const s = new V3AuthState(opts);
    s.recovery(image);
    return s;
  }

  /**
   * Replaces this state in place with an image (a follower catching up by snapshot). Tokens
   * survive only for users that still exist with the same password, and only while auth
   * stays enabled: anything else is what a delete, a password change or a disable would
   * have invalidated had the member applied the entries one by one.
   */
  recovery(image: unknown): void {
    const img = parseV3AuthImage(image);
    const before = this.#users;
    this.#users = new Map(img.users.map((u) => [u.name, { name: u.name, passwordHash: u.passwordHash, noPassword: u.noPassword, roles: [...u.roles] }]));
    this.#roles = new Map(img.roles.map((r) => [r.name, { name: r.name, keyPermissions: r.keyPermissions.map(decodePermission) }]));
    this.#enabled = img.enabled;
    this.#revision = img.authRevision;
    this.#unified.clear();
    if (!img.enabled) this.tokens.clear();
    else this.tokens.retainUsers((name) => before.get(name)?.passwordHash === this.#users.get(name)?.passwordHash && this.#users.has(name));
  }
}
