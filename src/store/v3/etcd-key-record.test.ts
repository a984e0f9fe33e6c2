// The `key` bucket's records byte for byte: against records etcd 3.4.23 wrote (the
// snapshot server/backup/testdata/etcd-3.4.23.snapshot.db; its README says how it was
// made), and against a plain BigInt protobuf encoder where etcd's file has no example
// (empty values, negative leases, varints past 32 bits).
import assert from "node:assert/strict";
import { test } from "node:test";
import { type KeyRecordFields, keyValueBytes, revisionKeyBytes, writeKeyValue, writeRevisionKey } from "./etcd-key-record.ts";
import { NO_LEASE } from "./types.ts";

/** The record's key and value as the encoder writes them, sized by its own functions. */
function encode(main: number, sub: number, tombstone: boolean, kv: KeyRecordFields): { key: string; value: string } {
  const key = Buffer.alloc(revisionKeyBytes(tombstone));
  assert.equal(writeRevisionKey(key, 0, main, sub, tombstone), key.length);
  // Written at an offset inside a larger buffer, as HashKV's chunk does.
  const size = keyValueBytes(main, tombstone, kv);
  const buf = Buffer.alloc(size + 7, 0xee);
  assert.equal(writeKeyValue(buf, 3, main, tombstone, kv), 3 + size, "ends where its size says");
  assert.ok(buf.subarray(0, 3).equals(Buffer.alloc(3, 0xee)) && buf.subarray(3 + size).equals(Buffer.alloc(4, 0xee)), "writes nothing outside");
  return { key: key.toString("hex"), value: buf.subarray(3, 3 + size).toString("hex") };
}

const put = (key: string, createRevision: number, version: number, value: string, lease = NO_LEASE): KeyRecordFields => ({
  key: Buffer.from(key, "latin1"),
  createRevision,
  version,
  value: Buffer.from(value, "latin1"),
  lease,
});

test("etcd 3.4.23's own records: puts, a txn's second change, a deletion, leased keys", () => {
  const lease = 0x2a12a21b27269c0cn;
  const etcd: [number, number, boolean, KeyRecordFields, string, string][] = [
    [3, 0, false, put("foo", 2, 2, "bar2"), "00000000000000035f0000000000000000", "0a03666f6f1002180320022a0462617232"],
    [6, 0, true, put("a", 0, 0, ""), "00000000000000065f000000000000000074", "0a0161"],
    [8, 1, false, put("t1", 8, 1, "x"), "00000000000000085f0000000000000001", "0a0274311008180820012a0178"],
    [9, 0, false, put("lk1", 9, 1, "v1", lease), "00000000000000095f0000000000000000", "0a036c6b311009180920012a027631308cb89ab9b2c3a8892a"],
    [16, 0, false, put("d", 15, 2, "4"), "00000000000000105f0000000000000000", "0a0164100f181020022a0134"],
  ];
  for (const [main, sub, tombstone, kv, key, value] of etcd) assert.deepEqual(encode(main, sub, tombstone, kv), { key, value }, `${main}_${sub}`);
});

test("a deletion holds its key only, whatever else the caller passes", () => {
  assert.deepEqual(encode(7, 2, true, put("gone", 3, 4, "old", 5n)), { key: "00000000000000075f000000000000000274", value: "0a04676f6e65" });
});

/** proto3 as gogoproto marshals mvccpb.KeyValue, the plain way: BigInt varints, field by field. */
function reference(main: number, kv: KeyRecordFields): string {
  const varint = (v: bigint): number[] => {
    let x = BigInt.asUintN(64, v);
    const out: number[] = [];
    for (; x >= 0x80n; x >>= 7n) out.push(Number(x & 0x7fn) | 0x80);
    return [...out, Number(x)];
  };
  const int = (tag: number, v: bigint): number[] => (v === 0n ? [] : [tag, ...varint(v)]);
  const bytes = (tag: number, b: Buffer): number[] => (b.length === 0 ? [] : [tag, ...varint(BigInt(b.length)), ...b]);
  return Buffer.from([
    ...bytes(0x0a, kv.key),
    ...int(0x10, BigInt(kv.createRevision)),
    ...int(0x18, BigInt(main)),
    ...int(0x20, BigInt(kv.version)),
    ...bytes(0x2a, kv.value),
    ...int(0x30, kv.lease),
  ]).toString("hex");
}

test("varint edges, empty and long fields, negative and 64-bit leases: as a plain protobuf encoder writes them", () => {
  const numbers = [1, 0x7f, 0x80, 0x3fff, 0x4000, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0x1_0000_0000, 2 ** 47 + 3, Number.MAX_SAFE_INTEGER];
  const leases = [NO_LEASE, 1n, 0x7fn, 0x80n, -1n, -(2n ** 63n), 2n ** 63n - 1n];
  const long = "v".repeat(200);
  let n = 0;
  for (const main of numbers) {
    for (const other of [0, ...numbers]) {
      const lease = leases[n++ % leases.length]!;
      const kv = put(n % 3 === 0 ? long : "k", other, other, n % 2 === 0 ? "" : long, lease);
      assert.equal(encode(main, other, false, kv).value, reference(main, kv), `main ${main}, create/version ${other}, lease ${lease}`);
    }
  }
  assert.equal(encode(1, 0, false, put("k", 1, 1, "", -1n)).value.length / 2, 3 + 2 + 2 + 2 + 11, "a negative lease is ten bytes");
});

test("revision keys: 8 bytes big-endian each side of '_', past 32 bits too", () => {
  assert.equal(encode(2 ** 40 + 5, 2 ** 33 + 1, false, put("k", 1, 1, "v")).key, "00000100000000055f0000000200000001");
  assert.equal(encode(Number.MAX_SAFE_INTEGER, 0, true, put("k", 0, 0, "")).key, "001fffffffffffff5f000000000000000074");
});
