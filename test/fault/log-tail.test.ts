import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { memberLogTails } from "./log-tail.ts";

const root = mkdtempSync(join(tmpdir(), "kvctl-log-tail-"));
after(() => rmSync(root, { recursive: true, force: true }));

test("a member's story lines, the last ones only; a member without a log is skipped", async () => {
  const lines = [
    '{"level":"info","msg":"restarted member"}',
    '{"level":"debug","msg":"applied entries"}',
    '{"level":"info","msg":"1 became candidate at term 3"}',
    '{"level":"warn","msg":"peer became inactive"}',
    '{"level":"info","msg":"1 became leader at term 3"}',
  ];
  writeFileSync(join(root, "m0.log"), `${lines.join("\n")}\n`);
  const out = await memberLogTails(root, ["m0", "m1"], 2);
  assert.deepEqual(out, ["m0.log, last 2 of 4 story lines:", `  m0 ${lines[3]}`, `  m0 ${lines[4]}`]);
});
