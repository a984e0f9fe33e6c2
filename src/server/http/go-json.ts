// JSON syntax errors worded as Go's encoding/json words them. etcd answers a malformed body
// on /v2/members (and other JSON endpoints) with the decoder's error text, and clients show
// it to people; a JSON.parse message would read differently. The checker follows Go's
// byte-level scanner, so the first offending byte and the wording match.

function quoteChar(c: number): string {
  if (c === 0x27) return "'\\''";
  if (c === 0x22) return "'\"'";
  const named: Record<number, string> = { 7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v", 0x5c: "\\\\" };
  const n = named[c];
  if (n !== undefined) return `'${n}'`;
  if (c < 0x20 || c === 0x7f) return `'\\x${c.toString(16).padStart(2, "0")}'`;
  if (c >= 0x80 && c < 0xa0) return `'\\u00${c.toString(16).padStart(2, "0")}'`;
  if (c === 0xad) return "'\\u00ad'";
  return `'${String.fromCharCode(c)}'`;
}

class GoSyntaxError extends Error {}

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/** Returns Go's error text for invalid JSON, or undefined when `buf` is valid JSON. */
export function goJsonSyntaxError(buf: Uint8Array): string | undefined {
  let i = 0;
  const eof = (): never => {
    throw new GoSyntaxError("unexpected end of JSON input");
  };
  const bad = (c: number, context: string): never => {
    throw new GoSyntaxError(`invalid character ${quoteChar(c)} ${context}`);
  };
  const skip = (): void => {
    while (i < buf.length && isSpace(buf[i]!)) i++;
  };
  const peek = (): number => (i < buf.length ? buf[i]! : eof());

  const literal = (word: string): void => {
    for (let k = 1; k < word.length; k++) {
      i++;
      const c = peek();
      if (c !== word.charCodeAt(k)) bad(c, `in literal ${word} (expecting '${word[k]}')`);
    }
    i++;
  };

  const string = (): void => {
    i++; // opening quote
    for (;;) {
      const c = peek();
      if (c === 0x22) {
        i++;
        return;
      }
      if (c === 0x5c) {
        i++;
        const e = peek();
        if (e === 0x75) {
          for (let k = 0; k < 4; k++) {
            i++;
            const h = peek();
            if (!isHex(h)) bad(h, "in \\u hexadecimal character escape");
          }
        } else if (!"bfnrt\\/\"".includes(String.fromCharCode(e))) {
          bad(e, "in string escape code");
        }
        i++;
        continue;
      }
      if (c < 0x20) bad(c, "in string literal");
      i++;
    }
  };

  const number = (): void => {
    if (peek() === 0x2d) {
      i++;
      const c = peek();
      if (!isDigit(c)) bad(c, "in numeric literal");
    }
    if (peek() === 0x30) i++;
    else while (i < buf.length && isDigit(buf[i]!)) i++;
    if (i < buf.length && buf[i] === 0x2e) {
      i++;
      const c = peek();
      if (!isDigit(c)) bad(c, "after decimal point in numeric literal");
      while (i < buf.length && isDigit(buf[i]!)) i++;
    }
    if (i < buf.length && (buf[i] === 0x65 || buf[i] === 0x45)) {
      i++;
      let c = peek();
      if (c === 0x2b || c === 0x2d) {
        i++;
        c = peek();
      }
      if (!isDigit(c)) bad(c, "in exponent of numeric literal");
      while (i < buf.length && isDigit(buf[i]!)) i++;
    }
  };

  const value = (): void => {
    skip();
    const c = peek();
    if (c === 0x7b) return object();
    if (c === 0x5b) return array();
    if (c === 0x22) return string();
    if (c === 0x2d || isDigit(c)) return number();
    if (c === 0x74) return literal("true");
    if (c === 0x66) return literal("false");
    if (c === 0x6e) return literal("null");
    bad(c, "looking for beginning of value");
  };

  const object = (): void => {
    i++;
    skip();
    if (peek() === 0x7d) {
      i++;
      return;
    }
    for (;;) {
      skip();
      const k = peek();
      if (k !== 0x22) bad(k, "looking for beginning of object key string");
      string();
      skip();
      const colon = peek();
      if (colon !== 0x3a) bad(colon, "after object key");
      i++;
      value();
      skip();
      const after = peek();
      if (after === 0x2c) {
        i++;
        continue;
      }
      if (after === 0x7d) {
        i++;
        return;
      }
      bad(after, "after object key:value pair");
    }
  };

  const array = (): void => {
    i++;
    skip();
    if (peek() === 0x5d) {
      i++;
      return;
    }
    for (;;) {
      value();
      skip();
      const after = peek();
      if (after === 0x2c) {
        i++;
        continue;
      }
      if (after === 0x5d) {
        i++;
        return;
      }
      bad(after, "after array element");
    }
  };

  try {
    value();
    skip();
    if (i < buf.length) bad(buf[i]!, "after top-level value");
    return undefined;
  } catch (err) {
    if (err instanceof GoSyntaxError) return err.message;
    throw err;
  }
}

/** Go's name for a JSON value's kind in "cannot unmarshal X into ..." messages. */
export function goJsonKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "object") return "object";
  if (typeof v === "boolean") return "bool"; // encoding/json's UnmarshalTypeError names Go's kind
  return typeof v; // string, number
}
