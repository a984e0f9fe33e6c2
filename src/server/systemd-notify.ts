// systemd's readiness protocol (sd_notify) for units with Type=notify, such as Debian's
// etcd.service: "READY=1" once the member has joined its cluster and published itself, as
// etcd sends it. node cannot open a Unix datagram socket, so the launcher (bin/kvctl) opens
// $NOTIFY_SOCKET before it execs node in the same process and passes the descriptor in
// KV_NOTIFY_FD; a write(2) on that connected socket is one datagram from the main PID.
import { closeSync, writeSync } from "node:fs";
import type { Logger } from "./logger.ts";

/** Where readiness goes: the launcher's descriptor, or nothing outside systemd. */
export interface NotifyTarget {
  fd: number | undefined;
  /** $NOTIFY_SOCKET was set: systemd waits for the message. */
  expected: boolean;
}

export function notifyTargetFromEnv(env: NodeJS.ProcessEnv): NotifyTarget {
  const raw = env["KV_NOTIFY_FD"];
  const fd = raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
  return { fd, expected: (env["NOTIFY_SOCKET"] ?? "") !== "" };
}

/** The datagram etcd sends (coreos/go-systemd daemon.SdNotify), with the PID it comes from. */
export function readyMessage(pid: number): string {
  return `READY=1\nMAINPID=${pid}\n`;
}

/** Sends READY=1 once; never throws (a unit without Type=notify ignores it). */
export function notifyReady(target: NotifyTarget, log: Logger, pid = process.pid): void {
  if (target.fd === undefined) {
    if (target.expected) log.warn("NOTIFY_SOCKET is set but kvctl was not started by its launcher with perl available: systemd is not told the member is ready (use Type=simple, or start bin/kvctl)");
    return;
  }
  try {
    writeSync(target.fd, readyMessage(pid));
    log.info("notified systemd that the member is ready");
  } catch (err) {
    log.warn("could not notify systemd", { error: String(err) });
  } finally {
    try {
      closeSync(target.fd);
    } catch {
      // already closed
    }
  }
}
