// Request bodies of /v2/auth/users/<name> and /v2/auth/roles/<name>, decoded as etcd's
// json.NewDecoder(r.Body).Decode(&v) decodes them into its Go structs, because clients
// see the differences:
// - only the first JSON value is read: bytes after it are ignored (`{...}x`, `nullx`);
// - field names match case-insensitively (with Go's folding of `ſ`/`K`); unknown fields
//   are ignored;
// - `null` leaves a string or struct field unchanged and sets a list or pointer to nil,
//   and a `null` list element is the empty string;
// - any other type mismatch fails the whole decode (answered "Invalid JSON in request body.");
// - invalid UTF-8 and lone surrogates in strings become U+FFFD.
import type { V2Permissions } from "../../auth/index.ts";

export interface UserBody {
  user: string;
  password: string;
  roles: string[] | null;
  grant: string[] | null;
  revoke: string[] | null;
}

export interface RoleBody {
  role: string;
  permissions: V2Permissions;
  grant: V2Permissions | null;
  revoke: V2Permissions | null;
}

class TypeMismatch extends Error {}

const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });

const SCALAR = /^(?:null|true|false|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)/;

const isWs = (c: string | undefined): boolean => c === " " || c === "\t" || c === "\n" || c === "\r";

/** End (exclusive) of the object or array starting at `start`, or -1 when the input ends first. */
function compositeEnd(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
      if (i >= text.length) return -1;
    } else if (c === "{" || c === "[") {
      depth++;
    } else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** The first JSON value of a body as Go's json.Decoder reads it; undefined when it does not parse. */
export function firstJsonValue(body: Uint8Array): { value: unknown } | undefined {
  const text = utf8.decode(body);
  let i = 0;
  while (isWs(text[i])) i++;
  if (i >= text.length) return undefined;
  let end: number;
  if (text[i] === "{" || text[i] === "[") {
    end = compositeEnd(text, i);
    if (end < 0) return undefined;
  } else if (text[i] === '"') {
    for (end = i + 1; end < text.length && text[end] !== '"'; end++) if (text[end] === "\\") end++;
    end++;
  } else {
    // Go's scanner ends a literal or number at its last byte and Decode stops there: what
    // follows is never read ("nullx" decodes as null).
    const m = SCALAR.exec(text.slice(i, i + 400));
    if (!m) return undefined;
    end = i + m[0].length;
  }
  try {
    return { value: JSON.parse(text.slice(i, end)) as unknown };
  } catch {
    return undefined;
  }
}

/** Go's case-insensitive field match, folded to the lower-case field name. */
function fold(key: string): string {
  let out = "";
  for (const ch of key) {
    if (ch === "\u017f") out += "s";
    else if (ch === "\u212a") out += "k";
    else if (ch >= "A" && ch <= "Z") out += ch.toLowerCase();
    else out += ch;
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown, current: string): string {
  if (v === null) return current;
  if (typeof v !== "string") throw new TypeMismatch();
  return wellFormed(v);
}

/** Lone surrogates (from `\ud800` escapes) become U+FFFD, as Go decodes them. */
function wellFormed(s: string): string {
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}

function strList(v: unknown): string[] | null {
  if (v === null) return null;
  if (!Array.isArray(v)) throw new TypeMismatch();
  return v.map((e: unknown) => (e === null ? "" : str(e, "")));
}

/** Decodes into an existing Permissions value, as Go decodes into a struct in place. */
function permissions(v: unknown, current: V2Permissions): V2Permissions {
  if (v === null) return current;
  if (!isObject(v)) throw new TypeMismatch();
  let out = current;
  for (const [k, kv] of Object.entries(v)) {
    if (fold(k) !== "kv" || kv === null) continue;
    if (!isObject(kv)) throw new TypeMismatch();
    for (const [k2, list] of Object.entries(kv)) {
      const f = fold(k2);
      if (f === "read") out = { ...out, read: strList(list) };
      else if (f === "write") out = { ...out, write: strList(list) };
    }
  }
  return out;
}

function pointerToPermissions(v: unknown, current: V2Permissions | null): V2Permissions | null {
  if (v === null) return null;
  return permissions(v, current ?? { read: null, write: null });
}

/**
 * Go's json.Unmarshal of the body's first value into a struct: `null` leaves `into` as it
 * is, any other value that is not an object fails, keys select the fields as Go matches
 * them (fold), and a field's value of the wrong type fails. Undefined on a failure, which
 * etcd answers "Invalid JSON in request body.".
 */
function decodeStruct<T>(body: Uint8Array, into: T, fields: ReadonlyMap<string, (v: unknown, into: T) => void>): T | undefined {
  const first = firstJsonValue(body);
  if (first === undefined) return undefined;
  if (first.value === null) return into;
  if (!isObject(first.value)) return undefined;
  try {
    for (const [k, v] of Object.entries(first.value)) fields.get(fold(k))?.(v, into);
  } catch (err) {
    if (err instanceof TypeMismatch) return undefined;
    throw err;
  }
  return into;
}

const userFields = new Map<string, (v: unknown, u: UserBody) => void>([
  ["user", (v, u) => (u.user = str(v, u.user))],
  ["password", (v, u) => (u.password = str(v, u.password))],
  ["roles", (v, u) => (u.roles = strList(v))],
  ["grant", (v, u) => (u.grant = strList(v))],
  ["revoke", (v, u) => (u.revoke = strList(v))],
]);

/** Decodes a user body; undefined when etcd answers "Invalid JSON in request body.". */
export function decodeUserBody(body: Uint8Array): UserBody | undefined {
  return decodeStruct<UserBody>(body, { user: "", password: "", roles: null, grant: null, revoke: null }, userFields);
}

const roleFields = new Map<string, (v: unknown, r: RoleBody) => void>([
  ["role", (v, r) => (r.role = str(v, r.role))],
  ["permissions", (v, r) => (r.permissions = permissions(v, r.permissions))],
  ["grant", (v, r) => (r.grant = pointerToPermissions(v, r.grant))],
  ["revoke", (v, r) => (r.revoke = pointerToPermissions(v, r.revoke))],
]);

/** Decodes a role body; undefined when etcd answers "Invalid JSON in request body.". */
export function decodeRoleBody(body: Uint8Array): RoleBody | undefined {
  return decodeStruct<RoleBody>(body, { role: "", permissions: { read: null, write: null }, grant: null, revoke: null }, roleFields);
}
