// The snapshot image of the v3 auth state (plain JSON: keys base64) and its validation on
// the way back in. Tokens are not part of it (v3-tokens.ts). An image that does not parse
// is a hard error: carrying on with a guessed auth state could open the key space.
import { V3_ROOT_ROLE, V3_ROOT_USER, isPermType, isRecord, type V3PermissionWire } from "./v3-model.ts";
import { compareGoStrings } from "./v2-permissions.ts";

export interface V3UserImage {
  name: string;
  passwordHash: string | null;
  noPassword: boolean;
  roles: string[];
}

export interface V3RoleImage {
  name: string;
  keyPermissions: V3PermissionWire[];
}

/** Users and roles sorted by name (Go order), so equal states give equal images. */
export interface V3AuthImage {
  version: 1;
  enabled: boolean;
  authRevision: number;
  users: V3UserImage[];
  roles: V3RoleImage[];
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function bad(what: string): never {
  throw new Error(`Cannot recover v3 auth state: ${what}`);
}

function stringList(v: unknown, what: string): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) bad(`${what} is not a list of strings`);
  return [...(v as string[])];
}

function user(v: unknown): V3UserImage {
  if (!isRecord(v) || typeof v["name"] !== "string" || typeof v["noPassword"] !== "boolean") bad("a user entry is malformed");
  const name = v["name"];
  const hash = v["passwordHash"];
  if (hash !== null && typeof hash !== "string") bad(`user ${name} has a malformed password hash`);
  if (hash === null && !v["noPassword"]) bad(`user ${name} has no password hash`);
  const roles = stringList(v["roles"], `user ${name} roles`);
  for (let i = 1; i < roles.length; i++) if (compareGoStrings(roles[i - 1]!, roles[i]!) >= 0) bad(`user ${name} roles are not a sorted set`);
  return { name, passwordHash: hash, noPassword: v["noPassword"], roles };
}

function permission(v: unknown, role: string): V3PermissionWire {
  if (!isRecord(v) || !isPermType(v["permType"])) bad(`a permission of role ${role} is malformed`);
  const key = v["key"];
  const rangeEnd = v["rangeEnd"];
  if (typeof key !== "string" || !BASE64.test(key) || typeof rangeEnd !== "string" || !BASE64.test(rangeEnd)) bad(`a permission of role ${role} has a malformed key`);
  return { permType: v["permType"], key, rangeEnd };
}

function role(v: unknown): V3RoleImage {
  if (!isRecord(v) || typeof v["name"] !== "string" || !Array.isArray(v["keyPermissions"])) bad("a role entry is malformed");
  const name = v["name"];
  return { name, keyPermissions: v["keyPermissions"].map((p) => permission(p, name)) };
}

function hasRootRole(u: V3UserImage): boolean {
  return u.roles.includes(V3_ROOT_ROLE);
}

/** Validates an image (as parsed from JSON) into a fresh copy. */
export function parseV3AuthImage(image: unknown): V3AuthImage {
  if (!isRecord(image)) bad("the image is not an object");
  if (image["version"] !== 1) bad(`unknown image version ${JSON.stringify(image["version"])}`);
  const enabled = image["enabled"];
  const rev = image["authRevision"];
  if (typeof enabled !== "boolean") bad("enabled is not a boolean");
  if (typeof rev !== "number" || !Number.isSafeInteger(rev) || rev < 1) bad("authRevision is not a positive integer");
  if (!Array.isArray(image["users"]) || !Array.isArray(image["roles"])) bad("users/roles are not lists");
  const users = image["users"].map(user);
  const roles = image["roles"].map(role);
  if (new Set(users.map((u) => u.name)).size !== users.length) bad("a user name appears twice");
  if (new Set(roles.map((r) => r.name)).size !== roles.length) bad("a role name appears twice");
  const root = users.find((u) => u.name === V3_ROOT_USER);
  if (enabled && (root === undefined || !hasRootRole(root))) bad("auth is enabled without a root user holding the root role");
  return { version: 1, enabled, authRevision: rev, users, roles };
}
