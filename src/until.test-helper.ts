// Waiting in a test for something to happen, not for a fixed time: the one polling loop of
// the unit and integration tests (test/helpers/http.ts uses it too). The condition is
// polled every `intervalMs` (5 ms by default: in-process state is cheap to read; a test
// that asks a server over HTTP polls less often), and the wait fails with `what`, and
// `detail()` (a server's log, say) when given, at the deadline.

export interface UntilOptions {
  /** Between two polls; 5 ms by default. */
  intervalMs?: number;
  /** Appended to the timeout's message: what the test saw, a process's log. */
  detail?: () => string;
  /**
   * A poll that throws counts as not yet (a server still starting refuses connections);
   * the timeout's message then names the last error. Without it the error ends the wait.
   */
  ignoreErrors?: boolean;
}

export async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 3000, opts: UntilOptions = {}): Promise<void> {
  await eventually(async () => ((await cond()) ? true : undefined), what, timeoutMs, opts);
}

/** The first value `poll` answers other than undefined. */
export async function eventually<T>(poll: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 3000, opts: UntilOptions = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await poll();
      if (v !== undefined) return v;
    } catch (err) {
      if (opts.ignoreErrors !== true) throw err;
      last = err;
    }
    if (Date.now() > deadline) {
      const because = last === undefined ? "" : ` (last error: ${last instanceof Error ? last.message : String(last)})`;
      const detail = opts.detail === undefined ? "" : `\n${opts.detail()}`;
      throw new Error(`timed out waiting for ${what}${because}${detail}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 5));
  }
}
