// The fault-test runner:
//   node --import tsx test/fault/run.ts --members 3|5 --duration 30 \
//     --faults kill,pause,partition,leader-kill --seed N --server kvctl|etcd
// Other flags: --clients 8 --keys 4 --op-timeout 2000 (ms) --port-base 23600
//   --check-timeout 20000 (ms per key) --inject stale-read|lost-write --keep --quiet
// Exit status: 0 linearizable and nothing lost; 1 violation; 2 usage error or the servers
// never formed a cluster; 3 checker budget exhausted (unknown); 4 no recovery after faults.

import { parseArgs } from "node:util";
import { ServerKind, type Cluster } from "./cluster.ts";
import { Injection, runFaultTest, RunVerdict, type FaultTestOptions } from "./harness.ts";
import { allFaults, parseFaults } from "./nemesis.ts";
import { formatReport } from "./summary.ts";

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: node --import tsx test/fault/run.ts --members 3|5 --duration SECONDS --faults ${allFaults.join(",")} --seed N --server kvctl|etcd\n`);
  process.exit(2);
}

function intFlag(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) usage(`Cannot parse --${name}: "${value}" is not a non-negative integer`);
  return n;
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
        keep: { type: "boolean" }, quiet: { type: "boolean" },
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
  let faults;
  try {
    faults = parseFaults(values.faults ?? allFaults.join(","));
  } catch (err) {
    usage((err as Error).message);
  }
  const quiet = values.quiet ?? false;
  const opts: FaultTestOptions = {
    members,
    durationMs: intFlag(values.duration, "duration", 30) * 1000,
    faults,
    seed: intFlag(values.seed, "seed", Date.now() % 1_000_000),
    server,
    portBase: intFlag(values["port-base"], "port-base", 23600),
    clients: intFlag(values.clients, "clients", 8),
    keys: intFlag(values.keys, "keys", 4),
    opTimeoutMs: intFlag(values["op-timeout"], "op-timeout", 2000),
    checkTimeoutMs: intFlag(values["check-timeout"], "check-timeout", 20_000),
    keep: values.keep ?? false,
    log: (line) => {
      if (!quiet) process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${line}\n`);
    },
  };
  if (inject !== undefined) opts.inject = inject;
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

process.stderr.write(`fault run: seed ${opts.seed}, ${opts.members} × ${opts.server}, ${opts.durationMs / 1000} s, faults ${opts.faults.join(",")}\n`);
try {
  const report = await runFaultTest({ ...opts, signal: ctrl.signal, onCluster: (c) => (cluster = c) });
  process.stdout.write(formatReport(report, opts));
  const codes = { [RunVerdict.ok]: 0, [RunVerdict.violation]: 1, [RunVerdict.unknown]: 3, [RunVerdict.notRecovered]: 4 };
  process.exitCode = codes[report.verdict];
} catch (err) {
  process.stderr.write(`fault run failed (seed ${opts.seed}): ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 2;
}
