// The frame codec and the flow-control counters, without sockets.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ReceiveWindow, SendWindow } from "./flow.ts";
import { ErrorCode, Flag, FrameParser, FrameType, H2Error, frame, headersBytes, unpad, writeHeaders } from "./frame.ts";

type Seen = [type: number, flags: number, id: number, payload: string];

function parseAll(parser: FrameParser, chunks: Buffer[]): Seen[] {
  const seen: Seen[] = [];
  for (const c of chunks) parser.push(c, (t, f, id, p) => seen.push([t, f, id, p.toString("hex")]));
  return seen;
}

test("parser: frames cut anywhere across chunks come out whole and in order", () => {
  const bytes = Buffer.concat([frame(FrameType.DATA, Flag.END_STREAM, 1, Buffer.from("abc")), frame(FrameType.PING, 0, 0, Buffer.alloc(8, 7)), frame(FrameType.SETTINGS, Flag.ACK, 0)]);
  const want: Seen[] = [
    [FrameType.DATA, Flag.END_STREAM, 1, "616263"],
    [FrameType.PING, 0, 0, "0707070707070707"],
    [FrameType.SETTINGS, Flag.ACK, 0, ""],
  ];
  for (let cut = 0; cut <= bytes.length; cut++) {
    assert.deepEqual(parseAll(new FrameParser(), [bytes.subarray(0, cut), bytes.subarray(cut)]), want, `cut at ${cut}`);
  }
  const oneByOne = Array.from(bytes, (b) => Buffer.from([b]));
  assert.deepEqual(parseAll(new FrameParser(), oneByOne), want);
});

test("parser: the stream id's reserved bit is ignored; a frame over SETTINGS_MAX_FRAME_SIZE is a FRAME_SIZE_ERROR from its header", () => {
  const f = frame(FrameType.DATA, 0, 3, Buffer.from("x"));
  f[5]! |= 0x80;
  assert.deepEqual(parseAll(new FrameParser(), [f]), [[FrameType.DATA, 0, 3, "78"]]);
  const big = Buffer.alloc(9);
  big.writeUIntBE(16_385, 0, 3);
  assert.throws(() => parseAll(new FrameParser(), [big]), (e: unknown) => e instanceof H2Error && e.code === ErrorCode.FRAME_SIZE_ERROR);
});

test("unpad: padding removed; a pad length reaching the end is a PROTOCOL_ERROR", () => {
  assert.equal(unpad(Flag.PADDED, Buffer.from([2, 0x61, 0x62, 0, 0])).toString(), "ab");
  assert.equal(unpad(0, Buffer.from("ab")).toString(), "ab");
  assert.equal(unpad(Flag.PADDED, Buffer.from([0])).length, 0);
  assert.equal(unpad(Flag.PADDED, Buffer.from([1, 0])).length, 0);
  assert.throws(() => unpad(Flag.PADDED, Buffer.from([2, 0])), (e: unknown) => e instanceof H2Error && e.code === ErrorCode.PROTOCOL_ERROR);
  assert.throws(() => unpad(Flag.PADDED, Buffer.alloc(0)), H2Error);
});

test("writeHeaders: a block over the peer's frame size goes as HEADERS + CONTINUATION, END_STREAM on the first only", () => {
  const block = Buffer.alloc(40_000, 1);
  const out = Buffer.alloc(headersBytes(block, 16_384));
  assert.equal(writeHeaders(out, 0, 5, block, true, 16_384), out.length);
  const seen = parseAll(new FrameParser(), [out]);
  assert.deepEqual(
    seen.map(([t, f, id, p]) => [t, f, id, p.length / 2]),
    [
      [FrameType.HEADERS, Flag.END_STREAM, 5, 16_384],
      [FrameType.CONTINUATION, 0, 5, 16_384],
      [FrameType.CONTINUATION, Flag.END_HEADERS, 5, 40_000 - 2 * 16_384],
    ],
  );
  const small = Buffer.alloc(headersBytes(Buffer.from([0x88]), 16_384));
  writeHeaders(small, 0, 1, Buffer.from([0x88]), false, 16_384);
  assert.deepEqual(parseAll(new FrameParser(), [small]), [[FrameType.HEADERS, Flag.END_HEADERS, 1, "88"]]);
});

test("send window: consumed, reopened, lowered below zero by SETTINGS; 0 and overflow refused", () => {
  const w = new SendWindow(65_535, 1);
  w.consume(65_535);
  assert.equal(w.available, 0);
  w.adjust(-100);
  assert.equal(w.available, -100);
  w.update(200);
  assert.equal(w.available, 100);
  assert.throws(() => w.update(0), (e: unknown) => e instanceof H2Error && e.code === ErrorCode.PROTOCOL_ERROR && e.streamId === 1);
  assert.throws(() => w.update(2 ** 31 - 1), (e: unknown) => e instanceof H2Error && e.code === ErrorCode.FLOW_CONTROL_ERROR);
});

test("receive window: over the window is a FLOW_CONTROL_ERROR; given back once half is used", () => {
  const w = new ReceiveWindow(1000, 3);
  w.receive(400);
  assert.equal(w.consumed(), 0, "under half: nothing yet");
  w.receive(200);
  assert.equal(w.consumed(), 600);
  assert.equal(w.available, 1000);
  assert.throws(() => w.receive(1001), (e: unknown) => e instanceof H2Error && e.code === ErrorCode.FLOW_CONTROL_ERROR && e.streamId === 3);
});
