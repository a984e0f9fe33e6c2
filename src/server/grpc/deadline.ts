// gRPC's grpc-timeout request header (PROTOCOL-HTTP2.md: TimeoutValue TimeoutUnit, at most
// 8 digits, units H M S m u n) as grpc-go 1.33 (the version Debian's etcd 3.4 is built
// with) reads it, and the call's deadline it sets.
import type { Deadline } from "../deadline.ts";

const UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/**
 * The timeout in milliseconds, or undefined when grpc-go refuses the value (decodeTimeout:
 * 2 to 9 characters, a known unit, the rest Go's strconv.ParseInt, which takes a sign).
 * grpc-go then resets the stream with PROTOCOL_ERROR; it sends no status. Zero and
 * negative values are deadlines already passed.
 */
export function parseGrpcTimeout(value: string): number | undefined {
  if (value.length < 2 || value.length > 9) return undefined;
  const perUnit = UNIT_MS[value[value.length - 1]!];
  const digits = value.slice(0, -1);
  if (perUnit === undefined || !/^[+-]?[0-9]+$/.test(digits)) return undefined;
  // Eight digits of hours overflow Go's time.Duration: grpc-go clamps them to its maximum
  // (292 years); any such value is "never" here.
  return Number(digits) * perUnit;
}

/** The longest delay setTimeout takes (longer ones fire after 1 ms): longer deadlines re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A call's deadline: one timer, listeners run once when it passes, cancel() when the call ends. */
export class CallDeadline implements Deadline {
  readonly #at: number;
  #timer: NodeJS.Timeout | undefined;
  #fired = false;
  #listeners: Array<() => void> = [];

  constructor(timeoutMs: number) {
    this.#at = performance.now() + timeoutMs;
    this.#arm(timeoutMs);
  }

  /** Read from the clock too: a 0 or 1n timeout has passed before its timer could run. */
  get expired(): boolean {
    return this.#fired || performance.now() >= this.#at;
  }

  onExpire(fn: () => void): () => void {
    if (this.#fired) {
      fn();
      return noop;
    }
    this.#listeners.push(fn);
    return () => {
      const i = this.#listeners.indexOf(fn);
      if (i >= 0) this.#listeners.splice(i, 1);
    };
  }

  /** The call ended: no listener runs any more. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#listeners = [];
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, Math.min(ms, MAX_TIMER_MS)));
    // A pending deadline must not keep a stopping member alive.
    this.#timer.unref();
  }

  #tick(): void {
    const left = this.#at - performance.now();
    if (left > 1) {
      this.#arm(left);
      return;
    }
    this.#fired = true;
    this.#timer = undefined;
    const fns = this.#listeners;
    this.#listeners = [];
    for (const fn of fns) fn();
  }
}

function noop(): void {}
