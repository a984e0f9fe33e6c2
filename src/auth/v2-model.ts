// The v2 access-control data model: users, roles, the changes the log carries, and the
// typed results of applying them. Shapes follow etcd 3.4's v2auth package, including the
// distinctions clients can see on the wire (a `null` list is not an empty list).

export const ROOT_ROLE = "root";
export const GUEST_ROLE = "guest";
export const ROOT_USER = "root";

/**
 * One role's key-space permissions (etcd's RWPermission). `null` and `[]` are different
 * states: etcd stores and returns them as given (`"read":null` vs `"read":[]`).
 */
export interface V2Permissions {
  read: string[] | null;
  write: string[] | null;
}

/** A stored user. `password` is the encoded KDF hash (password.ts), never the password. */
export interface V2UserRecord {
  user: string;
  password: string;
  roles: string[] | null;
}

/** A stored role. */
export interface V2RoleRecord {
  role: string;
  permissions: V2Permissions;
  /**
   * etcd stores a role's create body as given: a create body with an empty but present
   * `grant`/`revoke` keeps it (Go does not omit a non-nil pointer), and it is echoed on
   * every read until an update rewrites the role.
   */
  grant?: V2Permissions;
  revoke?: V2Permissions;
}

/** A user as a PUT answers it: no password, roles as names (`null` when never set). */
export interface V2UserOut {
  user: string;
  roles: string[] | null;
}

/**
 * A change to the auth state, as the log carries it. The HTTP edge picks the kind from
 * the request's shape alone (as etcd's handler branches); everything that depends on the
 * current state is decided by apply, so every member decides the same.
 * Passwords travel only as KDF hashes; `null` means "no password given".
 */
export type V2AuthOp =
  /** PUT with `roles` (and no grant/revoke): create only (etcd's CreateUser). */
  | { kind: "createUser"; user: string; passwordHash: string | null; roles: string[] }
  /** PUT without roles, grant or revoke: create, or update the password if the user exists. */
  | { kind: "createOrUpdateUser"; user: string; passwordHash: string | null; roles: string[] | null }
  /** PUT with grant and/or revoke. */
  | { kind: "updateUser"; user: string; passwordHash: string | null; grant: string[] | null; revoke: string[] | null }
  | { kind: "deleteUser"; user: string }
  | { kind: "createRole"; role: V2RoleRecord }
  | { kind: "updateRole"; role: string; grant: V2Permissions | null; revoke: V2Permissions | null }
  | { kind: "deleteRole"; role: string }
  | { kind: "enable" }
  | { kind: "disable" };

export const V2AuthStatus = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
} as const;

export type V2AuthStatusValue = (typeof V2AuthStatus)[keyof typeof V2AuthStatus];

/** An auth failure: the HTTP status and etcd's exact message (`{"message": ...}` on the wire). */
export class V2AuthError extends Error {
  override name = "V2AuthError";
  readonly status: V2AuthStatusValue;
  constructor(status: V2AuthStatusValue, message: string) {
    super(message);
    this.status = status;
  }
}

/** etcd's authErr: every store-level auth message starts with "auth: ". */
export function authError(status: V2AuthStatusValue, text: string): V2AuthError {
  return new V2AuthError(status, `auth: ${text}`);
}

export type V2AuthResult =
  | { ok: true; kind: "user"; user: V2UserOut; created: boolean }
  | { ok: true; kind: "role"; role: V2RoleRecord; created: boolean }
  | { ok: true; kind: "done" }
  | { ok: false; error: V2AuthError };

/**
 * What applying one op did. `consumedIndexes` is how many v2 store indexes the op uses:
 * etcd keeps auth data in its v2 store, so its auth writes move the index clients see.
 */
export interface V2AuthApplied {
  result: V2AuthResult;
  consumedIndexes: number;
}

/** Who a key request is evaluated for: the guest role, or an authenticated user. */
export type V2Principal = { kind: "guest" } | { kind: "user"; name: string };

export const ROOT_ROLE_RECORD: Readonly<V2RoleRecord> = Object.freeze({
  role: ROOT_ROLE,
  permissions: Object.freeze({ read: Object.freeze(["/*"]) as string[], write: Object.freeze(["/*"]) as string[] }),
});

/** The guest role etcd creates on the first enable: the whole key space, read and write. */
export function defaultGuestRole(): V2RoleRecord {
  return { role: GUEST_ROLE, permissions: { read: ["/*"], write: ["/*"] } };
}
