import assert from "node:assert/strict";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { notifyReady, notifyTargetFromEnv, readyMessage } from "./systemd-notify.ts";
import type { Logger } from "./logger.ts";

function recorder(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (msg: string): void => void lines.push(`${level} ${msg}`);
  const log: Logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
  return { log, lines };
}

test("the launcher's descriptor and NOTIFY_SOCKET are read from the environment", () => {
  assert.deepEqual(notifyTargetFromEnv({ KV_NOTIFY_FD: "3", NOTIFY_SOCKET: "/run/systemd/notify" }), { fd: 3, expected: true });
  assert.deepEqual(notifyTargetFromEnv({ NOTIFY_SOCKET: "@abstract" }), { fd: undefined, expected: true });
  assert.deepEqual(notifyTargetFromEnv({ KV_NOTIFY_FD: "x" }), { fd: undefined, expected: false });
  assert.deepEqual(notifyTargetFromEnv({}), { fd: undefined, expected: false });
});

test("READY=1 is written once to the descriptor, which is then closed", () => {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-notify-unit-"));
  try {
    const file = join(dir, "out");
    const fd = openSync(file, "w");
    const r = recorder();
    notifyReady({ fd, expected: true }, r.log, 4242);
    assert.equal(readFileSync(file, "utf8"), readyMessage(4242));
    assert.equal(readyMessage(4242), "READY=1\nMAINPID=4242\n");
    assert.throws(() => writeSync(fd, "x"), { code: "EBADF" });
    assert.deepEqual(r.lines, ["info notified systemd that the member is ready"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("systemd waiting without a descriptor is a warning; a failed write is one too, never a throw", () => {
  const r = recorder();
  notifyReady({ fd: undefined, expected: true }, r.log);
  notifyReady({ fd: undefined, expected: false }, r.log);
  const dir = mkdtempSync(join(tmpdir(), "kvctl-notify-unit-"));
  try {
    const fd = openSync(join(dir, "ro"), "w");
    closeSync(fd);
    notifyReady({ fd, expected: true }, r.log);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(r.lines.length, 2);
  assert.match(r.lines[0]!, /^warn NOTIFY_SOCKET is set but/);
  assert.match(r.lines[1]!, /^warn could not notify systemd/);
});
