// Fill: N distinct v2 keys PUT /v2/keys/<prefix>/<i> with the 64-byte value over a fixed
// number of keep-alive connections — the same workload as the shared harness's lib/fill.js.
import { Agent, request } from "node:http";
import { VALUE64 } from "./http.ts";
import { percentileSorted, round } from "./stats.ts";

export interface FillOptions {
  readonly url: string;
  readonly n: number;
  readonly concurrency: number;
  readonly prefix?: string;
  /** Whole fill bound; the result says timeout when it ran out. */
  readonly timeoutMs?: number;
}

export interface FillResult {
  readonly n: number;
  readonly concurrency: number;
  readonly completed: number;
  readonly timed_out: boolean;
  readonly seconds: number;
  readonly keys_per_s: number;
  readonly p50_ms: number | null;
  readonly p99_ms: number | null;
  readonly max_ms: number | null;
  readonly non2xx: number;
  readonly errors: number;
  readonly status_counts: Record<string, number>;
}

export async function fill(o: FillOptions): Promise<FillResult> {
  const u = new URL(o.url);
  const prefix = o.prefix ?? "fill";
  const body = "value=" + VALUE64;
  const agent = new Agent({ keepAlive: true, maxSockets: o.concurrency, maxFreeSockets: o.concurrency });
  const lat = new Float64Array(o.n).fill(Number.NaN);
  const statusCounts: Record<string, number> = {};
  let next = 0;
  let completed = 0;
  let non2xx = 0;
  let errors = 0;
  let stop = false;

  const one = (i: number): Promise<void> =>
    new Promise((resolve) => {
      const t0 = process.hrtime.bigint();
      const req = request(
        {
          host: u.hostname, port: u.port, agent, method: "PUT", path: `/v2/keys/${prefix}/${i}`,
          headers: { "Content-Type": "application/x-www-form-urlencoded", "Content-Length": body.length },
        },
        (res) => {
          res.resume();
          res.on("end", () => {
            lat[i] = Number(process.hrtime.bigint() - t0) / 1e6;
            const code = res.statusCode ?? 0;
            statusCounts[code] = (statusCounts[code] ?? 0) + 1;
            if (code < 200 || code > 299) non2xx++;
            resolve();
          });
        },
      );
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end(body);
    });

  const worker = async (): Promise<void> => {
    while (!stop) {
      const i = next++;
      if (i >= o.n) return;
      await one(i);
      completed++;
    }
  };

  const t0 = process.hrtime.bigint();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    Promise.all(Array.from({ length: o.concurrency }, worker)).then(() => false),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(true), o.timeoutMs ?? 600_000))),
  ]);
  clearTimeout(timer);
  stop = true;
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  agent.destroy();
  const sorted = Float64Array.from(lat.filter((x) => !Number.isNaN(x))).sort();
  const pct = (p: number): number | null => {
    const v = percentileSorted(sorted, p);
    return v === null ? null : round(v, 3);
  };
  return {
    n: o.n, concurrency: o.concurrency, completed, timed_out: timedOut,
    seconds: round(secs, 3), keys_per_s: round(completed / secs, 1),
    p50_ms: pct(50), p99_ms: pct(99), max_ms: pct(100),
    non2xx, errors, status_counts: statusCounts,
  };
}
