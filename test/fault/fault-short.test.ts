// The short fault run for CI: 3 members, ~16 s of clients under kill, leader-kill, pause
// and partition, fixed seed, members snapshotting every 100 entries; then convergence
// (one state hash on all members after healing and after the full restart; kvctl only),
// the election bound (3 × election timeout per leader-kill), linearizability and
// durability. About 30 s in all; the node:test timeout (120 s) is the CI bound. KVCTL_FAULT_SERVER=etcd runs
// it against the real etcd 3.4 (default: kvctl). It skips, saying why, when the server does
// not form a 3-member cluster (multi-member support may not be there yet).

import assert from "node:assert/strict";
import { test } from "node:test";
import { ClusterNotReadyError, ServerKind } from "./cluster.ts";
import { ConvergenceVerdict } from "./convergence.ts";
import { runFaultTest, RunVerdict, type FaultReport } from "./harness.ts";
import { FaultKind } from "./nemesis.ts";
import { formatReport } from "./summary.ts";

const server = process.env["KVCTL_FAULT_SERVER"] === ServerKind.etcd ? ServerKind.etcd : ServerKind.kvctl;
const SEED = 20240611;

test(`fault-short: 3 ${server} members stay linearizable, durable and convergent under kill, leader-kill, pause and partition (seed ${SEED})`, { timeout: 120_000 }, async (t) => {
  const options = {
    members: 3,
    durationMs: 16_000,
    faults: [FaultKind.kill, FaultKind.leaderKill, FaultKind.pause, FaultKind.partition],
    seed: SEED,
    server,
    portBase: 23650,
    clients: 6,
    keys: 3,
    opTimeoutMs: 2000,
    checkTimeoutMs: 20_000,
    snapshotCount: 100,
    log: (line: string) => t.diagnostic(line),
  };
  let report: FaultReport;
  try {
    report = await runFaultTest(options);
  } catch (err) {
    if (err instanceof ClusterNotReadyError) {
      t.skip(`${server} did not form a 3-member cluster: ${err.message}`);
      return;
    }
    throw err;
  }
  const summary = formatReport(report, options);
  assert.equal(report.verdict, RunVerdict.ok, summary);
  assert.ok(report.ops > 100, `too few operations to mean anything:\n${summary}`);
  assert.ok(report.faults.length > 0, `no fault was injected:\n${summary}`);
  const expected = server === ServerKind.kvctl ? ConvergenceVerdict.converged : ConvergenceVerdict.skipped;
  assert.deepEqual(report.convergence.map((c) => c.verdict), [expected, expected], `convergence:\n${summary}`);
  t.diagnostic(summary);
});
