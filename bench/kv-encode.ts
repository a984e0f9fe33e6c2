// The gRPC fast codec's RangeResponse encoder, two builds side by side in one process:
// each argument is a fast-codec.ts (e.g. one in a worktree of the commit before, one in
// this tree). RangeResponses of 1, 100 and 1000 KVs of 1 KiB values (a quarter of them
// leased, revisions around 10^6), encoded by each build in turn, --rounds alternated
// rounds; prints the median CPU µs per response and the ratio to the first build.
//
//   node --import tsx bench/kv-encode.ts <a/fast-codec.ts> <b/fast-codec.ts> [--rounds 9] [--ms 300] [--value 1024]
//
// --value sets the values' size: small ones (16) leave the fields' encoding as most of the
// time, 1 KiB ones the buffer's allocation and the copies.
//
// A micro-benchmark of CPU: note the load average with any figure (it is printed).
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { KeyValue, RangeResponse } from "../src/store/v3/index.ts";
import type { HeaderFields } from "../src/server/grpc/fast-codec.ts";

interface Codec {
  headerFields(h: { clusterId: string; memberId: string; revision: number; raftTerm: number }): HeaderFields;
  encodeRangeResponse(h: HeaderFields, r: RangeResponse, reserve?: number): Buffer;
}

const args = process.argv.slice(2);
const opt = (name: string, dflt: number): number => {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  const v = Number(args[i + 1]);
  args.splice(i, 2);
  return v;
};
const rounds = opt("--rounds", 9);
const ms = opt("--ms", 300);
const valueBytes = opt("--value", 1024);
if (args.length < 2) {
  console.error("usage: bench/kv-encode.ts <fast-codec.ts> <fast-codec.ts> [--rounds 9] [--ms 300] [--value 1024]");
  process.exit(2);
}
const codecs = await Promise.all(args.map(async (p) => (await import(pathToFileURL(resolve(p)).href)) as Codec));

const value = Buffer.alloc(valueBytes, 0x61);
const kvs = (n: number): KeyValue[] =>
  Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`/registry/pods/default/key-${String(i).padStart(6, "0")}`),
    value,
    createRevision: 1_000_000 + i,
    modRevision: 1_000_000 + 2 * i,
    version: 1 + (i % 5),
    lease: i % 4 === 0 ? 0x2a12a21b27269c0cn + BigInt(i) : 0n,
  }));
const header = { clusterId: "1158684527140923278", memberId: "11735172391864680521", revision: 1_002_000, raftTerm: 2 };
const sizes = [1, 100, 1000];
const responses = sizes.map((n) => ({ revision: header.revision, kvs: kvs(n), more: false, count: n }));

// The builds must agree before their times mean anything.
for (const r of responses) {
  const want = codecs[0]!.encodeRangeResponse(codecs[0]!.headerFields(header), r, 5);
  for (const c of codecs.slice(1)) if (!c.encodeRangeResponse(c.headerFields(header), r, 5).subarray(5).equals(want.subarray(5))) throw new Error(`builds differ at ${r.kvs.length} KVs`);
}

let sink = 0;
/**
 * µs of this process' CPU per response over about `ms` milliseconds: on a machine shared
 * with other work, CPU time is what the wall clock's time slices of others leave out.
 */
function time(c: Codec, r: RangeResponse): number {
  const until = performance.now() + ms;
  let n = 0;
  const start = process.cpuUsage();
  while (performance.now() < until) {
    for (let i = 0; i < 16; i++) sink += c.encodeRangeResponse(c.headerFields(header), r, 5).length;
    n += 16;
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / n;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

// Warm-up: every build and size, so the rounds measure optimised code.
for (const c of codecs) for (const r of responses) time(c, r);
const load0 = loadavg()[0]!;
const results = sizes.map(() => codecs.map(() => [] as number[]));
for (let round = 0; round < rounds; round++) {
  for (let s = 0; s < sizes.length; s++) {
    // Alternate which build goes first.
    const order = codecs.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const i of order) results[s]![i]!.push(time(codecs[i]!, responses[s]!));
  }
}
console.log(`load ${load0.toFixed(2)} -> ${loadavg()[0]!.toFixed(2)}, ${rounds} rounds of ${ms} ms, values of ${valueBytes} bytes, medians (min-max) of CPU µs per RangeResponse`);
console.log(`KVs | ${args.map((_, i) => `build ${i}`).join(" | ")} | ratios to build 0`);
for (let s = 0; s < sizes.length; s++) {
  const m = results[s]!.map(median);
  const spread = results[s]!.map((xs) => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`);
  console.log(`${sizes[s]} | ${m.map((x, i) => `${x.toFixed(2)} (${spread[i]})`).join(" | ")} | ${m.map((x) => (x / m[0]!).toFixed(3)).join(" ")}`);
}
if (sink === 0) console.log("");
