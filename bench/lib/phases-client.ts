// Client start-up phase: wall time of one `get` with each project's client against its own
// server (`kvctl get` -> kvctl, `ETCDCTL_API=2 etcdctl get` -> etcd), and `node -e 0` as the
// floor any Node CLI pays. One GET costs the server well under a millisecond, so the
// figures are the clients' start-up (runtime, module loading, one request, exit).
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { timeCommand, type TimedCommand } from "./client-startup.ts";
import { errorText, startServer, stopAndClean, type BenchContext } from "./context.ts";
import { putKey, VALUE64 } from "./http.ts";
import type { ClientTiming } from "./results.ts";
import type { ServerKind, ServerProcess } from "./server.ts";

export const CLIENT_KEY = "bench-client/k";

/** `kvctl get` through bin/kvctl (which runs the compiled dist/), or the compiled entry directly. */
export function kvctlClientArgv(ctx: BenchContext, url: string): string[] {
  const bin = join(ctx.root, "bin", "kvctl");
  const head = existsSync(bin) ? [bin] : [process.execPath, join(ctx.root, ctx.options.kvctlEntry)];
  return [...head, "--endpoints", url, "get", CLIENT_KEY];
}

export function etcdctlPath(etcdBin: string): string {
  const beside = join(dirname(etcdBin), "etcdctl");
  return existsSync(beside) ? beside : "etcdctl";
}

function commandFor(ctx: BenchContext, kind: ServerKind, url: string): TimedCommand {
  if (kind === "kvctl") return { argv: kvctlClientArgv(ctx, url), expectStdout: VALUE64 };
  return {
    argv: [etcdctlPath(ctx.options.etcdBin), "--endpoints", url, "get", CLIENT_KEY],
    env: { ETCDCTL_API: "2" },
    expectStdout: VALUE64,
  };
}

export async function clientPhase(ctx: BenchContext, kinds: readonly ServerKind[]): Promise<ClientTiming[]> {
  const o = ctx.options;
  const timing = { runs: o.clientRuns, warmup: o.clientWarmup, hyperfine: o.hyperfine };
  const out: ClientTiming[] = [];
  for (const k of kinds) {
    let s: ServerProcess | undefined;
    try {
      s = await startServer(ctx, k, { phase: "client" });
      const st = await putKey(s.url, CLIENT_KEY, VALUE64);
      if (st < 200 || st > 299) throw new Error(`Cannot prepare ${CLIENT_KEY}: HTTP ${st}`);
      const t = timeCommand(commandFor(ctx, k, s.url), timing);
      ctx.log(`client ${k}: ${t.command} -> median ${t.median_ms} ms (${t.tool}, ${t.runs} runs)${t.error ? ` FAILED ${t.error}` : ""}`);
      if (t.error !== undefined) ctx.errors.push(`client ${k}: ${t.error}`);
      out.push({ client: k, timing: t });
    } catch (e) {
      const error = errorText(e);
      ctx.errors.push(`client ${k}: ${error}`);
      out.push({ client: k, timing: { command: "-", tool: "spawnSync loop", runs: 0, median_ms: null, min_ms: null, max_ms: null, error } });
    } finally {
      if (s !== undefined) await stopAndClean(s);
    }
  }
  if (kinds.includes("kvctl")) {
    const t = timeCommand({ argv: [process.execPath, "-e", "0"] }, timing);
    ctx.log(`client node: ${t.command} -> median ${t.median_ms} ms (${t.tool})`);
    out.push({ client: "node", timing: t });
  }
  return out;
}
