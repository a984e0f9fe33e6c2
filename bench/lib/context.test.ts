// Unit tests of lib/context.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { orderFor } from "./context.ts";

test("orderFor alternates the server order row by row", () => {
  assert.deepEqual(orderFor(["etcd", "kvctl"], 0), ["etcd", "kvctl"]);
  assert.deepEqual(orderFor(["etcd", "kvctl"], 1), ["kvctl", "etcd"]);
});
