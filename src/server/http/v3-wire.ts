// The protobuf JSON mapping as etcd 3.4's gateway applies it to requests (golang/protobuf
// jsonpb with AllowUnknownFields, over Go's encoding/json): how one JSON value becomes one
// field of a message, with Go's error texts. The rules, each checked against etcd 3.4.23:
// - a field is found under its proto name or its lowerCamelCase JSON name; with both, the
//   camelCase one wins; unknown names are ignored; `null` is the same as absent;
// - int64/uint64 take a number or a quoted number (the quotes are stripped and the inside is
//   parsed as JSON again, hence "invalid character 'a' looking for beginning of value");
// - bytes are standard base64 with padding (Go's decoder: newlines skipped, trailing bits
//   not checked); an array of small numbers is also accepted, as Go decodes []byte;
// - enums take their name (exact bytes, escapes not resolved) or a number.
import { V3Error, GrpcCode } from "../../api/v3-errors.ts";
import { readJsonValue, type JsonNode } from "./v3-json.ts";
import { goJsonSyntaxError } from "./go-json.ts";

/**
 * An error the gateway makes itself, before or instead of a gRPC call: answered without the
 * gRPC trailer (etcd's gateway has no server metadata to forward then).
 */
export class GatewayError extends V3Error {
  override name = "GatewayError";
}

/**
 * A request body the gateway cannot decode: code 3 in a unary call. (In a stream the same
 * text comes back as code 2: grpc-gateway passes the decoder's error on unwrapped.)
 */
export class GatewayDecodeError extends GatewayError {
  override name = "GatewayDecodeError";
  constructor(message: string) {
    super(GrpcCode.InvalidArgument, message);
  }
}

export type Fields = Map<string, JsonNode>;

const kindName = (n: JsonNode): string => (n.kind === "bool" ? "bool" : n.kind);

function typeError(n: JsonNode, goType: string): GatewayDecodeError {
  return new GatewayDecodeError(`json: cannot unmarshal ${kindName(n)} into Go value of type ${goType}`);
}

/** A message's fields; `undefined` for null (an absent message). */
export function messageFields(n: JsonNode | undefined): Fields | undefined {
  if (n === undefined || n.kind === "null") return undefined;
  if (n.kind !== "object") throw typeError(n, "map[string]json.RawMessage");
  return n.fields;
}

/** The value of a field by proto name or JSON name (the JSON name wins when both are given). */
export function pick(fields: Fields | undefined, orig: string, camel: string = orig): JsonNode | undefined {
  if (fields === undefined) return undefined;
  const v = fields.get(camel) ?? (camel === orig ? undefined : fields.get(orig));
  return v === undefined || v.kind === "null" ? undefined : v;
}

/** The elements of a repeated field. */
export function repeated(n: JsonNode | undefined): JsonNode[] {
  if (n === undefined || n.kind === "null") return [];
  if (n.kind !== "array") throw typeError(n, "[]json.RawMessage");
  return n.items;
}

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

/** Go's integer decoding of a JSON number literal into a sized integer type. */
function integerOf(text: string, min: bigint, max: bigint, goType: string): bigint {
  if (/^-?\d+$/.test(text)) {
    const v = BigInt(text);
    if (v >= min && v <= max) return v;
  }
  throw new GatewayDecodeError(`json: cannot unmarshal number ${text} into Go value of type ${goType}`);
}

function integer(n: JsonNode | undefined, min: bigint, max: bigint, goType: string): bigint {
  if (n === undefined || n.kind === "null") return 0n;
  let v: JsonNode = n;
  if (n.kind === "string") {
    // jsonpb drops the quotes (no unescaping) and decodes the inside as a JSON document.
    const syntax = goJsonSyntaxError(n.raw);
    if (syntax !== undefined) throw new GatewayDecodeError(syntax);
    const inner = readJsonValue(n.raw, 0, true);
    if (!inner.ok) throw new GatewayDecodeError("unexpected end of JSON input");
    v = inner.node;
    if (v.kind === "null") return 0n;
  }
  if (v.kind === "number") return integerOf(v.text, min, max, goType);
  throw typeError(v, goType);
}

export function int64(n: JsonNode | undefined): bigint {
  return integer(n, INT64_MIN, INT64_MAX, "int64");
}

export function uint64(n: JsonNode | undefined): bigint {
  return integer(n, 0n, UINT64_MAX, "uint64");
}

/** An int64 used as a count or revision: exact up to 2^53, and beyond that larger than any real one. */
export function int64Number(n: JsonNode | undefined): number {
  return Number(int64(n));
}

export function bool(n: JsonNode | undefined): boolean {
  if (n === undefined || n.kind === "null") return false;
  if (n.kind === "bool") return n.value;
  throw typeError(n, "bool");
}

export function string(n: JsonNode | undefined): string {
  if (n === undefined || n.kind === "null") return "";
  if (n.kind === "string") return n.value;
  throw typeError(n, "string");
}

export function strings(n: JsonNode | undefined): string[] {
  return repeated(n).map(string);
}

const EMPTY = Buffer.alloc(0);

export function bytes(n: JsonNode | undefined): Buffer {
  if (n === undefined || n.kind === "null") return EMPTY;
  if (n.kind === "string") {
    const r = goBase64Decode(n.value);
    if (typeof r === "number") throw new GatewayDecodeError(`illegal base64 data at input byte ${r}`);
    return r;
  }
  if (n.kind === "array") {
    // Go decodes a JSON array into []byte element by element.
    return Buffer.from(
      n.items.map((item) => {
        if (item.kind === "null") return 0;
        if (item.kind !== "number") throw typeError(item, "uint8");
        return Number(integerOf(item.text, 0n, 255n, "uint8"));
      }),
    );
  }
  throw typeError(n, "[]uint8");
}

/** A protobuf enum: its values by name, the Go type (number errors) and the proto name (name errors). */
export interface EnumType {
  values: Readonly<Record<string, number>>;
  goType: string;
  protoName: string;
}

export function enumValue(n: JsonNode | undefined, t: EnumType): number {
  if (n === undefined || n.kind === "null") return 0;
  if (n.kind === "string") {
    const name = n.raw.toString("latin1");
    const v = Object.hasOwn(t.values, name) ? t.values[name] : undefined;
    if (v === undefined) throw new GatewayDecodeError(`unknown value ${goQuoteBytes(n.raw)} for enum ${t.protoName}`);
    return v;
  }
  if (n.kind === "number") return Number(integerOf(n.text, -(1n << 31n), (1n << 31n) - 1n, t.goType));
  throw typeError(n, t.goType);
}

/**
 * A repeated enum. jsonpb takes a string for the whole field as an enum name: an unknown
 * name is "unknown value", a known one fails on the list ("invalid target \"slice\"").
 */
export function repeatedEnum(n: JsonNode | undefined, t: EnumType): number[] {
  if (n !== undefined && n.kind === "string") {
    enumValue(n, t);
    throw new GatewayDecodeError(`invalid target "slice" for enum ${t.protoName}`);
  }
  return repeated(n).map((item) => enumValue(item, t));
}

// --- Go's base64.StdEncoding.Decode --------------------------------------------------------

const STD_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DECODE_MAP = new Int16Array(256).fill(-1);
for (let k = 0; k < STD_ALPHABET.length; k++) DECODE_MAP[STD_ALPHABET.charCodeAt(k)] = k;
const CANONICAL = /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Decodes standard padded base64 exactly as Go does: the decoded bytes, or the offset Go
 * reports in "illegal base64 data at input byte N". Newlines are skipped; the unused bits
 * of the last quantum are not checked ("YR==" is "a").
 */
export function goBase64Decode(s: string): Buffer | number {
  if (s.length % 4 === 0 && CANONICAL.test(s)) return Buffer.from(s, "base64");
  // Offsets are in bytes of the UTF-8 text, as Go counts them.
  const src = Buffer.from(s, "utf8");
  const out: number[] = [];
  let si = 0;
  const n = src.length;
  const isNl = (c: number): boolean => c === 0x0a || c === 0x0d;
  while (si < n) {
    const dbuf = [0, 0, 0, 0];
    let dlen = 4;
    let j = 0;
    for (; j < 4; j++) {
      if (si === n) {
        if (j === 0) return Buffer.from(out);
        return si - j; // a quantum cut short: Go blames where it started
      }
      const c = src[si]!;
      si++;
      const d = DECODE_MAP[c]!;
      if (d >= 0) {
        dbuf[j] = d;
        continue;
      }
      if (isNl(c)) {
        j--;
        continue;
      }
      if (c !== 0x3d) return si - 1;
      // Padding: only after two or three symbols, "==" after two.
      if (j === 0 || j === 1) return si - 1;
      if (j === 2) {
        while (si < n && isNl(src[si]!)) si++;
        if (si === n) return n;
        if (src[si] !== 0x3d) return si - 1;
        si++;
      }
      while (si < n && isNl(src[si]!)) si++;
      if (si < n) return si; // trailing garbage after the padding
      dlen = j;
      break;
    }
    const val = (dbuf[0]! << 18) | (dbuf[1]! << 12) | (dbuf[2]! << 6) | dbuf[3]!;
    out.push((val >> 16) & 0xff);
    if (dlen > 2) out.push((val >> 8) & 0xff);
    if (dlen > 3) out.push(val & 0xff);
    if (dlen < 4) break;
  }
  return Buffer.from(out);
}

// --- Go's %q ----------------------------------------------------------------------------

/** Go's fmt %q of a byte string (strconv.Quote): printable UTF-8 kept, the rest escaped. */
export function goQuoteBytes(b: Uint8Array): string {
  let out = '"';
  const text = Buffer.from(b).toString("utf8");
  const valid = Buffer.from(text, "utf8").equals(Buffer.from(b));
  if (!valid) {
    // Invalid UTF-8: escape byte by byte (\x..), which is what Go does for the bad bytes.
    for (const c of b) out += c >= 0x20 && c < 0x7f ? (c === 0x22 ? '\\"' : c === 0x5c ? "\\\\" : String.fromCharCode(c)) : `\\x${c.toString(16).padStart(2, "0")}`;
    return out + '"';
  }
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (cp === 7) out += "\\a";
    else if (cp === 8) out += "\\b";
    else if (cp === 12) out += "\\f";
    else if (cp === 10) out += "\\n";
    else if (cp === 13) out += "\\r";
    else if (cp === 9) out += "\\t";
    else if (cp === 11) out += "\\v";
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, "0")}`;
    else if (cp >= 0x80 && cp < 0xa0) out += `\\u00${cp.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return out + '"';
}
