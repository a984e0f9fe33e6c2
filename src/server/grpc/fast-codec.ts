// Hand-written protobuf encoders for the hottest responses (RangeResponse, PutResponse and
// the ResponseHeader they carry), straight from the store's shapes: the generic path
// (convert.ts's init objects, then @bufbuild/protobuf's create + toBinary) allocated a
// bigint per number and an object per message, and took ~10 % of a member's CPU under
// h2load Range load. The bytes are the ones toBinary writes (fields in number order, zero
// values left out, a set message field written even when empty); fast-codec.test.ts
// compares the two.
import type { KeyValue, PutResponse, RangeResponse, V3Event } from "../../store/v3/index.ts";
import type { V3Header } from "../http/v3-backend.ts";
import { MESSAGE_PREFIX_BYTES } from "./frames.ts";

/** A response header as its numbers (ids already parsed), ready to encode many times. */
export interface HeaderFields {
  clusterId: bigint;
  memberId: bigint;
  revision: number;
  raftTerm: number;
}

let lastIds: { cluster: string; member: string; clusterId: bigint; memberId: bigint } | undefined;

/** The header's numbers; the decimal ids are parsed once per member, not once per call. */
export function headerFields(h: V3Header): HeaderFields {
  if (lastIds === undefined || lastIds.cluster !== h.clusterId || lastIds.member !== h.memberId) {
    lastIds = { cluster: h.clusterId, member: h.memberId, clusterId: BigInt(h.clusterId), memberId: BigInt(h.memberId) };
  }
  return { clusterId: lastIds.clusterId, memberId: lastIds.memberId, revision: h.revision, raftTerm: h.raftTerm };
}

// --- sizes ------------------------------------------------------------------------------------

/** Bytes of a varint: `n` a non-negative safe integer. */
function numSize(n: number): number {
  let s = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    s++;
  }
  return s;
}

/** Bytes of an int64/uint64 varint (negative int64: ten bytes, two's complement). */
function bigSize(v: bigint): number {
  if (v < 0n) return 10;
  if (v <= 0x1fffffffffffffn) return numSize(Number(v));
  let s = 1;
  while (v >= 128n) {
    v >>= 7n;
    s++;
  }
  return s;
}

/** An int64 field given as a number: negatives (never in practice) go the bigint way. */
function intFieldSize(n: number): number {
  if (n === 0) return 0;
  return 1 + (n > 0 && Number.isSafeInteger(n) ? numSize(n) : bigSize(BigInt(Math.trunc(n))));
}

function bigFieldSize(v: bigint): number {
  return v === 0n ? 0 : 1 + bigSize(v);
}

function bytesFieldSize(b: Uint8Array): number {
  return b.length === 0 ? 0 : 1 + numSize(b.length) + b.length;
}

function headerSize(h: HeaderFields): number {
  return bigFieldSize(h.clusterId) + bigFieldSize(h.memberId) + intFieldSize(h.revision) + intFieldSize(h.raftTerm);
}

function kvSize(kv: KeyValue): number {
  return (
    bytesFieldSize(kv.key) +
    intFieldSize(kv.createRevision) +
    intFieldSize(kv.modRevision) +
    intFieldSize(kv.version) +
    bytesFieldSize(kv.value) +
    bigFieldSize(kv.lease)
  );
}

/** A length-delimited message field: tag, length, body. */
function msgFieldSize(body: number): number {
  return 1 + numSize(body) + body;
}

// --- writing ----------------------------------------------------------------------------------

class Out {
  at = 0;
  readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }

  num(n: number): void {
    const b = this.buf;
    while (n >= 128) {
      b[this.at++] = (n % 128) | 128;
      n = Math.floor(n / 128);
    }
    b[this.at++] = n;
  }

  big(v: bigint): void {
    if (v >= 0n && v <= 0x1fffffffffffffn) {
      this.num(Number(v));
      return;
    }
    let u = BigInt.asUintN(64, v);
    while (u >= 128n) {
      this.buf[this.at++] = Number(u & 127n) | 128;
      u >>= 7n;
    }
    this.buf[this.at++] = Number(u);
  }

  intField(tag: number, n: number): void {
    if (n === 0) return;
    this.buf[this.at++] = tag;
    if (n > 0 && Number.isSafeInteger(n)) this.num(n);
    else this.big(BigInt(Math.trunc(n)));
  }

  bigField(tag: number, v: bigint): void {
    if (v === 0n) return;
    this.buf[this.at++] = tag;
    this.big(v);
  }

  bytesField(tag: number, b: Uint8Array): void {
    if (b.length === 0) return;
    this.buf[this.at++] = tag;
    this.num(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
  }

  header(tag: number, h: HeaderFields, size: number): void {
    this.buf[this.at++] = tag;
    this.num(size);
    this.bigField(0x08, h.clusterId);
    this.bigField(0x10, h.memberId);
    this.intField(0x18, h.revision);
    this.intField(0x20, h.raftTerm);
  }

  kv(tag: number, kv: KeyValue, size: number): void {
    this.buf[this.at++] = tag;
    this.num(size);
    this.bytesField(0x0a, kv.key);
    this.intField(0x10, kv.createRevision);
    this.intField(0x18, kv.modRevision);
    this.intField(0x20, kv.version);
    this.bytesField(0x2a, kv.value);
    this.bigField(0x30, kv.lease);
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
  total += intFieldSize(r.count);
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
  const total = head.length + intFieldSize(watchId) + (fragment ? 2 : 0) + events.length;
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
