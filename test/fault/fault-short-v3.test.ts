// The short fault run for CI with the v3 workload: fault-short.test.ts's run (3 members,
// ~16 s of clients under kill, leader-kill, pause and partition, fixed seed, snapshots
// every 100 entries) with every client on the v3 JSON gateway: linearizable range, put,
// and txn compare-and-set (compare VALUE EQUAL, put on success, range on failure), on 3
// v3 keys. Same checks: linearizability per key, durability after a full restart, the
// election bound, convergence (kvctl only). KVCTL_FAULT_SERVER=etcd runs it against etcd
// 3.4 (default: kvctl); it skips, saying why, when no 3-member cluster forms. Ports
// 23625–23649 (fault-short uses 23650–23674, run.ts's default 23600–23624).

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiChoice } from "./api.ts";
import { ClusterNotReadyError, ServerKind } from "./cluster.ts";
import { ConvergenceVerdict } from "./convergence.ts";
import { runFaultTest, RunVerdict, type FaultReport } from "./harness.ts";
import { FaultKind } from "./nemesis.ts";
import { formatReport } from "./summary.ts";

const server = process.env["KVCTL_FAULT_SERVER"] === ServerKind.etcd ? ServerKind.etcd : ServerKind.kvctl;
const SEED = 20240612;

test(`fault-short-v3: 3 ${server} members stay linearizable on v3 range/put/txn, durable and convergent under kill, leader-kill, pause and partition (seed ${SEED})`, { timeout: 120_000 }, async (t) => {
  const options = {
    members: 3,
    durationMs: 16_000,
    faults: [FaultKind.kill, FaultKind.leaderKill, FaultKind.pause, FaultKind.partition],
    seed: SEED,
    server,
    api: ApiChoice.v3,
    portBase: 23625,
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
  // The v3 operations really ran and were answered: each kind has definite outcomes.
  const v3 = report.counts.byApi.v3;
  for (const op of ["get", "set", "cas"] as const) assert.ok(v3[op].ok > 0, `no definite v3 ${op}:\n${summary}`);
  assert.ok(v3.cas.fail > 0, `no failed txn compare (the failure branch was never checked):\n${summary}`);
  const v2 = report.counts.byApi.v2;
  assert.equal(v2.get.ok + v2.set.ok + v2.cas.ok, 0, "a v3 run issued v2 operations");
  const expected = server === ServerKind.kvctl ? ConvergenceVerdict.converged : ConvergenceVerdict.skipped;
  assert.deepEqual(report.convergence.map((c) => c.verdict), [expected, expected], `convergence:\n${summary}`);
  t.diagnostic(summary);
});
