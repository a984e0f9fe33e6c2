// The HTTP/2 transport's edges, driven frame by frame from a raw TCP client against the
// gRPC server (over the gateway tests' fake backend): bad frames and the RFC's errors,
// CONTINUATION and padding, HPACK's dynamic table across calls, flow control with a
// client that does not read (and one that widens its window on a live stream), the
// concurrent-stream limit, a client's RST_STREAM mid-stream, GOAWAY both ways.
import assert from "node:assert/strict";
import { connect, createServer, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { eventually } from "../../../until.test-helper.ts";
import { FakeV3Backend } from "../../http/v3-fake-backend.test-helper.ts";
import { MessageReader, frameMessage } from "../frames.ts";
import { RangeResponseSchema, WatchRequestSchema } from "../gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { rangeFrame, startGrpcTestServer, type GrpcTestServer } from "../grpc-test-server.test-helper.ts";
import { ErrorCode, Flag, FrameParser, FrameType, PREFACE, Setting, frame, settingsFrame, windowUpdateFrame, rstStreamFrame } from "./frame.ts";
import { H2Connection } from "./connection.ts";
import { HeaderBlock } from "./stream.ts";
import { HpackDecoder, encodeHeaderBlock } from "./hpack.ts";

interface Frame {
  type: number;
  flags: number;
  id: number;
  payload: Buffer;
}

const RANGE = "/etcdserverpb.KV/Range";
const WATCH = "/etcdserverpb.Watch/Watch";

function requestBlock(path: string): Buffer {
  return encodeHeaderBlock({ ":method": "POST", ":scheme": "http", ":path": path, ":authority": "x", "content-type": "application/grpc", te: "trailers" });
}

class RawClient {
  readonly frames: Frame[] = [];
  readonly #parser = new FrameParser();
  readonly decoder = new HpackDecoder();
  closed = false;
  readonly socket: Socket;
  constructor(socket: Socket) {
    this.socket = socket;
    this.#parser.maxFrame = 1 << 24;
    socket.on("data", (c: Buffer) => this.#parser.push(c, (type, flags, id, payload) => this.frames.push({ type, flags, id, payload: Buffer.from(payload) })));
    socket.on("close", () => (this.closed = true));
    socket.on("error", () => undefined);
  }

  static async open(port: number, settings: Array<[number, number]> = [], preface = true): Promise<RawClient> {
    const socket = connect(port, "127.0.0.1");
    await new Promise<void>((r) => socket.once("connect", r));
    const c = new RawClient(socket);
    if (preface) c.send(PREFACE, settingsFrame(settings));
    return c;
  }

  send(...bufs: Buffer[]): void {
    this.socket.write(Buffer.concat(bufs));
  }

  /** The first frame (from `from` on) that `pred` accepts. */
  next(pred: (f: Frame) => boolean, what: string, from = 0): Promise<Frame> {
    return eventually(() => this.frames.slice(from).find(pred), what);
  }

  goaway(): Promise<Frame> {
    return this.next((f) => f.type === FrameType.GOAWAY, "GOAWAY");
  }

  /** The DATA bytes received on a stream so far. */
  dataOf(id: number): Buffer {
    return Buffer.concat(this.frames.filter((f) => f.type === FrameType.DATA && f.id === id).map((f) => f.payload));
  }

  /** A decoded header block (HEADERS + CONTINUATION) of a stream, in order of arrival. */
  headersOf(id: number): (readonly string[])[] {
    return this.frames.filter((f) => f.type === FrameType.HEADERS && f.id === id).map((f) => this.decoder.decode(f.payload));
  }

  /** Round trip: every frame the server sent before answering this PING is in. */
  async sync(): Promise<void> {
    const payload = Buffer.from(String(Math.random()).slice(0, 8).padEnd(8, "0"));
    const from = this.frames.length;
    this.send(frame(FrameType.PING, 0, 0, payload));
    await this.next((f) => f.type === FrameType.PING && (f.flags & Flag.ACK) !== 0 && f.payload.equals(payload), "PING ACK", from);
  }

  close(): void {
    this.socket.destroy();
  }
}

const goawayCode = (f: Frame): number => f.payload.readUInt32BE(4);
const rstCode = (f: Frame): number => f.payload.readUInt32BE(0);

describe("HTTP/2 transport edges", () => {
  const backend = new FakeV3Backend();
  let server: GrpcTestServer<FakeV3Backend>;
  const clients: RawClient[] = [];
  const open = async (settings: Array<[number, number]> = [], preface = true): Promise<RawClient> => {
    const c = await RawClient.open(server.port, settings, preface);
    clients.push(c);
    return c;
  };

  before(async () => {
    server = await startGrpcTestServer(backend, { server: { maxConcurrentStreams: 3 } });
    await backend.put({ key: Buffer.from("big"), value: Buffer.alloc(100_000, 0x61), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, { token: undefined });
    await backend.put({ key: Buffer.from("k"), value: Buffer.from("v"), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, { token: undefined });
  });
  after(() => {
    for (const c of clients) c.close();
    server.close();
  });

  test("our SETTINGS (concurrent streams, stream window) and the connection's window; theirs acknowledged", async () => {
    const c = await open();
    const s = await c.next((f) => f.type === FrameType.SETTINGS && f.flags === 0, "SETTINGS");
    const values = new Map<number, number>();
    for (let at = 0; at < s.payload.length; at += 6) values.set(s.payload.readUInt16BE(at), s.payload.readUInt32BE(at + 2));
    assert.equal(values.get(Setting.MAX_CONCURRENT_STREAMS), 3);
    assert.equal(values.get(Setting.INITIAL_WINDOW_SIZE), 1 << 20);
    // grpc-go advertises a header list limit only when configured (etcd does not).
    assert.equal(values.has(Setting.MAX_HEADER_LIST_SIZE), false);
    const wu = await c.next((f) => f.type === FrameType.WINDOW_UPDATE && f.id === 0, "connection WINDOW_UPDATE");
    assert.equal(wu.payload.readUInt32BE(0), (16 << 20) - 65_535);
    await c.next((f) => f.type === FrameType.SETTINGS && f.flags === Flag.ACK, "SETTINGS ACK");
  });

  const connectionErrors: Array<[string, (c: RawClient) => void, number]> = [
    ["DATA on an idle stream", (c) => c.send(frame(FrameType.DATA, 0, 1, Buffer.from("x"))), ErrorCode.PROTOCOL_ERROR],
    ["HEADERS with an even stream id", (c) => c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 2, requestBlock(RANGE))), ErrorCode.PROTOCOL_ERROR],
    ["PING of 7 bytes", (c) => c.send(frame(FrameType.PING, 0, 0, Buffer.alloc(7))), ErrorCode.FRAME_SIZE_ERROR],
    ["SETTINGS on a stream", (c) => c.send(frame(FrameType.SETTINGS, 0, 1)), ErrorCode.PROTOCOL_ERROR],
    ["SETTINGS ENABLE_PUSH 2", (c) => c.send(settingsFrame([[Setting.ENABLE_PUSH, 2]])), ErrorCode.PROTOCOL_ERROR],
    ["SETTINGS INITIAL_WINDOW_SIZE 2^31", (c) => c.send(settingsFrame([[Setting.INITIAL_WINDOW_SIZE, 2 ** 31]])), ErrorCode.FLOW_CONTROL_ERROR],
    ["a frame over 16,384 bytes", (c) => c.send(frame(FrameType.DATA, 0, 1, Buffer.alloc(16_385))), ErrorCode.FRAME_SIZE_ERROR],
    ["a header block HPACK cannot decode", (c) => c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, Buffer.from([0x80]))), ErrorCode.COMPRESSION_ERROR],
    ["PUSH_PROMISE from the client", (c) => c.send(frame(FrameType.PUSH_PROMISE, Flag.END_HEADERS, 1, Buffer.alloc(4))), ErrorCode.PROTOCOL_ERROR],
    ["RST_STREAM on an idle stream", (c) => c.send(rstStreamFrame(5, ErrorCode.CANCEL)), ErrorCode.PROTOCOL_ERROR],
    [
      "another frame between HEADERS and its CONTINUATION",
      (c) => c.send(frame(FrameType.HEADERS, 0, 1, requestBlock(RANGE).subarray(0, 3)), frame(FrameType.PING, 0, 0, Buffer.alloc(8))),
      ErrorCode.PROTOCOL_ERROR,
    ],
    ["connection WINDOW_UPDATE over 2^31-1", (c) => c.send(windowUpdateFrame(0, 2 ** 31 - 1)), ErrorCode.FLOW_CONTROL_ERROR],
  ];
  for (const [what, act, code] of connectionErrors) {
    test(`connection error: ${what} -> GOAWAY ${code}, then the connection closes`, async () => {
      const c = await open();
      act(c);
      const g = await c.goaway();
      assert.equal(goawayCode(g), code);
      await eventually(() => c.closed || undefined, "connection closed");
    });
  }

  test("a bad preface and a first frame other than SETTINGS are PROTOCOL_ERRORs", async () => {
    const a = await open([], false);
    a.send(PREFACE, frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
    assert.equal(goawayCode(await a.goaway()), ErrorCode.PROTOCOL_ERROR);
    const b = await open([], false);
    b.send(Buffer.from("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"));
    assert.equal(goawayCode(await b.goaway()), ErrorCode.PROTOCOL_ERROR);
  });

  test("stream errors reset the stream and leave the connection working", async () => {
    const c = await open();
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(WATCH)));
    c.send(windowUpdateFrame(1, 0));
    assert.equal(rstCode(await c.next((f) => f.type === FrameType.RST_STREAM && f.id === 1, "RST 1")), ErrorCode.PROTOCOL_ERROR);
    // A request with an upper-case header name is malformed (RFC 9113 §8.2.1).
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 3, Buffer.concat([requestBlock(RANGE), encodeHeaderBlock({ x: "1" }).fill(0x58, 2, 3)])));
    assert.equal(rstCode(await c.next((f) => f.type === FrameType.RST_STREAM && f.id === 3, "RST 3")), ErrorCode.PROTOCOL_ERROR);
    // PRIORITY depending on itself.
    const prio = Buffer.alloc(5);
    prio.writeUInt32BE(5, 0);
    c.send(frame(FrameType.PRIORITY, 0, 5, prio));
    assert.equal(rstCode(await c.next((f) => f.type === FrameType.RST_STREAM && f.id === 5, "RST 5")), ErrorCode.PROTOCOL_ERROR);
    await c.sync();
    assert.ok(!c.frames.some((f) => f.type === FrameType.GOAWAY));
  });

  test("DATA after the client's END_STREAM on a stream still open: connection error STREAM_CLOSED", async () => {
    const c = await open();
    // A Watch stream half-closed by the client stays open (etcd keeps its watchers).
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, requestBlock(WATCH)));
    await c.sync();
    c.send(frame(FrameType.DATA, 0, 1, Buffer.from("x")));
    assert.equal(goawayCode(await c.goaway()), ErrorCode.STREAM_CLOSED);
  });

  test("HEADERS with padding, PRIORITY and CONTINUATION, padded DATA in two frames: one answer, HEADERS DATA trailers", async () => {
    const c = await open();
    const block = requestBlock(RANGE);
    const first = Buffer.concat([Buffer.from([3]), Buffer.from([0, 0, 0, 0, 16]), block.subarray(0, 10), Buffer.alloc(3)]);
    c.send(
      frame(FrameType.HEADERS, Flag.PADDED | Flag.PRIORITY, 1, first),
      frame(FrameType.CONTINUATION, 0, 1, block.subarray(10, 20)),
      frame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, block.subarray(20)),
    );
    const msg = rangeFrame("k");
    c.send(frame(FrameType.DATA, Flag.PADDED, 1, Buffer.concat([Buffer.from([4]), msg.subarray(0, 4), Buffer.alloc(4)])));
    c.send(frame(FrameType.DATA, Flag.END_STREAM, 1, msg.subarray(4)));
    await c.next((f) => f.type === FrameType.HEADERS && f.id === 1 && (f.flags & Flag.END_STREAM) !== 0, "trailers");
    const kinds = c.frames.filter((f) => f.id === 1).map((f) => f.type);
    assert.deepEqual(kinds, [FrameType.HEADERS, FrameType.DATA, FrameType.HEADERS]);
    const [headers, trailers] = c.headersOf(1);
    assert.deepEqual(headers, [":status", "200", "content-type", "application/grpc"]);
    assert.deepEqual(trailers, ["grpc-status", "0", "grpc-message", ""]);
    const [m] = new MessageReader(1 << 20).push(c.dataOf(1));
    assert.equal(Buffer.from(fromBinary(RangeResponseSchema, m!).kvs[0]!.value).toString(), "v");
  });

  test("HPACK: fields the client indexed in one call are referred to by index in the next", async () => {
    const c = await open();
    // Literal with incremental indexing, new name: 0x40, then name and value (no Huffman).
    const lit = (n: string, v: string): Buffer => Buffer.concat([Buffer.from([0x40, n.length]), Buffer.from(n), Buffer.from([v.length]), Buffer.from(v)]);
    const firstBlock = Buffer.concat([Buffer.from([0x83, 0x86]), lit(":path", RANGE), lit("content-type", "application/grpc")]);
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, firstBlock), frame(FrameType.DATA, Flag.END_STREAM, 1, rangeFrame("k")));
    // Index 62 is the newest entry (content-type), 63 the :path.
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 3, Buffer.from([0x83, 0x86, 0x80 | 63, 0x80 | 62])), frame(FrameType.DATA, Flag.END_STREAM, 3, rangeFrame("k")));
    for (const id of [1, 3]) {
      await c.next((f) => f.type === FrameType.HEADERS && f.id === id && (f.flags & Flag.END_STREAM) !== 0, `trailers of ${id}`);
      assert.deepEqual(c.headersOf(id)[1], ["grpc-status", "0", "grpc-message", ""]);
    }
  });

  test("a header list over 16 MiB (grpc-go's limit): RST_STREAM FRAME_SIZE_ERROR, and the connection and HPACK's table go on", async () => {
    const c = await open();
    /** RFC 7541 §5.1 integer with an N-bit prefix, `flags` in the first byte. */
    const int = (v: number, bits: number, flags: number): number[] => {
      const max = (1 << bits) - 1;
      if (v < max) return [flags | v];
      const out = [flags | max];
      for (v -= max; v >= 128; v >>= 7) out.push((v & 0x7f) | 0x80);
      out.push(v);
      return out;
    };
    const lit = (n: string, v: string): Buffer => Buffer.concat([Buffer.from([0x40, ...int(n.length, 7, 0)]), Buffer.from(n), Buffer.from(int(v.length, 7, 0)), Buffer.from(v)]);
    // One 4,000-byte field indexed, then referred to 4,200 times (one byte each): an 8 KiB
    // block whose list is 4,201 x 4,037 bytes, over 16 MiB.
    const big = lit("x-big", "a".repeat(4000));
    const block = Buffer.concat([Buffer.from([0x83, 0x86]), lit(":path", RANGE), lit("content-type", "application/grpc"), big, Buffer.alloc(4200, 0x80 | 62)]);
    assert.ok(block.length < 16_384);
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, block));
    assert.equal(rstCode(await c.next((f) => f.type === FrameType.RST_STREAM && f.id === 1, "RST 1")), ErrorCode.FRAME_SIZE_ERROR);
    // Its body crossing the reset is ignored; the table holds the block's last entry (x-big,
    // 4,037 bytes of 4,096: the two before it were evicted), index 62.
    c.send(frame(FrameType.DATA, Flag.END_STREAM, 1, rangeFrame("k")));
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 3, Buffer.concat([requestBlock(RANGE), Buffer.from([0x80 | 62])])), frame(FrameType.DATA, Flag.END_STREAM, 3, rangeFrame("k")));
    await c.next((f) => f.type === FrameType.HEADERS && f.id === 3 && (f.flags & Flag.END_STREAM) !== 0, "trailers of 3");
    assert.deepEqual(c.headersOf(3)[1], ["grpc-status", "0", "grpc-message", ""]);
    assert.ok(!c.frames.some((f) => f.type === FrameType.GOAWAY));
  });

  test("a client that does not read gets no more than its window; WINDOW_UPDATE lets the rest go", async () => {
    const c = await open();
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(RANGE)), frame(FrameType.DATA, Flag.END_STREAM, 1, rangeFrame("big")));
    await eventually(() => c.dataOf(1).length === 65_535 || undefined, "a window's worth of DATA");
    await c.sync();
    assert.equal(c.dataOf(1).length, 65_535, "nothing past the stream and connection windows");
    assert.ok(!c.frames.some((f) => f.type === FrameType.HEADERS && f.id === 1 && (f.flags & Flag.END_STREAM) !== 0));
    c.send(windowUpdateFrame(0, 1 << 20), windowUpdateFrame(1, 1 << 20));
    await c.next((f) => f.type === FrameType.HEADERS && f.id === 1 && (f.flags & Flag.END_STREAM) !== 0, "trailers");
    const [m] = new MessageReader(1 << 20).push(c.dataOf(1));
    assert.equal(fromBinary(RangeResponseSchema, m!).kvs[0]!.value.length, 100_000);
    assert.ok(c.frames.every((f) => f.payload.length <= 16_384), "no frame over the client's MAX_FRAME_SIZE");
  });

  test("INITIAL_WINDOW_SIZE raised on a live stream opens it; a lowered HEADER_TABLE_SIZE is announced", async () => {
    const c = await open([
      [Setting.INITIAL_WINDOW_SIZE, 10],
      [Setting.HEADER_TABLE_SIZE, 0],
    ]);
    await c.next((f) => f.type === FrameType.SETTINGS && f.flags === Flag.ACK, "SETTINGS ACK");
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(RANGE)), frame(FrameType.DATA, Flag.END_STREAM, 1, rangeFrame("k")));
    await eventually(() => c.dataOf(1).length === 10 || undefined, "10 bytes");
    await c.sync();
    assert.equal(c.dataOf(1).length, 10);
    const firstHeaders = c.frames.find((f) => f.type === FrameType.HEADERS && f.id === 1)!;
    assert.equal(firstHeaders.payload[0], 0x20, "a dynamic table size update to 0 first");
    c.send(settingsFrame([[Setting.INITIAL_WINDOW_SIZE, 65_535]]));
    await c.next((f) => f.type === FrameType.HEADERS && f.id === 1 && (f.flags & Flag.END_STREAM) !== 0, "trailers");
    assert.deepEqual(c.headersOf(1)[1], ["grpc-status", "0", "grpc-message", ""]);
  });

  test("a stream held by its window does not hold another stream of the connection", async () => {
    const c = await open([[Setting.INITIAL_WINDOW_SIZE, 10]]);
    await c.next((f) => f.type === FrameType.SETTINGS && f.flags === Flag.ACK, "SETTINGS ACK");
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(RANGE)), frame(FrameType.DATA, Flag.END_STREAM, 1, rangeFrame("big")));
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 3, requestBlock(RANGE)), frame(FrameType.DATA, Flag.END_STREAM, 3, rangeFrame("k")));
    await eventually(() => (c.dataOf(1).length === 10 && c.dataOf(3).length === 10) || undefined, "10 bytes on each");
    c.send(windowUpdateFrame(3, 100_000));
    await c.next((f) => f.type === FrameType.HEADERS && f.id === 3 && (f.flags & Flag.END_STREAM) !== 0, "stream 3 answered whole");
    await c.sync();
    assert.equal(c.dataOf(1).length, 10, "stream 1 still waits for its window");
  });

  test("a stream over MAX_CONCURRENT_STREAMS is refused; a client's RST_STREAM frees its place", async () => {
    const c = await open();
    for (const id of [1, 3, 5, 7]) c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, id, requestBlock(WATCH)));
    assert.equal(rstCode(await c.next((f) => f.type === FrameType.RST_STREAM && f.id === 7, "RST 7")), ErrorCode.REFUSED_STREAM);
    // Mid-stream: a watcher created on 1, then the client cancels it.
    c.send(frame(FrameType.DATA, 0, 1, frameMessage(toBinary(WatchRequestSchema, create(WatchRequestSchema, { requestUnion: { case: "createRequest", value: { key: Buffer.from("w") } } })))));
    await eventually(() => c.dataOf(1).length > 0 || undefined, "watch created");
    const watchers = backend.watchers.size;
    c.send(rstStreamFrame(1, ErrorCode.CANCEL));
    await eventually(() => backend.watchers.size === watchers - 1 || undefined, "the watcher canceled with its stream");
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 9, requestBlock(RANGE)), frame(FrameType.DATA, Flag.END_STREAM, 9, rangeFrame("k")));
    await c.next((f) => f.type === FrameType.HEADERS && f.id === 9 && (f.flags & Flag.END_STREAM) !== 0, "call 9 answered");
    await c.sync();
    assert.ok(!c.frames.some((f) => f.id === 1 && f.type === FrameType.RST_STREAM), "no RST_STREAM answers theirs");
  });

  test("many concurrent streams on one connection are all answered (no limit set)", async (t) => {
    const unlimited = await startGrpcTestServer(backend);
    t.after(() => unlimited.close());
    const c = await RawClient.open(unlimited.port);
    clients.push(c);
    const ids = Array.from({ length: 300 }, (_, i) => 2 * i + 1);
    for (const id of ids) {
      c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, id, requestBlock(RANGE)), frame(FrameType.DATA, Flag.END_STREAM, id, rangeFrame("k")));
    }
    await eventually(() => ids.every((id) => c.frames.some((f) => f.type === FrameType.HEADERS && f.id === id && (f.flags & Flag.END_STREAM) !== 0)) || undefined, "300 answers");
    assert.ok(!c.frames.some((f) => f.type === FrameType.RST_STREAM), "none refused");
  });

  test("trailers on a stream already answered are ignored; a request reusing its id is a PROTOCOL_ERROR", async () => {
    const c = await open();
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(RANGE)), frame(FrameType.DATA, Flag.END_STREAM, 1, rangeFrame("k")));
    await c.next((f) => f.type === FrameType.HEADERS && f.id === 1 && (f.flags & Flag.END_STREAM) !== 0, "answered");
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, encodeHeaderBlock({ "x-trailer": "1" })));
    await c.sync();
    assert.ok(!c.frames.some((f) => f.type === FrameType.GOAWAY));
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(RANGE)));
    assert.equal(goawayCode(await c.goaway()), ErrorCode.PROTOCOL_ERROR);
  });

  test("drain: GOAWAY NO_ERROR with the last stream id; the open stream runs on, later ones are ignored", async (t) => {
    const own = await startGrpcTestServer(backend);
    t.after(() => own.close());
    const c = await RawClient.open(own.port);
    clients.push(c);
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(WATCH)));
    await c.sync();
    own.grpc.drain();
    const g = await c.goaway();
    assert.equal(goawayCode(g), ErrorCode.NO_ERROR);
    assert.equal(g.payload.readUInt32BE(0), 1);
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 3, requestBlock(RANGE)), frame(FrameType.DATA, Flag.END_STREAM, 3, rangeFrame("k")));
    await c.sync();
    assert.ok(!c.frames.some((f) => f.id === 3), "stream 3 is past the GOAWAY: no answer");
    assert.equal(c.closed, false);
    c.send(rstStreamFrame(1, ErrorCode.CANCEL));
    await eventually(() => c.closed || undefined, "closed after its last stream");
  });

  test("the client's GOAWAY: the connection ends after its last stream", async () => {
    const c = await open();
    c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(WATCH)));
    await c.sync();
    const goaway = Buffer.alloc(8);
    c.send(frame(FrameType.GOAWAY, 0, 0, goaway));
    await c.sync();
    assert.equal(c.closed, false, "the open stream keeps it");
    c.send(rstStreamFrame(1, ErrorCode.CANCEL));
    await eventually(() => c.closed || undefined, "closed after the last stream");
  });
});

test("a client that sends without reading: the connection stops reading, its unsent output stays bounded, and nothing is lost once the client reads", async (t) => {
  let conn: H2Connection | undefined;
  const server = createServer((s) => {
    conn = new H2Connection(s, { maxConcurrentStreams: 100, streamWindow: 1 << 20, connectionWindow: 1 << 24, onStream: (st) => st.reset(ErrorCode.REFUSED_STREAM) });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const port = (server.address() as { port: number }).port;
  const client = connect(port, "127.0.0.1");
  t.after(() => client.destroy());
  await new Promise<void>((r) => client.once("connect", r));
  // Each empty SETTINGS asks for a 9-byte ACK that does not wait for any window: 28 MiB of
  // them is more than the kernel's buffers on both sides and the pause threshold together.
  const frames = 28 * (1 << 20) / 9 | 0;
  const chunk = Buffer.concat(Array.from({ length: 4096 }, () => settingsFrame([])));
  const chunks = Math.ceil(frames / 4096);
  client.write(Buffer.concat([PREFACE, settingsFrame([])]));
  let sent = 0;
  let maxUnsent = 0;
  const watch = setInterval(() => { if (conn !== undefined) maxUnsent = Math.max(maxUnsent, conn.socket.writableLength); }, 5);
  t.after(() => clearInterval(watch));
  const writing = (async () => {
    for (; sent < chunks; sent++) {
      if (!client.write(chunk)) await new Promise((r) => client.once("drain", r));
    }
  })();
  await eventually(() => conn?.readPaused || undefined, "reading paused");
  assert.ok(sent < chunks, "the pause holds the client's writes back");
  // Now read: every SETTINGS gets its ACK, in order, and the connection reads again.
  const parser = new FrameParser();
  let acks = 0;
  client.on("data", (c: Buffer) => parser.push(c, (type, flags) => { if (type === FrameType.SETTINGS && (flags & Flag.ACK) !== 0) acks++; }));
  await writing;
  const expected = chunks * 4096 + 1;
  await eventually(() => acks === expected || undefined, `${expected} SETTINGS ACKs`, 60_000);
  assert.equal(conn!.readPaused, false);
  assert.ok(maxUnsent <= 5 * (1 << 20) + (1 << 20), `unsent output bounded (max seen ${maxUnsent} bytes)`);
});

test("unsentBytes counts the DATA every stream holds for its window; unsentBelow resolves as windows open and streams end", async (t) => {
  let conn: H2Connection | undefined;
  const server = createServer((s) => {
    conn = new H2Connection(s, {
      maxConcurrentStreams: 100,
      streamWindow: 1 << 20,
      connectionWindow: 1 << 20,
      onStream: (st) => {
        st.respond(new HeaderBlock({ ":status": "200", "content-type": "application/grpc" }));
        st.write(Buffer.alloc(100_000, 0x61));
      },
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const port = (server.address() as { port: number }).port;
  const c = await RawClient.open(port, [[Setting.INITIAL_WINDOW_SIZE, 10]]);
  t.after(() => c.close());
  await c.next((f) => f.type === FrameType.SETTINGS && f.flags === Flag.ACK, "SETTINGS ACK");
  for (const id of [1, 3, 5]) c.send(frame(FrameType.HEADERS, Flag.END_HEADERS, id, requestBlock(RANGE)));
  await eventually(() => [1, 3, 5].every((id) => c.dataOf(id).length === 10) || undefined, "10 bytes on each stream");
  await c.sync();
  assert.equal(conn!.unsentBytes, 3 * (100_000 - 10), "what the three streams hold");
  let below200k = false;
  let below0 = false;
  void conn!.unsentBelow(200_000).then(() => (below200k = true));
  void conn!.unsentBelow(0).then(() => (below0 = true));
  await c.sync();
  assert.equal(below200k, false);
  c.send(windowUpdateFrame(0, 1 << 20), windowUpdateFrame(1, 1 << 20));
  await eventually(() => (c.dataOf(1).length === 100_000 && below200k) || undefined, "stream 1 sent, the first wait over");
  assert.equal(below0, false);
  assert.equal(conn!.unsentBytes, 2 * (100_000 - 10));
  c.send(rstStreamFrame(3, ErrorCode.CANCEL), rstStreamFrame(5, ErrorCode.CANCEL));
  await eventually(() => below0 || undefined, "streams reset: nothing unsent");
  assert.equal(conn!.unsentBytes, 0);
});
