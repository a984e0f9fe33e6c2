// Runs test files each in its own `node --test` process, `--lanes` of them at a time (scripts/test.sh's
// shared lane): a lane takes the next file when its last one ends. Every process is told its
// lane in TEST_PORT_LANE (0, 1, ...): the tests' shared port ranges are shifted per lane
// (src/ports.test-helper.ts laneRange), so that two files running at once never probe the
// same range (a port probed free and not yet bound by one file's server could be handed to
// the other's). A file's TAP is printed whole when it ends, never interleaved with another's;
// the last lines are node:test's totals added up over the files, in node:test's own format
// ("# tests N", "# pass N", ...), which scripts/test.sh reads. Exit status 1 if any file failed.
//
//   node scripts/run-lanes.mjs --lanes 2 --timeout 300000 FILE...
import { spawn } from "node:child_process";

function usage(msg) {
  process.stderr.write(`run-lanes: ${msg}\nusage: node scripts/run-lanes.mjs --lanes N --timeout MS FILE...\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
let lanes = 2;
let timeout = 300_000;
const files = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === "--lanes" || a === "--timeout") {
    const n = Number(args[++i]);
    if (!Number.isInteger(n) || n < 1) usage(`${a} takes a positive integer, got ${JSON.stringify(args[i])}`);
    if (a === "--lanes") lanes = n;
    else timeout = n;
  } else if (a.startsWith("--")) usage(`unknown option ${a}`);
  else files.push(a);
}

const KEYS = ["tests", "suites", "pass", "fail", "cancelled", "skipped", "todo"];
const totals = Object.fromEntries(KEYS.map((k) => [k, 0]));
let failed = false;

/** node:test's totals at the end of one file's TAP ("# pass 3"); the last of each counts. */
function addTotals(tap) {
  const seen = {};
  for (const m of tap.matchAll(/^# (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) seen[m[1]] = Number(m[2]);
  for (const k of KEYS) totals[k] += seen[k] ?? 0;
  return seen.tests !== undefined;
}

/**
 * The environment of a file's process: ours with its lane, without node:test's marker of a
 * run in progress (NODE_TEST_CONTEXT, set when this script itself runs under node --test),
 * which makes a nested `node --test` skip its files and report nothing.
 */
function childEnv(lane) {
  const env = { ...process.env, TEST_PORT_LANE: String(lane) };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

function runFile(file, lane) {
  return new Promise((resolve) => {
    const started = Date.now();
    const out = [];
    const child = spawn(process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", `--test-timeout=${timeout}`, file], {
      env: childEnv(lane),
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (c) => out.push(c));
    child.stderr.on("data", (c) => out.push(c));
    child.on("error", (err) => out.push(Buffer.from(`# could not start node for ${file}: ${err.message}\n`)));
    child.on("close", (code, signal) => {
      const tap = Buffer.concat(out).toString();
      // A process that printed no totals (it died before node:test reported) fails the run
      // even if its exit status was 0.
      if (!addTotals(tap) || code !== 0) failed = true;
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`# file ${file} (lane ${lane}, ${secs} s, exit ${signal ?? code})\n${tap}`);
      resolve();
    });
  });
}

const queue = [...files];
await Promise.all(
  Array.from({ length: Math.min(lanes, Math.max(files.length, 1)) }, async (_, lane) => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) await runFile(file, lane);
  }),
);
for (const k of KEYS) process.stdout.write(`# ${k} ${totals[k]}\n`);
process.exit(failed ? 1 : 0);
