// uint64Text: the prevIndex text etcd's Go client sends for an int flag value.
import { test } from "node:test";
import assert from "node:assert/strict";
import { uint64Text } from "./v2-keys.ts";

test("uint64Text wraps a negative index as Go's uint64(int) and keeps others", () => {
  assert.equal(uint64Text(-1), "18446744073709551615");
  assert.equal(uint64Text(-2), "18446744073709551614");
  assert.equal(uint64Text(7), "7");
});
