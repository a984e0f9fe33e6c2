// The server's one protobuf message writer for the few messages written by hand rather
// than by @bufbuild/protobuf's generated code: the peer lease messages (lease-peer-wire.ts,
// so that a member serving its peers does not load rpc.proto's descriptors) and the
// records of an etcd bbolt snapshot (backup/etcd-bolt-writer.ts: leases, auth users and
// roles, alarms). Fields are appended in the caller's (field-number) order with proto3's
// zero values left out, as gogoproto and @bufbuild/protobuf write them. Its varints are
// the store's (store/v3/keyvalue-proto.ts), which gRPC's fast codec and etcd's key-bucket
// records are written with too. The client has its own (client/proto-wire.ts): the
// client may not import server code, nor the server client code.
import { putBigVarint, putVarint } from "../store/v3/index.ts";

const WIRE_VARINT = 0;
const WIRE_BYTES = 2;
/** A varint's most bytes: a negative int64, two's complement. */
const MAX_VARINT = 10;

/** A message under construction, written into one buffer that grows as it fills. */
export class ProtoWriter {
  #buf = Buffer.allocUnsafe(64);
  #at = 0;

  #room(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#at + n));
    this.#buf.copy(grown, 0, 0, this.#at);
    this.#buf = grown;
  }

  /** A bare varint (an element of a packed repeated field): an int64 two's complement when negative. */
  varint(v: bigint): this {
    this.#room(MAX_VARINT);
    this.#at = putBigVarint(this.#buf, this.#at, v);
    return this;
  }

  #tag(field: number, wire: number): void {
    this.#room(MAX_VARINT);
    this.#at = putVarint(this.#buf, this.#at, field * 8 + wire);
  }

  /** An int64, uint64, int32 or enum field: left out when 0; a negative one is ten bytes. */
  int64(field: number, v: bigint | number): this {
    if (v === 0 || v === 0n) return this;
    this.#tag(field, WIRE_VARINT);
    this.#room(MAX_VARINT);
    this.#at =
      typeof v === "number" && v > 0 && Number.isSafeInteger(v) ? putVarint(this.#buf, this.#at, v) : putBigVarint(this.#buf, this.#at, typeof v === "bigint" ? v : BigInt(Math.trunc(v)));
    return this;
  }

  /** A bool field: left out when false. */
  bool(field: number, v: boolean): this {
    if (!v) return this;
    this.#tag(field, WIRE_VARINT);
    this.#buf[this.#at++] = 1;
    return this;
  }

  /** A bytes or string field: left out when empty (proto3). */
  bytes(field: number, v: Uint8Array): this {
    return v.length === 0 ? this : this.bytesElement(field, v);
  }

  /** A repeated bytes element or a set message: written even when empty. */
  bytesElement(field: number, v: Uint8Array): this {
    this.#tag(field, WIRE_BYTES);
    this.#room(MAX_VARINT + v.length);
    this.#at = putVarint(this.#buf, this.#at, v.length);
    this.#buf.set(v, this.#at);
    this.#at += v.length;
    return this;
  }

  /** The message's bytes (a view of the writer's buffer: write no more after this). */
  finish(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }
}
