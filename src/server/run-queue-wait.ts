// How long the event-loop thread has waited for a CPU while it was runnable: the second
// field (ns) of Linux's per-thread scheduler statistics, /proc/thread-self/schedstat
// ("<ns on a CPU> <ns waiting to run> <timeslices>"). An on-loop fdatasync that took 15 ms
// of wall time may have waited 1 ms for the disk and 14 ms for a CPU after the syscall
// returned, when the two cores are shared with other busy processes; only the first part
// says the disk is slow (disk-wait.ts).
//
// The file is opened once, by the thread that will ask (the path resolves to the thread
// that opens it), and read with a positioned read each time: ~3-5 us a read here, so the
// Ready loop reads it before an on-loop save and again only after a slow one.
// Where the kernel has no such file (not Linux, schedstats off) every read says undefined
// and the caller falls back to wall time.
import { closeSync, openSync, readSync } from "node:fs";

export interface RunQueueWait {
  /** The thread's run-queue wait so far (ms), or undefined where the kernel does not say. */
  waitedMs(): number | undefined;
  close(): void;
}

/** Opens `path` (a schedstat file) on the calling thread: the thread whose waits are read. */
export function openRunQueueWait(path = "/proc/thread-self/schedstat"): RunQueueWait {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
  } catch {
    fd = undefined;
  }
  const buf = Buffer.alloc(96);
  return {
    waitedMs() {
      if (fd === undefined) return undefined;
      let ns: number | undefined;
      try {
        ns = parseRunQueueWaitNs(buf.toString("latin1", 0, readSync(fd, buf, 0, buf.length, 0)));
      } catch {
        ns = undefined;
      }
      // A file that once failed is not trusted again: the caller falls back to wall time.
      if (ns === undefined) this.close();
      return ns === undefined ? undefined : ns / 1e6;
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

let loop: RunQueueWait | undefined;

/**
 * The run-queue wait of the thread that first called this (the event loop's, ms): one
 * descriptor per thread for the process's life, shared by every member it runs.
 */
export function loopRunQueueWaitMs(): number | undefined {
  loop ??= openRunQueueWait();
  return loop.waitedMs();
}

/** The run-queue wait (ns) of a schedstat line, or undefined if the line is not one. */
export function parseRunQueueWaitNs(line: string): number | undefined {
  const fields = line.trim().split(" ");
  if (fields.length < 3) return undefined;
  const ns = Number(fields[1]);
  return Number.isSafeInteger(ns) && ns >= 0 ? ns : undefined;
}
