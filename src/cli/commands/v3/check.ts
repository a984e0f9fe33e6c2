// v3 check perf|datascale (check.go): etcdctl's load checks, same workloads, same output
// lines and pass/fail rules, bounded as etcdctl's are (perf: 60 s of rate-limited puts;
// datascale: a fixed number of puts), then the keys deleted again (and, if asked,
// compacted and defragmented).
//
// perf: puts of a 1 KiB zero value under `<prefix><256-byte key>` at the model's rate
// (a token bucket of burst 1, as golang.org/x/time/rate) by the model's number of
// workers, for 60 s. PASS needs no errors, throughput > 90% of the rate, the slowest
// request <= 500 ms and the latencies' standard deviation <= 100 ms (exit 1 otherwise).
// datascale: the model's number of puts (512-byte keys and values) and the first
// endpoint's process_resident_memory_bytes (/metrics) before and after.
//
// Keys are etcdctl's: the prefix, then Go's binary.PutVarint of a random int63 in a
// zeroed buffer. The progress bar is drawn only on a terminal (etcdctl's cheggaaa/pb
// writes its \r updates into a pipe too).

import { randomBytes } from "node:crypto";
import type { WireDeleteRangeResponse, WireRangeResponse } from "../../../client/v3-types.ts";
import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { createV3Context, v3ErrorText, v3Fail, V3Exit, withV3Context, type V3Context } from "./context.ts";
import { prefixRangeEnd } from "./printers-admin.ts";

export interface PerfModel {
  limit: number;
  clients: number;
  duration: number;
}
interface ScaleModel {
  limit: number;
  kvSize: number;
  clients: number;
}

const perfModels: Readonly<Record<string, PerfModel>> = {
  s: { limit: 150, clients: 50, duration: 60 },
  m: { limit: 1000, clients: 200, duration: 60 },
  l: { limit: 8000, clients: 500, duration: 60 },
  xl: { limit: 15000, clients: 1000, duration: 60 },
};
const scaleModels: Readonly<Record<string, ScaleModel>> = {
  s: { limit: 10000, kvSize: 1024, clients: 50 },
  m: { limit: 100000, kvSize: 1024, clients: 200 },
  l: { limit: 1000000, kvSize: 1024, clients: 500 },
  xl: { limit: 3000000, kvSize: 1024, clients: 1000 },
};
const aliases: Readonly<Record<string, string>> = { s: "s", small: "s", m: "m", medium: "m", l: "l", large: "l", xl: "xl", xLarge: "xl" };

const str = (inv: V3Invocation, name: string): string => {
  const v = inv.flags[name];
  return typeof v === "string" ? v : "";
};

/** Go's binary.PutVarint(k, rand.Int63n(MaxInt64)) into a zeroed buffer of `size` bytes. */
export function randomKey(size: number): Buffer {
  const k = Buffer.alloc(size);
  let x = randomBytes(8).readBigUInt64BE() & 0x7fffffffffffffffn;
  // zig-zag of a non-negative value: x << 1.
  x <<= 1n;
  let i = 0;
  while (x >= 0x80n) {
    k[i++] = Number(x & 0x7fn) | 0x80;
    x >>= 7n;
  }
  k[i] = Number(x);
  return k;
}

/** pkg/report's Stats over the successful requests (seconds), and the errors by text. */
export interface LoadStats {
  rps: number;
  slowest: number;
  stddev: number;
  errors: Map<string, number>;
}

export function loadStats(lats: readonly number[], errors: Map<string, number>, totalSeconds: number): LoadStats {
  const avg = lats.reduce((a, b) => a + b, 0) / lats.length;
  const variance = lats.reduce((a, l) => a + (l - avg) * (l - avg), 0) / lats.length;
  return { rps: lats.length / totalSeconds, slowest: lats.length === 0 ? 0 : Math.max(...lats), stddev: Math.sqrt(variance), errors };
}

/** etcdctl's verdict lines for check perf; `ok` false means FAIL (exit 1). */
export function perfVerdict(s: LoadStats, limit: number): { lines: string; ok: boolean } {
  let out = "";
  let ok = true;
  if (s.errors.size !== 0) {
    out += "FAIL: too many errors\n";
    for (const [k, v] of s.errors) out += `FAIL: ERROR(${k}) -> ${v}\n`;
    ok = false;
  }
  if (!(s.rps / limit > 0.9)) {
    out += `FAIL: Throughput too low: ${Math.trunc(s.rps) + 1} writes/s\n`;
    ok = false;
  } else out += `PASS: Throughput is ${Math.trunc(s.rps) + 1} writes/s\n`;
  if (s.slowest > 0.5) {
    out += `Slowest request took too long: ${s.slowest.toFixed(6)}s\n`;
    ok = false;
  } else out += `PASS: Slowest request took ${s.slowest.toFixed(6)}s\n`;
  if (s.stddev > 0.1) {
    out += `Stddev too high: ${s.stddev.toFixed(6)}s\n`;
    ok = false;
  } else out += `PASS: Stddev is ${s.stddev.toFixed(6)}s\n`;
  return { lines: out + (ok ? "PASS\n" : "FAIL\n"), ok };
}

function progress(io: Io, total: number): { set(n: number): void; done(): void } {
  if (process.stdout.isTTY !== true) return { set: () => undefined, done: () => undefined };
  const draw = (n: number): void => io.stdout(`\r${String(n).padStart(String(total).length)} / ${total} ${((100 * n) / total).toFixed(2).padStart(6)}%`);
  return { set: draw, done: () => io.stdout("\n") };
}

/** Runs `total` puts (or until `until` says stop) over `clients` workers; latencies in seconds. */
async function load(
  ctx: V3Context,
  clients: number,
  next: () => Promise<{ key: Buffer; value: string } | undefined>,
  onDone: () => void,
): Promise<{ lats: number[]; errors: Map<string, number>; seconds: number }> {
  const lats: number[] = [];
  const errors = new Map<string, number>();
  const start = process.hrtime.bigint();
  const worker = async (): Promise<void> => {
    for (;;) {
      const op = await next();
      if (op === undefined) return;
      const st = process.hrtime.bigint();
      try {
        await ctx.client.call("/v3/kv/put", { key: op.key.toString("base64"), value: op.value });
        lats.push(Number(process.hrtime.bigint() - st) / 1e9);
      } catch (err) {
        const t = v3ErrorText(err);
        errors.set(t, (errors.get(t) ?? 0) + 1);
      }
      onDone();
    }
  };
  await Promise.all(Array.from({ length: clients }, worker));
  return { lats, errors, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function emptyPrefix(ctx: V3Context, prefix: Buffer): Promise<void> {
  const r = await ctx.request((signal) =>
    ctx.client.call<WireRangeResponse>("/v3/kv/range", { key: prefix.toString("base64"), range_end: prefixRangeEnd(prefix).toString("base64"), limit: 1 }, { signal }),
  );
  if ((r.kvs ?? []).length > 0) {
    const p = prefix.toString("utf8");
    throw v3Fail(V3Exit.InvalidInput, `prefix ${JSON.stringify(p)} has keys. Delete with etcdctl del --prefix ${p} first`);
  }
}

/** Deletes the prefix, then compacts and defragments as asked (etcdctl's compact/defrag helpers). */
async function cleanUp(ctx: V3Context, inv: V3Invocation, io: Io, prefix: Buffer): Promise<void> {
  const d = await ctx.request((signal) =>
    ctx.client.call<WireDeleteRangeResponse>("/v3/kv/deleterange", { key: prefix.toString("base64"), range_end: prefixRangeEnd(prefix).toString("base64") }, { signal }),
  );
  if (inv.flags["auto-compact"] === true) {
    const rev = String(d.header?.revision ?? "0");
    io.stdout(`Compacting with revision ${rev}\n`);
    await ctx.request((signal) => ctx.client.call("/v3/kv/compaction", { revision: rev, physical: true }, { signal }));
    io.stdout(`Compacted with revision ${rev}\n`);
  }
  if (inv.flags["auto-defrag"] === true) {
    for (const ep of inv.globals.endpoints) {
      io.stdout(`Defragmenting ${JSON.stringify(ep)}\n`);
      const one = await createV3Context({ ...inv, globals: { ...inv.globals, endpoints: [ep] } }, io);
      try {
        await one.request((signal) => one.client.call("/v3/maintenance/defragment", {}, { signal }));
      } finally {
        one.close();
      }
      io.stdout(`Defragmented ${JSON.stringify(ep)}\n`);
    }
  }
}

function model<T>(inv: V3Invocation, models: Readonly<Record<string, T>>): T {
  const name = aliases[str(inv, "load")];
  const m = name === undefined ? undefined : models[name];
  if (m === undefined) throw v3Fail(V3Exit.BadFeature, `unknown load option ${str(inv, "load")}`);
  return m;
}

/** perf with the model given (`run` passes the one --load names: 60 s each, as etcdctl's). */
export async function perf(inv: V3Invocation, io: Io, cfg: PerfModel): Promise<number> {
  const prefix = Buffer.from(str(inv, "prefix"), "utf8");
  return withV3Context(inv, io, async (ctx) => {
    await emptyPrefix(ctx, prefix);
    const value = Buffer.alloc(1024).toString("base64");
    const bar = progress(io, cfg.duration);
    const start = Date.now();
    const end = start + cfg.duration * 1000;
    const ticker = setInterval(() => bar.set(Math.min(cfg.duration, Math.floor((Date.now() - start) / 1000))), 1000);
    // A token bucket of burst 1: the i-th put may start at start + i/limit.
    let issued = 0;
    let gate: Promise<void> = Promise.resolve();
    const next = (): Promise<{ key: Buffer; value: string } | undefined> => {
      const mine = gate.then(async () => {
        const at = start + (issued * 1000) / cfg.limit;
        if (at >= end) return undefined;
        issued++;
        const wait = at - Date.now();
        if (wait > 0) await sleep(wait);
        return { key: Buffer.concat([prefix, randomKey(256)]), value };
      });
      gate = mine.then(() => undefined);
      return mine;
    };
    let result;
    try {
      result = await load(ctx, cfg.clients, next, () => undefined);
    } finally {
      clearInterval(ticker);
    }
    bar.set(cfg.duration);
    bar.done();
    await cleanUp(ctx, inv, io, prefix);
    const v = perfVerdict(loadStats(result.lats, result.errors, result.seconds), cfg.limit);
    io.stdout(v.lines);
    return v.ok ? V3Exit.Success : V3Exit.Error;
  });
}

/** process_resident_memory_bytes from an endpoint's /metrics; 0 (with etcdctl's line) when unreadable. */
async function residentMemory(inv: V3Invocation, io: Io, ep: string): Promise<number> {
  let text: string;
  const one = await createV3Context({ ...inv, globals: { ...inv.globals, endpoints: [ep], user: undefined, password: undefined } }, io);
  try {
    text = await one.client.getText("/metrics");
  } catch (err) {
    io.stdout(`fetch error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 0;
  } finally {
    one.close();
  }
  const line = text.split("\n").find((l) => l.startsWith("process_resident_memory_bytes"));
  if (line === undefined) {
    io.stdout("could not find: process_resident_memory_bytes\n");
    return 0;
  }
  const v = Number(line.slice("process_resident_memory_bytes".length).trim());
  return Number.isFinite(v) ? v : 0;
}

async function datascale(inv: V3Invocation, io: Io): Promise<number> {
  const cfg = model(inv, scaleModels);
  const prefix = Buffer.from(str(inv, "prefix"), "utf8");
  return withV3Context(inv, io, async (ctx) => {
    await emptyPrefix(ctx, prefix);
    const ep = inv.globals.endpoints[0] ?? "";
    const before = await residentMemory(inv, io, ep);
    if (before === 0) {
      io.stdout("FAIL: Could not read process_resident_memory_bytes before the put operations.\n");
      return V3Exit.Error;
    }
    io.stdout(`Start data scale check for work load [${cfg.limit} key-value pairs, ${cfg.kvSize} bytes per key-value, ${cfg.clients} concurrent clients].\n`);
    const bar = progress(io, cfg.limit);
    const value = Buffer.alloc(512).toString("base64");
    let issued = 0;
    let done = 0;
    const result = await load(
      ctx,
      cfg.clients,
      () => Promise.resolve(issued++ < cfg.limit ? { key: Buffer.concat([prefix, randomKey(512)]), value } : undefined),
      () => {
        done++;
        if (done % 100 === 0) bar.set(done);
      },
    );
    bar.set(cfg.limit);
    bar.done();
    const after = await residentMemory(inv, io, ep);
    if (after === 0) {
      io.stdout("FAIL: Could not read process_resident_memory_bytes after the put operations.\n");
      return V3Exit.Error;
    }
    await cleanUp(ctx, inv, io, prefix);
    if (result.errors.size !== 0) {
      io.stdout("FAIL: too many errors\n");
      for (const [k, v] of result.errors) io.stdout(`FAIL: ERROR(${k}) -> ${v}\n`);
      return V3Exit.Error;
    }
    io.stdout(`PASS: Approximate system memory used : ${((after - before) / (1024 * 1024)).toFixed(2)} MB.\n`);
    return V3Exit.Success;
  });
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  return inv.path[1] === "datascale" ? datascale(inv, io) : perf(inv, io, model(inv, perfModels));
}
