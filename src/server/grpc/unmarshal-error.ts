// What etcd 3.4's generated code (gogoproto's Unmarshal, rpc.pb.go) says of bytes that are
// not a valid request message: grpc-go answers code 13 "grpc: error unmarshalling request:
// <this>" to a unary call, "grpc: failed to unmarshal the received message <this>" on a
// stream. @bufbuild/protobuf words its errors its own way, so a request it refuses is
// walked again here, field by field as gogoproto walks it (the same checks in the same
// order, Go's 64-bit wraparound in lengths), to find gogoproto's first error. Pure.
//
// The texts: io.ErrUnexpectedEOF "unexpected EOF", ErrIntOverflowRpc "proto: integer
// overflow", ErrInvalidLengthRpc "proto: negative length found during unmarshaling",
// "proto: <Msg>: wiretype end group for non-group", "proto: <Msg>: illegal tag <n> (wire
// type <tag>)" (gogoproto prints the whole tag there), "proto: wrong wireType = <t> for
// field <GoName>", and skipRpc's "proto: illegal wireType <t>" for an unknown field.
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { GrpcCode, V3Error } from "../../api/v3-errors.ts";
import { UNARY_UNMARSHAL_PREFIX } from "./frames.ts";

const UNEXPECTED_EOF = "unexpected EOF";
const INT_OVERFLOW = "proto: integer overflow";
const NEGATIVE_LENGTH = "proto: negative length found during unmarshaling";

class GogoError extends Error {}

/** grpc-go's status for a unary request that does not decode, `text` being the codec's error. */
export function unmarshalError(text: string): V3Error {
  return new V3Error(GrpcCode.Internal, UNARY_UNMARSHAL_PREFIX + text);
}

/** grpc-go's status for a stream's message that does not decode (recv in rpc_util.go: no colon). */
export function streamUnmarshalError(text: string): V3Error {
  return new V3Error(GrpcCode.Internal, `grpc: failed to unmarshal the received message ${text}`);
}

/**
 * For a hand-written reader that declined `bytes` (fast-codec.ts): gogoproto's refusal,
 * thrown, or undefined when etcd would decode them (the generated decoder takes them).
 */
export function refuseAsGogo(desc: DescMessage, bytes: Uint8Array): undefined {
  const text = gogoUnmarshalError(desc, bytes);
  if (text !== undefined) throw unmarshalError(text);
  return undefined;
}

/** gogoproto's error for `bytes` as message `desc`, or undefined when it would decode them. */
export function gogoUnmarshalError(desc: DescMessage, bytes: Uint8Array): string | undefined {
  try {
    unmarshal(desc, bytes, 0, bytes.length);
    return undefined;
  } catch (err) {
    if (err instanceof GogoError) return err.message;
    throw err;
  }
}

/** A varint as gogoproto reads it into a uint64: overflow past 10 bytes, EOF at `end`. */
function varint(buf: Uint8Array, at: number, end: number): [bigint, number] {
  let v = 0n;
  for (let shift = 0n; ; shift += 7n) {
    if (shift >= 64n) throw new GogoError(INT_OVERFLOW);
    if (at >= end) throw new GogoError(UNEXPECTED_EOF);
    const b = buf[at++]!;
    v |= BigInt(b & 0x7f) << shift;
    if (b < 0x80) return [BigInt.asUintN(64, v), at];
  }
}

/** A length as Go's int (64-bit, wrapping): negative is ErrInvalidLength. */
function length(buf: Uint8Array, at: number, end: number): [number, number] {
  const [v, next] = varint(buf, at, end);
  const n = BigInt.asIntN(64, v);
  if (n < 0n) throw new GogoError(NEGATIVE_LENGTH);
  // Beyond any buffer: the caller's `postIndex > l` check answers EOF, as in Go.
  return [n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n), next];
}

/** The wire type gogoproto's code accepts for a field (a packed list also takes 2). */
function wireTypeOf(f: DescField): number {
  switch (f.fieldKind) {
    case "message":
    case "map":
      return 2;
    case "enum":
      return 0;
    case "scalar":
      return scalarWireType(f.scalar);
    case "list":
      return f.listKind === "message" ? 2 : f.listKind === "enum" ? 0 : scalarWireType(f.scalar);
  }
}

function scalarWireType(t: ScalarType): number {
  switch (t) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return 2;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return 1;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return 5;
    default:
      return 0;
  }
}

/** protoc-gen-gogo's CamelCase: the Go name of a field or message. */
export function goName(s: string): string {
  let out = "";
  let i = 0;
  if (s[0] === "_") {
    out += "X";
    i++;
  }
  const lower = (c: string | undefined): boolean => c !== undefined && c >= "a" && c <= "z";
  for (; i < s.length; i++) {
    let c = s[i]!;
    if (c === "_" && lower(s[i + 1])) continue;
    if (c >= "0" && c <= "9") {
      out += c;
      continue;
    }
    if (lower(c)) c = c.toUpperCase();
    out += c;
    while (lower(s[i + 1])) out += s[++i]!;
  }
  return out;
}

/** The Go type name: nested messages joined by "_". */
function goTypeName(desc: DescMessage): string {
  const pkg = desc.file.proto.package;
  const local = pkg === "" ? desc.typeName : desc.typeName.slice(pkg.length + 1);
  return local.split(".").map(goName).join("_");
}

/** One message's Unmarshal over buf[start, end). */
function unmarshal(desc: DescMessage, buf: Uint8Array, start: number, end: number): void {
  let at = start;
  while (at < end) {
    const pre = at;
    let wire: bigint;
    [wire, at] = varint(buf, at, end);
    const fieldNum = Number(BigInt.asIntN(32, wire >> 3n));
    const wireType = Number(wire & 7n);
    if (wireType === 4) throw new GogoError(`proto: ${goTypeName(desc)}: wiretype end group for non-group`);
    if (fieldNum <= 0) throw new GogoError(`proto: ${goTypeName(desc)}: illegal tag ${fieldNum} (wire type ${wire})`);
    const f = desc.fields.find((x) => x.number === fieldNum);
    if (f === undefined) {
      const n = skip(buf, pre, end);
      if (pre + n > end) throw new GogoError(UNEXPECTED_EOF);
      at = pre + n;
      continue;
    }
    const want = wireTypeOf(f);
    const packable = f.fieldKind === "list" && want !== 2;
    if (packable && wireType === 2) {
      let len: number;
      [len, at] = length(buf, at, end);
      const post = at + len;
      if (post > end) throw new GogoError(UNEXPECTED_EOF);
      // The elements are read against the message's end, not the list's (as gogoproto).
      while (at < post) at = value(buf, at, end, want);
      continue;
    }
    if (wireType !== want) throw new GogoError(`proto: wrong wireType = ${wireType} for field ${goName(f.name)}`);
    if (want !== 2) {
      at = value(buf, at, end, want);
      continue;
    }
    let len: number;
    [len, at] = length(buf, at, end);
    const post = at + len;
    if (post > end) throw new GogoError(UNEXPECTED_EOF);
    const sub = f.fieldKind === "message" ? f.message : f.fieldKind === "list" && f.listKind === "message" ? f.message : undefined;
    if (sub !== undefined) unmarshal(sub, buf, at, post);
    at = post;
  }
  if (at > end) throw new GogoError(UNEXPECTED_EOF);
}

/** A non-length-delimited value of wire type `t` at `at`; returns where it ends. */
function value(buf: Uint8Array, at: number, end: number, t: number): number {
  if (t === 0) return varint(buf, at, end)[1];
  const n = t === 1 ? 8 : 4;
  if (at + n > end) throw new GogoError(UNEXPECTED_EOF);
  return at + n;
}

/** skipRpc: the length of the unknown field at `at` (its tag included). */
function skip(buf: Uint8Array, at: number, end: number): number {
  const start = at;
  let wire: bigint;
  [wire, at] = varint(buf, at, end);
  const wireType = Number(wire & 7n);
  switch (wireType) {
    case 0:
      return varint(buf, at, end)[1] - start;
    case 1:
      return at + 8 - start;
    case 2: {
      const [v, next] = varint(buf, at, end);
      const n = BigInt.asIntN(64, v);
      if (n < 0n) throw new GogoError(NEGATIVE_LENGTH);
      return next + (n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n)) - start;
    }
    case 3:
      for (;;) {
        const inner = at;
        const [w] = varint(buf, at, end);
        if (Number(w & 7n) === 4) return varint(buf, at, end)[1] - start;
        at = inner + skip(buf, inner, end);
      }
    case 4:
      return at - start;
    case 5:
      return at + 4 - start;
    default:
      throw new GogoError(`proto: illegal wireType ${wireType}`);
  }
}

// --- the quick walk ---------------------------------------------------------------------------
// @bufbuild reads a known scalar field whatever its wire type (a TTL sent as bytes holding a
// varint decodes), where gogoproto refuses: every request is walked once before
// fromBinary, with numbers only (no bigint), answering "surely decodes" or "ask the
// exact walk above" (which then finds the words, or decodes after all: a 6-byte tag, a
// length past 2^28 and such rarities).

interface FieldRule {
  readonly wire: number;
  readonly packable: boolean;
  readonly sub: DescMessage | undefined;
}

const rulesByDesc = new WeakMap<DescMessage, Array<FieldRule | undefined>>();

function rulesOf(desc: DescMessage): Array<FieldRule | undefined> {
  let rules = rulesByDesc.get(desc);
  if (rules === undefined) {
    rules = [];
    for (const f of desc.fields) {
      const wire = wireTypeOf(f);
      const sub = f.fieldKind === "message" ? f.message : f.fieldKind === "list" && f.listKind === "message" ? f.message : undefined;
      rules[f.number] = { wire, packable: f.fieldKind === "list" && wire !== 2, sub };
    }
    rulesByDesc.set(desc, rules);
  }
  return rules;
}

/**
 * True when gogoproto's Unmarshal surely decodes `bytes` as `desc`: every known field in
 * its wire type, nested messages too. False: maybe not (gogoUnmarshalError decides).
 */
export function gogoAccepts(desc: DescMessage, bytes: Uint8Array): boolean {
  return accepts(desc, bytes, 0, bytes.length);
}

/** A varint's end (at most 10 bytes, as gogoproto's uint64 reads), or -1. */
function skipVarint(buf: Uint8Array, at: number, end: number): number {
  const stop = Math.min(end, at + 10);
  while (at < stop) if (buf[at++]! < 0x80) return at;
  return -1;
}

/** Where the last smallVarint ended (a module variable: no tuple per varint on a hot path). */
let walkAt = 0;

/** A length (or tag) of at most 4 bytes (< 2^28), its end in walkAt; -1 when longer or cut. */
function smallVarint(buf: Uint8Array, at: number, end: number): number {
  let v = 0;
  for (let shift = 0; shift < 28 && at < end; shift += 7) {
    const b = buf[at++]!;
    v |= (b & 0x7f) << shift;
    if (b < 0x80) {
      walkAt = at;
      return v;
    }
  }
  return -1;
}

function accepts(desc: DescMessage, buf: Uint8Array, at: number, end: number): boolean {
  const rules = rulesOf(desc);
  while (at < end) {
    const tag = smallVarint(buf, at, end);
    if (tag < 0) return false;
    at = walkAt;
    const wire = tag & 7;
    const num = tag >>> 3;
    if (num === 0) return false;
    const rule = rules[num];
    if (rule !== undefined && wire !== rule.wire && !(rule.packable && wire === 2)) return false;
    if (wire === 0) at = skipVarint(buf, at, end);
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const len = smallVarint(buf, at, end);
      if (len < 0) return false;
      const from = walkAt;
      const post = from + len;
      if (post > end) return false;
      if (rule?.sub !== undefined && !accepts(rule.sub, buf, from, post)) return false;
      if (rule?.packable === true) {
        for (let p = from; p < post; ) {
          p = rule.wire === 0 ? skipVarint(buf, p, post) : p + (rule.wire === 1 ? 8 : 4);
          if (p < 0 || p > post) return false;
        }
      }
      at = post;
    } else return false;
    if (at < 0 || at > end) return false;
  }
  return true;
}
