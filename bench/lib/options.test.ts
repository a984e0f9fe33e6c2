// Unit tests of lib/options.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseOnly, parseOptions } from "./options.ts";

test("parseOptions gives the full-run defaults when no flags are passed", () => {
  const o = parseOptions([]);
  assert.equal(o.durationS, 10);
  assert.equal(o.warmupS, 3);
  assert.equal(o.fillN, 100_000);
  assert.equal(o.fillC, 32);
  assert.equal(o.watchers, 1000);
  assert.equal(o.clientRuns, 20);
  assert.equal(o.freshPerRow, true);
  assert.deepEqual(o.servers, ["etcd", "kvctl"]);
  assert.equal(o.only.size, 9);
  assert.ok(o.only.has("auth"));
  assert.equal(o.outDir, "bench/results");
});

test("parseOptions lets explicit flags override the smoke defaults", () => {
  const o = parseOptions(["--smoke", "--duration", "3", "--server", "etcd", "--only", "put,get", "--label", "X"]);
  assert.equal(o.durationS, 3);
  assert.equal(o.warmupS, 0);
  assert.equal(o.fillN, 2000);
  assert.equal(o.watchers, 50);
  assert.equal(o.freshPerRow, false);
  assert.deepEqual(o.servers, ["etcd"]);
  assert.deepEqual([...o.only].sort(), ["get", "put"]);
  assert.equal(o.label, "X");
  assert.equal(o.outDir, "bench/tmp/results");
});

const badArgs: string[][] = [["--duration", "0"], ["--duration", "x"], ["--server", "zk"], ["--only", "nope"], ["--bogus"]];
for (const a of badArgs) {
  test(`parseOptions throws when given ${a.join(" ")}`, () => assert.throws(() => parseOptions(a)));
}

test("parseOnly expands the throughput alias and keeps named groups", () => {
  assert.deepEqual([...parseOnly("throughput,watch")], ["put", "put-same", "get", "auth", "quorum", "cas", "watch"]);
});

test("parseOnly selects the auth rows alone or beside their no-auth rows", () => {
  assert.deepEqual([...parseOnly("auth")], ["auth"]);
  assert.deepEqual([...parseOnly("auth,get,put")], ["auth", "get", "put"]);
});

test("parseOptions keeps the auth rows in smoke mode", () => {
  assert.ok(parseOptions(["--smoke"]).only.has("auth"));
});
