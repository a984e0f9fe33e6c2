import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { transformSync } from "esbuild";

const moduleUrl = new URL("./jit-tiering.ts", import.meta.url).href;

// Calls a small function until V8 has marked it for TurboFan (or compiled it), in a child
// process (flags are per process), and prints how many calls that took.
function callsUntilOptimized(lower: boolean, extraArgs: string[] = []): { calls: number; lowered: boolean } {
  const script = `
    const { tuneJitForServer } = await import(${JSON.stringify(moduleUrl)});
    const lowered = ${lower} ? tuneJitForServer().some((f) => f.startsWith("--interrupt-budget=")) : false;
    function work(a) { let s = 0; for (let i = 0; i < 20; i++) s += a[i % a.length] * i; return s; }
    const a = [1, 2, 3, 4];
    // kMarkedForOptimization | kMarkedForConcurrentOptimization | kOptimizingConcurrently | kTurboFanned
    const tiered = (1 << 8) | (1 << 9) | (1 << 10) | (1 << 6);
    let calls = 0;
    while (calls < 1e6 && (%GetOptimizationStatus(work) & tiered) === 0) { work(a); calls++; }
    console.log(JSON.stringify({ calls, lowered }));
  `;
  const r = spawnSync(process.execPath, ["--allow-natives-syntax", ...extraArgs, "--import", "tsx", "--input-type=module", "-e", script], {
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split("\n").pop() ?? "") as { calls: number; lowered: boolean };
}

test("a server's functions are optimized after fewer calls than with V8's default budget", () => {
  const before = callsUntilOptimized(false);
  const after = callsUntilOptimized(true);
  assert.equal(after.lowered, true);
  assert.ok(before.calls < 1e6, "V8 optimizes the function at all");
  assert.ok(after.calls * 2 < before.calls, `optimized after ${after.calls} calls, ${before.calls} with the default`);
});

test("a budget given on node's command line is left as given", () => {
  const given = callsUntilOptimized(true, ["--interrupt-budget=200000"]);
  assert.equal(given.lowered, false);
  const lowered = callsUntilOptimized(true);
  assert.ok(lowered.calls * 2 < given.calls, `${lowered.calls} lowered, ${given.calls} with the command line's`);
});

// The module as plain JavaScript, for a child without tsx: tsx's loader runs on a thread of
// its own whose compiles V8 traces to the same stdout, and its lines broke into the
// caller's (CI once counted 2 of 6 inlined callees, and 1 run in 3 under load did).
const moduleAsJs = `data:text/javascript;base64,${Buffer.from(
  transformSync(readFileSync(fileURLToPath(moduleUrl), "utf8"), { loader: "ts", format: "esm" }).code,
).toString("base64")}`;

// Optimizes a caller of six callees of ~93 bytes of bytecode each, in a child process with
// V8's inlining trace, and counts the callees TurboFan inlined into it.
function calleesInlined(tune: boolean, extraArgs: string[] = []): number {
  const script = `
    const { tuneJitForServer } = await import(${JSON.stringify(moduleAsJs)});
    if (${tune}) tuneJitForServer();
    const mk = (k) => new Function("a", "let s = 0; for (let i = 0; i < a.length; i++) { s += (a[i] * " + k + ") ^ (i + " + k + "); s = (s * 31 + " + k + ") | 0; if (s > 1e6) s -= 7; else s += a[i] % 3; } return s;");
    const [f1, f2, f3, f4, f5, f6] = [1, 2, 3, 4, 5, 6].map(mk);
    function caller(a) { return f1(a) + f2(a) + f3(a) + f4(a) + f5(a) + f6(a); }
    const a = [1, 2, 3, 4, 5];
    %PrepareFunctionForOptimization(caller);
    for (let i = 0; i < 10; i++) caller(a);
    %OptimizeFunctionOnNextCall(caller);
    caller(a);
  `;
  const r = spawnSync(process.execPath, ["--allow-natives-syntax", "--trace-turbo-inlining", ...extraArgs, "--input-type=module", "-e", script], {
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split("\n").filter((l) => l.startsWith("Inlining ") && l.includes("<SharedFunctionInfo caller>")).length;
}

test("a server's optimized functions inline less than V8's default allows", () => {
  assert.equal(calleesInlined(false), 6, "V8's default inlines all six callees");
  const tuned = calleesInlined(true);
  assert.ok(tuned >= 1 && tuned <= 3, `${tuned} of six callees inlined with the server's budget`);
});

test("an inlining budget given on node's command line is left as given", () => {
  assert.equal(calleesInlined(true, ["--max-inlined-bytecode-size-cumulative=920"]), 6);
});
