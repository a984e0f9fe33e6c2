// The v2 auth API (/v2/auth/enable, /users, /roles) as etcd's Go client calls it
// (go.etcd.io/etcd/client auth_user.go, auth_role.go): the same requests, byte for byte
// (Go's JSON field order, `null` for nil slices), the same accepted status codes, and the
// same errors, so etcdctl's output can be reproduced from what these functions return.
//
// Error rule (Go client): an unexpected status is answered with the server's
// `{"message": ...}` as an AuthApiError (message may be ""), except role list, which only
// says `unexpected status code N`. A body that is not JSON gives Go's json error text.

import type { ClusterClient, Action } from "./cluster.ts";
import { ClientError, invalidJsonMessage } from "./errors.ts";
import { joinPath } from "./go-url.ts";
import type { HttpResponse } from "./transport.ts";

const authPrefix = "/v2/auth";

export interface AuthCallOptions {
  signal?: AbortSignal;
}

/** The server refused an auth request: its `message` (etcd client's authError). */
export class AuthApiError extends ClientError {
  readonly status: number;

  constructor(status: number, message: string) {
    super("AUTH_ERROR", message);
    this.name = "AuthApiError";
    this.status = status;
  }
}

/** A user as etcd's Go client decodes GET /v2/auth/users/<name>. */
export interface V2User {
  user: string;
  /** Role names. */
  roles: string[];
  /**
   * True when the server sent role objects (etcd 3.4) rather than names. The Go client
   * then decodes twice and keeps one "" per role ahead of the names; etcdctl prints them
   * (`Roles:  root`), see `goUserRoles`.
   */
  roleObjects: boolean;
}

/** Permission lists; `null` is Go's nil slice (absent or null), kept apart from []. */
export interface V2KvPermissions {
  read: string[] | null;
  write: string[] | null;
}

export interface V2Role {
  role: string;
  permissions: { kv: V2KvPermissions };
  grant: { kv: V2KvPermissions } | null;
  revoke: { kv: V2KvPermissions } | null;
}

export const permissionTypes = ["read", "write", "readwrite"] as const;
export type PermissionType = (typeof permissionTypes)[number];

// ---- Go encoding/json, the parts these bodies need ----

/** A Go json.Marshal string: JSON with <, >, &, U+2028 and U+2029 escaped. */
export function goJsonString(s: string): string {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function goJsonStrings(list: readonly string[] | null): string {
  return list === null ? "null" : `[${list.map(goJsonString).join(",")}]`;
}

function goJsonPermissions(p: V2KvPermissions): string {
  return `{"kv":{"read":${goJsonStrings(p.read)},"write":${goJsonStrings(p.write)}}}`;
}

/** client.User marshalled: password, grant and revoke are omitempty; roles is not. */
export function userBody(u: { user: string; password?: string; grant?: readonly string[]; revoke?: readonly string[] }): string {
  let s = `{"user":${goJsonString(u.user)}`;
  if (u.password !== undefined && u.password !== "") s += `,"password":${goJsonString(u.password)}`;
  s += `,"roles":null`;
  if (u.grant !== undefined && u.grant.length > 0) s += `,"grant":${goJsonStrings(u.grant)}`;
  if (u.revoke !== undefined && u.revoke.length > 0) s += `,"revoke":${goJsonStrings(u.revoke)}`;
  return `${s}}`;
}

/** client.Role marshalled: permissions always (nil lists), grant/revoke only when set. */
export function roleBody(r: { role: string; grant?: V2KvPermissions; revoke?: V2KvPermissions }): string {
  let s = `{"role":${goJsonString(r.role)},"permissions":${goJsonPermissions({ read: null, write: null })}`;
  if (r.grant !== undefined) s += `,"grant":${goJsonPermissions(r.grant)}`;
  if (r.revoke !== undefined) s += `,"revoke":${goJsonPermissions(r.revoke)}`;
  return `${s}}`;
}

/** etcd client's buildRWPermission. */
export function rwPermission(prefixes: readonly string[], perm: PermissionType): V2KvPermissions {
  const list = [...prefixes];
  switch (perm) {
    case "read":
      return { read: list, write: null };
    case "write":
      return { read: null, write: list };
    case "readwrite":
      return { read: list, write: [...list] };
  }
}

/**
 * json.Unmarshal's syntax error text for the common cases (empty body, a body that is
 * not JSON at all); anything subtler gets the client's generic invalid-JSON message.
 */
export function goJsonErrorMessage(text: string): string {
  const t = text.replace(/^[ \t\r\n]+/, "");
  if (t === "") return "unexpected end of JSON input";
  const c = t[0] ?? "";
  if (!/[{["\-0-9tfn]/.test(c)) return `invalid character ${c === "'" ? "'\\''" : `'${c}'`} looking for beginning of value`;
  return invalidJsonMessage;
}

function parse(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw new ClientError("INVALID_JSON", goJsonErrorMessage(body));
  }
}

function record(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** A JSON string list as Go decodes it into []string: null/absent -> nil. */
function strings(v: unknown): string[] | null {
  return Array.isArray(v) ? v.map(str) : null;
}

function kvPermissions(v: unknown): V2KvPermissions {
  const kv = record(record(v)["kv"]);
  return { read: strings(kv["read"]), write: strings(kv["write"]) };
}

export function decodeRole(v: unknown): V2Role {
  const o = record(v);
  const opt = (x: unknown): { kv: V2KvPermissions } | null => (x === undefined || x === null ? null : { kv: kvPermissions(x) });
  return { role: str(o["role"]), permissions: { kv: kvPermissions(o["permissions"]) }, grant: opt(o["grant"]), revoke: opt(o["revoke"]) };
}

export function decodeUser(v: unknown): V2User {
  const o = record(v);
  const list = Array.isArray(o["roles"]) ? (o["roles"] as unknown[]) : [];
  const roleObjects = list.some((r) => typeof r === "object" && r !== null);
  return {
    user: str(o["user"]),
    roles: list.map((r) => (typeof r === "string" ? r : str(record(r)["role"]))),
    roleObjects,
  };
}

/** What etcd's Go client leaves in User.Roles (and etcdctl joins with " "). */
export function goUserRoles(u: V2User): string[] {
  return u.roleObjects ? [...u.roles.map(() => ""), ...u.roles] : u.roles;
}

/** Go's reflect.DeepEqual on two decoded roles (nil and empty lists differ). */
export function sameRole(a: V2Role, b: V2Role): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

// ---- requests ----

/**
 * Changes are one-shot (re-sent to another member only when surely never sent): a
 * repeated grant, role add or delete would turn a lost success into an error. etcd's Go
 * client retries them anyway; reads are retried on every member, as it does.
 */
function call(cluster: ClusterClient, action: Action, o: AuthCallOptions): Promise<HttpResponse> {
  return cluster.do(action, { oneShot: action.method !== "GET", ...(o.signal !== undefined ? { signal: o.signal } : {}) });
}

const get = (parts: string[], contentType?: string): Action => ({
  method: "GET",
  path: (base) => joinPath(base, authPrefix, ...parts),
  ...(contentType !== undefined ? { contentType } : {}),
});

const send = (method: "PUT" | "DELETE", parts: string[], body?: string): Action => ({
  method,
  path: (base) => joinPath(base, authPrefix, ...parts),
  ...(body !== undefined ? { body, contentType: "application/json" } : {}),
});

/** assertStatusCode, then the body's `message` as the error (Go: authError). */
function expect(res: HttpResponse, ...ok: number[]): void {
  if (ok.includes(res.status)) return;
  throw new AuthApiError(res.status, str(record(parse(res.body))["message"]));
}

/** PUT (enable) or DELETE (disable) /v2/auth/enable. */
export async function setAuthEnabled(cluster: ClusterClient, enabled: boolean, o: AuthCallOptions = {}): Promise<void> {
  expect(await call(cluster, send(enabled ? "PUT" : "DELETE", ["enable"]), o), 200, 201);
}

/** GET /v2/auth/enable: `{"enabled": bool}` (not in etcd's Go client; open to everyone). */
export async function getAuthEnabled(cluster: ClusterClient, o: AuthCallOptions = {}): Promise<boolean> {
  const res = await call(cluster, get(["enable"]), o);
  expect(res, 200);
  return record(parse(res.body))["enabled"] === true;
}

export async function listUsers(cluster: ClusterClient, o: AuthCallOptions = {}): Promise<string[]> {
  const res = await call(cluster, get(["users"], "application/json"), o);
  expect(res, 200);
  const users = record(parse(res.body))["users"];
  return Array.isArray(users) ? users.map((u) => str(record(u)["user"])) : [];
}

export async function addUser(cluster: ClusterClient, user: string, password: string, o: AuthCallOptions = {}): Promise<void> {
  expect(await call(cluster, send("PUT", ["users", user], userBody({ user, password })), o), 200, 201);
}

export async function removeUser(cluster: ClusterClient, user: string, o: AuthCallOptions = {}): Promise<void> {
  expect(await call(cluster, send("DELETE", ["users", user]), o), 200, 201);
}

async function modUser(cluster: ClusterClient, action: Action, o: AuthCallOptions): Promise<V2User> {
  const res = await call(cluster, action, o);
  expect(res, 200);
  return decodeUser(parse(res.body));
}

export function getUser(cluster: ClusterClient, user: string, o: AuthCallOptions = {}): Promise<V2User> {
  return modUser(cluster, get(["users", user]), o);
}

export function grantUser(cluster: ClusterClient, user: string, roles: readonly string[], o: AuthCallOptions = {}): Promise<V2User> {
  return modUser(cluster, send("PUT", ["users", user], userBody({ user, grant: roles })), o);
}

export function revokeUser(cluster: ClusterClient, user: string, roles: readonly string[], o: AuthCallOptions = {}): Promise<V2User> {
  return modUser(cluster, send("PUT", ["users", user], userBody({ user, revoke: roles })), o);
}

export function changePassword(cluster: ClusterClient, user: string, password: string, o: AuthCallOptions = {}): Promise<V2User> {
  return modUser(cluster, send("PUT", ["users", user], userBody({ user, password })), o);
}

/** GET /v2/auth/roles. The Go client reads no error body here: `unexpected status code N`. */
export async function listRoles(cluster: ClusterClient, o: AuthCallOptions = {}): Promise<string[]> {
  const res = await call(cluster, get(["roles"], "application/json"), o);
  if (res.status !== 200) throw new AuthApiError(res.status, `unexpected status code ${res.status}`);
  const roles = record(parse(res.body))["roles"];
  return Array.isArray(roles) ? roles.map((r) => str(record(r)["role"])) : [];
}

export async function addRole(cluster: ClusterClient, role: string, o: AuthCallOptions = {}): Promise<void> {
  expect(await call(cluster, send("PUT", ["roles", role], roleBody({ role })), o), 200, 201);
}

export async function removeRole(cluster: ClusterClient, role: string, o: AuthCallOptions = {}): Promise<void> {
  expect(await call(cluster, send("DELETE", ["roles", role]), o), 200, 201);
}

async function modRole(cluster: ClusterClient, action: Action, o: AuthCallOptions): Promise<V2Role> {
  const res = await call(cluster, action, o);
  expect(res, 200);
  return decodeRole(parse(res.body));
}

export function getRole(cluster: ClusterClient, role: string, o: AuthCallOptions = {}): Promise<V2Role> {
  return modRole(cluster, get(["roles", role]), o);
}

export interface RoleKvChange {
  prefixes: readonly string[];
  perm: PermissionType;
}

export function grantRoleKV(cluster: ClusterClient, role: string, change: RoleKvChange, o: AuthCallOptions = {}): Promise<V2Role> {
  const body = roleBody({ role, grant: rwPermission(change.prefixes, change.perm) });
  return modRole(cluster, send("PUT", ["roles", role], body), o);
}

export function revokeRoleKV(cluster: ClusterClient, role: string, change: RoleKvChange, o: AuthCallOptions = {}): Promise<V2Role> {
  const body = roleBody({ role, revoke: rwPermission(change.prefixes, change.perm) });
  return modRole(cluster, send("PUT", ["roles", role], body), o);
}
