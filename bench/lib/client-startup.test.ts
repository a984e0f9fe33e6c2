// Tests of lib/client-startup.ts (the timing loop runs real `node -e` processes).
import assert from "node:assert/strict";
import { test } from "node:test";
import { shellQuote, timeCommand } from "./client-startup.ts";

test("shellQuote leaves plain words and quotes the rest for hyperfine -N", () => {
  assert.equal(shellQuote("/usr/bin/node"), "/usr/bin/node");
  assert.equal(shellQuote("a b"), "'a b'");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
});

test("timeCommand times a command with the spawn loop when hyperfine is off", () => {
  const r = timeCommand({ argv: [process.execPath, "-e", "process.stdout.write('ok')"], expectStdout: "ok" }, { runs: 3, warmup: 1, hyperfine: false });
  assert.equal(r.error, undefined);
  assert.equal(r.tool, "spawnSync loop");
  assert.equal(r.runs, 3);
  assert.ok(r.median_ms !== null && r.median_ms > 0);
});

test("timeCommand reports an error and times nothing when the command fails", () => {
  const r = timeCommand({ argv: [process.execPath, "-e", "process.exit(3)"] }, { runs: 3, warmup: 0, hyperfine: false });
  assert.match(r.error ?? "", /exit 3/);
  assert.equal(r.median_ms, null);
});

test("timeCommand reports an error when the output is not the expected value", () => {
  const r = timeCommand({ argv: [process.execPath, "-e", "console.log('no')"], expectStdout: "yes" }, { runs: 1, warmup: 0 });
  assert.match(r.error ?? "", /unexpected output/);
});
