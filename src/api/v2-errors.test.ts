import { test } from "node:test";
import assert from "node:assert/strict";
import { V2Error, V2ErrorCode } from "./v2-errors.ts";

test("an error body has etcd's field order, byte for byte: cause (when set) before index", () => {
  // Recorded from etcd 3.4.23: a failed compare-and-swap and a create over an existing key.
  assert.equal(JSON.stringify(new V2Error(V2ErrorCode.TestFailed, "[2 != 1]", 4)), '{"errorCode":101,"message":"Compare failed","cause":"[2 != 1]","index":4}');
  assert.equal(JSON.stringify(new V2Error(V2ErrorCode.NodeExist, "/a", 4)), '{"errorCode":105,"message":"Key already exists","cause":"/a","index":4}');
  assert.equal(JSON.stringify(new V2Error(V2ErrorCode.KeyNotFound, "", 7)), '{"errorCode":100,"message":"Key not found","index":7}');
});
