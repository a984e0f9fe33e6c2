// Watch continuity across faults: one gRPC watcher on the workload's key prefix, from
// revision 1, that follows the run through member kills, leader kills, partitions and the
// full restart the way clientv3 does (a lost stream is reopened on another member with
// start_revision = the last revision seen + 1). At the end its events must be exactly the
// prefix's history as a fresh watch from revision 1 replays it: no gap, no duplicate, no
// reordering, no changed value, whatever the member it was on did.

import http2 from "node:http2";
import { decodeFields } from "./grpc-client.ts";

export interface SeenEvent {
  revision: number;
  type: number;
  key: string;
  value: string;
}

export interface WatchContinuity {
  events: number;
  reconnects: number;
  /** Why the watch history differs from the replay, or undefined when it is the same. */
  problem: string | undefined;
}

const bytes = (v: number | Uint8Array | undefined): Uint8Array | undefined => (v instanceof Uint8Array ? v : undefined);
const num = (v: number | Uint8Array | undefined): number => (typeof v === "number" ? v : 0);

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n % 128) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
const field = (f: number, b: readonly number[]): number[] => [(f << 3) | 2, ...varint(b.length), ...b];

/** The end of the range of keys starting with `prefix` (etcd's prefix range_end). */
function prefixEnd(prefix: string): number[] {
  const b = [...Buffer.from(prefix, "utf8")];
  b[b.length - 1]! += 1;
  return b;
}

/** WatchRequest{create_request: {key, range_end, start_revision}}, framed. */
function createRequest(prefix: string, startRevision: number): Buffer {
  const create = [...field(1, [...Buffer.from(prefix, "utf8")]), ...field(2, prefixEnd(prefix)), ...(startRevision > 0 ? [0x18, ...varint(startRevision)] : [])];
  const msg = field(1, create);
  const out = Buffer.alloc(5 + msg.length);
  out.writeUInt32BE(msg.length, 1);
  Buffer.from(msg).copy(out, 5);
  return out;
}

/** Events of one WatchResponse; `compacted` when the server canceled it for compaction. */
function parseResponse(m: Uint8Array): { events: SeenEvent[]; compacted: number; canceled: boolean } {
  const f = decodeFields(m);
  const events: SeenEvent[] = [];
  for (const e of f.get(11) ?? []) {
    const ef = decodeFields(bytes(e) ?? new Uint8Array());
    const kv = decodeFields(bytes(ef.get(2)?.[0]) ?? new Uint8Array());
    events.push({
      type: num(ef.get(1)?.[0]),
      revision: num(kv.get(3)?.[0]),
      key: Buffer.from(bytes(kv.get(1)?.[0]) ?? []).toString("utf8"),
      value: Buffer.from(bytes(kv.get(5)?.[0]) ?? []).toString("utf8"),
    });
  }
  return { events, compacted: num(f.get(5)?.[0]), canceled: num(f.get(4)?.[0]) === 1 };
}

/** One watch stream from `startRevision`; `onEvents` per response; resolves when it ends. */
function watchOnce(url: string, prefix: string, startRevision: number, onEvents: (e: SeenEvent[]) => void, signal: AbortSignal): Promise<string> {
  return new Promise((resolve) => {
    const session = http2.connect(url);
    let settled = false;
    const done = (why: string): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", abort);
      session.destroy();
      resolve(why);
    };
    const abort = (): void => done("stopped");
    signal.addEventListener("abort", abort);
    session.on("error", (err) => done(String((err as { code?: string }).code ?? err)));
    session.on("close", () => done("connection closed"));
    const s = session.request({ ":method": "POST", ":path": "/etcdserverpb.Watch/Watch", "content-type": "application/grpc", te: "trailers" });
    let pending: Buffer = Buffer.alloc(0);
    s.on("data", (c: Buffer) => {
      pending = pending.length === 0 ? c : Buffer.concat([pending, c]);
      while (pending.length >= 5) {
        const n = pending.readUInt32BE(1);
        if (pending.length < 5 + n) break;
        const r = parseResponse(pending.subarray(5, 5 + n));
        pending = pending.subarray(5 + n);
        if (r.compacted > 0) {
          done(`compacted at ${r.compacted}`);
          return;
        }
        if (r.events.length > 0) onEvents(r.events);
      }
    });
    s.on("trailers", (t) => done(`stream ended: grpc ${String(t["grpc-status"])} ${String(t["grpc-message"] ?? "")}`));
    s.on("close", () => done("stream closed"));
    s.on("error", () => done("stream error"));
    s.write(createRequest(prefix, startRevision));
  });
}

/** The live watcher: follows the run, reopening the stream on the next member when lost. */
export class ContinuityWatcher {
  readonly events: SeenEvent[] = [];
  readonly prefix: string;
  reconnects = 0;
  readonly #abort = new AbortController();
  readonly #done: Promise<void>;
  #compacted: string | undefined;

  constructor(urls: readonly string[], prefix: string) {
    this.prefix = prefix;
    this.#done = (async () => {
      for (let i = 0; !this.#abort.signal.aborted; i++) {
        const next = (this.events.at(-1)?.revision ?? 0) + 1;
        const why = await watchOnce(urls[i % urls.length]!, prefix, next, (e) => this.events.push(...e), this.#abort.signal);
        if (why.startsWith("compacted")) {
          this.#compacted = why;
          return;
        }
        if (this.#abort.signal.aborted) return;
        this.reconnects++;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }

  get lastRevision(): number {
    return this.events.at(-1)?.revision ?? 0;
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#done;
  }

  /** Compares with a fresh replay from revision 1 on `url` (after the run, cluster healthy). */
  async check(url: string, timeoutMs: number): Promise<WatchContinuity> {
    const replay = await replayAll(url, this.prefix, timeoutMs);
    const deadline = Date.now() + timeoutMs;
    const last = replay.at(-1)?.revision ?? 0;
    while (this.lastRevision < last && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await this.stop();
    const out = { events: this.events.length, reconnects: this.reconnects };
    if (this.#compacted !== undefined) return { ...out, problem: `the watch was ${this.#compacted}` };
    const n = Math.max(this.events.length, replay.length);
    for (let i = 0; i < n; i++) {
      const a = this.events[i];
      const b = replay[i];
      if (a === undefined || b === undefined || a.revision !== b.revision || a.key !== b.key || a.value !== b.value || a.type !== b.type) {
        const show = (e: SeenEvent | undefined): string => (e === undefined ? "nothing" : `rev ${e.revision} ${e.type === 0 ? "PUT" : "DELETE"} ${e.key}=${e.value}`);
        return { ...out, problem: `event ${i}: the watcher saw ${show(a)}, the replay has ${show(b)} (${this.events.length} vs ${replay.length} events)` };
      }
    }
    return { ...out, problem: undefined };
  }

}

/** Every event on the prefix from revision 1: a watch read until it has been quiet for a while. */
async function replayAll(url: string, prefix: string, timeoutMs: number): Promise<SeenEvent[]> {
  const events: SeenEvent[] = [];
  const abort = new AbortController();
  let lastAt = Date.now();
  const ended = watchOnce(url, prefix, 1, (e) => {
    events.push(...e);
    lastAt = Date.now();
  }, abort.signal);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() - lastAt < 1_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  abort.abort();
  await ended;
  return events;
}
