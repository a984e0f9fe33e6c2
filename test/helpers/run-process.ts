// Runs a command to its end and collects what it printed: the one child-process runner of
// the CLI tests (kvctl, etcdctl). stdin gets `input` (or nothing) and is closed; a command
// killed by `timeoutMs` resolves with its signal.
import { spawn } from "node:child_process";

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
