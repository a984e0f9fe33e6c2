// The replicated v2 access-control state: users, roles, and the enabled flag. Every change
// is a log entry applied here, in log order, on every member; apply is deterministic (no
// clock, no randomness: password hashes arrive already computed in the entry).
//
// Invariants:
// - Stored records are never mutated: an update replaces the record, so a record handed
//   out by a getter stays a consistent snapshot.
// - No stored role is named `root`: the root role is built in (ROOT_ROLE_RECORD).
// - While `enabled`, a user named `root` exists (enable requires it, delete refuses it).
// - `initialized` turns true once, with the first auth write that reaches etcd's store
//   (etcd then creates `/2`, `/2/users/`, `/2/roles/` and `/2/enabled`: four v2 indexes).
import {
  GUEST_ROLE,
  ROOT_ROLE,
  ROOT_ROLE_RECORD,
  ROOT_USER,
  V2AuthStatus,
  authError,
  defaultGuestRole,
  type V2AuthApplied,
  type V2AuthError,
  type V2AuthOp,
  type V2Permissions,
  type V2Principal,
  type V2RoleRecord,
  type V2UserRecord,
} from "./v2-model.ts";
import { compareGoStrings, grantPermissions, listsEqual, permissionsAllow, permissionsEqual, revokePermissions, sortedSet } from "./v2-permissions.ts";
import { parseAuthImage, type V2AuthImage } from "./v2-image.ts";

/** v2 indexes etcd spends creating its auth directories and `/2/enabled` on the first auth write. */
const INIT_INDEXES = 4;

function fail(error: V2AuthError, consumedIndexes = 0): V2AuthApplied {
  return { result: { ok: false, error }, consumedIndexes };
}

/** etcd's attachRootRole: the root user always holds the root role, stored or not. */
function withRootRole(u: V2UserRecord): V2UserRecord {
  if (u.user !== ROOT_USER || (u.roles?.includes(ROOT_ROLE) ?? false)) return u;
  return { ...u, roles: [...(u.roles ?? []), ROOT_ROLE] };
}

export class V2AuthState {
  #users = new Map<string, V2UserRecord>();
  #roles = new Map<string, V2RoleRecord>();
  #enabled = false;
  #initialized = false;

  get enabled(): boolean {
    return this.#enabled;
  }

  /** A user as etcd reads it (root role attached to `root`), or undefined. */
  getUser(name: string): V2UserRecord | undefined {
    const u = this.#users.get(name);
    return u === undefined ? undefined : withRootRole(u);
  }

  /** A role, the built-in root role included, or undefined. */
  getRole(name: string): Readonly<V2RoleRecord> | undefined {
    return name === ROOT_ROLE ? ROOT_ROLE_RECORD : this.#roles.get(name);
  }

  /** User names in Go's sort order. */
  userNames(): string[] {
    return [...this.#users.keys()].sort(compareGoStrings);
  }

  /** Role names in Go's sort order, `root` included. */
  roleNames(): string[] {
    return [ROOT_ROLE, ...this.#roles.keys()].sort(compareGoStrings);
  }

  /**
   * The users GET /v2/auth/users lists: etcd reads them as the children of its v2 store's
   * /2/users directory, and a directory listing hides names that begin with `_` (the user
   * exists, GET /v2/auth/users/_u finds it).
   */
  listedUserNames(): string[] {
    return this.userNames().filter((n) => !n.startsWith("_"));
  }

  /** The roles GET /v2/auth/roles lists: hidden (`_…`) names left out, as listedUserNames. */
  listedRoleNames(): string[] {
    return this.roleNames().filter((n) => !n.startsWith("_"));
  }

  /** The stored password hash of a user (the credential to verify against). */
  passwordHash(name: string): string | undefined {
    return this.#users.get(name)?.password;
  }

  /** Does this user hold the root role (the only role allowed to manage auth and settings)? */
  isRoot(name: string): boolean {
    return this.getUser(name)?.roles?.includes(ROOT_ROLE) ?? false;
  }

  /**
   * etcd's hasKeyPrefixAccess, after authentication: may `principal` access `key`?
   * While auth is disabled everything is allowed. The guest role is matched without the
   * recursive rule (etcd's hasGuestAccess); a user's roles combine (any one suffices),
   * and a role name that does not exist grants nothing.
   */
  canAccess(principal: V2Principal, key: string, opts: { write: boolean; recursive: boolean }): boolean {
    if (!this.#enabled) return true;
    if (principal.kind === "guest") {
      const guest = this.#roles.get(GUEST_ROLE);
      return guest !== undefined && permissionsAllow(guest.permissions, key, { write: opts.write, recursive: false });
    }
    const user = this.getUser(principal.name);
    if (user === undefined) return false;
    for (const roleName of user.roles ?? []) {
      if (roleName === ROOT_ROLE) return true;
      const role = this.#roles.get(roleName);
      if (role !== undefined && permissionsAllow(role.permissions, key, opts)) return true;
    }
    return false;
  }

  canRead(principal: V2Principal, key: string, opts: { recursive: boolean }): boolean {
    return this.canAccess(principal, key, { write: false, recursive: opts.recursive });
  }

  canWrite(principal: V2Principal, key: string, opts: { recursive: boolean }): boolean {
    return this.canAccess(principal, key, { write: true, recursive: opts.recursive });
  }

  /** Applies one logged change. Failures are results: nothing changes, and only the indexes etcd would spend are spent. */
  apply(op: V2AuthOp): V2AuthApplied {
    switch (op.kind) {
      case "createUser":
        return this.#createUser(op.user, op.passwordHash, op.roles, false);
      case "createOrUpdateUser":
        if (this.#users.has(op.user)) return this.#updateUser(op.user, op.passwordHash, null, null);
        return this.#createUser(op.user, op.passwordHash, op.roles, true);
      case "updateUser":
        return this.#updateUser(op.user, op.passwordHash, op.grant, op.revoke);
      case "deleteUser":
        return this.#deleteUser(op.user);
      case "createRole":
        return this.#createRole(op.role);
      case "updateRole":
        return this.#updateRole(op.role, op.grant, op.revoke);
      case "deleteRole":
        return this.#deleteRole(op.role);
      case "enable":
        return this.#enable();
      case "disable":
        if (!this.#enabled) return fail(authError(V2AuthStatus.Conflict, "already disabled"));
        this.#enabled = false;
        return { result: { ok: true, kind: "done" }, consumedIndexes: 1 };
    }
  }

  /** etcd's ensureAuthDirectories: four indexes the first time any auth write reaches the store. */
  #ensureInitialized(): number {
    if (this.#initialized) return 0;
    this.#initialized = true;
    return INIT_INDEXES;
  }

  #createUser(name: string, passwordHash: string | null, roles: string[] | null, created: boolean): V2AuthApplied {
    if (passwordHash === null) return fail(authError(V2AuthStatus.BadRequest, `Cannot create user ${name} with an empty password`));
    const init = this.#ensureInitialized();
    if (this.#users.has(name)) return fail(authError(V2AuthStatus.Conflict, `User ${name} already exists.`), init);
    const record = withRootRole({ user: name, password: passwordHash, roles: roles === null ? null : [...roles] });
    this.#users.set(name, record);
    // A create with roles answers 200 in etcd (only the create-or-update path says 201).
    return { result: { ok: true, kind: "user", user: { user: name, roles: record.roles }, created }, consumedIndexes: init + 1 };
  }

  #updateUser(name: string, passwordHash: string | null, grant: string[] | null, revoke: string[] | null): V2AuthApplied {
    const old = this.getUser(name);
    if (old === undefined) return fail(authError(V2AuthStatus.NotFound, `User ${name} does not exist.`));
    const roles = new Set(old.roles ?? []);
    for (const g of grant ?? []) {
      if (roles.has(g)) return fail(authError(V2AuthStatus.Conflict, `Granting duplicate role ${g} for user ${name}`));
      roles.add(g);
    }
    for (const r of revoke ?? []) {
      if (!roles.has(r)) return fail(authError(V2AuthStatus.Conflict, `Revoking ungranted role ${r} for user ${name}`));
      roles.delete(r);
    }
    const next: V2UserRecord = { user: name, password: passwordHash ?? old.password, roles: sortedSet(roles) };
    // etcd compares with reflect.DeepEqual: a stored `null` role list differs from `[]`.
    if (next.password === old.password && listsEqual(next.roles, old.roles)) {
      return fail(authError(V2AuthStatus.BadRequest, "User not updated. Use grant/revoke/password to update the user."));
    }
    this.#users.set(name, next);
    return { result: { ok: true, kind: "user", user: { user: name, roles: next.roles }, created: false }, consumedIndexes: this.#ensureInitialized() + 1 };
  }

  #deleteUser(name: string): V2AuthApplied {
    if (this.#enabled && name === ROOT_USER) return fail(authError(V2AuthStatus.Forbidden, "Cannot delete root user while auth is enabled."));
    const init = this.#ensureInitialized();
    if (!this.#users.delete(name)) return fail(authError(V2AuthStatus.NotFound, `User ${name} does not exist`), init);
    return { result: { ok: true, kind: "done" }, consumedIndexes: init + 1 };
  }

  #createRole(role: V2RoleRecord): V2AuthApplied {
    if (role.role === ROOT_ROLE) return fail(rootRoleError());
    const init = this.#ensureInitialized();
    if (this.#roles.has(role.role)) return fail(authError(V2AuthStatus.Conflict, `Role ${role.role} already exists.`), init);
    const record = copyRole(role);
    this.#roles.set(role.role, record);
    return { result: { ok: true, kind: "role", role: record, created: true }, consumedIndexes: init + 1 };
  }

  #updateRole(name: string, grant: V2Permissions | null, revoke: V2Permissions | null): V2AuthApplied {
    if (name === ROOT_ROLE) return fail(rootRoleError());
    const old = this.#roles.get(name);
    if (old === undefined) return fail(authError(V2AuthStatus.NotFound, `Role ${name} does not exist.`));
    const granted = grantPermissions(old.permissions, grant);
    if (!("read" in granted)) return fail(granted);
    const next: V2RoleRecord = { role: name, permissions: revokePermissions(granted, revoke) };
    // DeepEqual on etcd's Role: a stored create-time grant/revoke makes the old role differ.
    if (permissionsEqual(next.permissions, old.permissions) && old.grant === undefined && old.revoke === undefined) {
      return fail(authError(V2AuthStatus.BadRequest, "Role not updated. Use grant/revoke to update the role."));
    }
    this.#roles.set(name, next);
    return { result: { ok: true, kind: "role", role: next, created: false }, consumedIndexes: this.#ensureInitialized() + 1 };
  }

  #deleteRole(name: string): V2AuthApplied {
    if (name === ROOT_ROLE) return fail(rootRoleError());
    const init = this.#ensureInitialized();
    if (!this.#roles.delete(name)) return fail(authError(V2AuthStatus.NotFound, `Role ${name} doesn't exist.`), init);
    return { result: { ok: true, kind: "done" }, consumedIndexes: init + 1 };
  }

  #enable(): V2AuthApplied {
    if (this.#enabled) return fail(authError(V2AuthStatus.Conflict, "already enabled"));
    // etcd answers 409 here, not the spec's 400.
    if (!this.#users.has(ROOT_USER)) return fail(authError(V2AuthStatus.Conflict, "No root user available, please create one"));
    let consumed = this.#ensureInitialized();
    if (!this.#roles.has(GUEST_ROLE)) {
      this.#roles.set(GUEST_ROLE, defaultGuestRole());
      consumed += 1;
    }
    this.#enabled = true;
    return { result: { ok: true, kind: "done" }, consumedIndexes: consumed + 1 };
  }

  /** The snapshot image: plain JSON, sorted so equal states give equal images. */
  save(): V2AuthImage {
    return {
      version: 1,
      enabled: this.#enabled,
      initialized: this.#initialized,
      users: this.userNames().map((n) => this.#users.get(n)!),
      roles: [...this.#roles.keys()].sort(compareGoStrings).map((n) => this.#roles.get(n)!),
    };
  }

  /** A state rebuilt from a snapshot image; throws on an image that is not one. */
  static recover(image: unknown): V2AuthState {
    const s = new V2AuthState();
    s.recovery(image);
    return s;
  }

  /** Replaces this state in place with a snapshot image (references to this object stay valid). */
  recovery(image: unknown): void {
    const img = parseAuthImage(image);
    this.#users = new Map(img.users.map((u) => [u.user, u]));
    this.#roles = new Map(img.roles.map((r) => [r.role, r]));
    this.#enabled = img.enabled;
    this.#initialized = img.initialized;
  }
}

function rootRoleError(): V2AuthError {
  return authError(V2AuthStatus.Forbidden, `Cannot modify role ${ROOT_ROLE}: is root role.`);
}

function copyPermissions(p: V2Permissions): V2Permissions {
  return { read: p.read === null ? null : [...p.read], write: p.write === null ? null : [...p.write] };
}

function copyRole(r: V2RoleRecord): V2RoleRecord {
  const out: V2RoleRecord = { role: r.role, permissions: copyPermissions(r.permissions) };
  if (r.grant !== undefined) out.grant = copyPermissions(r.grant);
  if (r.revoke !== undefined) out.revoke = copyPermissions(r.revoke);
  return out;
}
