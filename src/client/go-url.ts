// URL building exactly as etcd's Go client does it (net/url + pkg/pathutil), so the
// requests kvctl sends, and the curl lines --debug prints, match etcdctl's byte for byte.

import { posix } from "node:path";

const unreserved = /[A-Za-z0-9\-_.~]/;
// url.PathEscape keeps these in a path (Go's shouldEscape with encodePath).
const pathSafe = /[A-Za-z0-9\-_.~$&+,/:;=@]/;

function escapeWith(s: string, keep: RegExp, spaceAsPlus: boolean): string {
  let out = "";
  for (const ch of s) {
    if (keep.test(ch)) out += ch;
    else if (ch === " " && spaceAsPlus) out += "+";
    else for (const b of Buffer.from(ch, "utf8")) out += `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Go's url.QueryEscape: space becomes `+`, everything but [A-Za-z0-9-_.~] is %XX. */
export function goQueryEscape(s: string): string {
  return escapeWith(s, unreserved, true);
}

/** The escaping Go's url.URL.String() applies to a path. */
export function goPathEscape(s: string): string {
  return escapeWith(s, pathSafe, false);
}

/** Go's url.Values.Encode(): keys sorted, `k=v` joined with `&`. */
export function goEncodeQuery(params: Readonly<Record<string, string>>): string {
  return Object.keys(params)
    .sort()
    .map((k) => `${goQueryEscape(k)}=${goQueryEscape(params[k] ?? "")}`)
    .join("&");
}

/**
 * pathutil.CanonicalURLPath: path.Clean (collapse `//`, resolve `.` and `..`) but keep a
 * trailing slash, and always start with `/`.
 */
export function canonicalUrlPath(p: string): string {
  if (p === "") return "/";
  const rooted = p.startsWith("/") ? p : `/${p}`;
  let np = posix.normalize(rooted);
  // posix.normalize keeps a leading "//"; Go's path.Clean does not.
  np = np.replace(/^\/+/, "/");
  if (p.endsWith("/") && np !== "/" && !np.endsWith("/")) np += "/";
  return np;
}

/** The escaped path of a v2 key: etcd client's v2KeysURL. */
export function v2KeysPath(basePath: string, prefix: string, key: string): string {
  const pre = prefix !== "" && !prefix.startsWith("/") ? `/${prefix}` : prefix;
  const k = key !== "" && !key.startsWith("/") ? `/${key}` : key;
  return goPathEscape(canonicalUrlPath(basePath + pre + k));
}

/** Go's path.Join for a base path and fixed segments (members, stats URLs). */
export function joinPath(basePath: string, ...parts: string[]): string {
  return goPathEscape(posix.join("/", basePath, ...parts));
}
