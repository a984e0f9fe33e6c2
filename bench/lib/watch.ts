// v2 long-poll watch fan-out — the same workload and timing points as the shared
// harness's lib/watch.js:
//  1. PUT the key once, then open N raw-TCP `GET /v2/keys/<key>?wait=true` long polls.
//  2. "registered" = every response head arrived (etcd flushes the head once the watcher
//     is registered); if heads never come, wait settleMs and go on.
//  3. One PUT of the key; for each watcher the time from sending the PUT until its
//     connection carried the event ("value":"fanout").
import { connect, type Socket } from "node:net";
import { putKey } from "./http.ts";
import { percentileSorted, round } from "./stats.ts";

export interface WatchOptions {
  readonly url: string;
  readonly n: number;
  readonly key?: string;
  /** RSS sampler of the server (kB), called before, with the watchers open, and after the event. */
  readonly rssKb?: () => number | null;
  readonly registerTimeoutMs?: number;
  readonly settleMs?: number;
  readonly eventTimeoutMs?: number;
}

export interface WatchResult {
  readonly n: number;
  readonly registered_via_headers: boolean;
  readonly headers_received: number;
  readonly register_all_ms: number | null;
  readonly write_status: number;
  readonly write_ack_ms: number;
  readonly received: number;
  readonly all_received: boolean;
  readonly first_ms: number | null;
  readonly p50_ms: number | null;
  readonly p99_ms: number | null;
  readonly all_ms: number | null;
  readonly errors: number;
  readonly bad_status: number;
  readonly wrong_body: number;
  readonly rss_kb_before: number | null;
  readonly rss_kb_with_watchers: number | null;
  readonly rss_kb_after: number | null;
}

interface Watcher {
  gotHead: boolean;
  /** ms timestamp of the event, -1 on error, null while waiting */
  end: number | null;
  buf: string;
  ok: boolean;
  sock: Socket;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** true when p settled within ms; the timer is cleared either way (no dangling 30 s timers). */
async function within(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true), t]);
  } finally {
    clearTimeout(timer);
  }
}
const now = (): number => performance.now();

export async function watchFanout(o: WatchOptions): Promise<WatchResult> {
  const key = o.key ?? "bench-watch/k";
  const u = new URL(o.url);
  const rss = o.rssKb ?? ((): number | null => null);
  await putKey(o.url, key, "initial");
  await sleep(200);
  const rssBefore = rss();
  const watchers: Watcher[] = [];
  let heads = 0;
  let ended = 0;
  let errors = 0;
  let badStatus = 0;
  let tAllRegistered: number | null = null;
  let resolveHeads: () => void = () => {};
  let resolveEnded: () => void = () => {};
  const allHeads = new Promise<void>((r) => (resolveHeads = r));
  const allEnded = new Promise<void>((r) => (resolveEnded = r));
  const finish = (w: Watcher, t: number): void => {
    if (w.end !== null) return;
    w.end = t;
    if (t < 0) errors++;
    if (++ended === o.n) resolveEnded();
  };
  const tOpen = now();
  for (let i = 0; i < o.n; i++) {
    const sock = connect({ host: u.hostname, port: Number(u.port) });
    const w: Watcher = { gotHead: false, end: null, buf: "", ok: false, sock };
    watchers.push(w);
    sock.setNoDelay(true);
    sock.setEncoding("latin1");
    sock.on("connect", () => {
      sock.write(`GET /v2/keys/${key}?wait=true HTTP/1.1\r\nHost: ${u.host}\r\nAccept: */*\r\n\r\n`);
    });
    sock.on("data", (d: string) => {
      w.buf += d;
      if (!w.gotHead) {
        const h = w.buf.indexOf("\r\n\r\n");
        if (h < 0) return;
        w.gotHead = true;
        if (!/^HTTP\/1\.[01] 200/.test(w.buf)) badStatus++;
        w.buf = w.buf.slice(h + 4);
        if (++heads === o.n) {
          tAllRegistered = now();
          resolveHeads();
        }
      }
      // works for chunked and Content-Length bodies alike
      if (w.end === null && /"value"\s*:\s*"fanout"/.test(w.buf)) {
        w.ok = /"action"\s*:\s*"set"/.test(w.buf);
        finish(w, now());
        sock.destroy();
      }
    });
    sock.on("error", () => finish(w, -1));
    sock.on("close", () => finish(w, -1));
  }
  const registered = await within(allHeads, o.registerTimeoutMs ?? 30_000);
  if (!registered) await sleep(o.settleMs ?? 2000); // the server does not flush heads early: give it time
  await sleep(500);
  const rssWith = rss();
  const tWrite = now();
  const writeStatus = await putKey(o.url, key, "fanout");
  const tAck = now();
  const all = await within(allEnded, o.eventTimeoutMs ?? 30_000);
  for (const w of watchers) w.sock.destroy();
  const lat = Float64Array.from(
    watchers.filter((w) => w.end !== null && w.end >= 0 && w.ok).map((w) => (w.end as number) - tWrite),
  ).sort();
  const p = (q: number): number | null => {
    const v = percentileSorted(lat, q);
    return v === null ? null : round(v, 2);
  };
  await sleep(1000);
  return {
    n: o.n, registered_via_headers: registered, headers_received: heads,
    register_all_ms: tAllRegistered === null ? null : round(tAllRegistered - tOpen, 1),
    write_status: writeStatus, write_ack_ms: round(tAck - tWrite, 2),
    received: lat.length, all_received: all && lat.length === o.n,
    first_ms: p(0), p50_ms: p(50), p99_ms: p(99),
    all_ms: lat.length === o.n ? p(100) : null,
    errors, bad_status: badStatus,
    wrong_body: watchers.filter((w) => w.end !== null && w.end >= 0 && !w.ok).length,
    rss_kb_before: rssBefore, rss_kb_with_watchers: rssWith, rss_kb_after: rss(),
  };
}
