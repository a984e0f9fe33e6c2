// exec-watch's message for a command that cannot start: Go's exec errors, as etcdctl
// 3.4.23 prints them (compared by hand: no newline after them).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execErrorText } from "./watch.ts";

const err = (code: string): NodeJS.ErrnoException => Object.assign(new Error(`spawn x ${code}`), { code });

test("execErrorText: PATH lookup for a bare name, fork/exec for a path", () => {
  assert.equal(execErrorText("nonexistentcmd", err("ENOENT")), 'exec: "nonexistentcmd": executable file not found in $PATH');
  assert.equal(execErrorText("/nonexist/cmd", err("ENOENT")), "fork/exec /nonexist/cmd: no such file or directory");
  assert.equal(execErrorText("./notexec", err("EACCES")), "fork/exec ./notexec: permission denied");
});
