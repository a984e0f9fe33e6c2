// Reading the peer lease messages (lease-peer-wire.ts) by hand, so that a member serving its
// peers does not load @bufbuild/protobuf and rpc.proto's descriptors (45-60 ms of a
// restart's CPU): those load with the client API. They are written by the server's
// proto-writer.ts. Reading takes fields in any order, the last of a scalar winning, and
// skips unknown ones, as fromBinary does.

export const WireType = { Varint: 0, Fixed64: 1, Bytes: 2, Fixed32: 5 } as const;
export type WireType = (typeof WireType)[keyof typeof WireType];

/** One field read from a message: its number, wire type, and value (a varint, or the bytes of a length-delimited field). */
export type ProtoField = { field: number; wire: 0; value: bigint } | { field: number; wire: 2; value: Uint8Array } | { field: number; wire: 1 | 5 };

function readVarint(buf: Uint8Array, pos: { i: number }): bigint {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    const b = buf[pos.i++];
    if (b === undefined) throw new Error("premature EOF");
    if (shift > 63n) throw new Error("invalid varint");
    v |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return BigInt.asUintN(64, v);
    shift += 7n;
  }
}

/** The fields of a message in wire order; throws on a malformed one. */
export function* readFields(buf: Uint8Array): Generator<ProtoField> {
  const pos = { i: 0 };
  while (pos.i < buf.length) {
    const tag = readVarint(buf, pos);
    const field = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (field === 0 || field > 0x1fffffff) throw new Error(`illegal tag: field no 0 wire type ${wire}`);
    switch (wire) {
      case WireType.Varint:
        yield { field, wire: WireType.Varint, value: readVarint(buf, pos) };
        break;
      case WireType.Bytes: {
        const len = readVarint(buf, pos);
        const end = pos.i + Number(len);
        if (len > BigInt(buf.length) || end > buf.length) throw new Error("premature EOF");
        yield { field, wire: WireType.Bytes, value: buf.subarray(pos.i, end) };
        pos.i = end;
        break;
      }
      case WireType.Fixed64:
      case WireType.Fixed32:
        pos.i += wire === WireType.Fixed64 ? 8 : 4;
        if (pos.i > buf.length) throw new Error("premature EOF");
        yield { field, wire: wire === WireType.Fixed64 ? WireType.Fixed64 : WireType.Fixed32 };
        break;
      default:
        throw new Error(`cannot read wire type ${wire}`);
    }
  }
}

/** A varint field's value as an int64 (throws when the field came in another wire type). */
export function int64Of(f: ProtoField): bigint {
  if (f.wire !== WireType.Varint) throw new Error(`field ${f.field}: wire type ${f.wire} where a varint was expected`);
  return BigInt.asIntN(64, f.value);
}

/** A length-delimited field's bytes (throws when the field came in another wire type). */
export function bytesOf(f: ProtoField): Uint8Array {
  if (f.wire !== WireType.Bytes) throw new Error(`field ${f.field}: wire type ${f.wire} where bytes were expected`);
  return f.value;
}
