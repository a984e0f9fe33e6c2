// Hand-written protobuf encoders for the hottest responses (RangeResponse, PutResponse and
// the ResponseHeader they carry), and decoders of the hottest requests (PutRequest,
// RangeRequest) straight to the store's shapes. The encoders:  the generic path
// (convert.ts's init objects, then @bufbuild/protobuf's create + toBinary) allocated a
// bigint per number and an object per message, and took ~10 % of a member's CPU under
// h2load Range load. The bytes are the ones toBinary writes (fields in number order, zero
// values left out, a set message field written even when empty); fast-codec.test.ts
// compares the two. Their varints, fields and KeyValues are the store's
// (store/v3/keyvalue-proto.ts), which etcd's key-bucket records are written with too.
import type { V3Header } from "../http/v3-backend.ts";
import {
  rangeRequest,
  type KeyValue,
  type PutRequest,
  type PutResponse,
  type RangeRequest,
  type RangeResponse,
  type V3Event,
  bigVarintBytes,
  int64FieldBytes,
  keyValueBytes,
  putBigVarint,
  putBytesField,
  putInt64Field,
  putVarint,
  sortOrderOf,
  sortTargetOf,
  varintBytes,
  writeKeyValue,
} from "../../store/v3/index.ts";
import { MESSAGE_PREFIX_BYTES } from "./frames.ts";
import { PutRequestSchema, RangeRequestSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { refuseAsGogo } from "./unmarshal-error.ts";

/** A response header as its numbers (ids already parsed), ready to encode many times. */
export interface HeaderFields {
  clusterId: bigint;
  memberId: bigint;
  revision: number;
  raftTerm: number;
  /** cluster_id and member_id as encoded fields (1 and 2), the same for every answer. */
  ids: Buffer;
}

let lastIds: { cluster: string; member: string; clusterId: bigint; memberId: bigint; ids: Buffer } | undefined;

/**
 * The header's numbers; the decimal ids are parsed and encoded once per member, not once
 * per call (two 64-bit ids as bigint varints, sized then written, were ~1 µs an answer).
 */
export function headerFields(h: V3Header): HeaderFields {
  if (lastIds === undefined || lastIds.cluster !== h.clusterId || lastIds.member !== h.memberId) {
    const clusterId = BigInt(h.clusterId);
    const memberId = BigInt(h.memberId);
    const out = new Out(Buffer.alloc(bigFieldSize(clusterId) + bigFieldSize(memberId)));
    out.bigField(0x08, clusterId);
    out.bigField(0x10, memberId);
    lastIds = { cluster: h.clusterId, member: h.memberId, clusterId, memberId, ids: out.buf };
  }
  return { clusterId: lastIds.clusterId, memberId: lastIds.memberId, revision: h.revision, raftTerm: h.raftTerm, ids: lastIds.ids };
}

// --- sizes ------------------------------------------------------------------------------------
//
// Varints, int64 and bytes fields and KeyValues are store/v3/keyvalue-proto.ts's, the
// encoder etcd's key-bucket records (HashKV, the snapshot) use too.

function bigFieldSize(v: bigint): number {
  return v === 0n ? 0 : 1 + bigVarintBytes(v);
}

function bytesFieldSize(b: Uint8Array): number {
  return b.length === 0 ? 0 : 1 + varintBytes(b.length) + b.length;
}

function headerSize(h: HeaderFields): number {
  return h.ids.length + int64FieldBytes(h.revision) + int64FieldBytes(h.raftTerm);
}

function kvSize(kv: KeyValue): number {
  return keyValueBytes(kv.modRevision, false, kv);
}

/** A length-delimited message field: tag, length, body. */
function msgFieldSize(body: number): number {
  return 1 + varintBytes(body) + body;
}

// --- writing ----------------------------------------------------------------------------------

class Out {
  at = 0;
  readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }

  num(n: number): void {
    this.at = putVarint(this.buf, this.at, n);
  }

  intField(tag: number, n: number): void {
    this.at = putInt64Field(this.buf, this.at, tag, n);
  }

  bigField(tag: number, v: bigint): void {
    if (v === 0n) return;
    this.buf[this.at++] = tag;
    this.at = putBigVarint(this.buf, this.at, v);
  }

  bytesField(tag: number, b: Uint8Array): void {
    this.at = putBytesField(this.buf, this.at, tag, b);
  }

  header(tag: number, h: HeaderFields, size: number): void {
    this.buf[this.at++] = tag;
    this.num(size);
    this.buf.set(h.ids, this.at);
    this.at += h.ids.length;
    this.intField(0x18, h.revision);
    this.intField(0x20, h.raftTerm);
  }

  kv(tag: number, kv: KeyValue, size: number): void {
    this.buf[this.at++] = tag;
    this.num(size);
    this.at = writeKeyValue(this.buf, this.at, kv.modRevision, false, kv);
  }
}

/**
 * A RangeResponse (header=1, kvs=2, more=3, count=4) with `reserve` free bytes in front,
 * so the caller can write gRPC's 5-byte message prefix into the same buffer.
 */
export function encodeRangeResponse(h: HeaderFields, r: RangeResponse, reserve = 0): Buffer {
  const hs = headerSize(h);
  const sizes = new Array<number>(r.kvs.length);
  let total = msgFieldSize(hs);
  for (let i = 0; i < r.kvs.length; i++) {
    const s = kvSize(r.kvs[i]!);
    sizes[i] = s;
    total += msgFieldSize(s);
  }
  if (r.more) total += 2;
  total += int64FieldBytes(r.count);
  const out = new Out(Buffer.allocUnsafe(reserve + total));
  out.at = reserve;
  out.header(0x0a, h, hs);
  for (let i = 0; i < r.kvs.length; i++) out.kv(0x12, r.kvs[i]!, sizes[i]!);
  if (r.more) {
    out.buf[out.at++] = 0x18;
    out.buf[out.at++] = 1;
  }
  out.intField(0x20, r.count);
  return out.buf;
}

/** A PutResponse (header=1, prev_kv=2), `reserve` free bytes in front. */
export function encodePutResponse(h: HeaderFields, r: PutResponse, reserve = 0): Buffer {
  const hs = headerSize(h);
  let total = msgFieldSize(hs);
  const ps = r.prevKv === undefined ? 0 : kvSize(r.prevKv);
  if (r.prevKv !== undefined) total += msgFieldSize(ps);
  const out = new Out(Buffer.allocUnsafe(reserve + total));
  out.at = reserve;
  out.header(0x0a, h, hs);
  if (r.prevKv !== undefined) out.kv(0x12, r.prevKv, ps);
  return out.buf;
}

function eventSize(e: V3Event): { body: number; kv: number; prev: number } {
  const kv = kvSize(e.kv);
  const prev = e.prevKv === undefined ? 0 : kvSize(e.prevKv);
  let body = (e.type === 0 ? 0 : 2) + msgFieldSize(kv);
  if (e.prevKv !== undefined) body += msgFieldSize(prev);
  return { body, kv, prev };
}

/** The repeated `events` field (11) of a WatchResponse, ready to append. */
function encodeEvents(events: readonly V3Event[]): Buffer {
  const sizes = events.map(eventSize);
  let total = 0;
  for (const s of sizes) total += msgFieldSize(s.body);
  const out = new Out(Buffer.allocUnsafe(total));
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    const s = sizes[i]!;
    out.buf[out.at++] = 0x5a;
    out.num(s.body);
    if (e.type !== 0) {
      out.buf[out.at++] = 0x08;
      out.num(e.type);
    }
    out.kv(0x12, e.kv, s.kv);
    if (e.prevKv !== undefined) out.kv(0x1a, e.prevKv, s.prev);
  }
  return out.buf;
}

/**
 * A WatchResponse carrying events (header=1, watch_id=2, fragment=7, events=11), as
 * toBinary writes it, `reserve` free bytes in front.
 */
export function encodeWatchEvents(h: HeaderFields, watchId: number, events: readonly V3Event[], fragment: boolean, reserve = 0): Buffer {
  const hs = headerSize(h);
  const head = new Out(Buffer.allocUnsafe(msgFieldSize(hs)));
  head.header(0x0a, h, hs);
  return watchMessage(head.buf, watchId, fragment, encodeEvents(events), reserve);
}

/** header field + watch_id + fragment + events field, `reserve` free bytes in front. */
function watchMessage(head: Buffer, watchId: number, fragment: boolean, events: Buffer, reserve: number): Buffer {
  const total = head.length + int64FieldBytes(watchId) + (fragment ? 2 : 0) + events.length;
  const out = new Out(Buffer.allocUnsafe(reserve + total));
  out.buf.set(head, reserve);
  out.at = reserve + head.length;
  out.intField(0x10, watchId);
  if (fragment) {
    out.buf[out.at++] = 0x38;
    out.buf[out.at++] = 1;
  }
  out.buf.set(events, out.at);
  return out.buf;
}

/**
 * A WatchResponse without events (created, canceled, compacted, progress: header=1,
 * watch_id=2, created=3, canceled=4, compact_revision=5, cancel_reason=6) as toBinary
 * writes it, with gRPC's 5-byte prefix: every new watcher gets one, and the generic
 * encoder's init object, bigint ids and second copy for the prefix showed in the profile
 * of opening 1,000 watch streams.
 */
export function frameWatchControl(h: HeaderFields, watchId: number, created: boolean, canceled: boolean, compactRevision: number, cancelReason: string): Buffer {
  const hs = headerSize(h);
  const reason = cancelReason === "" ? undefined : Buffer.from(cancelReason, "utf8");
  const total =
    msgFieldSize(hs) + int64FieldBytes(watchId) + (created ? 2 : 0) + (canceled ? 2 : 0) + int64FieldBytes(compactRevision) + (reason === undefined ? 0 : bytesFieldSize(reason));
  const out = new Out(Buffer.allocUnsafe(MESSAGE_PREFIX_BYTES + total));
  out.buf[0] = 0;
  out.buf.writeUInt32BE(total, 1);
  out.at = MESSAGE_PREFIX_BYTES;
  out.header(0x0a, h, hs);
  out.intField(0x10, watchId);
  if (created) {
    out.buf[out.at++] = 0x18;
    out.buf[out.at++] = 1;
  }
  if (canceled) {
    out.buf[out.at++] = 0x20;
    out.buf[out.at++] = 1;
  }
  out.intField(0x28, compactRevision);
  if (reason !== undefined) out.bytesField(0x32, reason);
  return out.buf;
}

function sameEvents(a: readonly V3Event[], b: readonly V3Event[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * WatchResponses of one hub message for every watcher that gets it. The hub hands each
 * watcher the same event objects (in its own list) with the same header revision, and
 * only watch_id differs between their responses: the header and the events are encoded
 * once, and each watcher's message is one buffer (gRPC's 5-byte prefix included) made of
 * copies. Profiled on 1,000 watchers of one key, per watcher and write: the header's
 * V3Header and bigint ids, the events' encoding, and a second copy to add the prefix were
 * half of the gRPC layer's time before the HTTP/2 write itself.
 *
 * The shared bytes live until the current turn's microtasks run: a fan-out is one
 * synchronous notify(), and a later message with the same events (a replay) re-reads the
 * header, whose term may have changed.
 */
export class WatchEventsFramer {
  #last: { revision: number; events: readonly V3Event[]; head: Buffer; body: Buffer } | undefined;

  /** The framed message for `watchId`; `headerOf` is called once per shared message. */
  frame(revision: number, headerOf: (revision: number) => V3Header, watchId: number, events: readonly V3Event[], fragment: boolean): Buffer {
    let s = this.#last;
    if (s === undefined || s.revision !== revision || !sameEvents(s.events, events)) {
      const h = headerFields(headerOf(revision));
      const hs = headerSize(h);
      const head = new Out(Buffer.allocUnsafe(msgFieldSize(hs)));
      head.header(0x0a, h, hs);
      if (s === undefined) queueMicrotask(() => (this.#last = undefined));
      s = { revision, events, head: head.buf, body: encodeEvents(events) };
      this.#last = s;
    }
    const out = watchMessage(s.head, watchId, fragment, s.body, MESSAGE_PREFIX_BYTES);
    out[0] = 0;
    out.writeUInt32BE(out.length - MESSAGE_PREFIX_BYTES, 1);
    return out;
  }
}

// --- request decoders ---------------------------------------------------------------------------
//
// PutRequest and RangeRequest read straight into the store's shapes: fromBinary plus
// convert.ts took ~5 µs of a Put's gRPC share (a message object, a bigint per int64, the
// conversion). Each returns undefined for anything but a well-formed message of known wire
// types (a truncated varint, a group, a field with another wire type than the schema's):
// the caller then decodes with the generated code, whose error grpc-go's wording wraps.
// Proto3 semantics as fromBinary: the last occurrence of a scalar field wins, unknown
// fields are skipped, bytes fields are views of the request (not copies).

const EMPTY_BYTES = Buffer.alloc(0);

class In {
  at = 0;
  /** False once a read ran past the end or met something the fast path does not take. */
  ok = true;
  readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }

  /** A varint of at most 7 bytes (< 2^49) as a number; longer ones give -1 with `at` unmoved. */
  small(): number {
    const b = this.buf;
    let n = 0;
    let mul = 1;
    for (let i = 0; i < 7; i++) {
      const c = b[this.at + i];
      if (c === undefined) {
        this.ok = false;
        return 0;
      }
      n += (c & 127) * mul;
      if (c < 128) {
        this.at += i + 1;
        return n;
      }
      mul *= 128;
    }
    return -1;
  }

  /** An int64 varint (up to 10 bytes, two's complement) as a bigint. */
  int64(): bigint {
    const start = this.at;
    const n = this.small();
    if (n >= 0 || !this.ok) return BigInt(n);
    let v = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      const c = this.buf[start + i];
      if (c === undefined) {
        this.ok = false;
        return 0n;
      }
      v |= BigInt(c & 127) << shift;
      if (c < 128) {
        this.at = start + i + 1;
        return BigInt.asIntN(64, v);
      }
      shift += 7n;
    }
    this.ok = false;
    return 0n;
  }

  /** An int64 revision or count as a number (num() in convert.ts: Number of the int64). */
  int64Number(): number {
    const start = this.at;
    const n = this.small();
    if (n >= 0 || !this.ok) return n;
    this.at = start;
    return Number(this.int64());
  }

  /** An int32 enum: the low 32 bits, signed (negative values are 10-byte varints). */
  int32(): number {
    const start = this.at;
    const n = this.small();
    if (n >= 0 && n <= 0x7fffffff) return n;
    if (!this.ok) return 0;
    this.at = start;
    return Number(BigInt.asIntN(32, this.int64()));
  }

  bool(): boolean {
    return this.int64Number() !== 0;
  }

  bytes(): Buffer {
    const len = this.small();
    if (len < 0 || this.at + len > this.buf.length) {
      this.ok = false;
      return EMPTY_BYTES;
    }
    const start = this.at;
    this.at += len;
    return len === 0 ? EMPTY_BYTES : this.buf.subarray(start, this.at);
  }

  /** Skips a field of an unknown number; groups (wire types 3, 4) are not taken. */
  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.int64();
        return;
      case 1:
        this.at += 8;
        break;
      case 2:
        this.bytes();
        return;
      case 5:
        this.at += 4;
        break;
      default:
        this.ok = false;
        return;
    }
    if (this.at > this.buf.length) this.ok = false;
  }

  /** The next field's tag (number << 3 | wire type); a bad one (0, over 32 bits) clears `ok`. */
  tag(): number {
    const t = this.small();
    if (!this.ok || t < 8 || t > 0xffffffff) {
      this.ok = false;
      return 0;
    }
    return t;
  }
}

function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/**
 * etcdserverpb.PutRequest (key 1, value 2, lease 3, prev_kv 4, ignore_value 5, ignore_lease 6).
 * Bytes it does not take are refused in gogoproto's words when etcd refuses them (thrown,
 * code 13), else undefined: the generated decoder's turn (the same for RangeRequest).
 */
export function decodePutRequest(bytes: Uint8Array): PutRequest | undefined {
  const r = new In(bufferOf(bytes));
  const out: PutRequest = { key: EMPTY_BYTES, value: EMPTY_BYTES, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false };
  while (r.at < r.buf.length) {
    const t = r.tag();
    if (!r.ok) return refuseAsGogo(PutRequestSchema, bytes);
    const field = t >>> 3;
    const wire = t & 7;
    const expected = field === 1 || field === 2 ? 2 : field >= 3 && field <= 6 ? 0 : -1;
    if (expected === -1) r.skip(wire);
    else if (wire !== expected) return refuseAsGogo(PutRequestSchema, bytes);
    else if (field === 1) out.key = r.bytes();
    else if (field === 2) out.value = r.bytes();
    else if (field === 3) out.lease = r.int64();
    else if (field === 4) out.prevKv = r.bool();
    else if (field === 5) out.ignoreValue = r.bool();
    else out.ignoreLease = r.bool();
    if (!r.ok) return refuseAsGogo(PutRequestSchema, bytes);
  }
  return out;
}

/**
 * etcdserverpb.RangeRequest: key 1, range_end 2 (bytes); limit 3, revision 4 (int64);
 * sort_order 5, sort_target 6 (enums); serializable 7, keys_only 8, count_only 9 (bool);
 * min/max_mod_revision 10/11, min/max_create_revision 12/13 (int64). Enums out of range
 * read as convert.ts reads them (sortOrderOf, sortTargetOf in store/v3/unknown-enums.ts).
 */
export function decodeRangeRequest(bytes: Uint8Array): RangeRequest | undefined {
  const r = new In(bufferOf(bytes));
  const out = rangeRequest();
  let order = 0;
  let target = 0;
  while (r.at < r.buf.length) {
    const t = r.tag();
    if (!r.ok) return refuseAsGogo(RangeRequestSchema, bytes);
    const field = t >>> 3;
    const wire = t & 7;
    if (field > 13) {
      r.skip(wire);
      if (!r.ok) return refuseAsGogo(RangeRequestSchema, bytes);
      continue;
    }
    if (wire !== (field <= 2 ? 2 : 0)) return refuseAsGogo(RangeRequestSchema, bytes);
    switch (field) {
      case 1:
        out.key = r.bytes();
        break;
      case 2:
        out.rangeEnd = r.bytes();
        break;
      case 3:
        out.limit = r.int64Number();
        break;
      case 4:
        out.revision = r.int64Number();
        break;
      case 5:
        order = r.int32();
        break;
      case 6:
        target = r.int32();
        break;
      case 7:
        out.serializable = r.bool();
        break;
      case 8:
        out.keysOnly = r.bool();
        break;
      case 9:
        out.countOnly = r.bool();
        break;
      case 10:
        out.minModRevision = r.int64Number();
        break;
      case 11:
        out.maxModRevision = r.int64Number();
        break;
      case 12:
        out.minCreateRevision = r.int64Number();
        break;
      case 13:
        out.maxCreateRevision = r.int64Number();
        break;
      default:
        // Field 0 is refused by tag().
        return refuseAsGogo(RangeRequestSchema, bytes);
    }
    if (!r.ok) return refuseAsGogo(RangeRequestSchema, bytes);
  }
  if (order !== 0 || target !== 0) {
    out.sortOrder = sortOrderOf(order);
    out.sortTarget = sortTargetOf(order, target);
  }
  return out;
}
