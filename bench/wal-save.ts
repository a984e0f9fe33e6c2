// Measures Wal.save latency (the hot path: every write waits for it).
// Run: node --import tsx bench/wal-save.ts [dir]   (default: .tmp/ of the checkout)
// Prints medians and p99 for 1 entry of ~100 bytes and for batches of 64 entries, and
// the time to reopen the log. Not a test: timings depend on the disk.
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { Wal } from "../src/wal/wal.ts";
import type { WalEntry } from "../src/wal/record.ts";

const base = process.argv[2] ?? join(import.meta.dirname, "..", ".tmp");
const dir = join(await mkdtemp(join(base, "wal-bench-")), "wal");

function quantiles(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const q = (p: number): string => (s[Math.min(s.length - 1, Math.floor(p * s.length))] as number).toFixed(3);
  return `median ${q(0.5)} ms  p90 ${q(0.9)} ms  p99 ${q(0.99)} ms  (n=${s.length})`;
}

const data = Buffer.alloc(100, "k");
let index = 0;
const next = (): WalEntry => ({ term: 1, index: ++index, type: 0, data });

try {
  const wal = await Wal.create(dir, Buffer.from("bench"));
  for (let i = 0; i < 50; i++) await wal.save({ term: 1, vote: 1, commit: index }, [next()]); // warm up

  const one: number[] = [];
  for (let i = 0; i < 1000; i++) {
    const e = [next()];
    const t = process.hrtime.bigint();
    await wal.save({ term: 1, vote: 1, commit: index - 1 }, e);
    one.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  console.log(`save(1 entry, 100 B):   ${quantiles(one)}`);

  const batch: number[] = [];
  for (let i = 0; i < 300; i++) {
    const es = Array.from({ length: 64 }, next);
    const t = process.hrtime.bigint();
    await wal.save({ term: 1, vote: 1, commit: index - 64 }, es);
    batch.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  console.log(`save(64 entries, 100 B each): ${quantiles(batch)}`);
  await wal.close();

  const t = process.hrtime.bigint();
  const r = await Wal.open(dir, { snapshot: { index: 0, term: 0 } });
  console.log(`open (${r.entries.length} entries, one segment): ${(Number(process.hrtime.bigint() - t) / 1e6).toFixed(1)} ms`);
  await r.wal.close();
} finally {
  await rm(join(dir, ".."), { recursive: true, force: true });
}
