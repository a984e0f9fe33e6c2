// A linearizability checker shaped like porcupine (anishathalye/porcupine): a history of
// operations `{ client, input, call, output, return }`, a pure sequential model, one
// independent search per partition (per key), and the Wing–Gong–Lowe search with
// memoization (Lowe, "Testing for linearizability", 2016).
//
// The search walks a doubly linked list of call/return events sorted by time. At a call
// event it tries to linearize that operation now (the model's step must accept the
// recorded output); at a return event it has failed to linearize the operation that
// returns there, so it backtracks. A (set of linearized operations, model state) pair that
// was already explored is never explored again: that cache turns the factorial search into
// something that is near-linear on real histories.
//
// An operation whose outcome is unknown (timed out, connection lost) carries
// `return: Infinity`, as in porcupine: it may be linearized at any point after its call,
// including "after everything", which is the same as "never happened".
//
// Invariants:
// - The checker is pure: no clock reads except the optional time budget, no I/O.
// - It never hangs: every partition is bounded by `maxSteps` and `timeoutMs`, and reports
//   "unknown" when either runs out.
// - "illegal" is a proof: the whole search space was explored (modulo the 64-bit set
//   hash, see below).

import { Bitset } from "./bitset.ts";

export interface Operation<I, O> {
  /** Who issued the operation; informational (the search does not need it). */
  client: number;
  input: I;
  /** Invocation time (any monotonic unit; the harness uses milliseconds). */
  call: number;
  output: O;
  /** Response time; Infinity when the outcome is unknown (maybe applied, maybe not). */
  return: number;
}

export interface StepResult<S> {
  ok: boolean;
  state: S;
}

export interface Partition<I, O> {
  /** Shown in results, e.g. the key. */
  label: string;
  operations: Operation<I, O>[];
}

/** A sequential specification. Every function must be pure; `step` must not mutate `state`. */
export interface Model<S, I, O> {
  /** Splits a history into independent sub-histories (P-compositionality, e.g. per key). */
  partition?: (history: readonly Operation<I, O>[]) => Partition<I, O>[];
  /**
   * Optional: a sub-history whose linearizability implies that of `ops` (e.g. without the
   * unknown writes nobody observed). It is checked first; only if it fails is the full
   * partition searched, so a violation is always confirmed on the full history.
   */
  prune?: (ops: readonly Operation<I, O>[]) => Operation<I, O>[];
  init: () => S;
  step: (state: S, input: I, output: O) => StepResult<S>;
  equal: (a: S, b: S) => boolean;
  /** Canonical string of a state for the memo table; defaults to JSON.stringify. */
  hash?: (state: S) => string;
  /**
   * True when the operation may be left out of the linearization altogether: its outcome
   * is unknown and "it never took effect" is one of the possibilities. The search ends as
   * soon as every other operation is linearized. (porcupine gets the same effect from a
   * return time of +Infinity plus a step that accepts the operation as a no-op anywhere;
   * letting the model refuse that no-op instead avoids trying it at every point.)
   */
  optional?: (input: I, output: O) => boolean;
  /**
   * Optional hint: true when `step` never changes the state for this input/output, in any
   * state (a read). Such operations are linearized greedily, which removes the
   * exponential cost of many concurrent reads.
   */
  readOnly?: (input: I, output: O) => boolean;
  describe?: (input: I, output: O) => string;
  describeState?: (state: S) => string;
}

export const Verdict = { ok: "ok", illegal: "illegal", unknown: "unknown" } as const;
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

export interface CheckOptions {
  /** Budget per partition in model steps (default 5,000,000). */
  maxSteps?: number;
  /** Budget per partition in wall-clock milliseconds (default 10,000). */
  timeoutMs?: number;
  /** Clock for the time budget (default performance.now); injectable for tests. */
  now?: () => number;
}

export interface PartitionResult {
  label: string;
  verdict: Verdict;
  operations: number;
  steps: number;
  elapsedMs: number;
  /** For "illegal": where the longest linearization got stuck; for "unknown": which budget ran out. */
  explanation?: string;
}

export interface CheckResult {
  verdict: Verdict;
  partitions: PartitionResult[];
}

interface Entry {
  isCall: boolean;
  id: number;
  time: number;
  prev: Entry | null;
  next: Entry | null;
  /** Call entry → its return entry. */
  match: Entry | null;
}

interface Frame<S> {
  entry: Entry;
  /** State before this operation was linearized. */
  state: S;
  /** Taken by the read-only pass: its siblings need not be tried. */
  forced: boolean;
}

function makeList<I, O>(ops: readonly Operation<I, O>[]): Entry {
  const events: Entry[] = [];
  ops.forEach((op, id) => {
    if (!(op.return >= op.call)) throw new Error(`Cannot check operation ${id}: return ${op.return} is before call ${op.call}`);
    const ret: Entry = { isCall: false, id, time: op.return, prev: null, next: null, match: null };
    events.push({ isCall: true, id, time: op.call, prev: null, next: null, match: ret }, ret);
  });
  // Equal times: calls first, so touching operations count as concurrent (the permissive
  // reading, as porcupine does).
  events.sort((a, b) => (a.time !== b.time ? a.time - b.time : Number(b.isCall) - Number(a.isCall)));
  const head: Entry = { isCall: false, id: -1, time: -Infinity, prev: null, next: null, match: null };
  let last = head;
  for (const e of events) {
    last.next = e;
    e.prev = last;
    last = e;
  }
  return head;
}

// Removes a call entry and its return entry from the list (they stay linked to their
// neighbours so unlift can put them back).
function lift(e: Entry): void {
  e.prev!.next = e.next;
  e.next!.prev = e.prev; // a call is always followed by at least its own return
  const m = e.match!;
  m.prev!.next = m.next;
  if (m.next !== null) m.next.prev = m.prev;
}

function unlift(e: Entry): void {
  const m = e.match!;
  m.prev!.next = m;
  if (m.next !== null) m.next.prev = m;
  e.prev!.next = e;
  e.next!.prev = e;
}

function describeOp<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[], id: number): string {
  const op = ops[id]!;
  const what = model.describe ? model.describe(op.input, op.output) : JSON.stringify({ input: op.input, output: op.output });
  const ret = op.return === Infinity ? "∞" : op.return.toFixed(1);
  return `#${id} client ${op.client} [${op.call.toFixed(1)}, ${ret}] ${what}`;
}

interface SearchResult {
  verdict: Verdict;
  steps: number;
  explanation?: string;
}

function search<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[], opts: Required<CheckOptions>): SearchResult {
  const hash = model.hash ?? ((s: S) => JSON.stringify(s));
  const readOnly = model.readOnly;
  const head = makeList(ops);
  const linearized = new Bitset(ops.length);
  // Memo: set-hash + state-hash → states seen with that key (equal() guards weak hashes).
  // A key in the cache is either on the current path or was explored completely and failed.
  const cache = new Map<string, S[]>();
  const remember = (st: S): boolean => {
    const key = `${linearized.key()}|${hash(st)}`;
    const seen = cache.get(key);
    if (seen === undefined) cache.set(key, [st]);
    else if (seen.some((x) => model.equal(x, st))) return false;
    else seen.push(st);
    return true;
  };
  const calls: Frame<S>[] = [];
  const isOptional = ops.map((op) => model.optional?.(op.input, op.output) ?? false);
  let requiredLeft = isOptional.filter((o) => !o).length;
  let state = model.init();
  let entry = head.next;
  // True when the current configuration was just reached: time for the read-only pass.
  let fresh = readOnly !== undefined;
  let steps = 0;
  const started = opts.now();
  // The deepest point reached, for the explanation of a violation.
  let best = { depth: -1, linearized: [] as number[], state, candidates: [] as number[] };

  const push = (e: Entry, next: S, forced: boolean): void => {
    calls.push({ entry: e, state, forced });
    if (!isOptional[e.id]) requiredLeft--;
    state = next;
    lift(e);
    entry = head.next;
    fresh = readOnly !== undefined;
  };
  // The current configuration failed: undo the last choice and try its next sibling. A
  // forced frame has no siblings worth trying, so its parent configuration failed too.
  const backtrack = (): boolean => {
    if (calls.length > best.depth) {
      const candidates: number[] = [];
      for (let e: Entry | null = head.next; e !== null && e.isCall; e = e.next) candidates.push(e.id);
      best = { depth: calls.length, linearized: calls.map((f) => f.entry.id), state, candidates };
    }
    for (;;) {
      const top = calls.pop();
      if (top === undefined) return false;
      linearized.clear(top.entry.id);
      if (!isOptional[top.entry.id]) requiredLeft++;
      state = top.state;
      unlift(top.entry);
      if (!top.forced) {
        entry = top.entry.next;
        return true;
      }
    }
  };

  while (head.next !== null && requiredLeft > 0) {
    if (++steps > opts.maxSteps) return { verdict: Verdict.unknown, steps, explanation: `step budget of ${opts.maxSteps} exhausted` };
    if ((steps & 1023) === 0 && opts.now() - started > opts.timeoutMs) {
      return { verdict: Verdict.unknown, steps, explanation: `time budget of ${opts.timeoutMs} ms exhausted` };
    }
    if (fresh && readOnly !== undefined) {
      // Read-only pass: a read-only operation that fits the current state can be
      // linearized right here without loss of generality (any linearization that places it
      // later stays valid with it moved here: it changes no state, and its call is behind
      // us while its return is not). So take it and never try the alternatives.
      fresh = false;
      let taken = false;
      for (let e: Entry | null = head.next; e !== null && e.isCall; e = e.next) {
        const op = ops[e.id]!;
        if (!readOnly(op.input, op.output) || !model.step(state, op.input, op.output).ok) continue;
        linearized.set(e.id);
        if (remember(state)) {
          push(e, state, true);
        } else {
          // Same configuration explored before and failed, so this one fails too.
          linearized.clear(e.id);
          if (!backtrack()) return { verdict: Verdict.illegal, steps, explanation: explain(model, ops, best) };
        }
        taken = true;
        break;
      }
      if (taken) continue;
    }
    if (entry === null) throw new Error("Cannot check history: event list ended before a return event");
    if (entry.isCall) {
      const op = ops[entry.id]!;
      const next = model.step(state, op.input, op.output);
      if (next.ok) {
        linearized.set(entry.id);
        if (remember(next.state)) {
          push(entry, next.state, false);
          continue;
        }
        linearized.clear(entry.id);
      }
      entry = entry.next;
      continue;
    }
    // A return event: the operation returning here could not be linearized in time.
    if (!backtrack()) return { verdict: Verdict.illegal, steps, explanation: explain(model, ops, best) };
  }
  return { verdict: Verdict.ok, steps };
}

function explain<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
  best: { depth: number; linearized: number[]; state: S; candidates: number[] },
): string {
  const st = model.describeState ? model.describeState(best.state) : JSON.stringify(best.state);
  const tail = best.linearized.slice(-5).map((id) => `    ${describeOp(model, ops, id)}`);
  const stuck = best.candidates.slice(0, 8).map((id) => `    ${describeOp(model, ops, id)}`);
  return [
    `longest linearizable prefix: ${best.depth} of ${ops.length} operations, ending in state ${st}`,
    `  last linearized:`,
    ...tail,
    `  none of these can come next:`,
    ...stuck,
  ].join("\n");
}

/** Checks one history (already one partition) against the model. */
export function checkPartition<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
  options: CheckOptions & { label?: string } = {},
): PartitionResult {
  const opts: Required<CheckOptions> = {
    maxSteps: options.maxSteps ?? 5_000_000,
    timeoutMs: options.timeoutMs ?? 10_000,
    now: options.now ?? (() => performance.now()),
  };
  const t0 = opts.now();
  let result = search(model, model.prune !== undefined ? model.prune(ops) : ops, opts);
  let steps = result.steps;
  if (model.prune !== undefined && result.verdict !== Verdict.ok) {
    result = search(model, ops, opts);
    steps += result.steps;
  }
  const out: PartitionResult = {
    label: options.label ?? "",
    verdict: result.verdict,
    operations: ops.length,
    steps,
    elapsedMs: opts.now() - t0,
  };
  if (result.explanation !== undefined) out.explanation = result.explanation;
  return out;
}

/** Checks a whole history: partitions it with the model, then checks each part. */
export function checkOperations<S, I, O>(
  model: Model<S, I, O>,
  history: readonly Operation<I, O>[],
  options: CheckOptions = {},
): CheckResult {
  const parts = model.partition ? model.partition(history) : [{ label: "", operations: [...history] }];
  const partitions = parts.map((p) => checkPartition(model, p.operations, { ...options, label: p.label }));
  const verdict = partitions.some((p) => p.verdict === Verdict.illegal)
    ? Verdict.illegal
    : partitions.some((p) => p.verdict === Verdict.unknown)
      ? Verdict.unknown
      : Verdict.ok;
  return { verdict, partitions };
}
