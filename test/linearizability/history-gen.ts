// Random register histories for testing the checker: generated from a sequential
// simulation (so always linearizable), optionally with one anomaly injected that makes
// them provably non-linearizable.
//
// Each client issues operations one after another; each operation gets an interval
// [call, return] and a linearization point inside it. Applying the operations to one
// register in linearization-point order gives every output. An "unknown" write keeps its
// point (applied) or is dropped from the simulation (never applied), and is recorded with
// return = Infinity; its client continues under a new client id, as a real client would
// after a timeout.

import type { RegisterInput, RegisterOperation, RegisterOutput } from "./register-model.ts";

export type Rng = () => number;

export { mulberry32 } from "../helpers/prng.ts";

export interface GenerateOptions {
  rng: Rng;
  clients: number;
  operations: number;
  key?: string;
  /** Probability that a write's outcome is unknown (default 0.05). */
  unknownRate?: number;
}

type Kind = "get" | "set" | "cas";

interface Planned {
  client: number;
  kind: Kind;
  call: number;
  ret: number;
  point: number;
  unknown: boolean;
  applied: boolean;
}

export function generateHistory(opts: GenerateOptions): RegisterOperation[] {
  const { rng } = opts;
  const key = opts.key ?? "k";
  const unknownRate = opts.unknownRate ?? 0.05;
  const clock = Array.from({ length: opts.clients }, () => rng() * 5);
  const ids = Array.from({ length: opts.clients }, (_, i) => i);
  let nextId = opts.clients;
  const planned: Planned[] = [];
  for (let n = 0; n < opts.operations; n++) {
    const c = Math.floor(rng() * opts.clients);
    const call = clock[c]! + rng() * 3;
    const ret = call + 0.5 + rng() * 10;
    const r = rng();
    const kind: Kind = r < 0.45 ? "get" : r < 0.75 ? "set" : "cas";
    const unknown = kind !== "get" && rng() < unknownRate;
    planned.push({ client: ids[c]!, kind, call, ret, point: call + rng() * (ret - call), unknown, applied: !unknown || rng() < 0.5 });
    clock[c] = ret;
    if (unknown) ids[c] = nextId++;
  }
  const order = planned.map((_, i) => i).filter((i) => planned[i]!.applied);
  order.sort((a, b) => planned[a]!.point - planned[b]!.point);
  const written: string[] = [];
  let state: string | null = null;
  let seq = 0;
  const out = new Map<number, { input: RegisterInput; output: RegisterOutput }>();
  const cas = (prevValue: string): Extract<RegisterInput, { op: "cas" }> => ({ op: "cas", key, prevValue, value: `v${seq++}` });
  for (const i of order) {
    const p = planned[i]!;
    if (p.kind === "get") {
      out.set(i, { input: { op: "get", key }, output: { type: "value", value: state } });
    } else if (p.kind === "set") {
      const input = { op: "set" as const, key, value: `v${seq++}` };
      written.push(input.value);
      state = input.value;
      out.set(i, { input, output: { type: p.unknown ? "unknown" : "ok" } });
    } else {
      // Half the time aim at the current value, so some swaps succeed.
      const prev: string = state !== null && rng() < 0.5 ? state : (written[Math.floor(rng() * written.length)] ?? "none");
      const input = cas(prev);
      let output: RegisterOutput;
      if (state === prev) {
        written.push(input.value);
        state = input.value;
        output = { type: "ok" };
      } else {
        output = { type: state === null ? "not-found" : "compare-failed" };
      }
      out.set(i, { input, output: p.unknown ? { type: "unknown" } : output });
    }
  }
  return planned.map((p, i) => {
    const done = out.get(i);
    // A write that never applied still needs an input; its value is never written.
    const io = done ?? { input: p.kind === "set" ? { op: "set" as const, key, value: `lost${i}` } : cas(`nowhere${i}`), output: { type: "unknown" as const } };
    return { client: p.client, input: io.input, call: p.call, output: io.output, return: p.unknown ? Infinity : p.ret };
  });
}

export const Anomaly = { staleRead: "stale-read", phantomRead: "phantom-read", lostWrite: "lost-write", staleCas: "stale-cas" } as const;
export type Anomaly = (typeof Anomaly)[keyof typeof Anomaly];

const definitelyApplied = (op: RegisterOperation): boolean => op.input.op !== "get" && op.output.type === "ok" && op.return !== Infinity;
const writtenValue = (op: RegisterOperation): string => (op.input.op === "get" ? "" : op.input.value);

/**
 * A value that is provably stale at time `t`: written by an applied write w, and
 * overwritten by another applied write w2 that started after w returned and returned before
 * t. With unique values nothing can bring it back.
 */
function staleValueBefore(history: readonly RegisterOperation[], t: number, rng: Rng): string | undefined {
  const writes = history.filter(definitelyApplied);
  const candidates: string[] = [];
  for (const w2 of writes) {
    if (w2.return >= t) continue;
    for (const w of writes) if (w.return < w2.call) candidates.push(writtenValue(w));
  }
  return candidates[Math.floor(rng() * candidates.length)];
}

/**
 * Returns a copy of `history` with one anomaly that no linearization can explain, or
 * undefined when the history offers no place for it (e.g. too few writes).
 */
export function injectAnomaly(history: readonly RegisterOperation[], anomaly: Anomaly, rng: Rng): RegisterOperation[] | undefined {
  const copy = history.map((op) => ({ ...op }));
  const key = history[0]?.input.key ?? "k";
  const shuffled = copy.map((_, i) => i).sort(() => rng() - 0.5);
  switch (anomaly) {
    case Anomaly.phantomRead: {
      const i = shuffled.find((j) => copy[j]!.input.op === "get");
      if (i === undefined) return undefined;
      copy[i] = { ...copy[i]!, output: { type: "value", value: "never-written" } };
      return copy;
    }
    case Anomaly.staleRead:
    case Anomaly.staleCas: {
      const want = anomaly === Anomaly.staleRead ? "get" : "cas";
      for (const i of shuffled) {
        const op = copy[i]!;
        if (op.input.op !== want || (want === "cas" && op.output.type !== "ok")) continue;
        const stale = staleValueBefore(history, op.call, rng);
        if (stale === undefined) continue;
        copy[i] =
          op.input.op === "cas"
            ? { ...op, input: { ...op.input, prevValue: stale } }
            : { ...op, output: { type: "value", value: stale } };
        return copy;
      }
      return undefined;
    }
    case Anomaly.lostWrite: {
      // After everything has returned, a read sees an older acknowledged value.
      const end = Math.max(...history.map((op) => (op.return === Infinity ? op.call : op.return))) + 1;
      const stale = staleValueBefore(history, end, rng);
      if (stale === undefined) return undefined;
      copy.push({ client: -1, input: { op: "get", key }, call: end, output: { type: "value", value: stale }, return: end + 1 });
      return copy;
    }
  }
}
