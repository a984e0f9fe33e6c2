// Randomized safety test: thousands of seeded schedules over simulated 3- and 5-node
// clusters with message loss, delay, duplication, reordering, partitions, crashes,
// restarts and compaction. After every step: election safety, log matching, leader
// completeness, state machine safety, and ReadIndex linearizability; after each
// schedule the network heals and the cluster must make progress again.
// A failure prints its seed; rerun one with RAFT_SIM_SEED=<seed>.

import assert from "node:assert/strict";
import { test } from "node:test";
import { SimCluster, type SimOptions } from "./sim-network.test-helper.ts";

function options(seed: number, size: number): SimOptions {
  // Derive the schedule's knobs from the seed so each seed is one reproducible world.
  const k = seed % 8;
  return {
    seed,
    size,
    steps: 800,
    preVote: (k & 1) === 1,
    checkQuorum: (k & 2) === 2,
    drop: (k & 4) === 4 ? 0.1 : 0.02,
    duplicate: 0.05,
    maxDelay: 4,
  };
}

function runSchedule(seed: number, size: number): SimCluster {
  const c = new SimCluster(options(seed, size));
  try {
    for (let i = 0; i < c.opts.steps; i++) c.step();
    c.healAndConverge(600);
  } catch (err) {
    console.error(`raft sim failed: RAFT_SIM_SEED=${seed} size=${size}`);
    throw err;
  }
  return c;
}

const only = process.env["RAFT_SIM_SEED"];

const suites: Array<{ size: number; seeds: number; base: number }> = [
  { size: 3, seeds: 2000, base: 1 },
  { size: 5, seeds: 1000, base: 100_001 },
];

for (const s of suites) {
  test(`${s.size}-node cluster keeps Raft's safety properties over ${s.seeds} random schedules`, () => {
    let applied = 0;
    let reads = 0;
    let leaders = 0;
    const seeds = only !== undefined ? [Number(only)] : Array.from({ length: s.seeds }, (_, i) => s.base + i);
    for (const seed of seeds) {
      const c = runSchedule(seed, s.size);
      applied += c.maxApplied;
      reads += c.readsServed;
      leaders += c.leaders.size;
    }
    // The schedules must actually exercise the protocol, not idle.
    assert.ok(applied > seeds.length * 3, `only ${applied} entries applied`);
    assert.ok(leaders >= seeds.length, `only ${leaders} leaders elected`);
    if (only === undefined) assert.ok(reads > seeds.length / 4, `only ${reads} reads served`);
  });
}
