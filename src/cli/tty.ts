// Terminal niceties, each loaded only when a terminal is there to see it: chalk colours,
// the ora spinner, and the password prompt without echo. Piped output never changes.

import type { Paint } from "./output.ts";

/** Colour only on a terminal, and never with --no-color (or NO_COLOR). */
export function colourEnabled(opts: { noColor: boolean; stream?: { isTTY?: boolean } }): boolean {
  return !opts.noColor && (opts.stream ?? process.stdout).isTTY === true;
}

/** chalk-backed colours (chalk is imported here, on first use only). */
export async function loadPaint(): Promise<Paint> {
  const { default: chalk } = await import("chalk");
  return {
    dir: (t) => chalk.bold.blue(t),
    key: (t) => t,
    branch: (t) => chalk.dim(t),
  };
}

export interface Spinner {
  stop(): void;
}

/**
 * Shows an ora spinner on stderr if the wait lasts longer than `delayMs`, and only when
 * both stdout and stderr are terminals: never in a pipe, and callers never use it while
 * a watch is printing.
 */
export function startSpinner(opts: { text: string; enabled: boolean; delayMs?: number }): Spinner {
  // A terminal that reports no width (a pty nobody sized) sends ora into a redraw loop.
  const sized = (process.stderr.columns ?? 0) > 0;
  if (!opts.enabled || !sized || process.stdout.isTTY !== true || process.stderr.isTTY !== true) return { stop() {} };
  let stopped = false;
  let spinner: { stop(): unknown } | undefined;
  const timer = setTimeout(() => {
    void import("ora").then(({ default: ora }) => {
      if (!stopped) spinner = ora({ text: opts.text, stream: process.stderr, discardStdin: false }).start();
    });
  }, opts.delayMs ?? 300);
  timer.unref();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      spinner?.stop();
    },
  };
}

// stdin is read at most once by this process: bytes after a password line stay here for
// a value read from stdin afterwards (`printf 'pw\nvalue' | kvctl -u me set k`).
let stdinBuffer: Buffer | undefined;
let stdinEnded = false;

async function fillUntil(done: (buf: Buffer) => boolean): Promise<Buffer> {
  let buf = stdinBuffer ?? Buffer.alloc(0);
  if (stdinEnded || done(buf)) return buf;
  const stdin = process.stdin;
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      buf = Buffer.concat([buf, chunk]);
      if (done(buf)) finish();
    };
    const onEnd = (): void => {
      stdinEnded = true;
      finish();
    };
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    const cleanup = (): void => {
      stdin.off("data", onData);
      stdin.off("end", onEnd);
      stdin.off("error", onError);
      stdin.pause();
    };
    const finish = (): void => {
      cleanup();
      resolve();
    };
    stdin.on("data", onData);
    stdin.on("end", onEnd);
    stdin.on("error", onError);
    stdin.resume();
  });
  stdinBuffer = buf;
  return buf;
}

/** All of stdin (etcdctl's argOrStdin): "" when stdin is empty. */
export async function readAllStdin(): Promise<string> {
  const buf = await fillUntil(() => false);
  stdinBuffer = Buffer.alloc(0);
  return buf.toString("utf8");
}

async function readStdinLine(): Promise<string> {
  const buf = await fillUntil((b) => b.includes(10));
  const nl = buf.indexOf(10);
  const line = nl === -1 ? buf : buf.subarray(0, nl);
  stdinBuffer = nl === -1 ? Buffer.alloc(0) : buf.subarray(nl + 1);
  return line.toString("utf8").replace(/\r$/, "").trim();
}

/**
 * Asks for a password: on a terminal with echo off, otherwise the first line of stdin
 * (as etcdctl does). The prompt goes to stderr so that `$(kvctl …)` captures only data.
 */
export async function promptPassword(prompt = "Password: "): Promise<string> {
  const stdin = process.stdin;
  if (stdin.isTTY !== true) return readStdinLine();
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  try {
    return await new Promise<string>((resolve) => {
      let value = "";
      const onData = (chunk: Buffer): void => {
        for (const ch of chunk.toString("utf8")) {
          if (ch === "\r" || ch === "\n" || ch === "\u0004") {
            stdin.off("data", onData);
            resolve(value);
            return;
          }
          if (ch === "\u0003") {
            stdin.setRawMode(false);
            process.stderr.write("\n");
            process.exit(130);
          }
          if (ch === "\u007f" || ch === "\b") value = value.slice(0, -1);
          else value += ch;
        }
      };
      stdin.on("data", onData);
      stdin.resume();
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    process.stderr.write("\n");
  }
}
