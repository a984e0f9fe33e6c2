// The v3 gateway's JSON reader: reads ONE value the way Go's json.Decoder does (etcd's
// grpc-gateway decodes request bodies with it), keeping what the protobuf JSON mapping needs
// and JSON.parse loses: the exact text of numbers ("1.0" and "1e3" are not int64 in Go,
// 99999999999999999999 overflows), the raw bytes of strings (an enum name is looked up
// without unescaping), and Go's map semantics for objects (the last duplicate key wins).
//
// Decoder semantics, not Unmarshal's: leading whitespace is skipped, whatever follows the
// first value is left for the next read (a unary request ignores it; a stream decodes it as
// the next message), a truncated value is "unexpected EOF", and an empty input is EOF.
// Syntax error texts are Go's (go-json.ts).
import { MESSAGE_TOO_LARGE } from "../../api/v3-errors.ts";
import { goJsonSyntaxError } from "./go-json.ts";

export type JsonNode =
  | { kind: "object"; fields: Map<string, JsonNode> }
  | { kind: "array"; items: JsonNode[] }
  /** `raw` is the bytes between the quotes, escapes not resolved (Go's jsonpb uses them for enum names). */
  | { kind: "string"; value: string; raw: Buffer }
  | { kind: "number"; text: string }
  | { kind: "bool"; value: boolean }
  | { kind: "null" };

/** Go's scanner refuses deeper nesting ("exceeded max depth"); it also bounds our recursion. */
export const MAX_JSON_DEPTH = 10000;

export type ReadResult =
  /** A complete value; `end` is the offset just after it. */
  | { ok: true; node: JsonNode; end: number }
  /** Only whitespace before the end of the input (Go's io.EOF). */
  | { ok: false; eof: true }
  /** The input ends inside a value: wait for more bytes, or report "unexpected EOF" at the end of the body. */
  | { ok: false; truncated: true }
  | { ok: false; error: string };

class Truncated extends Error {}
class Invalid extends Error {}
class DepthExceeded extends Error {}

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/**
 * Reads the first JSON value of `buf` from `start`. `final` says no more bytes will come:
 * a number that runs to the end of the input is then complete (Go's decoder needs a
 * delimiter or EOF to know that a number has ended).
 */
export function readJsonValue(buf: Buffer, start: number, final: boolean): ReadResult {
  let i = start;
  while (i < buf.length && isSpace(buf[i]!)) i++;
  if (i >= buf.length) return { ok: false, eof: true };
  const valueStart = i;

  const peek = (): number => {
    if (i >= buf.length) throw new Truncated();
    return buf[i]!;
  };
  const skip = (): void => {
    while (i < buf.length && isSpace(buf[i]!)) i++;
  };
  const expectLiteral = (word: string): void => {
    for (let k = 0; k < word.length; k++) {
      if (peek() !== word.charCodeAt(k)) throw new Invalid();
      i++;
    }
  };

  const isHex = (h: number): boolean => isDigit(h) || (h >= 0x61 && h <= 0x66) || (h >= 0x41 && h <= 0x46);
  const readString = (): { value: string; raw: Buffer } => {
    i++; // opening quote
    const from = i;
    let simple = true; // no escapes and ASCII only: latin1 decoding is exact and fast
    for (;;) {
      // Jump to the next quote natively; the bytes before it are checked one by one.
      const q = buf.indexOf(0x22, i);
      const stop = q < 0 ? buf.length : q;
      while (i < stop) {
        const c = buf[i]!;
        if (c === 0x5c) {
          simple = false;
          if (i + 1 >= buf.length) throw new Truncated();
          const e = buf[i + 1]!;
          if (e === 0x75) {
            for (let k = 2; k < 6; k++) {
              if (i + k >= buf.length) throw new Truncated();
              if (!isHex(buf[i + k]!)) throw new Invalid();
            }
            i += 6;
          } else if (e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74 || e === 0x5c || e === 0x2f || e === 0x22) {
            i += 2;
          } else {
            throw new Invalid();
          }
          continue;
        }
        if (c < 0x20) throw new Invalid();
        if (c >= 0x80) simple = false;
        i++;
      }
      if (q >= 0 && i === q) break;
      if (q < 0) throw new Truncated();
      // i > q: that quote was escaped; search on from here.
    }
    const raw = buf.subarray(from, i);
    i++; // closing quote
    if (simple) return { value: raw.toString("latin1"), raw };
    // Escapes or non-ASCII: JSON.parse resolves escapes; lone surrogates and invalid UTF-8
    // become U+FFFD when the string is turned into bytes, as Go does.
    return { value: JSON.parse(`"${raw.toString("utf8")}"`) as string, raw };
  };

  const readNumber = (): string => {
    const from = i;
    if (buf[i] === 0x2d) {
      i++;
      if (!isDigit(peek())) throw new Invalid();
    }
    if (peek() === 0x30) i++;
    else while (i < buf.length && isDigit(buf[i]!)) i++;
    if (i < buf.length && buf[i] === 0x2e) {
      i++;
      if (!isDigit(peek())) throw new Invalid();
      while (i < buf.length && isDigit(buf[i]!)) i++;
    }
    if (i < buf.length && (buf[i] === 0x65 || buf[i] === 0x45)) {
      i++;
      if (peek() === 0x2b || peek() === 0x2d) i++;
      if (!isDigit(peek())) throw new Invalid();
      while (i < buf.length && isDigit(buf[i]!)) i++;
    }
    return buf.toString("latin1", from, i);
  };

  const readKey = (): string => {
    skip();
    if (peek() !== 0x22) throw new Invalid();
    const key = readString().value;
    skip();
    if (peek() !== 0x3a) throw new Invalid();
    i++;
    return key;
  };

  // Iterative, with an explicit stack of open containers: deep nesting must end in Go's
  // "exceeded max depth", not in a JavaScript stack overflow.
  type Frame = { fields: Map<string, JsonNode>; key: string } | { items: JsonNode[] };
  const readValue = (): JsonNode => {
    const stack: Frame[] = [];
    for (;;) {
      skip();
      const c = peek();
      let value: JsonNode;
      if (c === 0x7b || c === 0x5b) {
        // Go counts the level as soon as it opens, before it knows whether it is empty.
        if (stack.length >= MAX_JSON_DEPTH) throw new DepthExceeded();
        i++;
        skip();
        if (c === 0x7b && peek() === 0x7d) {
          i++;
          value = { kind: "object", fields: new Map() };
        } else if (c === 0x5b && peek() === 0x5d) {
          i++;
          value = { kind: "array", items: [] };
        } else {
          stack.push(c === 0x7b ? { fields: new Map(), key: readKey() } : { items: [] });
          continue;
        }
      } else if (c === 0x22) {
        const str = readString();
        value = { kind: "string", value: str.value, raw: str.raw };
      } else if (c === 0x2d || isDigit(c)) {
        value = { kind: "number", text: readNumber() };
      } else if (c === 0x74) {
        expectLiteral("true");
        value = { kind: "bool", value: true };
      } else if (c === 0x66) {
        expectLiteral("false");
        value = { kind: "bool", value: false };
      } else if (c === 0x6e) {
        expectLiteral("null");
        value = { kind: "null" };
      } else {
        throw new Invalid();
      }
      // Attach the finished value to the open containers, closing those that end here.
      for (;;) {
        const top = stack[stack.length - 1];
        if (top === undefined) return value;
        if ("fields" in top) top.fields.set(top.key, value); // Go's map: the last duplicate wins
        else top.items.push(value);
        skip();
        const after = peek();
        i++;
        if (after === 0x2c) {
          if ("fields" in top) top.key = readKey();
          break;
        }
        if ("fields" in top ? after !== 0x7d : after !== 0x5d) throw new Invalid();
        stack.pop();
        value = "fields" in top ? { kind: "object", fields: top.fields } : { kind: "array", items: top.items };
      }
    }
  };

  try {
    const node = readValue();
    // A top-level number is complete only once a delimiter or the end of the input follows.
    if (node.kind === "number" && i >= buf.length && !final) return { ok: false, truncated: true };
    return { ok: true, node, end: i };
  } catch (err) {
    if (err instanceof Truncated) return { ok: false, truncated: true };
    if (err instanceof DepthExceeded) return { ok: false, error: "exceeded max depth" };
    if (err instanceof Invalid) return { ok: false, error: syntaxMessage(buf, valueStart) };
    throw err;
  }
}

/** Go's wording for the first syntax error of the value starting at `from`. */
function syntaxMessage(buf: Buffer, from: number): string {
  const msg = goJsonSyntaxError(buf.subarray(from));
  // Both scanners stop at the same first bad byte; the fallback only guards a disagreement.
  return msg !== undefined && !msg.endsWith("after top-level value") ? msg : "invalid character in JSON input";
}

/**
 * Reads the single value of a unary request body as grpc-gateway does: an empty body is an
 * empty message (`undefined`), bytes after the first value are ignored.
 * Returns the Go error text on failure.
 */
export function readRequestBody(buf: Buffer): { node: JsonNode | undefined } | { error: string } {
  const r = readJsonValue(buf, 0, true);
  if (r.ok) return { node: r.node };
  if ("eof" in r) return { node: undefined };
  if ("truncated" in r) return { error: "unexpected EOF" };
  return { error: r.error };
}

/**
 * Splits a request stream into messages as they arrive (grpc-gateway decodes the body of a
 * bidirectional stream one value after another). Bytes are buffered until a whole value is
 * there; `limit` bounds the bytes of one pending value.
 */
export class JsonMessageReader {
  #buf: Buffer = Buffer.alloc(0);
  #pos = 0;
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /**
   * Adds bytes and returns every complete value now available, then an error text if the
   * stream is broken (nothing after a broken value is ever read).
   */
  push(chunk: Buffer): { nodes: JsonNode[]; error?: string } {
    this.#buf = this.#pos >= this.#buf.length ? chunk : Buffer.concat([this.#buf.subarray(this.#pos), chunk]);
    this.#pos = 0;
    return this.#drain(false);
  }

  /** The body ended: returns the values left, then "unexpected EOF" if one is cut short. */
  end(): { nodes: JsonNode[]; error?: string } {
    return this.#drain(true);
  }

  #drain(final: boolean): { nodes: JsonNode[]; error?: string } {
    const nodes: JsonNode[] = [];
    for (;;) {
      const r = readJsonValue(this.#buf, this.#pos, final);
      if (r.ok) {
        nodes.push(r.node);
        this.#pos = r.end;
        continue;
      }
      if ("eof" in r) {
        this.#buf = Buffer.alloc(0);
        this.#pos = 0;
        return { nodes };
      }
      if ("truncated" in r) {
        if (final) return { nodes, error: "unexpected EOF" };
        if (this.#buf.length - this.#pos > this.#limit) return { nodes, error: MESSAGE_TOO_LARGE };
        return { nodes };
      }
      return { nodes, error: r.error };
    }
  }
}
