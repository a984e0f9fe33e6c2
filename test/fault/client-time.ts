// Where the clients' time goes during a fault run: every operation (answered, unknown or
// refused) with its latency, split by the state of its target member and of the cluster at
// call time. A server that loses throughput only around faults shows it here: which fault,
// whether the op hit the faulted member, how soon after the member's restart or the
// last leader change. Pure: no I/O, so the bucketing is unit-tested (client-time.test.ts).

import type { FaultRecord } from "./nemesis.ts";

export const SampleOutcome = { answered: "answered", unknown: "unknown", refused: "refused" } as const;
export type SampleOutcome = (typeof SampleOutcome)[keyof typeof SampleOutcome];

/** One client operation; times are milliseconds since the workload's origin. */
export interface OpSample {
  /** Index of the member the client sent it to. */
  member: number;
  /** e.g. "v2 get", "v3 set". */
  op: string;
  call: number;
  ret: number;
  outcome: SampleOutcome;
}

/** Back-off a client sleeps after a refusal (workload.ts); refusals cost it too. */
export const REFUSED_BACKOFF_MS = 20;

export interface BucketRow {
  split: string;
  bucket: string;
  answered: number;
  unknown: number;
  refused: number;
  /** Latency of all ops (+ the back-off of refused ones), in seconds of client time. */
  clientSeconds: number;
  /** Wall time the cluster spent in this state (only for cluster-wide splits). */
  wallSeconds: number | undefined;
  /** Latency percentiles of answered ops, ms. */
  p50: number | undefined;
  p99: number | undefined;
}

export interface ClientTimeInput {
  samples: readonly OpSample[];
  faults: readonly FaultRecord[];
  /** Times (ms since origin) when the harness saw a different member lead. */
  leaderChanges: readonly number[];
  /** Who the harness saw leading from when (undefined: nobody said so), in time order. */
  leaders?: ReadonlyArray<{ at: number; leader: number | undefined }>;
  workloadMs: number;
}

/**
 * The members a fault hit: "m2", "m0 (leader)", "isolate m1", or a split
 * "[m0,m1] | [m2,m3,m4]" (the minority, left of the bar).
 */
export function faultTargets(target: string): number[] {
  const side = target.startsWith("[") ? (target.split("|")[0] ?? "") : target;
  return [...side.matchAll(/m(\d+)/g)].map((m) => Number(m[1]));
}

const edges = [1000, 3000, 10_000] as const;
const ageLabels = ["0-1 s", "1-3 s", "3-10 s", ">10 s"] as const;
/** "0-1 s" … ">10 s" for an age in ms. */
export function ageBucket(ms: number): string {
  const i = edges.findIndex((e) => ms < e);
  return ageLabels[i < 0 ? edges.length : i]!;
}

function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** The fault active at time t (faults never overlap: the nemesis runs one at a time). */
function activeFault(faults: readonly FaultRecord[], t: number): FaultRecord | undefined {
  return faults.find((f) => f.start <= t && t < f.end);
}

/** ms since member i last came back from a kill at time t; Infinity if never killed; -1 while down. */
function sinceRestart(faults: readonly FaultRecord[], member: number, t: number): number {
  let last = Infinity;
  for (const f of faults) {
    if (f.kind !== "kill" && f.kind !== "leader-kill") continue;
    if (!faultTargets(f.target).includes(member)) continue;
    if (f.start <= t && t < f.end) return -1;
    if (f.end <= t) last = t - f.end;
  }
  return last;
}

/** ms since the last fault ended before t, if any did. */
function lastEnd(faults: readonly FaultRecord[], t: number): number | undefined {
  let last: number | undefined;
  for (const f of faults) if (f.end <= t) last = t - f.end;
  return last;
}

function leaderAt(leaders: ReadonlyArray<{ at: number; leader: number | undefined }>, t: number): number | undefined {
  let l: number | undefined;
  for (const x of leaders) {
    if (x.at > t) break;
    l = x.leader;
  }
  return l;
}

function sinceLeaderChange(changes: readonly number[], t: number): number {
  let last = Infinity;
  for (const c of changes) if (c <= t) last = t - c;
  return last;
}

/** Every split's rows, in a fixed order (split, then bucket order of first appearance sorted by label order). */
export function clientTimeTable(input: ClientTimeInput): BucketRow[] {
  const rows = new Map<string, { split: string; bucket: string; lat: number[]; answered: number; unknown: number; refused: number; cs: number }>();
  const add = (split: string, bucket: string, s: OpSample): void => {
    const k = `${split}\0${bucket}`;
    let r = rows.get(k);
    if (r === undefined) rows.set(k, (r = { split, bucket, lat: [], answered: 0, unknown: 0, refused: 0, cs: 0 }));
    const lat = s.ret - s.call;
    r[s.outcome]++;
    r.cs += (lat + (s.outcome === SampleOutcome.refused ? REFUSED_BACKOFF_MS : 0)) / 1000;
    if (s.outcome === SampleOutcome.answered) r.lat.push(lat);
  };
  for (const s of input.samples) {
    const f = activeFault(input.faults, s.call);
    add("fault", f === undefined ? "none" : f.kind, s);
    add("fault+target", f === undefined ? "none" : `${f.kind} ${faultTargets(f.target).includes(s.member) ? "target" : "other"}`, s);
    const r = sinceRestart(input.faults, s.member, s.call);
    add("since restart", r < 0 ? "down" : r === Infinity ? "never" : ageBucket(r), s);
    const l = sinceLeaderChange(input.leaderChanges, s.call);
    add("since leader chg", l === Infinity ? "never" : ageBucket(l), s);
    if (f === undefined) {
      const ended = lastEnd(input.faults, s.call);
      add("none, since fault", ended === undefined ? "never" : ageBucket(ended), s);
    }
    if (input.leaders !== undefined) {
      const l = leaderAt(input.leaders, s.call);
      if (l === undefined) add("leader up", "no leader", s);
      else {
        const up = sinceRestart(input.faults, l, s.call);
        add("leader up", up < 0 ? "down" : up === Infinity ? "never" : ageBucket(up), s);
        add("op to leader", s.member === l ? "leader" : "follower", s);
      }
    }
    add("op", s.op, s);
  }
  // Wall time of the cluster-wide states.
  const wall = new Map<string, number>();
  let faulted = 0;
  for (const f of input.faults) {
    const d = Math.max(0, Math.min(f.end, input.workloadMs) - f.start);
    wall.set(`fault\0${f.kind}`, (wall.get(`fault\0${f.kind}`) ?? 0) + d);
    faulted += d;
  }
  wall.set("fault\0none", Math.max(0, input.workloadMs - faulted));
  const changes = [...input.leaderChanges].sort((a, b) => a - b);
  const firstChange = changes[0] ?? input.workloadMs;
  wall.set("since leader chg\0never", Math.min(firstChange, input.workloadMs));
  for (let i = 0; i < changes.length; i++) {
    const from = changes[i]!;
    const to = Math.min(changes[i + 1] ?? input.workloadMs, input.workloadMs);
    for (let b = 0; b <= edges.length; b++) {
      const lo = from + (b === 0 ? 0 : edges[b - 1]!);
      const hi = b === edges.length ? to : Math.min(to, from + edges[b]!);
      if (hi > lo) wall.set(`since leader chg\0${ageLabels[b]}`, (wall.get(`since leader chg\0${ageLabels[b]}`) ?? 0) + (hi - lo));
    }
  }
  const order = (b: string): number => {
    const fixed = ["none", "never", "no leader", "down", ...ageLabels, "leader", "follower", "kill", "leader-kill", "pause", "partition"];
    const i = fixed.indexOf(b.split(" ")[0] === "none" ? "none" : b.replace(/ (target|other)$/, ""));
    return i < 0 ? fixed.length : i;
  };
  const splits = ["fault", "fault+target", "none, since fault", "since restart", "since leader chg", "leader up", "op to leader", "op"];
  return [...rows.values()]
    .sort((a, b) => splits.indexOf(a.split) - splits.indexOf(b.split) || order(a.bucket) - order(b.bucket) || a.bucket.localeCompare(b.bucket))
    .map((r) => {
      const lat = r.lat.sort((a, b) => a - b);
      const w = wall.get(`${r.split}\0${r.bucket}`);
      return {
        split: r.split, bucket: r.bucket, answered: r.answered, unknown: r.unknown, refused: r.refused,
        clientSeconds: r.cs, wallSeconds: w === undefined ? undefined : w / 1000,
        p50: percentile(lat, 50), p99: percentile(lat, 99),
      };
    });
}

/** The table as text lines (summary.ts). ops/s: answered per wall second, where the split is cluster-wide. */
export function formatClientTime(rows: readonly BucketRow[]): string[] {
  const total = rows.filter((r) => r.split === "fault").reduce((a, r) => a + r.clientSeconds, 0);
  const lines = ["  client time (per bucket: answered / unknown / refused ops; client-s = latency + refusal back-off; ops/s = answered per wall s; p50/p99 of answered ms)"];
  lines.push(`    ${"split".padEnd(17)}${"bucket".padEnd(18)}${"answered".padStart(9)}${"unkn".padStart(6)}${"refused".padStart(8)}${"client-s".padStart(9)}${"share".padStart(6)}${"ms/ans".padStart(7)}${"wall-s".padStart(7)}${"ops/s".padStart(7)}${"p50".padStart(6)}${"p99".padStart(6)}`);
  for (const r of rows) {
    const f = (x: number | undefined, d = 0): string => (x === undefined ? "–" : x.toFixed(d));
    const share = total > 0 ? `${((100 * r.clientSeconds) / total).toFixed(0)}%` : "–";
    lines.push(
      `    ${r.split.padEnd(17)}${r.bucket.padEnd(18)}${String(r.answered).padStart(9)}${String(r.unknown).padStart(6)}${String(r.refused).padStart(8)}${r.clientSeconds.toFixed(0).padStart(9)}${share.padStart(6)}` +
        `${f(r.answered > 0 ? (1000 * r.clientSeconds) / r.answered : undefined, 1).padStart(7)}${f(r.wallSeconds).padStart(7)}${f(r.wallSeconds ? r.answered / r.wallSeconds : undefined).padStart(7)}${f(r.p50, 1).padStart(6)}${f(r.p99).padStart(6)}`,
    );
  }
  return lines;
}
