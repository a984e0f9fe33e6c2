// Command-line options of `npm run bench -- ...` into one typed object.
import { parseArgs } from "node:util";
import { SERVER_KINDS, type ServerKind } from "./server.ts";

/** Workload groups selectable with --only (each names rows of the table). */
export const GROUPS = ["put", "put-same", "get", "auth", "quorum", "cas", "watch", "fill", "client"] as const;
export type Group = (typeof GROUPS)[number];

/** Shorthands accepted by --only besides the group names. */
export const GROUP_ALIASES: Readonly<Record<string, readonly Group[]>> = {
  all: GROUPS,
  throughput: ["put", "put-same", "get", "auth", "quorum", "cas"],
  memory: ["fill"],
  restart: ["fill"],
  rss: ["fill"],
  startup: ["client"],
};

export interface BenchOptions {
  readonly durationS: number;
  readonly warmupS: number;
  readonly only: ReadonlySet<Group>;
  readonly servers: readonly ServerKind[];
  readonly label: string;
  readonly smoke: boolean;
  readonly fillN: number;
  readonly fillC: number;
  readonly watchers: number;
  readonly watchReps: number;
  readonly restartReps: number;
  readonly clientRuns: number;
  readonly clientWarmup: number;
  /** A fresh server (empty data dir) for every throughput row, as the shared harness does. */
  readonly freshPerRow: boolean;
  /** Pause before the RSS samples (the shared harness waits 2 s). */
  readonly settleMs: number;
  readonly outDir: string;
  readonly keep: boolean;
  readonly build: boolean;
  readonly etcdBin: string;
  /** kvctl's compiled entry, relative to the project root. */
  readonly kvctlEntry: string;
  /** Rows with more CPU steal than this (%) are flagged in the table. */
  readonly maxSteal: number;
  /** Time client commands with hyperfine when installed (else our own spawn loop). */
  readonly hyperfine: boolean;
  readonly help: boolean;
}

export const USAGE = `usage: npm run bench -- [options]

  --server etcd|kvctl|both   which servers (default both; etcd only when installed)
  --only LIST                comma list of ${GROUPS.join(", ")}
                             (or throughput, memory, all; default all); auth = v2 GET and
                             PUT unique with auth on (compare with get,put: --only auth,get,put)
  --duration S               measured seconds per wrk row (default 10; smoke 1)
  --warmup S                 warm-up seconds per wrk row, not counted (default 3; smoke 0)
  --label X                  name of the results file (default "bench"; smoke "smoke")
  --smoke                    quick run (< 60 s): 1 s rows, 2000-key fill, 50 watchers,
                             one server per kind for all rows, results under bench/tmp/
  --fill-n N --fill-c C      keys and connections of the fill (default 100000, 32)
  --watchers N               long polls of the fan-out (default 1000)
  --watch-reps N             fan-out repetitions, median reported (default 3)
  --restart-reps N           restarts with the filled data dir, median (default 3)
  --client-runs N            runs of each client command, median (default 20)
  --shared-server            one server per kind for all wrk rows (default: fresh per row)
  --out DIR                  results folder (default bench/results)
  --keep                     keep bench/tmp/run-* (server logs, data dirs)
  --build                    rebuild dist/ first (default: only when missing)
  --etcd-bin PATH            default /usr/bin/etcd
  --kvctl-entry PATH         default dist/bundle/cli/main.js (what bin/kvctl runs)
  --no-hyperfine             time client commands with our own loop even if hyperfine is installed
  --max-steal PCT            flag rows with more CPU steal than this (default 5)
`;

function positiveInt(name: string, v: string | undefined, def: number, min = 1): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`Cannot parse --${name}: expected an integer >= ${min}, got ${JSON.stringify(v)}`);
  return n;
}

/** Expand a --only list into groups; throws on unknown names. */
export function parseOnly(list: string | undefined): Set<Group> {
  if (list === undefined || list.trim() === "") return new Set(GROUPS);
  const out = new Set<Group>();
  for (const raw of list.split(",")) {
    const name = raw.trim();
    if (name === "") continue;
    const alias = GROUP_ALIASES[name];
    if (alias !== undefined) alias.forEach((g) => out.add(g));
    else if ((GROUPS as readonly string[]).includes(name)) out.add(name as Group);
    else throw new Error(`Cannot parse --only: unknown workload ${JSON.stringify(name)} (known: ${GROUPS.join(", ")})`);
  }
  return out;
}

export function parseServers(v: string | undefined): ServerKind[] {
  if (v === undefined || v === "both") return [...SERVER_KINDS];
  if ((SERVER_KINDS as readonly string[]).includes(v)) return [v as ServerKind];
  throw new Error(`Cannot parse --server: expected etcd, kvctl or both, got ${JSON.stringify(v)}`);
}

export function parseOptions(argv: readonly string[]): BenchOptions {
  const { values: v } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      duration: { type: "string" }, warmup: { type: "string" }, only: { type: "string" },
      server: { type: "string" }, label: { type: "string" }, smoke: { type: "boolean" },
      "fill-n": { type: "string" }, "fill-c": { type: "string" }, watchers: { type: "string" },
      "watch-reps": { type: "string" }, "restart-reps": { type: "string" }, "client-runs": { type: "string" },
      "shared-server": { type: "boolean" }, out: { type: "string" }, keep: { type: "boolean" },
      build: { type: "boolean" }, "etcd-bin": { type: "string" }, "kvctl-entry": { type: "string" },
      "max-steal": { type: "string" }, "no-hyperfine": { type: "boolean" }, help: { type: "boolean", short: "h" },
    },
  });
  const smoke = v.smoke === true;
  return {
    durationS: positiveInt("duration", v.duration, smoke ? 1 : 10),
    warmupS: positiveInt("warmup", v.warmup, smoke ? 0 : 3, 0),
    only: parseOnly(v.only),
    servers: parseServers(v.server),
    label: v.label ?? (smoke ? "smoke" : "bench"),
    smoke,
    fillN: positiveInt("fill-n", v["fill-n"], smoke ? 2000 : 100_000),
    fillC: positiveInt("fill-c", v["fill-c"], 32),
    watchers: positiveInt("watchers", v.watchers, smoke ? 50 : 1000),
    watchReps: positiveInt("watch-reps", v["watch-reps"], smoke ? 1 : 3),
    restartReps: positiveInt("restart-reps", v["restart-reps"], smoke ? 1 : 3),
    clientRuns: positiveInt("client-runs", v["client-runs"], smoke ? 5 : 20),
    clientWarmup: smoke ? 1 : 3,
    freshPerRow: !(smoke || v["shared-server"] === true),
    settleMs: smoke ? 500 : 2000,
    outDir: v.out ?? (smoke ? "bench/tmp/results" : "bench/results"),
    keep: v.keep === true,
    build: v.build === true,
    etcdBin: v["etcd-bin"] ?? "/usr/bin/etcd",
    kvctlEntry: v["kvctl-entry"] ?? "dist/bundle/cli/main.js",
    maxSteal: positiveInt("max-steal", v["max-steal"], 5, 0),
    hyperfine: v["no-hyperfine"] !== true,
    help: v.help === true,
  };
}
