// Permission patterns and the set arithmetic of grants and revokes, as etcd's v2auth does
// them. The five rules (spec 2.7) in etcd's terms:
//   - a pattern ending in `*` is a plain string prefix of the key: `/foo*` matches `/foo`,
//     `/foo/x` and `/foobar`; `/foo/*` matches `/foo/` and below but not `/foo`;
//     `*` matches every key, `/*` every key starting with `/`;
//   - any other pattern matches exactly that key (`/foo` is not `/foo/` nor `/foo/bar`);
//   - a recursive request needs a `*` pattern whose prefix the key starts with (an exact
//     pattern never grants recursive access, even on the same key);
//   - a list grants access when any of its patterns matches.
// Keys are the decoded request path after `/v2/keys`, untouched (a trailing slash counts).
import { V2AuthStatus, authError, type V2AuthError, type V2Permissions } from "./v2-model.ts";

/** etcd's simpleMatch. An empty pattern matches nothing (etcd would crash on it). */
export function patternMatches(pattern: string, key: string): boolean {
  if (pattern === "") return false;
  if (pattern.endsWith("*")) return key.startsWith(pattern.slice(0, -1));
  return key === pattern;
}

/** etcd's prefixMatch: only `*` patterns grant access to a whole subtree. */
export function patternMatchesRecursively(pattern: string, key: string): boolean {
  if (pattern === "" || !pattern.endsWith("*")) return false;
  return key.startsWith(pattern.slice(0, -1));
}

/** Does this permission list grant the access? */
export function permissionsAllow(p: V2Permissions, key: string, opts: { write: boolean; recursive: boolean }): boolean {
  const list = opts.write ? p.write : p.read;
  if (list === null) return false;
  const match = opts.recursive ? patternMatchesRecursively : patternMatches;
  for (const pattern of list) if (match(pattern, key)) return true;
  return false;
}

/** Go's sort.Strings order: by UTF-8 bytes, which is code point order (not UTF-16 units). */
export function compareGoStrings(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/** The distinct values, sorted as Go sorts them (etcd's set.Values() then sort.Strings). */
export function sortedSet(values: Iterable<string>): string[] {
  return [...new Set(values)].sort(compareGoStrings);
}

/** Go's reflect.DeepEqual on a []string: nil differs from empty, order matters. */
export function listsEqual(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function permissionsEqual(a: V2Permissions | undefined, b: V2Permissions | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return listsEqual(a.read, b.read) && listsEqual(a.write, b.write);
}

/** etcd's Permissions.IsEmpty: absent, or no pattern in either list. */
export function permissionsEmpty(p: V2Permissions | null | undefined): boolean {
  return p === null || p === undefined || ((p.read?.length ?? 0) === 0 && (p.write?.length ?? 0) === 0);
}

function grantList(current: string[] | null, add: string[] | null, what: "read" | "write"): string[] | V2AuthError {
  const set = new Set(current ?? []);
  for (const pattern of add ?? []) {
    if (set.has(pattern)) return authError(V2AuthStatus.Conflict, `Granting duplicate ${what} permission ${pattern}`);
    set.add(pattern);
  }
  return sortedSet(set);
}

/**
 * etcd's Permissions.Grant: a `null` grant changes nothing (lists keep their order and
 * nullness); otherwise both lists become sorted sets, and a pattern already present (or
 * repeated in the grant) is a 409.
 */
export function grantPermissions(p: V2Permissions, grant: V2Permissions | null): V2Permissions | V2AuthError {
  if (grant === null) return p;
  const read = grantList(p.read, grant.read, "read");
  if (!Array.isArray(read)) return read;
  const write = grantList(p.write, grant.write, "write");
  if (!Array.isArray(write)) return write;
  return { read, write };
}

/** etcd's Permissions.Revoke: revoking a pattern that is not granted is ignored. */
export function revokePermissions(p: V2Permissions, revoke: V2Permissions | null): V2Permissions {
  if (revoke === null) return p;
  const read = new Set(p.read ?? []);
  for (const pattern of revoke.read ?? []) read.delete(pattern);
  const write = new Set(p.write ?? []);
  for (const pattern of revoke.write ?? []) write.delete(pattern);
  return { read: sortedSet(read), write: sortedSet(write) };
}
