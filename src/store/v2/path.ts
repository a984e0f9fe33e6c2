// Key-path helpers shared by the tree, the watcher hub and the event history.
// Every path the store keeps is "clean": it starts with "/", has no empty, "." or ".."
// segment and no trailing slash (except the root "/" itself), exactly like Go's
// path.Clean("/" + p), which etcd applies to every key.

/** Go's path.Clean applied to "/" + p: the one canonical form of a key. */
export function cleanPath(p: string): string {
  if (isClean(p)) return p;
  const out: string[] = [];
  for (const seg of p.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      out.pop(); // ".." at the root stays at the root, as in Go
      continue;
    }
    out.push(seg);
  }
  return "/" + out.join("/");
}

/** Fast check so the common case (already clean) allocates nothing. */
function isClean(p: string): boolean {
  if (p.length === 0 || p.charCodeAt(0) !== 0x2f) return false;
  if (p === "/") return true;
  if (p.charCodeAt(p.length - 1) === 0x2f) return false;
  // A dot segment is "/." or "/.." followed by "/" or the end; "//" is an empty segment.
  if (p.includes("//")) return false;
  let i = p.indexOf("/.");
  while (i !== -1) {
    const next = p.charCodeAt(i + 2);
    if (Number.isNaN(next) || next === 0x2f) return false;
    if (next === 0x2e) {
      const after = p.charCodeAt(i + 3);
      if (Number.isNaN(after) || after === 0x2f) return false;
    }
    i = p.indexOf("/.", i + 2);
  }
  return true;
}

/** True when the last segment of a clean path starts with "_" (a hidden node). */
export function isHiddenPath(p: string): boolean {
  return p.charCodeAt(p.lastIndexOf("/") + 1) === 0x5f;
}

/**
 * True when `key` (a descendant of `watchPath`, or the same path) passes through a hidden
 * segment below `watchPath`: such events are not shown to recursive watchers of an
 * ancestor. Segments of `watchPath` itself do not count (watching "/_h" recursively
 * sees "/_h/x").
 */
export function isHiddenBelow(watchPath: string, key: string): boolean {
  if (watchPath.length >= key.length) return false;
  const rest = watchPath === "/" ? key : key.slice(watchPath.length);
  return rest.includes("/_");
}

/** True when clean path `key` is strictly below clean directory path `dir`. */
export function isStrictlyBelow(dir: string, key: string): boolean {
  if (dir === "/") return key.length > 1;
  return key.length > dir.length + 1 && key.startsWith(dir) && key.charCodeAt(dir.length) === 0x2f;
}

/**
 * Byte-order comparison of two strings as their UTF-8 encodings compare (Go's string
 * order, used by sorted listings). JS compares UTF-16 code units, which differs from
 * UTF-8 byte order only between a surrogate (an astral character) and a code unit in
 * U+E000..U+FFFF: code points order like UTF-8 bytes, so surrogates are moved above.
 */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca !== cb) {
      if (ca >= 0xd800 && cb >= 0xd800) return codePointRank(ca) - codePointRank(cb);
      return ca - cb;
    }
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800; // U+E000..U+FFFF sort below astral characters
  if (unit >= 0xd800) return unit + 0x2000; // surrogates (astral) sort above U+FFFF
  return unit;
}

/** The in-order key name of index i: 20 digits, zero padded (etcd's "%020s"). */
export function inOrderName(index: number): string {
  return String(index).padStart(20, "0");
}
