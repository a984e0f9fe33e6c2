// Hand-made register histories with a known verdict. Times are plain numbers; a client's
// operations never overlap each other.

import assert from "node:assert/strict";
import { test } from "node:test";
import { checkOperations, checkPartition, Verdict, type Model, type Operation } from "./checker.ts";
import { registerModel, type RegisterOperation, type RegisterOutput } from "./register-model.ts";

const K = "k";
const ok: RegisterOutput = { type: "ok" };
const unknown: RegisterOutput = { type: "unknown" };
const get = (client: number, call: number, ret: number, value: string | null, key = K): RegisterOperation => ({
  client, input: { op: "get", key }, call, output: { type: "value", value }, return: ret,
});
const set = (client: number, call: number, ret: number, value: string, output: RegisterOutput = ok, key = K): RegisterOperation => ({
  client, input: { op: "set", key, value }, call, output, return: output.type === "unknown" ? Infinity : ret,
});
const cas = (client: number, call: number, ret: number, swap: [string, string], output: RegisterOutput = ok): RegisterOperation => ({
  client, input: { op: "cas", key: K, prevValue: swap[0], value: swap[1] }, call, output, return: output.type === "unknown" ? Infinity : ret,
});

interface Case {
  name: string;
  history: RegisterOperation[];
  want: Verdict;
}

const cases: Case[] = [
  { name: "empty history is linearizable", history: [], want: Verdict.ok },
  { name: "read of a missing key returns not-found", history: [get(0, 0, 1, null)], want: Verdict.ok },
  { name: "sequential set then get is linearizable", history: [set(0, 0, 1, "a"), get(1, 2, 3, "a")], want: Verdict.ok },
  {
    name: "stale read after a completed overwrite is rejected",
    history: [set(0, 0, 1, "a"), set(0, 2, 3, "b"), get(1, 4, 5, "a")],
    want: Verdict.illegal,
  },
  {
    name: "read concurrent with a write may see either value",
    history: [set(0, 0, 1, "a"), set(0, 2, 10, "b"), get(1, 3, 4, "a"), get(2, 5, 6, "b")],
    want: Verdict.ok,
  },
  {
    name: "reads going back in time during one write are rejected",
    history: [set(0, 0, 1, "a"), set(0, 2, 10, "b"), get(1, 3, 4, "b"), get(2, 5, 6, "a")],
    want: Verdict.illegal,
  },
  {
    name: "lost write: an acknowledged value vanishes later",
    history: [set(0, 0, 1, "a"), get(1, 2, 3, "a"), get(1, 4, 5, null)],
    want: Verdict.illegal,
  },
  { name: "read of a value never written is rejected", history: [set(0, 0, 1, "a"), get(1, 2, 3, "x")], want: Verdict.illegal },
  {
    name: "unknown set may have applied",
    history: [set(0, 0, 1, "a"), set(1, 2, 3, "b", unknown), get(2, 50, 51, "b")],
    want: Verdict.ok,
  },
  {
    name: "unknown set may not have applied",
    history: [set(0, 0, 1, "a"), set(1, 2, 3, "b", unknown), get(2, 50, 51, "a")],
    want: Verdict.ok,
  },
  {
    name: "unknown set cannot take effect before its call",
    history: [set(0, 0, 1, "a"), get(2, 2, 3, "b"), set(1, 4, 5, "b", unknown)],
    want: Verdict.illegal,
  },
  {
    name: "unknown set observed then overwritten is linearizable",
    history: [set(1, 0, 1, "b", unknown), get(2, 2, 3, "b"), set(0, 4, 5, "c"), get(2, 6, 7, "c")],
    want: Verdict.ok,
  },
  {
    name: "value seen after being overwritten by a later write is rejected",
    history: [set(1, 0, 1, "b", unknown), get(2, 2, 3, "b"), set(0, 4, 5, "c"), get(2, 6, 7, "b")],
    want: Verdict.illegal,
  },
  { name: "cas succeeds on the current value", history: [set(0, 0, 1, "a"), cas(1, 2, 3, ["a", "b"]), get(2, 4, 5, "b")], want: Verdict.ok },
  {
    name: "cas succeeding on an overwritten value is rejected",
    history: [set(0, 0, 1, "a"), set(0, 2, 3, "b"), cas(1, 4, 5, ["a", "c"])],
    want: Verdict.illegal,
  },
  {
    name: "cas compare failure on the current value is rejected",
    history: [set(0, 0, 1, "a"), cas(1, 2, 3, ["a", "b"], { type: "compare-failed" })],
    want: Verdict.illegal,
  },
  { name: "cas on a missing key reports not-found", history: [cas(1, 0, 1, ["a", "b"], { type: "not-found" })], want: Verdict.ok },
  {
    name: "cas not-found on an existing key is rejected",
    history: [set(0, 0, 1, "a"), cas(1, 2, 3, ["a", "b"], { type: "not-found" })],
    want: Verdict.illegal,
  },
  {
    name: "two concurrent cas from the same value cannot both succeed",
    history: [set(0, 0, 1, "a"), cas(1, 2, 6, ["a", "b"]), cas(2, 2, 6, ["a", "c"])],
    want: Verdict.illegal,
  },
  {
    name: "concurrent cas: one wins, the other sees a compare failure",
    history: [set(0, 0, 1, "a"), cas(1, 2, 6, ["a", "b"]), cas(2, 2, 6, ["a", "c"], { type: "compare-failed" }), get(0, 7, 8, "b")],
    want: Verdict.ok,
  },
  {
    name: "compare failure explained only by an unobserved unknown write is linearizable",
    history: [set(0, 0, 1, "a"), set(1, 2, 3, "x", unknown), cas(2, 4, 5, ["a", "b"], { type: "compare-failed" })],
    want: Verdict.ok,
  },
  {
    name: "unknown cas applies only where prevValue matched",
    history: [set(0, 0, 1, "a"), cas(1, 2, 3, ["z", "b"], unknown), get(2, 4, 5, "b")],
    want: Verdict.illegal,
  },
  {
    name: "overlapping writes and reads in a consistent order are linearizable",
    history: [
      set(0, 0, 10, "a"), set(1, 1, 11, "b"), set(2, 2, 12, "c"),
      get(3, 3, 13, "b"), get(4, 4, 14, "a"), get(5, 15, 16, "a"),
    ],
    want: Verdict.ok,
  },
  {
    name: "overlapping reads that need two different final values are rejected",
    history: [set(0, 0, 10, "a"), set(1, 1, 11, "b"), get(3, 12, 13, "b"), get(4, 14, 15, "a")],
    want: Verdict.illegal,
  },
];

for (const c of cases) {
  test(`checker: ${c.name}`, () => {
    const result = checkOperations(registerModel, c.history);
    assert.equal(result.verdict, c.want, result.partitions.map((p) => p.explanation ?? "").join("\n"));
  });
}

test("checker partitions by key: a violation on one key does not hide behind another", () => {
  const history = [set(0, 0, 1, "a", ok, "x"), get(1, 2, 3, "a", "x"), set(0, 4, 5, "b", ok, "y"), set(0, 6, 7, "c", ok, "y"), get(1, 8, 9, "b", "y")];
  const result = checkOperations(registerModel, history);
  assert.equal(result.verdict, Verdict.illegal);
  assert.deepEqual(result.partitions.map((p) => [p.label, p.verdict]), [["x", "ok"], ["y", "illegal"]]);
});

test("checker explains a violation with the longest prefix and the stuck operations", () => {
  const result = checkOperations(registerModel, [set(0, 0, 1, "a"), set(0, 2, 3, "b"), get(1, 4, 5, "a")]);
  const text = result.partitions[0]?.explanation ?? "";
  assert.match(text, /longest linearizable prefix: 2 of 3/);
  assert.match(text, /get\(k\) → "a"/);
});

// A model with no reductions where 30 concurrent operations can be linearized in any
// order into distinct states (sums of distinct powers of two) and a final operation no
// state satisfies: proving that takes 2^30 configurations.
const sums: Model<number, number, boolean> = {
  init: () => 0,
  step: (s, add, final) => (final ? { ok: false, state: s } : { ok: true, state: s + add }),
  equal: (a, b) => a === b,
};
const exponential: Operation<number, boolean>[] = [
  ...Array.from({ length: 30 }, (_, i) => ({ client: i, input: 2 ** i, call: 0, output: false, return: 10 })),
  { client: 99, input: 0, call: 1, output: true, return: 10 },
];

test("checker reports unknown instead of hanging when the step budget runs out", () => {
  const result = checkPartition(sums, exponential, { maxSteps: 20_000 });
  assert.equal(result.verdict, Verdict.unknown);
  assert.match(result.explanation ?? "", /step budget/);
});

test("checker reports unknown when the time budget runs out", () => {
  let t = 0;
  const result = checkPartition(sums, exponential, { timeoutMs: 50, now: () => (t += 1) });
  assert.equal(result.verdict, Verdict.unknown);
  assert.match(result.explanation ?? "", /time budget/);
});

test("checker proves a violation quickly despite many unknown writes nobody observed", () => {
  // 40 blind sets and 40 unknown cas, all pending to the end, around a stale read.
  const history: RegisterOperation[] = [set(0, 0, 1, "a"), set(0, 2, 3, "b")];
  for (let i = 0; i < 40; i++) history.push(set(10 + i, 4, 5, `w${i}`, unknown), cas(60 + i, 4, 5, ["b", `c${i}`], unknown));
  history.push(get(1, 6, 7, "a"));
  const result = checkPartition(registerModel, registerModel.partition!(history)[0]!.operations, { maxSteps: 200_000 });
  assert.equal(result.verdict, Verdict.illegal);
});

test("checker rejects an operation whose return precedes its call", () => {
  assert.throws(() => checkPartition(registerModel, [get(0, 5, 1, null)]), /Cannot check operation 0/);
});

test("checker works with a model that has no partition, prune or hash (a counter)", () => {
  type Op = Operation<number, number>;
  // input: amount to add; output: the counter value after the add.
  const counter: Model<number, number, number> = {
    init: () => 0,
    step: (s, add, after) => ({ ok: s + add === after, state: s + add }),
    equal: (a, b) => a === b,
  };
  const good: Op[] = [
    { client: 0, input: 1, call: 0, output: 2, return: 10 },
    { client: 1, input: 1, call: 1, output: 1, return: 9 },
  ];
  const bad: Op[] = [
    { client: 0, input: 1, call: 0, output: 2, return: 1 },
    { client: 1, input: 1, call: 2, output: 1, return: 3 },
  ];
  assert.equal(checkOperations(counter, good).verdict, Verdict.ok);
  assert.equal(checkOperations(counter, bad).verdict, Verdict.illegal);
});
