import assert from "node:assert/strict";
import { test } from "node:test";
import { ageBucket, clientTimeTable, faultTargets, formatClientTime, SampleOutcome, type OpSample } from "./client-time.ts";
import { FaultKind, type FaultRecord } from "./nemesis.ts";

test("faultTargets: one member, a labelled leader, an isolation, and a split's minority", () => {
  assert.deepEqual(faultTargets("m2"), [2]);
  assert.deepEqual(faultTargets("m0 (leader)"), [0]);
  assert.deepEqual(faultTargets("isolate m4 (leader)"), [4]);
  assert.deepEqual(faultTargets("[m0,m3] | [m1,m2,m4]"), [0, 3]);
});

test("ageBucket: edges belong to the later bucket", () => {
  assert.deepEqual([0, 999, 1000, 2999, 3000, 9999, 10_000, 1e9].map(ageBucket), ["0-1 s", "0-1 s", "1-3 s", "1-3 s", "3-10 s", "3-10 s", ">10 s", ">10 s"]);
});

test("clientTimeTable: ops land in the fault, target, restart-age and leader-age buckets of their call time", () => {
  const faults: FaultRecord[] = [
    { kind: FaultKind.kill, target: "m1", start: 1000, end: 3000 },
    { kind: FaultKind.pause, target: "m0 (leader)", start: 5000, end: 6000 },
  ];
  const s = (member: number, call: number, lat: number, outcome: SampleOutcome = SampleOutcome.answered): OpSample => ({ member, op: "v2 get", call, ret: call + lat, outcome });
  const samples = [
    s(0, 500, 10), // no fault, m0 never restarted, no leader change yet
    s(1, 1500, 1, SampleOutcome.refused), // kill, on the target, target down
    s(2, 2000, 30), // kill, another member
    s(1, 3500, 40), // no fault, m1 restarted 0.5 s ago
    s(1, 4500, 20), // m1 restarted 1.5 s ago; leader changed 0.5 s ago (at 4000)
    s(0, 5500, 2000, SampleOutcome.unknown), // pause on its target
  ];
  const leaders = [{ at: 0, leader: 0 }, { at: 3900, leader: undefined }, { at: 4000, leader: 1 }];
  const rows = clientTimeTable({ samples, faults, leaderChanges: [4000], leaders, workloadMs: 10_000 });
  const row = (split: string, bucket: string) => rows.find((r) => r.split === split && r.bucket === bucket);

  assert.deepEqual({ ...row("fault", "none") }, { split: "fault", bucket: "none", answered: 3, unknown: 0, refused: 0, clientSeconds: 0.07, wallSeconds: 7, p50: 20, p99: 40 });
  const kill = row("fault", "kill")!;
  assert.equal(kill.answered, 1);
  assert.equal(kill.refused, 1);
  // A refusal costs its latency and the client's 20 ms back-off.
  assert.ok(Math.abs(kill.clientSeconds - 0.051) < 1e-9);
  assert.equal(kill.wallSeconds, 2);
  assert.equal(row("fault+target", "kill target")!.refused, 1);
  assert.equal(row("fault+target", "kill other")!.answered, 1);
  assert.equal(row("fault+target", "pause target")!.unknown, 1);
  assert.equal(row("since restart", "down")!.refused, 1);
  assert.equal(row("since restart", "0-1 s")!.answered, 1);
  assert.equal(row("since restart", "1-3 s")!.answered, 1);
  assert.equal(row("since restart", "never")!.answered + row("since restart", "never")!.unknown, 3);
  assert.equal(row("since leader chg", "never")!.answered, 3);
  assert.equal(row("since leader chg", "0-1 s")!.answered, 1);
  assert.equal(row("since leader chg", "1-3 s")!.unknown, 1);
  // Wall time after the change: 1 s, 2 s, 6 s (to the end at 10 s); before it 4 s.
  assert.deepEqual(["never", "0-1 s", "1-3 s", "3-10 s"].map((b) => row("since leader chg", b)?.wallSeconds), [4, 1, 2, undefined]);
  // Only ops with no fault active, by how long ago the last fault ended.
  assert.deepEqual(["never", "0-1 s", "1-3 s"].map((b) => row("none, since fault", b)?.answered), [1, 1, 1]);
  // The leader at call time: m0 never restarted; m1 restarted at 3000 (ops at 4500 and 5500).
  assert.equal(row("leader up", "never")!.answered, 3);
  assert.equal(row("leader up", "0-1 s"), undefined);
  assert.equal(row("leader up", "1-3 s")!.answered + row("leader up", "1-3 s")!.unknown, 2);
  assert.equal(row("op to leader", "leader")!.answered, 2); // m0 at 500 and m1 at 4500
  assert.equal(row("op", "v2 get")!.answered + row("op", "v2 get")!.unknown + row("op", "v2 get")!.refused, samples.length);
  // Splits in a fixed order, "none" first.
  assert.deepEqual(rows.filter((r) => r.split === "fault").map((r) => r.bucket), ["none", "kill", "pause"]);
  const text = formatClientTime(rows).join("\n");
  assert.match(text, /fault\s+none\s+3\s+0\s+0/);
});
