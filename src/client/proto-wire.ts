// The protobuf wire format, as much of it as the client needs: writing messages field by
// field in field-number order with proto3's zero values left out (what gogo/protobuf's
// generated Marshal writes, so etcdctl's `-w protobuf` bytes can be reproduced), and
// reading a message's fields back. The server's generated messages stay on the server's
// side of the import rule (DESIGN.md §2); the client's few messages are written here.
//
// 64-bit integers travel as bigint or the gateway's decimal strings, never as a JS number
// that could lose digits.

/** An int64/uint64 as the gateway gives it (decimal string or number) or as a bigint. */
export type ProtoInt = bigint | string | number | undefined;

const toBig = (v: ProtoInt): bigint => (v === undefined || v === "" ? 0n : BigInt(v));

/** A message under construction: fields appended in the caller's (field-number) order. */
export class ProtoWriter {
  readonly #parts: Uint8Array[] = [];
  #length = 0;

  #push(b: Uint8Array): void {
    this.#parts.push(b);
    this.#length += b.length;
  }

  #varint(v: bigint): void {
    // Negative int64s are written as their two's complement uint64: ten bytes.
    let x = BigInt.asUintN(64, v);
    const out: number[] = [];
    while (x >= 0x80n) {
      out.push(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    out.push(Number(x));
    this.#push(Uint8Array.from(out));
  }

  #tag(field: number, wireType: number): void {
    this.#varint(BigInt((field << 3) | wireType));
  }

  /** int64, uint64, int32, uint32, enum: omitted when zero (proto3). */
  int(field: number, v: ProtoInt): this {
    const x = toBig(v);
    if (x === 0n) return this;
    this.#tag(field, 0);
    this.#varint(x);
    return this;
  }

  bool(field: number, v: boolean | undefined): this {
    if (v !== true) return this;
    this.#tag(field, 0);
    this.#varint(1n);
    return this;
  }

  /** bytes / string: omitted when empty (proto3). */
  bytes(field: number, v: Uint8Array | string | undefined): this {
    if (v === undefined || v.length === 0) return this;
    return this.#lengthDelimited(field, typeof v === "string" ? Buffer.from(v, "utf8") : v);
  }

  /** A repeated bytes/string element: written even when empty. */
  bytesElement(field: number, v: Uint8Array | string): this {
    return this.#lengthDelimited(field, typeof v === "string" ? Buffer.from(v, "utf8") : v);
  }

  /** An embedded message (a present pointer: written even when it encodes to nothing). */
  message(field: number, m: ProtoWriter | undefined): this {
    if (m === undefined) return this;
    return this.#lengthDelimited(field, m.finish());
  }

  #lengthDelimited(field: number, b: Uint8Array): this {
    this.#tag(field, 2);
    this.#varint(BigInt(b.length));
    this.#push(b);
    return this;
  }

  finish(): Buffer {
    return Buffer.concat(this.#parts, this.#length);
  }
}

/** One field as read: varints as bigint (uint64), length-delimited as bytes. */
export type ProtoField = { field: number; wireType: 0; value: bigint } | { field: number; wireType: 2; value: Buffer } | { field: number; wireType: 1 | 5; value: Buffer };

export class ProtoDecodeError extends Error {
  readonly code = "PROTO_DECODE";
  constructor(message: string) {
    super(message);
    this.name = "ProtoDecodeError";
  }
}

/** The fields of one message, in wire order. */
export function readFields(buf: Buffer): ProtoField[] {
  const out: ProtoField[] = [];
  let i = 0;
  const varint = (): bigint => {
    let x = 0n;
    let shift = 0n;
    for (;;) {
      if (i >= buf.length) throw new ProtoDecodeError("proto: unexpected end of message");
      const b = buf[i++] ?? 0;
      x |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return x;
      shift += 7n;
      if (shift > 63n) throw new ProtoDecodeError("proto: integer overflow");
    }
  };
  const take = (len: number): Buffer => {
    if (i + len > buf.length) throw new ProtoDecodeError("proto: unexpected end of message");
    const b = buf.subarray(i, i + len);
    i += len;
    return b;
  };
  while (i < buf.length) {
    const key = Number(varint());
    const field = key >>> 3;
    const wireType = key & 7;
    if (wireType === 0) out.push({ field, wireType, value: varint() });
    else if (wireType === 2) out.push({ field, wireType, value: take(Number(varint())) });
    else if (wireType === 1) out.push({ field, wireType, value: take(8) });
    else if (wireType === 5) out.push({ field, wireType, value: take(4) });
    else throw new ProtoDecodeError(`proto: illegal wireType ${wireType}`);
  }
  return out;
}

/** The last occurrence of a varint field (proto3's rule for repeated scalars on the wire), as int64. */
export function int64Field(fields: readonly ProtoField[], n: number): bigint {
  let v = 0n;
  for (const f of fields) if (f.field === n && f.wireType === 0) v = BigInt.asIntN(64, f.value);
  return v;
}

export function uint64Field(fields: readonly ProtoField[], n: number): bigint {
  let v = 0n;
  for (const f of fields) if (f.field === n && f.wireType === 0) v = f.value;
  return v;
}

export function bytesField(fields: readonly ProtoField[], n: number): Buffer | undefined {
  let v: Buffer | undefined;
  for (const f of fields) if (f.field === n && f.wireType === 2) v = f.value;
  return v;
}
