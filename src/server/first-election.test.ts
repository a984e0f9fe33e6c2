import { test } from "node:test";
import assert from "node:assert/strict";
import { firstElectionMode, firstElectionStep, type FirstElectionState } from "./first-election.ts";

const three = [30, 10, 20];
/** 10 ticks a timeout: etcd's whole fast-forward is 8 ticks, half of it 5. */
const at = (memberId: number, up: number[], elapsed = 0, voters: readonly number[] = three): FirstElectionState => ({ memberId, voters, up, electionTicks: 10, elapsed });

test("three members, all up: the lowest id campaigns; the others fast-forward only to half a timeout and probe on", () => {
  assert.deepEqual(firstElectionStep(at(10, [])), { do: "wait" });
  assert.deepEqual(firstElectionStep(at(10, [30])), { do: "campaign" });
  assert.deepEqual(firstElectionStep(at(20, [10])), { do: "advance", ticks: 5 });
  assert.deepEqual(firstElectionStep(at(20, [10, 30])), { do: "advance", ticks: 5 });
  assert.deepEqual(firstElectionStep(at(20, [10, 30], 5)), { do: "hold" });
  assert.deepEqual(firstElectionStep(at(30, [])), { do: "wait" });
});

test("the lowest id does not answer: etcd's whole fast-forward, then done", () => {
  assert.deepEqual(firstElectionStep(at(20, [30])), { do: "advance", ticks: 8 });
  assert.deepEqual(firstElectionStep(at(20, [30], 8)), { do: "done" });
});

test("probes over time: held back while the lowest id answers, the rest of the advance once it stops; never back", () => {
  let elapsed = 0;
  const steps: string[] = [];
  for (const up of [[], [10], [10, 30], [30], [10, 30]]) {
    const step = firstElectionStep(at(20, up, elapsed));
    if (step.do === "advance") elapsed += step.ticks;
    steps.push(step.do === "advance" ? `advance ${step.ticks}` : step.do);
  }
  assert.deepEqual(steps, ["wait", "advance 5", "hold", "advance 3", "done"]);
  assert.equal(elapsed, 8, "etcd's whole fast-forward in all");
});

test("the clock is advanced TO the mark, counting the ticks it ran, never past it (a late first answer must not campaign at once)", () => {
  // Answers that come 6 ticks into the clock: etcd's advance BY 8 would reach 14 ticks,
  // past a randomized timeout of 10-13; to the mark it is 2 more.
  assert.deepEqual(firstElectionStep(at(20, [30], 6)), { do: "advance", ticks: 2 });
  assert.deepEqual(firstElectionStep(at(20, [10], 3)), { do: "advance", ticks: 2 });
  assert.deepEqual(firstElectionStep(at(20, [10], 7)), { do: "hold" }, "past half already: nothing, still probing");
  assert.deepEqual(firstElectionStep(at(20, [], 7)), { do: "wait" }, "nobody answers: nothing yet");
  assert.deepEqual(firstElectionStep(at(20, [30], 9)), { do: "done" }, "past etcd's mark already: nothing");
  for (let elapsed = 0; elapsed < 20; elapsed++) {
    for (const up of [[10], [30], [10, 30]]) {
      const step = firstElectionStep(at(20, up, elapsed));
      const after = elapsed + (step.do === "advance" ? step.ticks : 0);
      assert.ok(after <= Math.max(elapsed, 8), `from ${elapsed} with ${up.join(",")} up: ${after} ticks`);
    }
  }
});

test("five members: the lowest id waits for two peers, fast-forwarding its clock meanwhile; the others hold back while it answers", () => {
  const five = [5, 4, 3, 2, 1];
  assert.deepEqual(firstElectionStep(at(1, [2], 0, five)), { do: "advance", ticks: 8 });
  assert.deepEqual(firstElectionStep(at(1, [2], 8, five)), { do: "wait" });
  assert.deepEqual(firstElectionStep(at(1, [2, 5], 8, five)), { do: "campaign" });
  assert.deepEqual(firstElectionStep(at(3, [1, 2, 4, 5], 0, five)), { do: "advance", ticks: 5 });
  assert.deepEqual(firstElectionStep(at(3, [2, 4, 5], 0, five)), { do: "advance", ticks: 8 });
  assert.deepEqual(firstElectionStep(at(3, [2, 4, 5], 8, five)), { do: "done" });
});

test("short election timeouts: half is never more than etcd's whole advance", () => {
  assert.deepEqual(firstElectionStep({ ...at(20, [10]), electionTicks: 3 }), { do: "advance", ticks: 1 });
  assert.deepEqual(firstElectionStep({ ...at(20, [10]), electionTicks: 2 }), { do: "done" });
  assert.deepEqual(firstElectionStep({ ...at(20, [10]), electionTicks: 20 }), { do: "advance", ticks: 10 });
  assert.deepEqual(firstElectionStep({ ...at(20, [30]), electionTicks: 20 }), { do: "advance", ticks: 18 });
});

test("a member alone never campaigns from here (the server campaigns at once)", () => {
  assert.deepEqual(firstElectionStep(at(7, [], 0, [7])), { do: "wait" });
});

test("the flags: --initial-election-tick-advance=false turns it all off; without pre-vote only etcd's fast-forward runs", () => {
  assert.equal(firstElectionMode({ preVote: true, initialElectionTickAdvance: true }), "advance-and-campaign");
  assert.equal(firstElectionMode({ preVote: false, initialElectionTickAdvance: true }), "advance");
  assert.equal(firstElectionMode({ preVote: true, initialElectionTickAdvance: false }), "off");
  assert.equal(firstElectionMode({ preVote: false, initialElectionTickAdvance: false }), "off");
});

test("without the early campaign (no pre-vote) every member does etcd's whole fast-forward, the lowest id's answer or not", () => {
  const s = { ...at(10, []), earlyCampaign: false };
  assert.deepEqual(firstElectionStep(s), { do: "wait" });
  assert.deepEqual(firstElectionStep({ ...s, up: [20, 30] }), { do: "advance", ticks: 8 });
  assert.deepEqual(firstElectionStep({ ...s, up: [20, 30], elapsed: 8 }), { do: "done" });
  assert.deepEqual(firstElectionStep({ ...s, memberId: 20, up: [10] }), { do: "advance", ticks: 8 });
});
