import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loopRunQueueWaitMs, openRunQueueWait, parseRunQueueWaitNs } from "./run-queue-wait.ts";

test("parseRunQueueWaitNs reads the second field of a schedstat line", () => {
  assert.equal(parseRunQueueWaitNs("1407739259 195323580 1498\n"), 195323580);
  assert.equal(parseRunQueueWaitNs("0 0 1"), 0);
  assert.equal(parseRunQueueWaitNs(""), undefined);
  assert.equal(parseRunQueueWaitNs("12 x 3"), undefined);
  assert.equal(parseRunQueueWaitNs("12 34"), undefined, "not a schedstat line");
});

test("a reader gives ms, reads the file again each time, and says undefined where there is no file", () => {
  const dir = mkdtempSync(join(tmpdir(), "kv-runq-"));
  try {
    const path = join(dir, "schedstat");
    writeFileSync(path, "5 2500000 7\n");
    const r = openRunQueueWait(path);
    assert.equal(r.waitedMs(), 2.5);
    writeFileSync(path, "9 4000000 8\n");
    assert.equal(r.waitedMs(), 4);
    writeFileSync(path, "garbage\n");
    assert.equal(r.waitedMs(), undefined);
    writeFileSync(path, "9 4000000 8\n");
    assert.equal(r.waitedMs(), undefined, "a file that once did not parse is not trusted again (and is closed)");
    r.close();
    assert.equal(openRunQueueWait(join(dir, "missing")).waitedMs(), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("on Linux the event loop's own wait is readable and does not go backwards", { skip: process.platform !== "linux" }, () => {
  const a = loopRunQueueWaitMs();
  assert.equal(typeof a, "number");
  const b = loopRunQueueWaitMs();
  assert.ok(b !== undefined && a !== undefined && b >= a);
});
