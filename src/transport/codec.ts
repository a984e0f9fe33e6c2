// The peer wire format: a versioned, length-prefixed batch of Raft messages.
//
//   batch   = version:u8 frame*                      (version is codecVersion = 1)
//   frame   = length:u32be message                   (length counts the message bytes)
//           | 00 00 00 00                            (length 0: a link heartbeat, no message)
//   message = type:u8 flags:u8                       (flags: bit0 reject, bit1 has snapshot)
//             to from term logTerm index commit rejectHint : varint each
//             contextLen:varint context
//             entryCount:varint { term:varint index:varint type:u8 dataLen:varint data }*
//             [snapshot: index:varint term:varint
//                        voterCount:varint voter:varint* learnerCount:varint learner:varint*
//                        dataLen:varint data]          (snapshot data LAST, see below)
//
// varint = unsigned LEB128 of a safe integer (at most 8 bytes, value <= 2^53 - 1).
// Byte fields travel raw. The snapshot data is the last thing in a message so that the
// sender can write it as its own chunk, without copying a possibly huge image into a
// new buffer (encodeFrame returns it separately).
//
// Decoding: entry data and context are copied out of the request body (a view would pin
// the whole body, or a shared pool slab, for as long as Raft keeps the entry); the
// snapshot data is a view (no 2nd copy of the largest field; the body is its only user).

import { EntryType, MessageType, retainEntryData, type Entry, type Message, type Snapshot } from "../raft/index.ts";

export const codecVersion = 1;

/** A malformed batch or message; the handler answers 400 with the message. */
export class CodecError extends Error {
  readonly code = "ERR_RAFT_CODEC";
}

/** A frame declares a length above the receiver's bound (answered 413 when still possible). */
export class FrameTooLargeError extends CodecError {}

const maxMessageType = MessageType.MsgPreVoteResp;
const flagReject = 1;
const flagSnapshot = 2;
const maxFrame = 0xffff_ffff;

function varintLen(n: number): number {
  let len = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

/** A writer into a buffer sized exactly in advance (sizes are computed first). */
class Writer {
  readonly buf: Uint8Array;
  pos = 0;
  constructor(size: number) {
    // Every byte is written (sizes are exact), so no zero fill; small frames come from
    // Node's pool: a fresh ArrayBuffer per frame cost 0.3 µs against 0.04, and more when
    // a large snapshot buffer raised the external memory V8 accounts for.
    this.buf = Buffer.allocUnsafe(size);
  }
  u8(n: number): void {
    this.buf[this.pos++] = n;
  }
  u32(n: number): void {
    this.buf[this.pos++] = (n >>> 24) & 0xff;
    this.buf[this.pos++] = (n >>> 16) & 0xff;
    this.buf[this.pos++] = (n >>> 8) & 0xff;
    this.buf[this.pos++] = n & 0xff;
  }
  varint(n: number): void {
    // Arithmetic rather than bit operations: values go up to 2^53, beyond int32.
    while (n >= 128) {
      this.buf[this.pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }
  bytes(b: Uint8Array): void {
    this.varint(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
}

function checkUint(n: number, field: string): number {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new CodecError(`Cannot encode raft message: ${field} is not a non-negative safe integer (${n})`);
  }
  return n;
}

// The header's seven numbers are read and written one by one, in this order: to, from,
// term, logTerm, index, commit, rejectHint. (An array of them held small integers or
// doubles by the message, and V8 deoptimized the codec each time the kind changed.)

/** Size of everything in the message except the snapshot data bytes. */
function headSize(m: Message): number {
  let n = 2;
  n += varintLen(checkUint(m.to, "to")) + varintLen(checkUint(m.from, "from")) + varintLen(checkUint(m.term, "term"));
  n += varintLen(checkUint(m.logTerm, "logTerm")) + varintLen(checkUint(m.index, "index")) + varintLen(checkUint(m.commit, "commit"));
  n += varintLen(checkUint(m.rejectHint, "rejectHint"));
  n += varintLen(m.context.length) + m.context.length;
  n += varintLen(m.entries.length);
  for (const e of m.entries) {
    n += varintLen(checkUint(e.term, "entry.term")) + varintLen(checkUint(e.index, "entry.index")) + 1;
    n += varintLen(e.data.length) + e.data.length;
  }
  const s = m.snapshot;
  if (s !== undefined) {
    const md = s.metadata;
    n += varintLen(checkUint(md.index, "snapshot.index")) + varintLen(checkUint(md.term, "snapshot.term"));
    for (const ids of [md.confState.voters, md.confState.learners]) {
      n += varintLen(ids.length);
      for (const id of ids) n += varintLen(checkUint(id, "snapshot.confState id"));
    }
    n += varintLen(s.data.length);
  }
  return n;
}

/**
 * One frame (length prefix + message) as chunks to write in order: the frame head, then
 * the snapshot data when the message carries one (not copied).
 */
export function encodeFrame(m: Message): Uint8Array[] {
  const head = headSize(m);
  const snapData = m.snapshot?.data;
  const total = head + (snapData?.length ?? 0);
  if (total > maxFrame) throw new CodecError(`Cannot encode raft message: ${total} bytes exceed the 4 GiB frame limit`);
  const w = new Writer(4 + head);
  w.u32(total);
  w.u8(m.type);
  w.u8((m.reject ? flagReject : 0) | (m.snapshot !== undefined ? flagSnapshot : 0));
  w.varint(m.to);
  w.varint(m.from);
  w.varint(m.term);
  w.varint(m.logTerm);
  w.varint(m.index);
  w.varint(m.commit);
  w.varint(m.rejectHint);
  w.bytes(m.context);
  w.varint(m.entries.length);
  for (const e of m.entries) {
    w.varint(e.term);
    w.varint(e.index);
    w.u8(e.type);
    w.bytes(e.data);
  }
  if (m.snapshot !== undefined) {
    const md = m.snapshot.metadata;
    w.varint(md.index);
    w.varint(md.term);
    for (const ids of [md.confState.voters, md.confState.learners]) {
      w.varint(ids.length);
      for (const id of ids) w.varint(id);
    }
    w.varint(m.snapshot.data.length);
  }
  return snapData !== undefined && snapData.length > 0 ? [w.buf, snapData] : [w.buf];
}

/** The version byte that opens every batch. */
export function batchHeader(): Uint8Array {
  return Uint8Array.of(codecVersion);
}

/**
 * The empty frame: written on an idle stream so that a dead path shows up as data left
 * unacknowledged (peer.ts), as etcd's link heartbeat does. Readers skip it.
 */
export function heartbeatFrame(): Uint8Array {
  return new Uint8Array(4);
}

/** A whole batch as chunks (for tests and small bodies; the sender frames lazily). */
export function encodeBatch(msgs: readonly Message[]): Uint8Array[] {
  const out = [batchHeader()];
  for (const m of msgs) out.push(...encodeFrame(m));
  return out;
}

class Reader {
  pos: number;
  readonly end: number;
  readonly buf: Uint8Array;
  constructor(buf: Uint8Array, pos: number, end: number) {
    this.buf = buf;
    this.pos = pos;
    this.end = end;
  }
  need(n: number, what: string): void {
    if (this.end - this.pos < n) throw new CodecError(`Cannot decode raft message: truncated ${what} at offset ${this.pos}`);
  }
  u8(what: string): number {
    this.need(1, what);
    return this.buf[this.pos++]!;
  }
  varint(what: string): number {
    let n = 0;
    let mul = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.u8(what);
      n += (b & 0x7f) * mul;
      if (b < 0x80) {
        if (!Number.isSafeInteger(n)) throw new CodecError(`Cannot decode raft message: ${what} exceeds 2^53`);
        return n;
      }
      mul *= 128;
    }
    throw new CodecError(`Cannot decode raft message: ${what} varint longer than 8 bytes`);
  }
  count(what: string, minBytesEach: number): number {
    const n = this.varint(what);
    // A count larger than what the remaining bytes could hold is garbage: refuse it
    // before allocating arrays for it.
    if (n * minBytesEach > this.end - this.pos) throw new CodecError(`Cannot decode raft message: ${what} ${n} exceeds the frame`);
    return n;
  }
  bytes(what: string, copy: boolean): Uint8Array {
    const n = this.varint(`${what} length`);
    this.need(n, what);
    const view = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    if (!copy) return view;
    // Copied into the log's own slabs (raft/entry-arena.ts): small entries share them
    // instead of each holding an ArrayBuffer the garbage collector tracks one by one.
    return retainEntryData(view);
  }
}

function decodeMessage(r: Reader): Message {
  const type = r.u8("type");
  if (type > maxMessageType) throw new CodecError(`Cannot decode raft message: unknown message type ${type}`);
  const flags = r.u8("flags");
  if ((flags & ~(flagReject | flagSnapshot)) !== 0) throw new CodecError(`Cannot decode raft message: unknown flags ${flags}`);
  const to = r.varint("to");
  const from = r.varint("from");
  const term = r.varint("term");
  const logTerm = r.varint("logTerm");
  const index = r.varint("index");
  const commit = r.varint("commit");
  const rejectHint = r.varint("rejectHint");
  const context = r.bytes("context", true);
  const entries: Entry[] = [];
  const nEntries = r.count("entry count", 4);
  for (let i = 0; i < nEntries; i++) {
    const eTerm = r.varint("entry.term");
    const eIndex = r.varint("entry.index");
    const eType = r.u8("entry.type");
    if (eType !== EntryType.Normal && eType !== EntryType.ConfChange) {
      throw new CodecError(`Cannot decode raft message: unknown entry type ${eType}`);
    }
    entries.push({ term: eTerm, index: eIndex, type: eType, data: r.bytes("entry.data", true) });
  }
  const m: Message = {
    type: type as MessageType, to, from, term, logTerm, index, entries, commit,
    reject: (flags & flagReject) !== 0, rejectHint, context,
  };
  if ((flags & flagSnapshot) !== 0) m.snapshot = decodeSnapshot(r);
  return m;
}

function decodeSnapshot(r: Reader): Snapshot {
  const index = r.varint("snapshot.index");
  const term = r.varint("snapshot.term");
  const ids = (what: string): number[] => {
    const n = r.count(what, 1);
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(r.varint(what));
    return out;
  };
  const voters = ids("voters");
  const learners = ids("learners");
  return { data: r.bytes("snapshot.data", false), metadata: { index, term, confState: { voters, learners } } };
}

/**
 * Decodes a stream of frames as it arrives: the version byte first, then frames that
 * may be split across chunks in any way. Each push() returns the messages completed by
 * that chunk, in order. Throws CodecError on an unknown version or a malformed frame; a
 * reader that threw is done (the stream it reads is broken).
 *
 * The bytes of a frame not yet complete are kept as the chunks they came in, and joined
 * once, when the chunk that completes the frame arrives: joining them on every chunk
 * copies a 1 MiB catch-up append once per 64 KiB read, O(size^2), which cost a restarted
 * member ~25 ms of its first second (CPU profile of a restart).
 */
export class FrameReader {
  /** Copies of the chunks since the last complete frame (the caller may reuse a chunk's buffer). */
  #parts: Uint8Array[] = [];
  #buffered = 0;
  /** Buffered bytes the frame being awaited needs (length prefix included); 0 while its length is unknown. */
  #need = 0;
  #versionSeen = false;
  #maxFrame: number;

  /** `maxFrameBytes` bounds one frame: a larger declared length is refused before buffering it. */
  constructor(maxFrameBytes = maxFrame) {
    this.#maxFrame = maxFrameBytes;
  }

  /** True when a partial frame (or only part of the stream head) is buffered. */
  get partial(): boolean {
    return this.#buffered > 0;
  }

  push(chunk: Uint8Array, sizes?: number[]): Message[] {
    // A plain Uint8Array view, so decoded fields are Uint8Array (not Buffer) and
    // slice() copies (Buffer.prototype.slice would be a view).
    let buf = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.#buffered > 0) {
      if (this.#need > 0 && this.#buffered + buf.length < this.#need) {
        this.#parts.push(buf.slice());
        this.#buffered += buf.length;
        return [];
      }
      const joined = new Uint8Array(this.#buffered + buf.length);
      let at = 0;
      for (const part of this.#parts) {
        joined.set(part, at);
        at += part.length;
      }
      joined.set(buf, at);
      buf = joined;
    }
    let pos = 0;
    if (!this.#versionSeen && buf.length > 0) {
      if (buf[0] !== codecVersion) throw new CodecError(`Cannot decode raft batch: unsupported codec version ${buf[0]}`);
      this.#versionSeen = true;
      pos = 1;
    }
    const out: Message[] = [];
    let need = 0;
    while (buf.length - pos >= 4) {
      const len = ((buf[pos]! << 24) >>> 0) + (buf[pos + 1]! << 16) + (buf[pos + 2]! << 8) + buf[pos + 3]!;
      if (len > this.#maxFrame) throw new FrameTooLargeError(`Cannot decode raft batch: frame of ${len} bytes exceeds the limit of ${this.#maxFrame}`);
      if (buf.length - pos - 4 < len) {
        need = 4 + len;
        break;
      }
      if (len === 0) {
        pos += 4;
        continue;
      }
      const r = new Reader(buf, pos + 4, pos + 4 + len);
      out.push(decodeMessage(r));
      if (r.pos !== r.end) throw new CodecError(`Cannot decode raft batch: ${r.end - r.pos} stray bytes in frame at offset ${pos + 4}`);
      pos += 4 + len;
      sizes?.push(4 + len);
    }
    // Keep only the incomplete tail (a copy: the chunk's buffer may be reused by the caller).
    this.#parts = pos === buf.length ? [] : [buf.slice(pos)];
    this.#buffered = buf.length - pos;
    this.#need = need;
    return out;
  }
}

/**
 * Decodes a whole batch body. Throws CodecError on an unknown version, a truncated frame
 * or a frame whose message does not use exactly its declared length. When `sizes` is
 * given, each message's frame size (prefix included) is pushed onto it (for stats).
 */
export function decodeBatch(body: Uint8Array, sizes?: number[]): Message[] {
  if (body.length === 0) throw new CodecError("Cannot decode raft batch: empty body");
  const reader = new FrameReader();
  const out = reader.push(body, sizes);
  if (reader.partial) throw new CodecError(`Cannot decode raft batch: truncated frame at the end of ${body.length} bytes`);
  return out;
}
