// The v2 key as a register: get (quorum read), set, and compareAndSwap(prevValue), one
// register per key. The state is the key's value, or null when the key does not exist.
//
// Outputs and what they let the history claim:
//   get   → value (string) or not-found (null); a failed read says nothing and is dropped.
//   set   → ok, or unknown (timeout, connection error, 5xx): maybe applied.
//   cas   → ok (applied), compare-failed (errorCode 101: the key held another value),
//           not-found (errorCode 100: the key did not exist), or unknown: maybe applied,
//           and if applied only where the key held prevValue.
// An unknown output must come with `return: Infinity` (partition() enforces it): the write
// may take effect at any time after its call, or never: such writes are `optional`, left
// out of the linearization when they did not take effect.
//
// The harness writes unique values, which makes two sound reductions possible (partition
// and prune below). Both are skipped for a value written more than once.

import type { Model, Operation, Partition } from "./checker.ts";

export type RegisterInput =
  | { op: "get"; key: string }
  /** `blind` is set by partitionRegister only (see there); callers never set it. */
  | { op: "set"; key: string; value: string; blind?: number }
  | { op: "cas"; key: string; prevValue: string; value: string };

export type RegisterOutput =
  | { type: "value"; value: string | null }
  | { type: "ok" }
  | { type: "compare-failed" }
  | { type: "not-found" }
  | { type: "unknown" };

export type RegisterOperation = Operation<RegisterInput, RegisterOutput>;

/** A value that no operation of the history observed (written by a blind set). */
export const UNSEEN: unique symbol = Symbol("unseen");

export interface RegisterState {
  /** The key's value; null when it does not exist; UNSEEN after a blind set. */
  readonly value: string | null | typeof UNSEEN;
  /** Blind sets linearized so far: they are taken in call order (see partitionRegister). */
  readonly blind: number;
}

type Step = { ok: boolean; state: RegisterState };
const fail = (state: RegisterState): Step => ({ ok: false, state });
const keep = (state: RegisterState): Step => ({ ok: true, state });
const write = (state: RegisterState, value: RegisterState["value"]): Step => ({ ok: true, state: { value, blind: state.blind } });

export function stepRegister(state: RegisterState, input: RegisterInput, output: RegisterOutput): Step {
  const v = state.value;
  switch (input.op) {
    case "get":
      if (output.type === "unknown") return keep(state);
      return output.type === "value" && output.value === v ? keep(state) : fail(state);
    case "set":
      if (output.type !== "ok" && output.type !== "unknown") return fail(state);
      if (input.blind === undefined) return write(state, input.value);
      return input.blind === state.blind ? { ok: true, state: { value: UNSEEN, blind: state.blind + 1 } } : fail(state);
    case "cas":
      switch (output.type) {
        case "ok":
          return v === input.prevValue ? write(state, input.value) : fail(state);
        case "compare-failed":
          return v !== null && v !== input.prevValue ? keep(state) : fail(state);
        case "not-found":
          return v === null ? keep(state) : fail(state);
        case "unknown":
          // Not applied = left out (the model marks it optional), so no no-op here.
          return v === input.prevValue ? write(state, input.value) : fail(state);
        default:
          return fail(state);
      }
  }
}

function isWrite(op: RegisterOperation): op is Operation<Exclude<RegisterInput, { op: "get" }>, RegisterOutput> {
  return op.input.op !== "get";
}

/** Values written more than once in `ops` (the reductions below need unique values). */
function repeatedValues(ops: readonly RegisterOperation[]): Set<string> {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const op of ops) {
    if (!isWrite(op)) continue;
    if (seen.has(op.input.value)) repeated.add(op.input.value);
    seen.add(op.input.value);
  }
  return repeated;
}

/**
 * The earliest return time of an operation that saw `value` in the register: a get that
 * returned it, or an applied cas whose prevValue it was. With unique values its writer
 * must be linearized before every such observer.
 */
function firstObservation(ops: readonly RegisterOperation[]): Map<string, number> {
  const first = new Map<string, number>();
  const note = (v: string, t: number): void => {
    const cur = first.get(v);
    if (cur === undefined || t < cur) first.set(v, t);
  };
  for (const op of ops) {
    if (op.input.op === "get" && op.output.type === "value" && op.output.value !== null) note(op.output.value, op.return);
    if (op.input.op === "cas" && op.output.type === "ok") note(op.input.prevValue, op.return);
  }
  return first;
}

/** Values that some operation compares with or returns (a get's value, any cas's prevValue). */
function mentioned(ops: readonly RegisterOperation[]): Set<string> {
  const out = new Set<string>();
  for (const op of ops) {
    if (op.input.op === "get" && op.output.type === "value" && op.output.value !== null) out.add(op.output.value);
    if (op.input.op === "cas") out.add(op.input.prevValue);
  }
  return out;
}

/**
 * One partition per key. Unknown outputs get return = Infinity; reads that failed are
 * dropped (they constrain nothing). Two reductions follow, each giving an equivalent
 * history (same verdict) that is much cheaper to search:
 *
 * 1. Tightening. An unknown write whose value was observed must have taken effect before
 *    its first observer returned, so its return becomes that time.
 * 2. Blind sets. An unknown set whose value no operation mentions can matter only by
 *    hiding the previous value (e.g. to explain a compare-failed cas); which blind set
 *    does it is irrelevant, since all their calls are behind any point where one is used.
 *    So they are numbered in call order, write the same UNSEEN value, and the state only
 *    admits them in that order: k pending blind sets cost k+1 configurations instead of
 *    2^k. (Exchange argument: in any linearization using m of them, giving the j-th point
 *    to the j-th earliest call keeps every call before its point.)
 */
export function partitionRegister(history: readonly RegisterOperation[]): Partition<RegisterInput, RegisterOutput>[] {
  const byKey = new Map<string, RegisterOperation[]>();
  for (const op of history) {
    if (op.input.op === "get" && op.output.type === "unknown") continue;
    const norm = op.output.type === "unknown" ? { ...op, return: Infinity } : op;
    const list = byKey.get(op.input.key);
    if (list === undefined) byKey.set(op.input.key, [norm]);
    else list.push(norm);
  }
  const parts: Partition<RegisterInput, RegisterOutput>[] = [];
  for (const [key, ops] of [...byKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const repeated = repeatedValues(ops);
    const first = firstObservation(ops);
    const seen = mentioned(ops);
    const tightened = ops.map((op) => {
      if (!isWrite(op) || op.output.type !== "unknown" || repeated.has(op.input.value)) return op;
      const bound = first.get(op.input.value);
      return bound !== undefined && bound >= op.call ? { ...op, return: bound } : op;
    });
    const blind = tightened
      .map((op, i) => ({ op, i }))
      .filter(({ op }) => op.input.op === "set" && op.output.type === "unknown" && op.return === Infinity && !repeated.has(op.input.value) && !seen.has(op.input.value))
      .sort((a, b) => a.op.call - b.op.call || a.i - b.i);
    blind.forEach(({ op, i }, j) => {
      if (op.input.op === "set") tightened[i] = { ...op, input: { ...op.input, blind: j } };
    });
    parts.push({ label: key, operations: tightened });
  }
  return parts;
}

/**
 * Drops the unknown writes nobody observed: assuming they never happened is one of the
 * outcomes the full history allows, so if the rest is linearizable, so is the whole.
 * (The converse fails only when such a write is needed to explain a compare-failed cas;
 * the checker then searches the full partition.)
 */
export function pruneRegister(ops: readonly RegisterOperation[]): RegisterOperation[] {
  const repeated = repeatedValues(ops);
  const first = firstObservation(ops);
  return ops.filter((op) => !(isWrite(op) && op.output.type === "unknown" && op.return === Infinity && !repeated.has(op.input.value) && !first.has(op.input.value)));
}

function describeRegister(input: RegisterInput, output: RegisterOutput): string {
  const out = output.type === "value" ? (output.value === null ? "not-found" : JSON.stringify(output.value)) : output.type;
  switch (input.op) {
    case "get":
      return `get(${input.key}) → ${out}`;
    case "set":
      return `set(${input.key}, ${JSON.stringify(input.value)})${input.blind === undefined ? "" : ` (blind #${input.blind})`} → ${out}`;
    case "cas":
      return `cas(${input.key}, ${JSON.stringify(input.prevValue)} → ${JSON.stringify(input.value)}) → ${out}`;
  }
}

export const registerModel: Model<RegisterState, RegisterInput, RegisterOutput> = {
  partition: partitionRegister,
  prune: pruneRegister,
  init: () => ({ value: null, blind: 0 }),
  step: stepRegister,
  equal: (a, b) => a.value === b.value && a.blind === b.blind,
  hash: (s) => `${s.blind}${s.value === null ? "\u0000" : s.value === UNSEEN ? "\u0001" : `=${s.value}`}`,
  optional: (input, output) => input.op !== "get" && output.type === "unknown",
  // A get, or a cas that failed: neither changes the value, whatever it was.
  readOnly: (input, output) => input.op === "get" || output.type === "compare-failed" || output.type === "not-found",
  describe: describeRegister,
  describeState: (s) => (s.value === null ? "<not-found>" : s.value === UNSEEN ? "<unseen value>" : JSON.stringify(s.value)),
};
