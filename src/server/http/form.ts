// Go-compatible parsing of query strings and form bodies. etcd's answers depend on Go's
// net/url quirks (first value wins, ';' is an error, the exact escape error text), and
// clients rely on the error codes those quirks produce, so they are reproduced here.

/** Parsed parameters: every value of each key, in order (body values before query values). */
export type FormValues = Map<string, string[]>;

export interface ParseQueryResult {
  values: FormValues;
  /** Go's first error, e.g. `invalid URL escape "%zz"`; parsing continues past it as Go does. */
  error?: string;
}

function hexVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/**
 * Percent-decodes like Go's url.QueryUnescape (plus=true) or PathUnescape (plus=false).
 * Invalid UTF-8 becomes U+FFFD, as Go's JSON encoder renders it. Returns an error string
 * in Go's wording instead of throwing.
 */
export function unescape(s: string, plus: boolean): { value: string } | { error: string } {
  if (s.indexOf("%") < 0 && !(plus && s.indexOf("+") >= 0)) return { value: s };
  const bytes = Buffer.from(s, "utf8");
  const out = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (c === 0x25) {
      const h = i + 2 < bytes.length ? hexVal(bytes[i + 1]!) : -1;
      const l = i + 2 < bytes.length ? hexVal(bytes[i + 2]!) : -1;
      if (h < 0 || l < 0) {
        const bad = bytes.subarray(i, Math.min(i + 3, bytes.length)).toString("latin1");
        return { error: `invalid URL escape ${JSON.stringify(bad)}` };
      }
      out[n++] = (h << 4) | l;
      i += 2;
    } else if (c === 0x2b && plus) {
      out[n++] = 0x20;
    } else {
      out[n++] = c;
    }
  }
  return { value: out.toString("utf8", 0, n) };
}

/** Go's url.ParseQuery, appending into `into` (so body values can come first). */
export function parseQuery(raw: string, into: FormValues = new Map()): ParseQueryResult {
  let error: string | undefined;
  let rest = raw;
  while (rest !== "") {
    const amp = rest.indexOf("&");
    const pair = amp < 0 ? rest : rest.slice(0, amp);
    rest = amp < 0 ? "" : rest.slice(amp + 1);
    if (pair.indexOf(";") >= 0) {
      // Go 1.17's parseQuery: a semicolon's error replaces any earlier one (escapes only fill an empty slot).
      error = "invalid semicolon separator in query";
      continue;
    }
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const k = unescape(eq < 0 ? pair : pair.slice(0, eq), true);
    if ("error" in k) {
      error ??= k.error;
      continue;
    }
    const v = unescape(eq < 0 ? "" : pair.slice(eq + 1), true);
    if ("error" in v) {
      error ??= v.error;
      continue;
    }
    const list = into.get(k.value);
    if (list) list.push(v.value);
    else into.set(k.value, [v.value]);
  }
  return error === undefined ? { values: into } : { values: into, error };
}

/** Go's strconv.ParseBool. */
export function parseGoBool(s: string): boolean | undefined {
  switch (s) {
    case "1": case "t": case "T": case "TRUE": case "true": case "True":
      return true;
    case "0": case "f": case "F": case "FALSE": case "false": case "False":
      return false;
    default:
      return undefined;
  }
}

const UINT64_MAX = (1n << 64n) - 1n;

/**
 * Go's strconv.ParseUint(s, 10, 64): digits only, no sign, at most 2^64-1. Values above
 * 2^53 are clamped to MAX_SAFE_INTEGER: no index or TTL that large can ever match.
 */
export function parseGoUint64(s: string): number | undefined {
  if (s.length === 0 || !/^[0-9]+$/.test(s)) return undefined;
  if (s.length < 16) return Number(s);
  const big = BigInt(s);
  if (big > UINT64_MAX) return undefined;
  return big > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(big);
}

/** The first value of a key, or undefined when the key is absent (Go's Form[key][0]). */
export function first(form: FormValues, key: string): string | undefined {
  return form.get(key)?.[0];
}
