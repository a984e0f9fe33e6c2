// scripts/run-lanes.mjs, which runs npm test's files with servers two at a time: each file in
// its own process with its lane in TEST_PORT_LANE, each file's TAP printed whole, the totals
// added up in node:test's format (scripts/test.sh reads the last of each), and a failed file
// fails the run.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, test } from "node:test";

const script = resolve(import.meta.dirname, "../scripts/run-lanes.mjs");
const dir = mkdtempSync(join(tmpdir(), "kvctl-lanes-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, body: string): string {
  const p = join(dir, name);
  writeFileSync(p, `import { test } from "node:test";\nimport assert from "node:assert/strict";\n${body}\n`);
  return p;
}

/** The last value of each of node:test's totals in `out`, as scripts/test.sh's counts() reads them. */
function totals(out: string): Record<string, number> {
  const t: Record<string, number> = {};
  for (const m of out.matchAll(/^# (tests|pass|fail|skipped) (\d+)$/gm)) t[m[1]!] = Number(m[2]);
  return t;
}

test("run-lanes: two files at once, each told its lane; totals added up; a failing file fails the run", () => {
  // Each file waits long enough that the second starts while the first still runs.
  const slow = (tag: string) => `test("${tag}", async () => { console.log("lane of ${tag}: " + process.env.TEST_PORT_LANE); await new Promise((r) => setTimeout(r, 400)); });`;
  const a = file("a.test.mjs", `${slow("a")}\ntest("a skipped", { skip: true }, () => {});`);
  const b = file("b.test.mjs", `${slow("b")}\ntest("b fails", () => { assert.equal(1, 2); });`);
  const r = spawnSync(process.execPath, [script, "--lanes", "2", "--timeout", "30000", a, b], { encoding: "utf8" });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.deepEqual(totals(r.stdout), { tests: 4, pass: 2, fail: 1, skipped: 1 }, r.stdout);
  const lanes = [...r.stdout.matchAll(/lane of (\w): (\d)/g)].map((m) => `${m[1]}${m[2]}`).sort();
  assert.equal(lanes.length, 2, r.stdout);
  assert.notEqual(lanes[0]!.slice(1), lanes[1]!.slice(1), `both files ran in one lane: ${lanes.join(", ")}`);
  // A file's output is printed whole: nothing of b between a's header line and a's totals.
  for (const name of ["a", "b"]) {
    const other = name === "a" ? "b" : "a";
    const start = r.stdout.indexOf(`# file ${join(dir, `${name}.test.mjs`)}`);
    const end = r.stdout.indexOf("# duration_ms", start);
    assert.ok(start >= 0 && end > start, r.stdout);
    assert.ok(!r.stdout.slice(start, end).includes(`lane of ${other}`), `${name}'s output interleaved:\n${r.stdout}`);
  }
});

test("run-lanes: all passing is status 0; one lane runs the files one after the other in lane 0", () => {
  const a = file("c.test.mjs", `test("c", () => { console.log("lane of c: " + process.env.TEST_PORT_LANE); });`);
  const b = file("d.test.mjs", `test("d", () => { console.log("lane of d: " + process.env.TEST_PORT_LANE); });`);
  const r = spawnSync(process.execPath, [script, "--lanes", "1", a, b], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.deepEqual(totals(r.stdout), { tests: 2, pass: 2, fail: 0, skipped: 0 });
  assert.deepEqual([...r.stdout.matchAll(/lane of (\w): (\d)/g)].map((m) => `${m[1]}${m[2]}`), ["c0", "d0"]);
});

test("run-lanes: a bad option is status 2 with a message", () => {
  for (const args of [["--lanes", "0"], ["--lanes", "x"], ["--bogus"]]) {
    const r = spawnSync(process.execPath, [script, ...args], { encoding: "utf8" });
    assert.equal(r.status, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, /^run-lanes: /);
  }
});
