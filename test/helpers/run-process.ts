// Runs a command to its end and collects what it printed: the one child-process runner of
// the CLI tests (kvctl, etcdctl). stdin gets `input` (or nothing) and is closed; a command
// killed by `timeoutMs` resolves with its signal.
import { spawn, type ChildProcess } from "node:child_process";

export interface ProcessResult {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunProcessOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  input?: string;
  /** Default 15 s. */
  timeoutMs?: number;
}

export function runProcess(file: string, args: readonly string[], opts: RunProcessOptions): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: opts.cwd, env: opts.env, stdio: ["pipe", "pipe", "pipe"], timeout: opts.timeoutMs ?? 15_000 });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ stdout, stderr, code, signal }));
    // A command that never reads stdin may exit before the write lands.
    child.stdin.on("error", () => {});
    child.stdin.end(opts.input ?? "");
  });
}

/**
 * Resolves once `check()` holds, tried again at each chunk the child prints (the caller's
 * own 'data' listeners, added before this, have collected it by then), not on a timer.
 * Rejects after `timeoutMs`, or when the child ends with `check()` still false; the error
 * carries `describe()` (what it printed).
 */
export function whenOutput(child: ChildProcess, check: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
  return new Promise((resolve, reject) => {
    const streams = [child.stdout, child.stderr].filter((s) => s !== null);
    const finish = (err?: Error): void => {
      clearTimeout(timer);
      for (const s of streams) s.off("data", onData);
      child.off("close", onClose);
      if (err === undefined) resolve();
      else reject(err);
    };
    const onData = (): void => {
      if (check()) finish();
    };
    const onClose = (code: number | null): void => finish(check() ? undefined : new Error(`the process exited (${code}) first; ${describe()}`));
    const timer = setTimeout(() => finish(new Error(`timed out waiting for output; ${describe()}`)), timeoutMs);
    if (check()) return finish();
    if (child.exitCode !== null || child.signalCode !== null) return finish(new Error(`the process exited (${child.exitCode ?? child.signalCode}) first; ${describe()}`));
    for (const s of streams) s.on("data", onData);
    child.on("close", onClose);
  });
}

/**
 * Sends `signal` to a running child and resolves once it has exited; a child still alive
 * after `graceMs` gets SIGKILL. Resolves at once for a child already gone.
 */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM", graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}
