// The fault-test runner:
//   node --import tsx test/fault/run.ts --members 3|5 --duration 30|90s|30m \
//     --faults kill,pause,partition,leader-kill --seed N --server kvctl|etcd --api v2|v3|grpc|both
// --api: v2 keys (default), the v3 gateway (range / put / txn compare-and-set), or both
// (clients alternate APIs, each API on its own keys; --keys is per API).
// Other flags: --clients 8 --keys 4 --op-timeout 2000 (ms) --port-base 23600
//   --check-timeout 20000 (ms per key) --inject stale-read|lost-write --keep --quiet
//   --snapshot-count N (members snapshot every N applied entries) --election-timeout 500 (ms)
//   --catchup-entries N (kvctl: entries kept after a snapshot; small, lagging members get snapshots)
// Exit status: 0 linearizable and nothing lost; 1 violation; 2 usage error or the servers
// never formed a cluster; 3 checker budget exhausted (unknown); 4 no recovery after faults.
// A violation is any of: a non-linearizable key, a lost acknowledged write, members that
// do not converge to one state hash (kvctl only), a leader-kill election slower than 3 ×
// the election timeout.

import { parseArgs } from "node:util";
import { ApiChoice, parseApiChoice } from "./api.ts";
import { ServerKind, type Cluster } from "./cluster.ts";
import { Injection, runFaultTest, RunVerdict, type FaultTestOptions } from "./harness.ts";
import { allFaults, parseFaults } from "./nemesis.ts";
import { formatReport } from "./summary.ts";

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: node --import tsx test/fault/run.ts --members 3|5 --duration 60|90s|30m --faults ${allFaults.join(",")} --seed N --server kvctl|etcd --api v2|v3|grpc|both\n`);
  process.exit(2);
}

function intFlag(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) usage(`Cannot parse --${name}: "${value}" is not a non-negative integer`);
  return n;
}

/** "90" and "90s" are seconds, "30m" minutes, "1h" hours, "500ms" milliseconds; → ms. */
function durationFlag(value: string | undefined, fallbackMs: number): number {
  if (value === undefined) return fallbackMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (m === null) usage(`Cannot parse --duration: "${value}" (e.g. 60, 90s, 30m, 1h)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms" | "s" | "m" | "h"];
  return Math.round(Number(m[1]) * unit);
}

function parse(argv: string[]): FaultTestOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        members: { type: "string" }, duration: { type: "string" }, faults: { type: "string" }, seed: { type: "string" },
        server: { type: "string" }, clients: { type: "string" }, keys: { type: "string" }, "op-timeout": { type: "string" },
        "port-base": { type: "string" }, "check-timeout": { type: "string" }, inject: { type: "string" },
        keep: { type: "boolean" }, quiet: { type: "boolean" }, "snapshot-count": { type: "string" }, "catchup-entries": { type: "string" }, "election-timeout": { type: "string" }, api: { type: "string" },
      },
    }));
  } catch (err) {
    usage(`Cannot parse arguments: ${(err as Error).message}`);
  }
  const members = intFlag(values.members, "members", 3);
  if (members < 1 || members > 9) usage("Cannot parse --members: must be 1..9");
  const server = values.server ?? ServerKind.kvctl;
  if (server !== ServerKind.kvctl && server !== ServerKind.etcd) usage(`Cannot parse --server: "${server}" (kvctl or etcd)`);
  const inject = values.inject;
  if (inject !== undefined && inject !== Injection.staleRead && inject !== Injection.lostWrite) usage(`Cannot parse --inject: "${inject}"`);
  let api: ApiChoice;
  try {
    api = parseApiChoice(values.api ?? ApiChoice.v2);
  } catch (err) {
    usage((err as Error).message);
  }
  let faults;
  try {
    faults = parseFaults(values.faults ?? allFaults.join(","));
  } catch (err) {
    usage((err as Error).message);
  }
  const quiet = values.quiet ?? false;
  const opts: FaultTestOptions = {
    members,
    durationMs: durationFlag(values.duration, 30_000),
    faults,
    seed: intFlag(values.seed, "seed", Date.now() % 1_000_000),
    server,
    portBase: intFlag(values["port-base"], "port-base", 23600),
    clients: intFlag(values.clients, "clients", 8),
    keys: intFlag(values.keys, "keys", 4),
    api,
    opTimeoutMs: intFlag(values["op-timeout"], "op-timeout", 2000),
    checkTimeoutMs: intFlag(values["check-timeout"], "check-timeout", 20_000),
    keep: values.keep ?? false,
    log: (line) => {
      if (!quiet) process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${line}\n`);
    },
  };
  if (inject !== undefined) opts.inject = inject;
  if (values["snapshot-count"] !== undefined) {
    opts.snapshotCount = intFlag(values["snapshot-count"], "snapshot-count", 0);
    if (opts.snapshotCount < 1) usage("Cannot parse --snapshot-count: must be at least 1");
  }
  if (values["catchup-entries"] !== undefined) {
    opts.catchupEntries = intFlag(values["catchup-entries"], "catchup-entries", 0);
    if (opts.catchupEntries < 1) usage("Cannot parse --catchup-entries: must be at least 1");
  }
  if (values["election-timeout"] !== undefined) {
    opts.electionTimeoutMs = intFlag(values["election-timeout"], "election-timeout", 0);
    if (opts.electionTimeoutMs < 50) usage("Cannot parse --election-timeout: must be at least 50 (ms)");
  }
  return opts;
}

const opts = parse(process.argv.slice(2));
const ctrl = new AbortController();
let cluster: Cluster | undefined;
// Last resort: whatever happens, no member outlives the runner.
process.on("exit", () => cluster?.killAllSync());
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    process.stderr.write(`\n${sig}: stopping (seed ${opts.seed})\n`);
    ctrl.abort();
    cluster?.killAllSync();
    process.exit(130);
  });
}

process.stderr.write(`fault run: seed ${opts.seed}, ${opts.members} × ${opts.server}, api ${opts.api ?? ApiChoice.v2}, ${opts.durationMs / 1000} s, faults ${opts.faults.join(",")}\n`);
try {
  const report = await runFaultTest({ ...opts, signal: ctrl.signal, onCluster: (c) => (cluster = c) });
  process.stdout.write(formatReport(report, opts));
  const codes = { [RunVerdict.ok]: 0, [RunVerdict.violation]: 1, [RunVerdict.unknown]: 3, [RunVerdict.notRecovered]: 4 };
  process.exitCode = codes[report.verdict];
} catch (err) {
  process.stderr.write(`fault run failed (seed ${opts.seed}): ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 2;
}
