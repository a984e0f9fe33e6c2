import { test } from "node:test";
import assert from "node:assert/strict";
import { bytesField, int64Field, ProtoDecodeError, ProtoWriter, readFields, uint64Field } from "./proto-wire.ts";

test("proto3 zero values are left out; present messages are written even when empty", () => {
  assert.equal(new ProtoWriter().int(1, 0).int(2, "0").int(3, undefined).bool(4, false).bytes(5, "").finish().length, 0);
  assert.equal(new ProtoWriter().message(1, new ProtoWriter()).finish().toString("hex"), "0a00");
  assert.equal(new ProtoWriter().bytesElement(2, "").finish().toString("hex"), "1200");
});

test("64-bit values keep every digit; negatives are ten-byte varints", () => {
  const max = "18446744073709551615";
  const w = new ProtoWriter().int(1, max).int(2, -1).int(3, "12337222005447956175").finish();
  const f = readFields(w);
  assert.equal(uint64Field(f, 1).toString(), max);
  assert.equal(int64Field(f, 2), -1n);
  assert.equal(uint64Field(f, 3).toString(), "12337222005447956175");
  assert.equal(new ProtoWriter().int(1, -1).finish().length, 11);
});

test("fields read back in wire order; the last occurrence wins; truncation is an error", () => {
  const w = new ProtoWriter().int(1, 5).bytes(2, "ab").int(1, 7).finish();
  const f = readFields(w);
  assert.equal(int64Field(f, 1), 7n);
  assert.equal(bytesField(f, 2)?.toString(), "ab");
  assert.throws(() => readFields(w.subarray(0, 3)), ProtoDecodeError);
});
