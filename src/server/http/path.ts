// Request-path handling as Go's net/http ServeMux does it: the decoded path is cleaned,
// and a request whose path is not clean is redirected (301) to the clean one without being
// executed. etcd inherits this, and v2 clients see it, so kvctl does the same.

/** Go's path.Clean for absolute paths ("" -> "/"). */
export function cleanPath(p: string): string {
  if (p === "") return "/";
  const parts = p.split("/");
  const out: string[] = [];
  for (const part of parts) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      out.pop();
      continue;
    }
    out.push(part);
  }
  return "/" + out.join("/");
}

/** ServeMux's cleanPath: path.Clean plus the trailing slash kept when there was one. */
export function muxCleanPath(p: string): string {
  if (p === "") return "/";
  // Fast path: most paths are already clean (no empty, "." or ".." segment).
  if (p[0] === "/" && !/\/\/|\/\.\.?(\/|$)/.test(p)) return p;
  const rooted = p[0] === "/" ? p : "/" + p;
  const np = cleanPath(rooted);
  if (rooted.length > 1 && rooted.endsWith("/") && np !== "/") return np + "/";
  return np;
}

/** Escapes a decoded path for a Location header as Go's url.URL.String() does (EscapedPath). */
export function escapePath(p: string): string {
  return encodeURI(p).replace(/[?#]/g, (c) => (c === "?" ? "%3F" : "%23"));
}

/**
 * The origin-form target of an absolute-form one (`GET http://host/v2/keys/a`), which Go's
 * server accepts as any other: routed by its path, its authority becoming the Host.
 */
export function originForm(target: string): { target: string; host: string } | undefined {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)([^#]*)/.exec(target);
  if (m === null) return undefined;
  const rest = m[2] ?? "";
  return { target: rest.startsWith("/") || rest === "" ? rest : "/" + rest, host: m[1] ?? "" };
}
