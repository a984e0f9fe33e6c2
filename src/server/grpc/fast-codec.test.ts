// fast-codec.ts writes the bytes @bufbuild/protobuf's toBinary writes for the same message.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { keyValueBytes, writeKeyValue, type KeyValue, type V3Event } from "../../store/v3/index.ts";
import * as cv from "./convert.ts";
import { decodePutRequest, decodeRangeRequest, encodePutResponse, encodeRangeResponse, encodeWatchEvents, frameWatchControl, headerFields, WatchEventsFramer } from "./fast-codec.ts";
import { KeyValueSchema } from "./gen/etcd/mvcc/mvccpb/kv_pb.ts";
import { PutRequestSchema, PutResponseSchema, RangeRequestSchema, RangeResponseSchema, WatchResponseSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";

const kv = (key: string, value: string, n: number, lease: bigint): KeyValue => ({
  key: Buffer.from(key),
  value: Buffer.from(value),
  createRevision: n,
  modRevision: n * 1000,
  version: n % 3,
  lease,
});
const headers = [
  { clusterId: "0", memberId: "0", revision: 0, raftTerm: 0 },
  { clusterId: "1158684527140923278", memberId: "11735172391864680521", revision: 20001, raftTerm: 2 },
  { clusterId: "18446744073709551615", memberId: "9007199254740993", revision: 2 ** 40, raftTerm: 127 },
];
const kvsCases: KeyValue[][] = [
  [],
  [kv("a", "", 1, 0n)],
  [kv("", "", 0, 0n)],
  [kv("key", "x".repeat(300), 128, 7587869263591227147n), kv("k2", "v", 2 ** 53 - 1, -1n), kv("k3", "y".repeat(20000), 16384, 1n)],
];

test("RangeResponse: the same bytes as toBinary", () => {
  for (const h of headers) {
    for (const kvs of kvsCases) {
      for (const [more, count] of [[false, 0], [true, kvs.length + 5], [false, 300]] as const) {
        const r = { revision: h.revision, kvs, more, count };
        const want = toBinary(RangeResponseSchema, create(RangeResponseSchema, cv.rangeResponse(cv.header(h), r)));
        assert.deepEqual(new Uint8Array(encodeRangeResponse(headerFields(h), r)), want);
        const framed = encodeRangeResponse(headerFields(h), r, 5);
        assert.deepEqual(new Uint8Array(framed.subarray(5)), want);
      }
    }
  }
});

test("PutResponse: the same bytes as toBinary, with and without prev_kv", () => {
  for (const h of headers) {
    for (const prevKv of [undefined, ...kvsCases.flat()]) {
      const r = prevKv === undefined ? { revision: h.revision } : { revision: h.revision, prevKv };
      const want = toBinary(PutResponseSchema, create(PutResponseSchema, cv.putResponse(cv.header(h), r)));
      assert.deepEqual(new Uint8Array(encodePutResponse(headerFields(h), r)), want);
    }
  }
});

test("WatchResponse with events: the same bytes as toBinary (types, prev_kv, fragment, watch IDs)", () => {
  const all = kvsCases.flat();
  const evs: V3Event[][] = [
    [{ type: 0, kv: all[0]! }],
    [{ type: 1, kv: all[1]! }, { type: 0, kv: all[2]!, prevKv: all[3]! }],
    all.map((kv, i) => (i % 2 === 0 ? { type: 0, kv } : { type: 1, kv, prevKv: kv })),
  ];
  for (const h of headers) {
    for (const events of evs) {
      for (const [id, fragment] of [[0, false], [1, true], [300, false], [2 ** 40, true]] as const) {
        const want = toBinary(WatchResponseSchema, create(WatchResponseSchema, { header: cv.header(h), watchId: BigInt(id), events: events.map(cv.event), fragment }));
        assert.deepEqual(new Uint8Array(encodeWatchEvents(headerFields(h), id, events, fragment)), want);
      }
    }
  }
});

test("WatchEventsFramer: each watcher's framed message is toBinary's, the shared part encoded once per turn", async () => {
  const all = kvsCases.flat();
  const events: V3Event[] = [{ type: 0, kv: all[3]!, prevKv: all[1]! }];
  const framer = new WatchEventsFramer();
  let headerCalls = 0;
  const h = headers[1]!;
  const headerOf = (revision: number): typeof h => {
    headerCalls++;
    return { ...h, revision };
  };
  for (const [id, fragment] of [[0, false], [1, true], [300, false], [2 ** 40, false]] as const) {
    // A list of its own per watcher, the same event objects (as the hub hands them out).
    const framed = framer.frame(7, headerOf, id, [...events], fragment);
    const want = toBinary(WatchResponseSchema, create(WatchResponseSchema, { header: cv.header({ ...h, revision: 7 }), watchId: BigInt(id), events: events.map(cv.event), fragment }));
    assert.equal(framed[0], 0);
    assert.equal(framed.readUInt32BE(1), want.length);
    assert.deepEqual(new Uint8Array(framed.subarray(5)), want);
  }
  assert.equal(headerCalls, 1, "one header for the four watchers");
  framer.frame(8, headerOf, 1, events, false);
  assert.equal(headerCalls, 2, "another revision: encoded again");
  await Promise.resolve();
  framer.frame(8, headerOf, 1, events, false);
  assert.equal(headerCalls, 3, "the shared bytes do not outlive the turn");
});

/** A protobuf field by hand: tag then payload (for shapes toBinary never writes). */
function field(n: number, wire: number, payload: number[]): number[] {
  const tag: number[] = [];
  let t = (n << 3) | wire;
  while (t >= 128) {
    tag.push((t & 127) | 128);
    t >>>= 7;
  }
  tag.push(t);
  return [...tag, ...payload];
}

test("PutRequest and RangeRequest: the fast readers give what fromBinary + convert.ts give, or step aside", () => {
  const puts = [
    {},
    { key: Buffer.from("k"), value: Buffer.from("v") },
    { key: Buffer.from("key"), value: Buffer.alloc(300, 1), lease: 7587869263591227147n, prevKv: true, ignoreValue: true, ignoreLease: true },
    { key: Buffer.from("k"), lease: -1n },
    { key: Buffer.from("k"), lease: 2n ** 48n },
    { key: Buffer.from("k"), lease: 2n ** 49n + 3n },
  ];
  for (const m of puts) {
    const bytes = toBinary(PutRequestSchema, create(PutRequestSchema, m));
    assert.deepEqual(decodePutRequest(bytes), cv.putRequest(fromBinary(PutRequestSchema, bytes)), JSON.stringify(m, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));
  }
  const ranges = [
    {},
    { key: Buffer.from("k"), serializable: true },
    { key: Buffer.from("a"), rangeEnd: Buffer.from([0]), limit: 500n, revision: 2n ** 40n, sortOrder: 2, sortTarget: 4, keysOnly: true, countOnly: true },
    { key: Buffer.from("a"), minModRevision: 1n, maxModRevision: 2n ** 53n + 1n, minCreateRevision: -5n, maxCreateRevision: 3n, limit: -1n },
    { key: Buffer.from("a"), sortOrder: 9, sortTarget: -3 },
  ];
  for (const m of ranges) {
    const bytes = toBinary(RangeRequestSchema, create(RangeRequestSchema, m as Parameters<typeof create<typeof RangeRequestSchema>>[1]));
    assert.deepEqual(decodeRangeRequest(bytes), cv.rangeRequest(fromBinary(RangeRequestSchema, bytes)), JSON.stringify(m, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)));
  }
  // Proto3 on the wire: a repeated scalar field's last value wins; unknown fields of every wire type are skipped.
  const odd = Buffer.from([
    ...field(1, 2, [1, 0x61]),
    ...field(1, 2, [1, 0x62]),
    ...field(99, 0, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
    ...field(98, 1, [1, 2, 3, 4, 5, 6, 7, 8]),
    ...field(97, 5, [1, 2, 3, 4]),
    ...field(96, 2, [2, 9, 9]),
    ...field(4, 0, [1]),
    ...field(4, 0, [0]),
  ]);
  assert.deepEqual(decodePutRequest(odd), cv.putRequest(fromBinary(PutRequestSchema, odd)));
  assert.deepEqual(decodeRangeRequest(odd), cv.rangeRequest(fromBinary(RangeRequestSchema, odd)));
  // What the fast path does not take and etcd refuses is refused in gogoproto's words
  // (unmarshal-error.ts); what etcd would take goes to the generated decoder.
  const refused: Array<[Buffer, string, string]> = [
    [Buffer.from([...field(1, 2, [5, 0x61])]), "unexpected EOF", "unexpected EOF"], // bytes past the end
    [Buffer.from([...field(3, 0, [0x80])]), "unexpected EOF", "unexpected EOF"], // varint cut short
    [Buffer.from([...field(1, 0, [1])]), "proto: wrong wireType = 0 for field Key", "proto: wrong wireType = 0 for field Key"], // key with another wire type
    [Buffer.from([...field(3, 2, [1, 1])]), "proto: wrong wireType = 2 for field Lease", "proto: wrong wireType = 2 for field Limit"], // bufbuild would read it
    [Buffer.from([...field(5, 3, [])]), "proto: wrong wireType = 3 for field IgnoreValue", "proto: wrong wireType = 3 for field SortOrder"], // a group
    [Buffer.from([0]), "proto: PutRequest: illegal tag 0 (wire type 0)", "proto: RangeRequest: illegal tag 0 (wire type 0)"], // field 0
  ];
  const error = (text: string) => ({ code: 13, message: `grpc: error unmarshalling request: ${text}` });
  for (const [b, put, range] of refused) {
    assert.throws(() => decodePutRequest(b), error(put), b.toString("hex"));
    assert.throws(() => decodeRangeRequest(b), error(range), b.toString("hex"));
  }
  // Unusual but valid for gogoproto: the generated decoder's turn.
  const group = Buffer.from([...field(20, 3, []), ...field(20, 4, [])]);
  assert.equal(decodePutRequest(group), undefined);
  assert.equal(decodeRangeRequest(group), undefined);
});

test("WatchResponse without events (created, canceled, compacted, progress): toBinary's bytes behind gRPC's prefix", () => {
  const cases = [
    { watchId: 0, created: true },
    { watchId: 7, created: true },
    { watchId: -1 },
    { watchId: -1, created: true, canceled: true, cancelReason: "etcdserver: mvcc: required revision has been compacted" },
    { watchId: 300, canceled: true, compactRevision: 123456 },
    { watchId: 2, canceled: true, cancelReason: "permission denied ✓" },
    { watchId: 5, compactRevision: 0, cancelReason: "" },
  ];
  for (const h of headers) {
    for (const c of cases) {
      const m: Record<string, unknown> = { header: cv.header(h), watchId: BigInt(c.watchId) };
      if (c.created === true) m.created = true;
      if (c.canceled === true) m.canceled = true;
      if (c.compactRevision !== undefined) m.compactRevision = BigInt(c.compactRevision);
      if (c.cancelReason !== undefined) m.cancelReason = c.cancelReason;
      const want = toBinary(WatchResponseSchema, create(WatchResponseSchema, m));
      const got = frameWatchControl(headerFields(h), c.watchId, c.created === true, c.canceled === true, c.compactRevision ?? 0, c.cancelReason ?? "");
      assert.equal(got[0], 0);
      assert.equal(got.readUInt32BE(1), got.length - 5);
      assert.deepEqual(new Uint8Array(got.subarray(5)), want, JSON.stringify(c));
    }
  }
});

test("mvccpb.KeyValue (store/v3/keyvalue-proto.ts, which HashKV and the snapshot share): toBinary's bytes at an offset, and nothing written outside", () => {
  const numbers = [0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x1f_ffff, 0x20_0000, 0xfff_ffff, 0x1000_0000, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 2 ** 32, 2 ** 35 - 1, 2 ** 35, 2 ** 49, Number.MAX_SAFE_INTEGER];
  const leases = [0n, 1n, 0x7fn, 0x80n, 0x2a12a21b27269c0cn, 2n ** 53n - 1n, 2n ** 53n, 2n ** 56n - 1n, 2n ** 56n, 2n ** 63n - 1n, -1n, -(2n ** 53n), -(2n ** 63n)];
  const keys = ["", "a", "k".repeat(32), "k".repeat(33), "k".repeat(127), "k".repeat(128), "ключ/键/🔑", "/registry/pods/default/x"].map((k) => Buffer.from(k, "utf8"));
  const values = [0, 1, 32, 33, 300, 16 * 1024 + 1, 70_000].map((n) => Buffer.alloc(n, 0x76).fill("é€", 0, Math.min(n, 7)));
  const check = (mod: number, tombstone: boolean, kv: KeyValue, what: string): void => {
    const want = toBinary(
      KeyValueSchema,
      create(
        KeyValueSchema,
        tombstone ? { key: kv.key } : { key: kv.key, createRevision: BigInt(kv.createRevision), modRevision: BigInt(mod), version: BigInt(kv.version), value: kv.value, lease: kv.lease },
      ),
    );
    const size = keyValueBytes(mod, tombstone, kv);
    assert.equal(size, want.length, `size, ${what}`);
    const buf = Buffer.alloc(size + 9, 0xee);
    assert.equal(writeKeyValue(buf, 4, mod, tombstone, kv), 4 + size, `end, ${what}`);
    assert.deepEqual(new Uint8Array(buf.subarray(4, 4 + size)), want, what);
    assert.ok(buf.subarray(0, 4).equals(Buffer.alloc(4, 0xee)) && buf.subarray(4 + size).equals(Buffer.alloc(5, 0xee)), `nothing outside, ${what}`);
  };
  let i = 0;
  for (const mod of numbers) {
    for (const other of numbers) {
      i++;
      const kv = { key: keys[i % keys.length]!, value: values[i % values.length]!, createRevision: other, modRevision: mod, version: numbers[(i * 7) % numbers.length]!, lease: leases[i % leases.length]! };
      check(mod, false, kv, `#${i}: mod ${mod}, create ${other}, version ${kv.version}, lease ${kv.lease}, key ${kv.key.length} B, value ${kv.value.length} B`);
      if (i % 5 === 0) check(mod, true, kv, `tombstone #${i}`);
    }
  }
  for (const lease of leases) check(5, false, { key: keys[1]!, value: values[1]!, createRevision: 3, modRevision: 5, version: 2, lease }, `lease ${lease}`);
});
