import { test } from "node:test";
import assert from "node:assert/strict";
import { EntryType, MessageType, message, type Message } from "../raft/index.ts";
import { CodecError, FrameReader, batchHeader, decodeBatch, encodeBatch, encodeFrame, heartbeatFrame } from "./codec.ts";

function concat(chunks: Uint8Array[]): Buffer {
  return Buffer.concat(chunks);
}

function roundTrip(msgs: Message[]): Message[] {
  return decodeBatch(concat(encodeBatch(msgs)));
}

const max = Number.MAX_SAFE_INTEGER;
const bytes = (...b: number[]): Uint8Array => Uint8Array.from(b);

const cases: { name: string; m: Message }[] = [
  { name: "zero-valued MsgHeartbeat", m: message({ type: MessageType.MsgHeartbeat }) },
  {
    name: "every scalar field set",
    m: message({ type: MessageType.MsgAppResp, to: 2, from: 1, term: 7, logTerm: 6, index: 300, commit: 299, reject: true, rejectHint: 250 }),
  },
  {
    name: "2^53 - 1 in every number field",
    m: message({ type: MessageType.MsgApp, to: max, from: max, term: max, logTerm: max, index: max, commit: max, rejectHint: max }),
  },
  { name: "a context", m: message({ type: MessageType.MsgReadIndex, to: 1, from: 3, context: bytes(0, 1, 255, 128) }) },
  {
    name: "entries of both types, empty and non-empty data",
    m: message({
      type: MessageType.MsgApp,
      to: 3,
      from: 1,
      term: 2,
      entries: [
        { term: 2, index: 10, type: EntryType.Normal, data: new Uint8Array(0) },
        { term: 2, index: 11, type: EntryType.ConfChange, data: bytes(8, 1, 16, 0) },
        { term: max, index: max, type: EntryType.Normal, data: new Uint8Array(70_000).fill(7) },
      ],
      commit: 10,
    }),
  },
  {
    name: "a snapshot with voters, learners and data",
    m: message({
      type: MessageType.MsgSnap,
      to: 2,
      from: 1,
      term: 5,
      snapshot: { data: bytes(1, 2, 3, 4, 5), metadata: { index: 1000, term: 4, confState: { voters: [1, 2, max], learners: [9] } } },
    }),
  },
  {
    name: "a snapshot with empty data and empty conf state",
    m: message({
      type: MessageType.MsgSnap,
      to: 2,
      from: 1,
      snapshot: { data: new Uint8Array(0), metadata: { index: 1, term: 1, confState: { voters: [], learners: [] } } },
    }),
  },
];

for (const c of cases) {
  test(`codec round-trips a message with ${c.name}`, () => {
    assert.deepStrictEqual(roundTrip([c.m]), [c.m]);
  });
}

test("codec round-trips every non-local message type in one batch, in order", () => {
  const msgs = Object.values(MessageType).map((type, i) => message({ type, to: 1, from: 2, index: i }));
  assert.deepStrictEqual(roundTrip(msgs), msgs);
});

test("codec round-trips an empty batch", () => {
  assert.deepStrictEqual(roundTrip([]), []);
});

test("decodeBatch returns plain Uint8Arrays and frame sizes when decoding a Buffer", () => {
  const m = cases[4]!.m;
  const s = cases[5]!.m;
  const body = concat(encodeBatch([m, s]));
  const sizes: number[] = [];
  const [dm, ds] = decodeBatch(body, sizes);
  assert.equal(Object.getPrototypeOf(dm!.entries[1]!.data), Uint8Array.prototype);
  assert.equal(Object.getPrototypeOf(ds!.snapshot!.data), Uint8Array.prototype);
  assert.equal(Object.getPrototypeOf(dm!.context), Uint8Array.prototype);
  assert.deepEqual(sizes, [concat(encodeFrame(m)).length, concat(encodeFrame(s)).length]);
  assert.equal(1 + sizes[0]! + sizes[1]!, body.length);
});

test("decodeBatch copies entry data out of the body when the body is reused", () => {
  const body = concat(encodeBatch([cases[4]!.m]));
  const [m] = decodeBatch(body);
  body.fill(0);
  assert.deepStrictEqual(m!.entries[1]!.data, bytes(8, 1, 16, 0));
});

test("encodeFrame returns the snapshot data as its own chunk, not a copy", () => {
  const m = cases[5]!.m;
  const chunks = encodeFrame(m);
  assert.equal(chunks.length, 2);
  assert.equal(chunks[1], m.snapshot!.data);
});

test("the encoding is compact: a heartbeat takes a few bytes", () => {
  const hb = message({ type: MessageType.MsgHeartbeat, to: 0x1234_5678_9abc, from: 0x0fed_cba9_8765, term: 12, commit: 4000 });
  assert.ok(concat(encodeFrame(hb)).length <= 4 + 2 + 7 + 7 + 1 + 3 + 5, "heartbeat frame larger than expected");
});

const encodeErrors: { name: string; m: Message }[] = [
  { name: "a negative term", m: message({ type: MessageType.MsgApp, term: -1 }) },
  { name: "a fractional index", m: message({ type: MessageType.MsgApp, index: 1.5 }) },
  { name: "an id beyond 2^53", m: message({ type: MessageType.MsgApp, to: 2 ** 53 }) },
  {
    name: "an entry index that is NaN",
    m: message({ type: MessageType.MsgApp, entries: [{ term: 1, index: Number.NaN, type: EntryType.Normal, data: bytes() }] }),
  },
];

for (const c of encodeErrors) {
  test(`encodeFrame throws CodecError when given ${c.name}`, () => {
    assert.throws(() => encodeFrame(c.m), CodecError);
  });
}

function validBody(): Buffer {
  return concat(encodeBatch([cases[4]!.m]));
}

/** A batch of one frame holding `msg` bytes, length prefix computed. */
function frame(...msg: number[]): Uint8Array {
  const n = msg.length;
  return bytes(1, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff, ...msg);
}
const zeros = (n: number): number[] => new Array<number>(n).fill(0);
// type, flags, 7 header varints, context length, entry count: 11 bytes when all zero.

const decodeErrors: { name: string; body: () => Uint8Array; pattern: RegExp }[] = [
  { name: "the body is empty", body: () => bytes(), pattern: /empty body/ },
  { name: "the version is unknown", body: () => bytes(2, 0, 0, 0, 0), pattern: /unsupported codec version 2/ },
  { name: "a frame length is cut", body: () => bytes(1, 0, 0), pattern: /truncated frame at the end of 3 bytes/ },
  { name: "a frame is cut", body: () => validBody().subarray(0, 40), pattern: /truncated frame at the end of 40 bytes/ },
  { name: "a message ends early", body: () => frame(8, 0, 0), pattern: /truncated from at offset 8/ },
  { name: "a frame has stray bytes", body: () => frame(8, ...zeros(10), 0xee), pattern: /1 stray bytes/ },
  { name: "the message type is unknown", body: () => frame(19, ...zeros(10)), pattern: /unknown message type 19/ },
  { name: "the flags are unknown", body: () => frame(8, 4, ...zeros(9)), pattern: /unknown flags 4/ },
  { name: "an entry type is unknown", body: () => frame(3, ...zeros(9), 1, 1, 1, 9, 0), pattern: /unknown entry type 9/ },
  { name: "a varint exceeds 2^53", body: () => frame(8, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), pattern: /to exceeds 2\^53/ },
  { name: "a varint is longer than 8 bytes", body: () => frame(8, 0, ...new Array<number>(9).fill(0x80)), pattern: /longer than 8 bytes/ },
  { name: "an entry count exceeds the frame", body: () => frame(3, ...zeros(9), 0xff, 0x7f), pattern: /entry count 16383 exceeds the frame/ },
  { name: "a snapshot is cut", body: () => frame(7, 2, ...zeros(9), 5, 1), pattern: /truncated voters/ },
];

test("FrameReader decodes a stream split at every byte the same as the whole batch", () => {
  const msgs = cases.map((c) => c.m);
  const body = concat(encodeBatch(msgs));
  const reader = new FrameReader();
  const got: Message[] = [];
  const sizes: number[] = [];
  for (let i = 0; i < body.length; i++) got.push(...reader.push(body.subarray(i, i + 1), sizes));
  assert.equal(reader.partial, false);
  assert.deepStrictEqual(got, decodeBatch(body));
  assert.equal(sizes.reduce((a, b) => a + b, 1), body.length);
});

test("FrameReader skips link heartbeats (empty frames) between messages, split anywhere", () => {
  const msgs = cases.map((c) => c.m);
  const parts: Uint8Array[] = [batchHeader(), heartbeatFrame()];
  for (const m of msgs) parts.push(...encodeFrame(m), heartbeatFrame());
  const body = concat(parts);
  const reader = new FrameReader();
  const got: Message[] = [];
  for (let i = 0; i < body.length; i += 3) got.push(...reader.push(body.subarray(i, i + 3)));
  assert.equal(reader.partial, false);
  assert.deepStrictEqual(got, msgs);
  assert.deepStrictEqual(decodeBatch(concat([batchHeader(), heartbeatFrame()])), []);
});

test("FrameReader refuses a declared frame length above its bound before buffering it", () => {
  const reader = new FrameReader(16);
  assert.throws(() => reader.push(bytes(1, 0, 0, 1, 0)), /frame of 256 bytes exceeds the limit of 16/);
});

for (const c of decodeErrors) {
  test(`decodeBatch throws CodecError when ${c.name}`, () => {
    assert.throws(() => decodeBatch(c.body()), (err: unknown) => err instanceof CodecError && c.pattern.test(err.message));
  });
}

test("FrameReader: a 1 MiB append in 4 KiB reads from one reused buffer decodes whole, on the read that completes it", () => {
  const data = new Uint8Array(500).fill(7);
  const entries = Array.from({ length: 2100 }, (_, i) => ({ term: 3, index: 10 + i, type: EntryType.Normal, data }));
  const big = message({ type: MessageType.MsgApp, to: 2, from: 1, term: 3, logTerm: 3, index: 9, commit: 9, entries });
  const small = message({ type: MessageType.MsgHeartbeat, to: 2, from: 1, term: 3, commit: 9 });
  const body = concat(encodeBatch([big, small]));
  assert.ok(body.length > 1024 * 1024, `${body.length} bytes`);
  const reader = new FrameReader();
  // The caller's buffer is overwritten by each read, as a socket's may be: the reader keeps copies.
  const scratch = new Uint8Array(4096);
  const got: Message[][] = [];
  for (let i = 0; i < body.length; i += scratch.length) {
    const n = Math.min(scratch.length, body.length - i);
    scratch.set(body.subarray(i, i + n));
    got.push(reader.push(scratch.subarray(0, n)));
    scratch.fill(0xff);
    if (i + n < body.length) assert.equal(reader.partial, true);
  }
  assert.equal(reader.partial, false);
  const nonEmpty = got.flatMap((msgs, read) => (msgs.length > 0 ? [read] : []));
  assert.deepStrictEqual(nonEmpty, [got.length - 1], "the append completes on the last read, with the heartbeat behind it");
  assert.deepStrictEqual(got[got.length - 1], [big, small]);
});
