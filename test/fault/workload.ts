// Concurrent clients doing random get(quorum) / set / compareAndSwap on a few keys against
// random members, recording every operation's call and return time. Each client drives
// one API (v2 keys, or the v3 gateway: range / put / txn compare-and-set); with several
// APIs clients alternate (client w uses the w-th modulo), each only on its API's keys.
//
// Every written value is unique ("c<client>-<n>"), which the checker relies on. A client
// whose operation ended unknown continues under a fresh client id, as a crashed process
// would be replaced (its unknown operation stays open forever in the history). A cas uses
// the last value this client saw for the key, so a fair share of swaps succeed.

import type { RegisterInput, RegisterOperation } from "../linearizability/register-model.ts";
import type { Rng } from "../linearizability/history-gen.ts";
import { runApiOp, type Api, type WorkloadKey } from "./api.ts";
import { Outcome } from "./v2-client.ts";
import { SampleOutcome, type OpSample } from "./client-time.ts";

export interface WorkloadOptions {
  clients: number;
  /** Every key with the API it is driven through (see api.ts: never one key for two APIs). */
  keys: readonly WorkloadKey[];
  /** Client URLs of the members (a random one per operation). */
  urls: readonly string[];
  rng: Rng;
  /** Per-operation client timeout. */
  timeoutMs: number;
  /** Stop issuing operations at this time (Date.now() scale). */
  until: number;
  /** Hard cap on operations per client. */
  maxOpsPerClient: number;
  /** Milliseconds since the run's origin (monotonic). */
  now: () => number;
  signal: AbortSignal;
  /** When given, receives every operation (refused ones too) with its target member (client-time.ts). */
  samples?: OpSample[];
}

export interface Tally {
  ok: number;
  fail: number;
  unknown: number;
}

/** For v3: get = range, set = put, cas = txn. */
export interface OpCounts {
  get: Tally;
  set: Tally;
  cas: Tally;
}

export interface WorkloadCounts {
  /** Per API; an API the run did not drive stays all zero. */
  byApi: Record<Api, OpCounts>;
  refused: number;
  /** Unknown outcomes by reason (e.g. TIMEOUT, HTTP 500, ECONNRESET). */
  reasons: Record<string, number>;
}

export interface WorkloadResult {
  history: RegisterOperation[];
  counts: WorkloadCounts;
}

export function emptyCounts(): WorkloadCounts {
  const z = (): Tally => ({ ok: 0, fail: 0, unknown: 0 });
  const ops = (): OpCounts => ({ get: z(), set: z(), cas: z() });
  return { byApi: { v2: ops(), v3: ops(), grpc: ops() }, refused: 0, reasons: {} };
}

export async function runWorkload(opts: WorkloadOptions): Promise<WorkloadResult> {
  const history: RegisterOperation[] = [];
  const counts = emptyCounts();
  let nextClientId = opts.clients;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(opts.rng() * xs.length)]!;

  const apis = [...new Set(opts.keys.map((k) => k.api))];

  const client = async (worker: number): Promise<void> => {
    const api = apis[worker % apis.length];
    if (api === undefined) return;
    const keys = opts.keys.filter((k) => k.api === api).map((k) => k.key);
    let id = worker;
    let seq = 0;
    const lastSeen = new Map<string, string>();
    for (let n = 0; n < opts.maxOpsPerClient && Date.now() < opts.until && !opts.signal.aborted; n++) {
      const key = pick(keys);
      const r = opts.rng();
      const prev = lastSeen.get(key);
      let input: RegisterInput;
      if (r < 0.5 || (r >= 0.75 && prev === undefined)) input = { op: "get", key };
      else if (r < 0.75) input = { op: "set", key, value: `c${worker}-${seq++}` };
      else input = { op: "cas", key, prevValue: prev!, value: `c${worker}-${seq++}` };
      const member = Math.floor(opts.rng() * opts.urls.length);
      const url = opts.urls[member]!;
      const call = opts.now();
      const res = await runApiOp(api, url, input, opts.timeoutMs);
      const ret = opts.now();
      opts.samples?.push({
        member, op: `${api} ${input.op}`, call, ret,
        outcome: res.outcome === Outcome.refused ? SampleOutcome.refused : res.outcome === Outcome.unknown ? SampleOutcome.unknown : SampleOutcome.answered,
      });
      const c = counts.byApi[api][input.op];
      if (res.outcome === Outcome.refused) {
        // The member is down: back off a little instead of spinning on refusals.
        counts.refused++;
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      if (res.outcome === Outcome.unknown) {
        c.unknown++;
        const reason = `${apis.length > 1 ? `${api} ` : ""}${res.detail ?? "?"}`;
        counts.reasons[reason] = (counts.reasons[reason] ?? 0) + 1;
        // A failed read constrains nothing; an unknown write stays open forever.
        if (input.op !== "get") history.push({ client: id, input, call, output: res.output, return: Infinity });
        id = nextClientId++;
        continue;
      }
      const o = res.output;
      if (o.type === "ok" || o.type === "value") c.ok++;
      else c.fail++;
      history.push({ client: id, input, call, output: o, return: ret });
      if (o.type === "value" && o.value !== null) lastSeen.set(key, o.value);
      if (o.type === "ok" && input.op !== "get") lastSeen.set(key, input.value);
    }
  };
  await Promise.all(Array.from({ length: opts.clients }, (_, w) => client(w)));
  return { history, counts };
}
