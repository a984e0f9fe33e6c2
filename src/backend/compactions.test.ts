// Compactions' timings as etcd's scheduleCompaction observes them: every batch but a job's
// last is a pause, a job's total runs from its first batch to its last commit, and its
// deleted records are counted once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Compactions } from "./compactions.ts";

test("the observer gets a pause per batch but the last, and each job's total and records", async () => {
  const batches: number[] = [];
  const jobs: Array<[number, number]> = [];
  const written: number[] = [];
  // Compactions times its batches with performance.now(), which no option replaces (and
  // node:test's mock timers do not move): each write takes real time, so the timings have
  // a known floor.
  const writeMs = 5;
  const c = new Compactions({
    limit: 2,
    pauseMs: 1,
    write: async (batch) => {
      written.push(batch.length / 2);
      await new Promise((r) => setTimeout(r, writeMs));
    },
    observer: { batch: (ms) => void batches.push(ms), job: (ms, records) => void jobs.push([ms, records]) },
  });
  // Job 1: 5 records in batches of 2, 2, 1; job 2: nothing to delete, still one batch.
  c.add(10, [2, 0, 3, 0, 4, 0, 5, 0, 6, 0]);
  c.add(20, []);
  c.recorded(20);
  await c.finished(20);
  assert.deepEqual(written, [2, 2, 1, 0]);
  assert.equal(batches.length, 2, "job 1's first two batches");
  for (const ms of batches) assert.ok(Number.isInteger(ms) && ms >= writeMs - 1, `pause ${ms} ms, whole ms of a ${writeMs} ms write`);
  assert.deepEqual(jobs.map(([, n]) => n), [5, 0]);
  assert.ok(Number.isInteger(jobs[0]![0]) && jobs[0]![0] >= 3 * writeMs, `job 1 took its three writes and the pauses: ${jobs[0]![0]} ms`);
  await c.stop();
});
