// The v3 access-control data model (etcd 3.4's authpb and the Auth* requests of
// etcdserverpb): users, roles with key-range permissions, the changes the log carries, and
// the typed results of applying them. Field names of the ops mirror etcd's request messages
// (`userGrantRole` has `user`, `userRevokeRole` has `name`, as in etcd), so the gateway maps
// one to the other field by field.
//
// Ops are plain JSON: keys travel base64-encoded, passwords only as KDF hashes (password.ts).
import { GrpcCode, V3Error, V3Errors } from "../api/v3-errors.ts";

export const V3_ROOT_USER = "root";
export const V3_ROOT_ROLE = "root";

/** authpb.Permission.Type (the numbers are the protobuf enum's). */
export const V3PermType = { READ: 0, WRITE: 1, READWRITE: 2 } as const;
/**
 * A permission's type as a role keeps it: any int32, as etcd stores a Permission whose
 * type it does not know and lists it in RoleGet. Only the three known types grant anything
 * (v3-permissions.ts); another number grants nothing.
 */
export type V3PermTypeValue = number;

/**
 * One key-range permission. `rangeEnd` follows etcd's range rules: empty = the single key
 * `key`; `\0` = every key >= `key`; otherwise the half-open interval [key, rangeEnd).
 */
export interface V3Permission {
  permType: V3PermTypeValue;
  key: Buffer;
  rangeEnd: Buffer;
}

/** A permission as an op carries it: keys base64-encoded. */
export interface V3PermissionWire {
  permType: V3PermTypeValue;
  key: string;
  rangeEnd: string;
}

/**
 * A stored user. `passwordHash` is null only for a user created with `noPassword` (etcd's
 * UserAddOptions.NoPassword); a later password change stores a hash but, as in etcd, keeps
 * the option, so such a user still cannot authenticate. `roles` is sorted in Go's order.
 */
export interface V3User {
  name: string;
  passwordHash: string | null;
  noPassword: boolean;
  roles: string[];
}

/** A stored role. `keyPermissions` is sorted by key (bytes); equal keys keep grant order. */
export interface V3Role {
  name: string;
  keyPermissions: V3Permission[];
}

/**
 * Who a request runs as, as the proposer captured it from its token (etcd's AuthInfo):
 * the user name and the auth revision current when the token was looked up. `null` means
 * the request carried no token.
 */
export interface V3AuthInfo {
  user: string;
  revision: number;
}

/**
 * A change (or a linearizable read) of the v3 auth state, as the log carries it. Reads go
 * through the log like etcd's (UserGet, RoleList … are raft requests there too).
 */
export type V3AuthOp =
  | { kind: "authEnable" }
  | { kind: "authDisable" }
  /**
   * Registers a token for a user whose password the proposer has already checked (the
   * password never enters the log). `simpleTokenPrefix` is the random part chosen by the
   * proposer, `time` its clock (ms since the epoch: the token's TTL starts there on every
   * member), `checkedRevision` the auth revision the password was checked at.
   */
  /** An empty simpleTokenPrefix registers no simple token (JWT: the proposer signs one after the apply). */
  | { kind: "authenticate"; name: string; simpleTokenPrefix: string; time: number; checkedRevision: number }
  /** `passwordHash` is null exactly when `noPassword` is set. */
  | { kind: "userAdd"; name: string; passwordHash: string | null; noPassword: boolean }
  | { kind: "userDelete"; name: string }
  | { kind: "userChangePassword"; name: string; passwordHash: string }
  | { kind: "userGrantRole"; user: string; role: string }
  | { kind: "userRevokeRole"; name: string; role: string }
  | { kind: "userGet"; name: string }
  | { kind: "userList" }
  | { kind: "roleAdd"; name: string }
  | { kind: "roleDelete"; role: string }
  | { kind: "roleGet"; role: string }
  | { kind: "roleList" }
  | { kind: "roleGrantPermission"; name: string; perm: V3PermissionWire }
  | { kind: "roleRevokePermission"; role: string; key: string; rangeEnd: string };

export type V3AuthOpKind = V3AuthOp["kind"];

/** What applying each kind of op returns (a failure throws a V3Error instead). */
export interface V3AuthResults {
  authEnable: V3Done;
  authDisable: V3Done;
  /** `token` is "" when the op had no simple token prefix. */
  authenticate: { kind: "authenticated"; token: string } | { kind: "authenticateStale"; authRevision: number };
  userAdd: V3Done;
  userDelete: V3Done;
  userChangePassword: V3Done;
  userGrantRole: V3Done;
  userRevokeRole: V3Done;
  userGet: { kind: "userGet"; roles: string[] };
  userList: { kind: "userList"; users: string[] };
  roleAdd: V3Done;
  roleDelete: V3Done;
  roleGet: { kind: "roleGet"; perm: V3Permission[] };
  roleList: { kind: "roleList"; roles: string[] };
  roleGrantPermission: V3Done;
  roleRevokePermission: V3Done;
}

/** A mutation's result: `changed` is false when etcd accepts it without a change (no revision bump). */
export interface V3Done {
  kind: "done";
  changed: boolean;
}

export type V3AuthResult = V3AuthResults[V3AuthOpKind];

/** rpctypes.ErrGRPCAuthOldRevision: the auth state changed after the request's token was looked up. */
export const authOldRevision = V3Errors.authOldRevision;

/**
 * auth.ErrNoPasswordUser: etcd has no gRPC mapping for it, so it reaches the client as
 * code Unknown (HTTP 500) with the auth package's own message.
 */
export function noPasswordUser(): V3Error {
  return new V3Error(GrpcCode.Unknown, "auth: authentication failed, password was given for no password user");
}

export function encodePermission(p: V3Permission): V3PermissionWire {
  return { permType: p.permType, key: p.key.toString("base64"), rangeEnd: p.rangeEnd.toString("base64") };
}

export function decodePermission(p: V3PermissionWire): V3Permission {
  return { permType: p.permType, key: Buffer.from(p.key, "base64"), rangeEnd: Buffer.from(p.rangeEnd, "base64") };
}

// ---- validation of ops read back from the log --------------------------------------

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function bad(what: string): never {
  throw new Error(`Cannot parse v3 auth op: ${what}`);
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(o: Record<string, unknown>, field: string): string {
  const v = o[field];
  if (typeof v !== "string") bad(`${field} is not a string`);
  return v;
}

function b64(o: Record<string, unknown>, field: string): string {
  const v = str(o, field);
  if (!BASE64.test(v)) bad(`${field} is not base64`);
  return v;
}

function int(o: Record<string, unknown>, field: string): number {
  const v = o[field];
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) bad(`${field} is not a non-negative integer`);
  return v;
}

/** A protobuf enum number (int32): the known types and the ones etcd keeps without granting. */
export function isPermType(v: unknown): v is V3PermTypeValue {
  return typeof v === "number" && Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff;
}

/**
 * Validates an op decoded from a log entry into a fresh copy. A malformed entry is a hard
 * error: every member would read the same bytes, and guessing could open the key space.
 */
export function parseV3AuthOp(v: unknown): V3AuthOp {
  if (!isRecord(v)) bad("not an object");
  const kind = v["kind"];
  switch (kind) {
    case "authEnable":
    case "authDisable":
    case "userList":
    case "roleList":
      return { kind };
    case "authenticate": {
      // A "." in the prefix would make `<prefix>.<index>` unreadable as a simple token.
      // Empty: the proposer issues a JWT itself, so no member registers a simple token.
      const simpleTokenPrefix = str(v, "simpleTokenPrefix");
      if (!/^[A-Za-z0-9]{0,64}$/.test(simpleTokenPrefix)) bad("simpleTokenPrefix is not 0 to 64 letters or digits");
      return { kind, name: str(v, "name"), simpleTokenPrefix, time: int(v, "time"), checkedRevision: int(v, "checkedRevision") };
    }
    case "userAdd": {
      const noPassword = v["noPassword"];
      if (typeof noPassword !== "boolean") bad("noPassword is not a boolean");
      const passwordHash = v["passwordHash"] === null ? null : str(v, "passwordHash");
      if ((passwordHash === null) !== noPassword) bad("passwordHash must be null exactly when noPassword is set");
      return { kind, name: str(v, "name"), passwordHash, noPassword };
    }
    case "userDelete":
    case "userGet":
      return { kind, name: str(v, "name") };
    case "userChangePassword":
      return { kind, name: str(v, "name"), passwordHash: str(v, "passwordHash") };
    case "userGrantRole":
      return { kind, user: str(v, "user"), role: str(v, "role") };
    case "userRevokeRole":
      return { kind, name: str(v, "name"), role: str(v, "role") };
    case "roleAdd":
      return { kind, name: str(v, "name") };
    case "roleDelete":
    case "roleGet":
      return { kind, role: str(v, "role") };
    case "roleGrantPermission": {
      const perm = v["perm"];
      if (!isRecord(perm) || !isPermType(perm["permType"])) bad("perm is malformed");
      return { kind, name: str(v, "name"), perm: { permType: perm["permType"], key: b64(perm, "key"), rangeEnd: b64(perm, "rangeEnd") } };
    }
    case "roleRevokePermission":
      return { kind, role: str(v, "role"), key: b64(v, "key"), rangeEnd: b64(v, "rangeEnd") };
    default:
      return bad(`unknown kind ${JSON.stringify(kind)}`);
  }
}
