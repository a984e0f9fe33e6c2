import assert from "node:assert/strict";
import { test } from "node:test";
import type { RegisterOperation, RegisterOutput } from "../linearizability/register-model.ts";
import { findLostWrites } from "./durability.ts";
import { parseFaults } from "./nemesis.ts";

const ok: RegisterOutput = { type: "ok" };
const set = (call: number, ret: number, value: string, output: RegisterOutput = ok): RegisterOperation => ({
  client: 0, input: { op: "set", key: "k", value }, call, output, return: output.type === "unknown" ? Infinity : ret,
});

interface Case {
  name: string;
  history: RegisterOperation[];
  found: string | null;
  lost: boolean;
}

const cases: Case[] = [
  { name: "the last acknowledged value survives", history: [set(0, 1, "a"), set(2, 3, "b")], found: "b", lost: false },
  { name: "an older acknowledged value is a lost write", history: [set(0, 1, "a"), set(2, 3, "b")], found: "a", lost: true },
  { name: "a concurrent write may win", history: [set(0, 5, "a"), set(1, 4, "b")], found: "a", lost: false },
  { name: "an unknown write may be the last one", history: [set(0, 1, "a"), set(2, 3, "x", { type: "unknown" })], found: "x", lost: false },
  { name: "a missing key after acknowledged writes is a loss", history: [set(0, 1, "a")], found: null, lost: true },
  { name: "a value never written is a loss", history: [set(0, 1, "a")], found: "zzz", lost: true },
  { name: "no acknowledged write: anything goes", history: [set(0, 1, "x", { type: "unknown" })], found: null, lost: false },
];

for (const c of cases) {
  test(`findLostWrites: ${c.name}`, () => {
    const lost = findLostWrites(c.history, new Map([["k", c.found]]));
    assert.equal(lost.length > 0, c.lost, JSON.stringify(lost));
  });
}

test("parseFaults accepts the known faults and rejects others", () => {
  assert.deepEqual(parseFaults("kill, pause,partition,leader-kill"), ["kill", "pause", "partition", "leader-kill"]);
  assert.deepEqual(parseFaults(""), []);
  assert.throws(() => parseFaults("kill,flood"), /unknown fault "flood"/);
});
