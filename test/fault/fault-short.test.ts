// The short fault runs for CI: 3 members, ~16 s of clients under kill, leader-kill, pause
// and partition, fixed seed, members snapshotting every 100 entries; then convergence
// (one state hash on all members after healing and after the full restart; kvctl only),
// the election bound (3 × election timeout per leader-kill), linearizability and
// durability, with lagging members caught up through streamed snapshots (kvctl keeps 50
// entries after a snapshot). Two runs: the v2 workload (get / set / compare-and-swap) and the v3 workload
// on the JSON gateway (linearizable range, put, txn compare-and-set: compare VALUE EQUAL,
// put on success, range on failure), and the same three through etcd's gRPC KV service
// (grpc-client.ts). About 30 s each; the node:test timeout (120 s) is the
// CI bound. KVCTL_FAULT_SERVER=etcd runs them against the real etcd 3.4 (default: kvctl);
// a run skips, saying why, when the server does not form a 3-member cluster.
// Ports: v2 23650–23674, v3 23625–23649, gRPC 23675–23699 (run.ts's default 23600–23624).

import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiChoice, type Api } from "./api.ts";
import { ClusterNotReadyError, ServerKind } from "./cluster.ts";
import { ConvergenceVerdict } from "./convergence.ts";
import { runFaultTest, RunVerdict, type FaultReport } from "./harness.ts";
import { FaultKind } from "./nemesis.ts";
import { formatReport } from "./summary.ts";

const server = process.env["KVCTL_FAULT_SERVER"] === ServerKind.etcd ? ServerKind.etcd : ServerKind.kvctl;

const runs: { api: Api; seed: number; portBase: number; what: string }[] = [
  { api: ApiChoice.v2, seed: 20240611, portBase: 23650, what: "v2 get/set/cas" },
  { api: ApiChoice.v3, seed: 20240612, portBase: 23625, what: "v3 range/put/txn" },
  { api: ApiChoice.grpc, seed: 20240613, portBase: 23675, what: "gRPC Range/Put/Txn" },
];

for (const run of runs) {
  test(`fault-short: 3 ${server} members stay linearizable on ${run.what}, durable and convergent under kill, leader-kill, pause and partition (seed ${run.seed})`, { timeout: 120_000 }, async (t) => {
    const options = {
      members: 3,
      durationMs: 16_000,
      faults: [FaultKind.kill, FaultKind.leaderKill, FaultKind.pause, FaultKind.partition],
      seed: run.seed,
      server,
      api: run.api,
      portBase: run.portBase,
      clients: 6,
      keys: 3,
      opTimeoutMs: 2000,
      checkTimeoutMs: 20_000,
      snapshotCount: 100,
      // kvctl keeps only 50 entries after a snapshot: a member back from a kill, a pause or a
      // partition is sent a snapshot (the v3 database streamed) instead of the log.
      catchupEntries: 50,
      // CI keeps no data root: a failed run prints what each member logged of elections and restarts.
      logTailOnFailure: 40,
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
    // The run's operations really ran on its API and were answered: each kind has definite
    // outcomes, the compare-and-set failed at least once, and the other API stayed idle.
    const mine = report.counts.byApi[run.api];
    for (const op of ["get", "set", "cas"] as const) assert.ok(mine[op].ok > 0, `no definite ${run.api} ${op}:\n${summary}`);
    assert.ok(mine.cas.fail > 0, `no failed compare (the failure branch was never checked):\n${summary}`);
    const other = report.counts.byApi[run.api === ApiChoice.v2 ? ApiChoice.v3 : ApiChoice.v2];
    assert.equal(other.get.ok + other.set.ok + other.cas.ok, 0, `a ${run.api} run issued operations on the other API`);
    const expected = server === ServerKind.kvctl ? ConvergenceVerdict.converged : ConvergenceVerdict.skipped;
    assert.deepEqual(report.convergence.map((c) => c.verdict), [expected, expected], `convergence:\n${summary}`);
    t.diagnostic(summary);
  });
}
