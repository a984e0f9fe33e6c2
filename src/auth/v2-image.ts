// The snapshot image of the v2 auth state, and its validation on the way back in. A
// snapshot that does not parse is a hard error: carrying on with a guessed auth state
// could open the key space to everyone.
import type { V2Permissions, V2RoleRecord, V2UserRecord } from "./v2-model.ts";

export interface V2AuthImage {
  version: 1;
  enabled: boolean;
  /** etcd's auth directories exist in the store (the first auth write spent their indexes). */
  initialized: boolean;
  users: V2UserRecord[];
  roles: V2RoleRecord[];
}

function bad(what: string): never {
  throw new Error(`Cannot recover auth state: ${what}`);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function stringList(v: unknown, what: string): string[] | null {
  if (v === null) return null;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) bad(`${what} is not a list of strings`);
  return [...(v as string[])];
}

function permissions(v: unknown, what: string): V2Permissions {
  if (!isRecord(v)) bad(`${what} is not an object`);
  return { read: stringList(v["read"], `${what}.read`), write: stringList(v["write"], `${what}.write`) };
}

function user(v: unknown): V2UserRecord {
  if (!isRecord(v) || typeof v["user"] !== "string" || typeof v["password"] !== "string") bad("a user entry is malformed");
  return { user: v["user"], password: v["password"], roles: stringList(v["roles"], `user ${v["user"]} roles`) };
}

function role(v: unknown): V2RoleRecord {
  if (!isRecord(v) || typeof v["role"] !== "string") bad("a role entry is malformed");
  const name = v["role"];
  if (name === "root") bad("the root role is built in and cannot be stored");
  const out: V2RoleRecord = { role: name, permissions: permissions(v["permissions"], `role ${name} permissions`) };
  if (v["grant"] !== undefined) out.grant = permissions(v["grant"], `role ${name} grant`);
  if (v["revoke"] !== undefined) out.revoke = permissions(v["revoke"], `role ${name} revoke`);
  return out;
}

/** Validates an image (as parsed from JSON) into a fresh copy. */
export function parseAuthImage(image: unknown): V2AuthImage {
  if (!isRecord(image)) bad("the image is not an object");
  if (image["version"] !== 1) bad(`unknown image version ${JSON.stringify(image["version"])}`);
  if (typeof image["enabled"] !== "boolean" || typeof image["initialized"] !== "boolean") bad("enabled/initialized are not booleans");
  if (!Array.isArray(image["users"]) || !Array.isArray(image["roles"])) bad("users/roles are not lists");
  const users = image["users"].map(user);
  const roles = image["roles"].map(role);
  if (new Set(users.map((u) => u.user)).size !== users.length) bad("a user name appears twice");
  if (new Set(roles.map((r) => r.role)).size !== roles.length) bad("a role name appears twice");
  if (image["enabled"] && !users.some((u) => u.user === "root")) bad("auth is enabled without a root user");
  return { version: 1, enabled: image["enabled"], initialized: image["initialized"], users, roles };
}
