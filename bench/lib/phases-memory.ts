// Memory / durability phase, per server on a fresh data dir: start-up time, RSS idle,
// fill N keys, RSS after the fill, data dir size (stopped), restart time with the keys
// and whether the last key survived. Same order and pauses as the shared run.sh.
import { rmSync } from "node:fs";
import { errorText, sleep, startServer, type BenchContext } from "./context.ts";
import { fill } from "./fill.ts";
import { getValue, VALUE64 } from "./http.ts";
import type { MemoryResult } from "./results.ts";
import type { ServerKind, ServerProcess } from "./server.ts";
import { dirBytes, median, readCpuTicks, round, stealPct } from "./stats.ts";

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

async function memoryOne(ctx: BenchContext, kind: ServerKind): Promise<MemoryResult> {
  const o = ctx.options;
  const r: Mutable<MemoryResult> = {
    server: kind, startup_ms: null, rss_kb_idle: null, fill: null, fill_steal_pct: null,
    rss_kb_after_fill: null, data_dir_bytes_running: null, data_dir_bytes_stopped: null,
    restart_ms_all: [], restart_ms: null, last_key_ok_after_restart: null, rss_kb_after_restart: null,
  };
  let s: ServerProcess | undefined;
  let dataDir: string | undefined;
  try {
    s = await startServer(ctx, kind, { phase: "memory" });
    dataDir = s.dataDir;
    r.startup_ms = round(s.startupMs, 1);
    await sleep(o.settleMs);
    r.rss_kb_idle = s.rssKb();
    ctx.log(`memory ${kind}: started in ${r.startup_ms} ms, RSS idle ${r.rss_kb_idle} kB; writing ${o.fillN} keys with ${o.fillC} conns`);
    const t0 = readCpuTicks();
    r.fill = await fill({ url: s.url, n: o.fillN, concurrency: o.fillC, prefix: "fill", timeoutMs: o.smoke ? 60_000 : 600_000 });
    r.fill_steal_pct = stealPct(t0, readCpuTicks());
    ctx.log(`  fill: ${r.fill.seconds} s = ${r.fill.keys_per_s} keys/s, p50 ${r.fill.p50_ms} ms, p99 ${r.fill.p99_ms} ms, ` +
      `non2xx ${r.fill.non2xx}, errors ${r.fill.errors}${r.fill.timed_out ? ", TIMED OUT" : ""}`);
    await sleep(o.settleMs);
    r.rss_kb_after_fill = s.rssKb();
    r.data_dir_bytes_running = dirBytes(dataDir);
    await s.stop();
    s = undefined;
    r.data_dir_bytes_stopped = dirBytes(dataDir);
    ctx.log(`  RSS after fill ${r.rss_kb_after_fill} kB; data dir ${r.data_dir_bytes_running} B running, ${r.data_dir_bytes_stopped} B stopped`);
    const times: number[] = [];
    for (let rep = 1; rep <= o.restartReps; rep++) {
      s = await startServer(ctx, kind, { phase: "restart", dataDir, deadlineMs: 180_000 });
      times.push(round(s.startupMs, 1));
      if (rep === 1) {
        await sleep(1000);
        r.rss_kb_after_restart = s.rssKb();
        // the last key written must have survived the restart (durability sanity check)
        r.last_key_ok_after_restart = (await getValue(s.url, `fill/${o.fillN - 1}`)) === VALUE64;
      }
      await s.stop();
      s = undefined;
    }
    r.restart_ms_all = times;
    r.restart_ms = median(times);
    ctx.log(`  restart ms: ${times.join(", ")}; last key present: ${r.last_key_ok_after_restart}`);
  } catch (e) {
    r.error = errorText(e);
    ctx.errors.push(`memory ${kind}: ${r.error}`);
    ctx.log(`  memory ${kind}: FAILED ${r.error}`);
  } finally {
    if (s !== undefined) await s.stop();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  }
  return r;
}

export async function memoryPhase(ctx: BenchContext, kinds: readonly ServerKind[]): Promise<MemoryResult[]> {
  const out: MemoryResult[] = [];
  for (const k of kinds) out.push(await memoryOne(ctx, k));
  return out;
}
