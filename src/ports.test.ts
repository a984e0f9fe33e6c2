// The tests' port allocator (ports.test-helper.ts) against real sockets: not in
// scripts/pure-tests.txt, so it runs in a process of its own.
import assert from "node:assert/strict";
import { test } from "node:test";
import { laneRange, portIn } from "./ports.test-helper.ts";

test("portIn: calls running at once never get the same port (each is taken before its probe)", async () => {
  // A range no test uses (23400-23419), this lane's copy of it.
  const range = laneRange([23400, 23419]);
  const ports = await Promise.all(Array.from({ length: 12 }, () => portIn(range)));
  assert.equal(new Set(ports).size, ports.length, ports.join(" "));
  for (const p of ports) assert.ok(p >= range[0] && p <= range[1], String(p));
});
