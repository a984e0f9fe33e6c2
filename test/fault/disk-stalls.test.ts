import { test } from "node:test";
import assert from "node:assert/strict";
import { describeStall, parseSlowSyncs, stallsDuring, withoutPauses } from "./disk-stalls.ts";

const log = [
  "--- start 2026-11-22T13:27:44.245Z",
  '{"level":"info","ts":"2026-11-22T13:35:23.879Z","msg":"leader changed","from":"2f45404f00ba6","to":"0","term":145}',
  '{"level":"warn","ts":"2026-11-22T13:35:24.944Z","msg":"slow fdatasync","took":"1.063s","expected-duration":"1s"}',
  '{"level":"warn","ts":"2026-11-22T13:35:30.000Z","msg":"slow fdatasync","took":"1.5s"',
  '{"level":"warn","ts":"2026-11-22T13:36:00.000Z","msg":"not slow fdatasync","took":"9s"}',
].join("\n");

test("parseSlowSyncs finds the WAL's slow fdatasync lines and skips everything else, torn lines included", () => {
  const stalls = parseSlowSyncs("m3", log);
  assert.deepEqual(stalls, [{ member: "m3", endMs: Date.parse("2026-11-22T13:35:24.944Z"), tookMs: 1063 }]);
  assert.equal(describeStall(stalls[0]!), "m3 fdatasync took 1.063 s");
});

test("stallsDuring keeps a stall that overlaps the window at either end, and only those", () => {
  const end = Date.parse("2026-11-22T13:35:24.944Z");
  const stalls = parseSlowSyncs("m3", log);
  assert.equal(stallsDuring(stalls, end - 1500, end - 1100).length, 0, "ended before the stall began");
  assert.equal(stallsDuring(stalls, end - 1500, end - 1000).length, 1, "the window's end inside the stall");
  assert.equal(stallsDuring(stalls, end - 10, end + 500).length, 1, "the window's start inside the stall");
  assert.equal(stallsDuring(stalls, end + 1, end + 500).length, 0, "began after the stall ended");
});

test("withoutPauses drops a member's stall that overlapped its own SIGSTOP, not another member's", () => {
  const end = Date.parse("2026-11-22T13:35:24.944Z");
  const stalls = [...parseSlowSyncs("m3", log), ...parseSlowSyncs("m4", log)];
  const kept = withoutPauses(stalls, [{ member: "m3", fromMs: end - 2000, toMs: end - 500 }]);
  assert.deepEqual(kept.map((s) => s.member), ["m4"]);
  assert.equal(withoutPauses(stalls, [{ member: "m3", fromMs: end + 1, toMs: end + 900 }]).length, 2, "a pause after the stall excuses nothing");
});
