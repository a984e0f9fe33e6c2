// The sizes etcd's limits are on: a varint's and an event's, as toBinary writes them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { EventSchema, KeyValueSchema } from "../grpc/gen/etcd/mvcc/mvccpb/kv_pb.ts";
import { LeaseKeepAliveRequestSchema } from "../grpc/gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import type { KeyValue } from "../../store/v3/index.ts";
import { eventSize, keyValueSize, varintLen } from "./v3-proto-size.ts";

test("varintLen of numbers and bigints: the bytes toBinary writes for an int64 (negatives ten)", () => {
  const values = [1n, 127n, 128n, 16_383n, 16_384n, 2n ** 31n, 2n ** 32n, 2n ** 35n - 1n, 2n ** 35n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 63n - 1n, -1n, -(2n ** 63n)];
  for (const v of values) {
    const want = toBinary(LeaseKeepAliveRequestSchema, create(LeaseKeepAliveRequestSchema, { ID: v })).length - 1;
    assert.equal(varintLen(v), want, `bigint ${v}`);
    if (v >= -(2n ** 53n) && v <= 2n ** 53n) assert.equal(varintLen(Number(v)), want, `number ${v}`);
  }
  assert.equal(varintLen(0), 1);
  assert.equal(varintLen(0n), 1);
});

test("keyValueSize and eventSize: the length of toBinary's mvccpb.KeyValue and Event", () => {
  const kv = (key: string, value: number, n: number, lease: bigint): KeyValue => ({ key: Buffer.from(key), value: Buffer.alloc(value, 0x76), createRevision: n, modRevision: 2 * n, version: n % 7, lease });
  const kvs = [kv("", 0, 0, 0n), kv("k", 1, 1, 1n), kv("ключ", 200, 2 ** 40, -1n), kv("k".repeat(300), 70_000, 2 ** 52, 2n ** 63n - 1n)];
  for (const k of kvs) {
    const pb = { key: k.key, createRevision: BigInt(k.createRevision), modRevision: BigInt(k.modRevision), version: BigInt(k.version), value: k.value, lease: k.lease };
    for (const type of [0, 1] as const) {
      for (const prev of [undefined, kvs[2]!]) {
        const prevPb = prev === undefined ? undefined : { key: prev.key, createRevision: BigInt(prev.createRevision), modRevision: BigInt(prev.modRevision), version: BigInt(prev.version), value: prev.value, lease: prev.lease };
        const want = toBinary(EventSchema, create(EventSchema, { type, kv: pb, ...(prevPb === undefined ? {} : { prevKv: prevPb }) })).length;
        assert.equal(eventSize(prev === undefined ? { type, kv: k } : { type, kv: k, prevKv: prev }), want, `event ${k.key.length} ${type} ${prev !== undefined}`);
      }
    }
    assert.equal(keyValueSize(k), toBinary(KeyValueSchema, create(KeyValueSchema, pb)).length, `kv ${k.key.length}`);
  }
});
