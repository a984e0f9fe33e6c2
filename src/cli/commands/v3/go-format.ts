// The pieces of Go's fmt and encoding/json that etcdctl v3's printers show: %q quoting,
// json.Marshal strings, %016x lease IDs and the --hex `\x66\x6f\x6f` form. Pure.

/** Go's strconv.Quote of string(bytes) (fmt %q): invalid UTF-8 as \xNN. */
export function goQuote(bytes: Buffer): string {
  let out = '"';
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] ?? 0;
    const len = b < 0x80 ? 1 : b >= 0xf0 && b < 0xf8 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
    const chunk = len === 0 ? undefined : bytes.subarray(i, i + len);
    const text = chunk !== undefined && chunk.length === len ? strictUtf8(chunk) : undefined;
    if (text === undefined) {
      out += `\\x${b.toString(16).padStart(2, "0")}`;
      i++;
      continue;
    }
    out += quoteRune(text);
    i += len;
  }
  return `${out}"`;
}

function strictUtf8(chunk: Buffer): string | undefined {
  const s = chunk.toString("utf8");
  // A replacement character that was not encoded in the input means invalid UTF-8.
  if (s.includes("\ufffd") && !chunk.equals(Buffer.from("\ufffd", "utf8"))) return undefined;
  return [...s].length === 1 ? s : undefined;
}

const escapes: Readonly<Record<string, string>> = {
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
  '"': '\\"',
  "\\": "\\\\",
};

function quoteRune(ch: string): string {
  const e = escapes[ch];
  if (e !== undefined) return e;
  const cp = ch.codePointAt(0) ?? 0;
  if (cp === 0x20 || (cp > 0x20 && cp < 0x7f)) return ch;
  if (cp < 0x20 || cp === 0x7f) return `\\x${cp.toString(16).padStart(2, "0")}`;
  // unicode.IsPrint: letters, marks, numbers, punctuation, symbols (and ASCII space).
  if (/^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(ch)) return ch;
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, "0")}`;
  return `\\U${cp.toString(16).padStart(8, "0")}`;
}

/** Go's json.Marshal of a string: <, >, &, U+2028, U+2029 escaped too. */
export function goJsonString(s: string): string {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** fmt's %016x of an int64 lease ID given as decimal digits. */
export function leaseHex(id: bigint | string | number): string {
  const n = BigInt(id);
  return n < 0n ? `-${(-n).toString(16).padStart(15, "0")}` : n.toString(16).padStart(16, "0");
}

/** etcdctl's --hex form: every byte as \xNN. */
export function hexBytes(b: Buffer): string {
  let s = "";
  for (const byte of b) s += `\\x${byte.toString(16).padStart(2, "0")}`;
  return s;
}

/**
 * strconv.ParseInt(s, 16, 64) as a decimal string for the gateway, or the Go error text
 * (`strconv.ParseInt: parsing "zz": invalid syntax` / `value out of range`).
 */
export function parseHexInt64(s: string): { ok: true; value: string } | { ok: false; error: string } {
  const m = /^([+-]?)([0-9a-fA-F]+)$/.exec(s);
  if (m === null) return { ok: false, error: `strconv.ParseInt: parsing ${goQuote(Buffer.from(s))}: invalid syntax` };
  const n = BigInt(`0x${m[2] ?? "0"}`) * (m[1] === "-" ? -1n : 1n);
  if (n > 0x7fffffffffffffffn || n < -0x8000000000000000n) {
    return { ok: false, error: `strconv.ParseInt: parsing ${goQuote(Buffer.from(s))}: value out of range` };
  }
  return { ok: true, value: n.toString() };
}

/** strconv.ParseInt(s, 10, 64) for arguments (TTL, revision), with Go's error text. */
export function parseDecInt64(s: string): { ok: true; value: number } | { ok: false; error: string } {
  const m = /^[+-]?[0-9]+$/.exec(s);
  if (m === null) return { ok: false, error: `strconv.ParseInt: parsing ${goQuote(Buffer.from(s))}: invalid syntax` };
  const n = BigInt(s);
  if (n > 0x7fffffffffffffffn || n < -0x8000000000000000n) {
    return { ok: false, error: `strconv.ParseInt: parsing ${goQuote(Buffer.from(s))}: value out of range` };
  }
  return { ok: true, value: Number(n) };
}

/** strconv.ParseUint(s, 16, 64) as a decimal string (member IDs), or the Go error text. */
export function parseHexUint64(s: string): { ok: true; value: string } | { ok: false; error: string } {
  const q = goQuote(Buffer.from(s));
  if (!/^[0-9a-fA-F]+$/.test(s)) return { ok: false, error: `strconv.ParseUint: parsing ${q}: invalid syntax` };
  const n = BigInt(`0x${s}`);
  if (n > 0xffffffffffffffffn) return { ok: false, error: `strconv.ParseUint: parsing ${q}: value out of range` };
  return { ok: true, value: n.toString() };
}
