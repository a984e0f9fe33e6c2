// Randomized: histories generated from a sequential simulation must be accepted; the same
// histories with one injected anomaly must be rejected. The seed is printed on failure;
// set LIN_SEED to replay one.

import assert from "node:assert/strict";
import { test } from "node:test";
import { checkOperations, Verdict } from "./checker.ts";
import { Anomaly, generateHistory, injectAnomaly, mulberry32 } from "./history-gen.ts";
import { registerModel } from "./register-model.ts";

const baseSeed = Number(process.env["LIN_SEED"] ?? Date.now() % 1_000_000);
const ROUNDS = 60;

interface Shape {
  clients: number;
  operations: number;
  unknownRate: number;
}

const shapes: Shape[] = [
  { clients: 2, operations: 20, unknownRate: 0 },
  { clients: 5, operations: 120, unknownRate: 0.05 },
  { clients: 10, operations: 400, unknownRate: 0.03 },
  { clients: 4, operations: 60, unknownRate: 0.2 },
];

for (const shape of shapes) {
  test(`random ${shape.clients}-client histories of ${shape.operations} ops from a sequential run are linearizable (seed ${baseSeed})`, () => {
    for (let r = 0; r < ROUNDS; r++) {
      const seed = baseSeed + r;
      const history = generateHistory({ rng: mulberry32(seed), ...shape });
      const result = checkOperations(registerModel, history, { timeoutMs: 5000 });
      assert.equal(result.verdict, Verdict.ok, `seed ${seed}: ${result.partitions[0]?.explanation ?? ""}`);
    }
  });

  for (const anomaly of Object.values(Anomaly)) {
    test(`random ${shape.clients}-client histories with an injected ${anomaly} are rejected (seed ${baseSeed})`, () => {
      let injected = 0;
      for (let r = 0; r < ROUNDS; r++) {
        const seed = baseSeed + r;
        const rng = mulberry32(seed);
        const bad = injectAnomaly(generateHistory({ rng, ...shape }), anomaly, rng);
        if (bad === undefined) continue;
        injected++;
        const result = checkOperations(registerModel, bad, { timeoutMs: 5000 });
        assert.equal(result.verdict, Verdict.illegal, `seed ${seed}: ${anomaly} was not caught (${result.verdict})`);
      }
      // Small shapes sometimes offer no place for an anomaly; most rounds must.
      assert.ok(injected >= ROUNDS / 3, `only ${injected} of ${ROUNDS} histories took a ${anomaly}`);
    });
  }
}

test("random histories on several keys are checked per key", () => {
  const rng = mulberry32(baseSeed);
  const history = ["a", "b", "c"].flatMap((key) => generateHistory({ rng, clients: 4, operations: 80, key }));
  const result = checkOperations(registerModel, history);
  assert.deepEqual(result.partitions.map((p) => [p.label, p.verdict]), [["a", "ok"], ["b", "ok"], ["c", "ok"]]);
});
