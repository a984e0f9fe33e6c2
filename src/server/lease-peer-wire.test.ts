import { test } from "node:test";
import assert from "node:assert/strict";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  LeaseKeepAliveRequestSchema,
  LeaseKeepAliveResponseSchema,
  LeaseTimeToLiveRequestSchema,
  LeaseTimeToLiveResponseSchema,
} from "./grpc/gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import {
  decodeRenewRequest,
  decodeRenewResponse,
  decodeTimeToLiveRequest,
  decodeTimeToLiveResponse,
  encodeRenewRequest,
  encodeRenewResponse,
  encodeTimeToLiveRequest,
  encodeTimeToLiveResponse,
} from "./lease-peer-wire.ts";

// The hand-written codecs against @bufbuild's encoding of rpc.proto, which they replaced.
const IDS = [0n, 1n, 127n, 128n, 0x694d7a1b2c3d4e5fn, 2n ** 63n - 1n, -1n, -(2n ** 63n)];
const TTLS = [0, 1, 5, 127, 128, 300, 9_000_000_000, -1];

/** etcd's LeaseInternalRequest/Response wrapping: field 1, length-delimited. */
function wrap(inner: Uint8Array): Buffer {
  const head = [0x0a];
  let n = inner.length;
  for (; n >= 0x80; n >>>= 7) head.push((n & 0x7f) | 0x80);
  head.push(n);
  return Buffer.concat([Buffer.from(head), inner]);
}
function unwrap(outer: Uint8Array): Uint8Array {
  assert.equal(outer[0], 0x0a);
  let i = 1;
  let len = 0;
  for (let shift = 0; ; shift += 7) {
    const b = outer[i++] ?? assert.fail("truncated");
    len |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) break;
  }
  assert.equal(i + len, outer.length);
  return outer.subarray(i);
}

test("renew request: the same bytes as @bufbuild, round trips both ways", () => {
  for (const id of IDS) {
    const theirs = toBinary(LeaseKeepAliveRequestSchema, create(LeaseKeepAliveRequestSchema, { ID: id }));
    assert.deepEqual(Buffer.from(encodeRenewRequest(id)), Buffer.from(theirs), `id ${id}`);
    assert.equal(decodeRenewRequest(theirs), id);
    assert.equal(fromBinary(LeaseKeepAliveRequestSchema, encodeRenewRequest(id)).ID, id);
  }
});

test("renew response: the same bytes as @bufbuild; a header and unknown fields are read through", () => {
  for (const id of IDS) {
    for (const ttl of TTLS) {
      const theirs = toBinary(LeaseKeepAliveResponseSchema, create(LeaseKeepAliveResponseSchema, { ID: id, TTL: BigInt(ttl) }));
      assert.deepEqual(Buffer.from(encodeRenewResponse(id, ttl)), Buffer.from(theirs), `id ${id} ttl ${ttl}`);
      assert.deepEqual(decodeRenewResponse(theirs), { id, ttl });
    }
  }
  // etcd's leader answers with its header set; fields may come in any order.
  const withHeader = toBinary(
    LeaseKeepAliveResponseSchema,
    create(LeaseKeepAliveResponseSchema, { header: { clusterId: 0xdeadbeefn, memberId: 7n, revision: 99n, raftTerm: 3n }, ID: 42n, TTL: 60n }),
  );
  const reordered = Buffer.concat([Buffer.from([0x18, 60, 0x60, 5]), withHeader]);
  assert.deepEqual(decodeRenewResponse(withHeader), { id: 42n, ttl: 60 });
  assert.deepEqual(decodeRenewResponse(reordered), { id: 42n, ttl: 60 });
});

test("time-to-live request: the same bytes as @bufbuild inside LeaseInternalRequest", () => {
  for (const id of IDS) {
    for (const keys of [false, true]) {
      const inner = toBinary(LeaseTimeToLiveRequestSchema, create(LeaseTimeToLiveRequestSchema, { ID: id, keys }));
      const ours = encodeTimeToLiveRequest(id, keys);
      assert.deepEqual(Buffer.from(unwrap(ours)), Buffer.from(inner), `id ${id} keys ${keys}`);
      assert.deepEqual(decodeTimeToLiveRequest(wrap(inner)), { id, keys });
    }
  }
  assert.deepEqual(decodeTimeToLiveRequest(new Uint8Array(0)), { id: 0n, keys: false });
});

test("time-to-live response: the same bytes as @bufbuild (empty header set), keys in order", () => {
  const keySets = [[], [Buffer.from("a")], [Buffer.alloc(0), Buffer.from("k".repeat(200)), Buffer.from([0, 255])]];
  for (const id of IDS) {
    for (const ttl of TTLS) {
      for (const keys of keySets) {
        const t = { revision: 0, id, ttl, grantedTtl: ttl + 10, keys };
        const inner = toBinary(
          LeaseTimeToLiveResponseSchema,
          create(LeaseTimeToLiveResponseSchema, { header: {}, ID: id, TTL: BigInt(ttl), grantedTTL: BigInt(ttl + 10), keys }),
        );
        assert.deepEqual(Buffer.from(unwrap(encodeTimeToLiveResponse(t))), Buffer.from(inner), `id ${id} ttl ${ttl} keys ${keys.length}`);
        assert.deepEqual(decodeTimeToLiveResponse(wrap(inner)), t);
      }
    }
  }
});

test("malformed messages are refused, as fromBinary refused them", () => {
  const bad = [Buffer.from([0x08]), Buffer.from([0x08, 0xff]), Buffer.from([0x0a, 5, 1]), Buffer.from([0x00, 1]), Buffer.from([0x0b]), Buffer.from([0x0a, 2, 0x08])];
  for (const b of bad) {
    assert.throws(() => fromBinary(LeaseKeepAliveResponseSchema, b), `@bufbuild takes ${b.toString("hex")}`);
    assert.throws(() => decodeRenewResponse(b), `ours takes ${b.toString("hex")}`);
  }
  assert.throws(() => decodeRenewRequest(Buffer.from([0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])));
});
