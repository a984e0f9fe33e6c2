// clientv3's fail-fast check of member peer URLs (pkg/types.NewURLs), run before member
// add/update send anything: etcdctl's error texts come from here, not from the server.
// Pure. Go's url.Parse is followed as far as these URLs need: scheme, authority, path.

/** The first error types.NewURLs would give for these URLs, or undefined. */
export function peerUrlsError(urls: readonly string[]): string | undefined {
  if (urls.length === 0) return "no valid URLs given";
  for (const raw of urls) {
    const s = raw.trim();
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(s)?.[1]?.toLowerCase() ?? "";
    if (!["http", "https", "unix", "unixs"].includes(scheme)) return `URL scheme must be http, https, unix, or unixs: ${s}`;
    const rest = s.slice(scheme.length + 1);
    const authority = rest.startsWith("//") ? /^\/\/([^/?#]*)/.exec(rest)?.[1] ?? "" : "";
    const host = authority.slice(authority.lastIndexOf("@") + 1);
    if (!hasPort(host)) return `URL address does not have the form "host:port": ${s}`;
    const path = (rest.startsWith("//") ? rest.slice(2 + authority.length) : rest).replace(/[?#].*$/, "");
    if (path !== "") return `URL must not contain a path: ${s}`;
  }
  return undefined;
}

/** net.SplitHostPort succeeds: `host:port` or `[v6]:port`, one colon outside brackets. */
function hasPort(host: string): boolean {
  if (host.startsWith("[")) return /^\[[^\]]*\]:[^:]*$/.test(host);
  return (host.match(/:/g) ?? []).length === 1;
}
