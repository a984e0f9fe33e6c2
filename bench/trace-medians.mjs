// Medians of a member's write traces (KV_TRACE_WRITES=N, src/server/write-trace.ts): the
// median step between consecutive phases, phases in the order of their median offset, and
// the median offset of the last one. A leader's follower acknowledgements are named by
// arrival ("ack1 read", "ack2 read"), not by member id, so runs compare.
//
//   node bench/trace-medians.mjs <member log> [last N traces, default 600]
//
// A trace costs a little itself: writes answered through node:http or the v3 fast lane
// are followed with AsyncLocalStorage (promise hooks on every promise of the process once
// entered); the fast lane's v2 writes hand their trace over synchronously (write-trace.ts).
import { readFileSync } from "node:fs";

const [file, last = "600"] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write("usage: node bench/trace-medians.mjs <member log> [last N traces]\n");
  process.exit(2);
}
const traces = readFileSync(file, "utf8")
  .split("\n")
  .filter((l) => l.includes('"write trace"'))
  .map((l) => JSON.parse(l).us)
  .slice(-Number(last));
if (traces.length === 0) {
  process.stderr.write(`no write traces in ${file}\n`);
  process.exit(1);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

/** The phases of one trace in time order, acknowledgements named by arrival. */
function normalized(us) {
  const out = {};
  let acks = 0;
  for (const [phase, at] of Object.entries(us).sort((a, b) => a[1] - b[1])) {
    out[/^ack \S+ read$/.test(phase) ? `ack${++acks} read` : phase] = at;
  }
  return out;
}

const all = traces.map(normalized);
const phases = [...new Set(all.flatMap((t) => Object.keys(t)))];
const offset = Object.fromEntries(phases.map((p) => [p, median(all.map((t) => t[p]).filter((x) => x !== undefined))]));
phases.sort((a, b) => offset[a] - offset[b]);
const steps = [];
for (let i = 1; i < phases.length; i++) {
  const d = all.map((t) => t[phases[i]] - t[phases[i - 1]]).filter((x) => !Number.isNaN(x));
  steps.push(`${phases[i]} +${median(d)}`);
}
console.log(`${traces.length} traces, median us: ${steps.join(", ")}; last phase at ${offset[phases.at(-1)]}`);
