// The run summary printed by run.ts (plain text; the runner owns stdout).

import { Api } from "./api.ts";
import { describeConvergence } from "./convergence.ts";
import { formatClientTime } from "./client-time.ts";
import type { FaultReport, FaultTestOptions } from "./harness.ts";

/** The operations as each API names them (v3: range / put / txn compare-and-set). */
const opNames = { v2: { get: "get", set: "set", cas: "cas" }, v3: { get: "range", set: "put", cas: "txn" }, grpc: { get: "range", set: "put", cas: "txn" } } as const;

export function formatReport(r: FaultReport, opts: Pick<FaultTestOptions, "members" | "server" | "seed" | "clients" | "snapshotCount">): string {
  const lines: string[] = [];
  const secs = r.workloadMs / 1000;
  const c = r.counts;
  const snap = opts.snapshotCount === undefined ? "" : `, --snapshot-count ${opts.snapshotCount}`;
  lines.push(`fault run: ${opts.members} × ${opts.server}, api ${r.api}, seed ${opts.seed}, ${opts.clients} clients, election timeout ${r.electionTimeoutMs} ms${snap}`);
  lines.push(`  operations  ${r.ops} recorded in ${secs.toFixed(1)} s (${secs > 0 ? (r.ops / secs).toFixed(0) : 0} ops/s); ${c.refused} refused (not recorded)`);
  for (const api of [Api.v2, Api.v3, Api.grpc]) {
    const t = c.byApi[api];
    if (Object.values(t).every((x) => x.ok + x.fail + x.unknown === 0)) continue;
    for (const op of ["get", "set", "cas"] as const) {
      lines.push(`    ${api} ${opNames[api][op].padEnd(5)} ok ${t[op].ok}  failed ${t[op].fail}  unknown ${t[op].unknown}`);
    }
  }
  if (r.memberCpuSeconds !== undefined) {
    const answered = Object.values(c.byApi).reduce((a, t) => a + t.get.ok + t.get.fail + t.set.ok + t.set.fail + t.cas.ok + t.cas.fail, 0);
    lines.push(`  member CPU  ${r.memberCpuSeconds.toFixed(1)} s during the workload (${answered > 0 ? ((1000 * r.memberCpuSeconds) / answered).toFixed(2) : "–"} ms per answered op)`);
  }
  if (r.clientTime !== undefined && r.clientTime.length > 0) lines.push(...formatClientTime(r.clientTime));
  const reasons = Object.entries(c.reasons).sort((a, b) => b[1] - a[1]);
  if (reasons.length > 0) lines.push(`    unknown because: ${reasons.map(([k, v]) => `${k} ×${v}`).join(", ")}`);
  const byKind = new Map<string, number>();
  for (const f of r.faults) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
  lines.push(`  faults      ${r.faults.length} (${[...byKind].map(([k, v]) => `${k} ×${v}`).join(", ") || "none"})`);
  for (const f of r.faults) {
    const e = f.election === undefined ? "" : f.election.newLeaderMs === undefined ? `  (no new leader within ${f.election.capMs} ms)` : `  (new leader after ${f.election.newLeaderMs.toFixed(0)} ms)`;
    lines.push(`    ${(f.start / 1000).toFixed(1).padStart(6)}–${(f.end / 1000).toFixed(1)} s  ${f.kind} ${f.target}${e}`);
  }
  const el = r.elections;
  if (el !== undefined && el.count > 0) {
    const ms = (x: number | undefined): string => (x === undefined ? "–" : `${x.toFixed(0)} ms`);
    lines.push(`  elections   ${el.count} leader kills: new leader after max ${ms(el.maxMs)}, median ${ms(el.medianMs)} (limit 3 × ${r.electionTimeoutMs} = ${el.limitMs} ms); ${el.slow.length === 0 ? "all within the limit" : `${el.slow.length} too slow`}`);
  } else if (el !== undefined) {
    lines.push("  elections   no leader was killed (no leader-kill fault hit a leader)");
  }
  if (r.diskStalls.length > 0) {
    const max = Math.max(...r.diskStalls.map((d) => d.tookMs));
    lines.push(`  disk        ${r.diskStalls.length} fdatasync(s) over 1 s logged by the members (longest ${(max / 1000).toFixed(3)} s)`);
  }
  if (r.proxies.length > 0) {
    const sum = r.proxies.reduce((a, p) => ({
      forwarded: a.forwarded + p.forwarded,
      refused: a.refused + p.refused,
      held: a.held + p.held,
      cut: a.cut + p.cut,
      lookups: a.lookups + p.lookups,
      unknownSource: a.unknownSource + p.unknownSource,
      slowLookups: a.slowLookups + p.slowLookups,
      maxLookupMs: Math.max(a.maxLookupMs, p.maxLookupMs),
    }));
    lines.push(`  proxies     ${sum.forwarded} peer connections forwarded, ${sum.refused} refused (member down), ${sum.cut} cut, ${sum.held} held by partitions; ${sum.lookups} source lookups, ${sum.unknownSource} of unknown source, ${sum.slowLookups} over 100 ms (longest ${sum.maxLookupMs} ms)`);
  }
  if (r.snapshotsInstalled > 0) lines.push(`  snapshots   ${r.snapshotsInstalled} installed by lagging members from their leader (v3 database streamed)`);
  if (r.injected !== undefined) lines.push(`  injected    ${r.injected}`);
  if (r.check !== undefined) {
    lines.push(`  checker     ${r.check.verdict}`);
    for (const p of r.check.partitions) {
      lines.push(`    ${p.label.padEnd(8)} ${p.verdict.padEnd(8)} ${p.operations} ops, ${p.steps} steps, ${p.elapsedMs.toFixed(0)} ms`);
      if (p.explanation !== undefined) lines.push(p.explanation.replace(/^/gm, "      "));
    }
  }
  const finals = Object.entries(r.finals);
  if (finals.length > 0) {
    lines.push(`  durability  ${r.lost.length === 0 ? "every acknowledged write survived a full restart" : `${r.lost.length} key(s) lost acknowledged writes`}`);
    for (const l of r.lost) lines.push(`    ${l.key}: ${l.reason}`);
  }
  for (const c of r.convergence) {
    const [head, ...rest] = describeConvergence(c);
    lines.push(`  convergence ${head ?? ""}`, ...rest.map((l) => `   ${l}`));
  }
  if (r.watch !== undefined) lines.push(`  watch       ${r.watch.events} events through ${r.watch.reconnects} reconnects: ${r.watch.problem === undefined ? "the same as a replay from revision 1" : r.watch.problem}`);
  for (const p of r.problems) lines.push(`  problem     ${p}`);
  lines.push(`  time        ${(r.elapsedMs / 1000).toFixed(1)} s in all`);
  lines.push(`  verdict     ${r.verdict.toUpperCase()}${r.verdict === "ok" ? "" : ` (seed ${opts.seed})`}`);
  return `${lines.join("\n")}\n`;
}
