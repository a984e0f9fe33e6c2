// A member's restart as its clients see it, kvctl beside etcd: three members on loopback
// take a steady stream of v2 writes; one member is killed (SIGKILL), left down a moment and
// started again on its data dir, and clients keep sending it requests from its spawn on
// (linearizable v2 GET, v2 PUT, v3 put and range through the JSON gateway, as the fault
// harness's clients do). Each round reports when its client port took requests, when it
// first answered, what the first second of its life answered or refused, and the CPU the
// restarted process spent. Under the fault harness members restart every few seconds:
// this is that moment alone, without the rest of the schedule.
//
//   node --import tsx bench/member-restart.ts [--rounds 5] [--order kvctl,etcd,etcd,kvctl]
//        [--probe-ms 3000] [--down-ms 1500] [--base-port 29500] [--data-root DIR]
//
// Build first (npm run build): kvctl runs as installed, through bin/kvctl. Each entry of
// --order is one block: a fresh cluster of that server, --rounds restarts, then the
// cluster stopped (ABBA by default, so neither server always runs first). Prints one
// Markdown table (medians, then every round's figure); progress goes to stderr. Exit
// status 2: bad options.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { waitHealthy } from "./lib/http.ts";
import { ProbeOutcome, renderRestartTable, summarizeRound, type ProbeSample, type RestartRound, type ServerRestarts } from "./lib/member-restart.ts";
import { portInUse } from "./lib/server.ts";
import { processCpuMs } from "./lib/stats.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MEMBERS = 3;
/** The member that is restarted (the others keep the quorum and take the background writes). */
const RESTARTED = 2;
const PROBE_CLIENTS = 4;
const BACKGROUND_WRITERS = 4;

/** Stops the script with a message and exit status 2 (bad options), as bench/run.ts does. */
function usageError(msg: string): never {
  process.stderr.write(`bench/member-restart.ts: ${msg}\nRun with --help for the options.\n`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      rounds: { type: "string", default: "5" },
      order: { type: "string", default: "kvctl,etcd,etcd,kvctl" },
      "probe-ms": { type: "string", default: "3000" },
      "down-ms": { type: "string", default: "1500" },
      "base-port": { type: "string", default: "29500" },
      "data-root": { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
} catch (err) {
  usageError(err instanceof Error ? err.message : String(err));
}
const opts = parsed.values;
if (opts.help) {
  process.stdout.write(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").filter((l) => l.startsWith("//")).map((l) => l.slice(3)).join("\n") + "\n");
  process.exit(0);
}
const rounds = Number(opts.rounds);
const probeMs = Number(opts["probe-ms"]);
const downMs = Number(opts["down-ms"]);
const basePort = Number(opts["base-port"]);
const order = opts.order.split(",").filter((s) => s !== "");
for (const [name, v] of Object.entries({ rounds, "probe-ms": probeMs, "down-ms": downMs, "base-port": basePort })) {
  if (!Number.isInteger(v) || v < 1) usageError(`--${name} must be a positive integer`);
}
if (probeMs < 1000) usageError("--probe-ms must be at least 1000 (the first second is reported)");
if (basePort + 12 > 65535) usageError("--base-port leaves no room for the peer ports (base + 10 .. base + 12)");
if (order.length === 0) usageError("--order names no server");
for (const s of order) if (s !== "kvctl" && s !== "etcd") usageError(`--order: unknown server ${s} (kvctl or etcd)`);
// kvctl runs as installed (bin/kvctl runs dist/bundle/); etcd from PATH.
if (order.includes("kvctl") && !existsSync(join(ROOT, "dist", "bundle", "cli", "serve.cjs"))) usageError("no build of kvctl: run npm run build first");
if (order.includes("etcd") && spawnSync("etcd", ["--version"], { stdio: "ignore" }).error !== undefined) usageError("etcd is not on PATH (apt-get install etcd-server), or leave it out of --order");

const log = (msg: string): void => void process.stderr.write(`[restart ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Member {
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
  child: ChildProcess | undefined;
}

/** Every process this script started and has not seen exit: stopped by PID on the way out. */
const live = new Set<ChildProcess>();
process.once("SIGINT", () => {
  for (const c of live) c.kill("SIGKILL");
  process.exit(130);
});

function startMember(server: string, m: Member, members: readonly Member[], dataRoot: string): ChildProcess {
  const cluster = members.map((x) => `${x.name}=http://127.0.0.1:${x.peerPort}`).join(",");
  const client = `http://127.0.0.1:${m.clientPort}`;
  const peer = `http://127.0.0.1:${m.peerPort}`;
  // The fault harness's member flags (test/fault/cluster.ts): 500 ms elections, snapshots every 1,000 entries.
  const flags = [
    "--name", m.name, "--data-dir", join(dataRoot, m.name),
    "--listen-client-urls", client, "--advertise-client-urls", client,
    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
    "--initial-cluster", cluster, "--initial-cluster-state", "new",
    "--heartbeat-interval", "50", "--election-timeout", "500", "--snapshot-count", "1000",
  ];
  // Node reads NODE_EXTRA_CA_CERTS at start-up (tens of ms parsing a CA bundle the member never uses).
  const env = { ...process.env };
  delete env["NODE_EXTRA_CA_CERTS"];
  const [file, args] = server === "etcd" ? ["etcd", ["--enable-v2=true", ...flags]] : [process.execPath, [join(ROOT, "bin", "kvctl"), "serve", ...flags]];
  const child = spawn(file, args, { env, stdio: "ignore" });
  live.add(child);
  child.once("exit", () => live.delete(child));
  // A spawn that fails (no such file) has no pid and may never emit exit: the health wait
  // and stopMember look at the pid.
  child.once("error", (err) => log(`cannot start ${m.name}: ${err.message}`));
  m.child = child;
  return child;
}

async function stopMember(m: Member, signal: NodeJS.Signals): Promise<void> {
  const child = m.child;
  // No pid: the spawn failed, and no exit will come.
  if (child === undefined || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill(signal);
  await exited;
}

interface Answer {
  readonly outcome: ProbeOutcome;
  readonly latencyMs: number;
}

function send(agent: Agent, port: number, method: string, path: string, body: string | undefined, contentType: string): Promise<Answer> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const headers: Record<string, string | number> = body === undefined ? {} : { "Content-Type": contentType, "Content-Length": Buffer.byteLength(body) };
    const req = request({ host: "127.0.0.1", port, method, path, agent, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve({ outcome: (res.statusCode ?? 500) < 300 ? ProbeOutcome.answered : ProbeOutcome.failed, latencyMs: performance.now() - t0 }));
      res.on("error", () => resolve({ outcome: ProbeOutcome.failed, latencyMs: performance.now() - t0 }));
    });
    req.setTimeout(2000, () => req.destroy(new Error("timeout")));
    req.on("error", (err: NodeJS.ErrnoException) => resolve({ outcome: err.code === "ECONNREFUSED" ? ProbeOutcome.refused : ProbeOutcome.failed, latencyMs: performance.now() - t0 }));
    req.end(body);
  });
}

const b64 = (s: string): string => Buffer.from(s).toString("base64");
const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";
/** The fault harness's four requests, in turn: [method, path, body, content type]. */
const PROBES: readonly ((n: number) => [string, string, string | undefined, string])[] = [
  (n) => ["GET", `/v2/keys/bench-restart/k${n % 16}?quorum=true`, undefined, FORM],
  (n) => ["PUT", `/v2/keys/bench-restart/k${n % 16}`, `value=probe-${n}`, FORM],
  (n) => ["POST", "/v3/kv/put", JSON.stringify({ key: b64(`bench-restart/q${n % 16}`), value: b64(`probe-${n}`) }), JSON_TYPE],
  (n) => ["POST", "/v3/kv/range", JSON.stringify({ key: b64(`bench-restart/q${n % 16}`) }), JSON_TYPE],
];

async function restartOnce(server: string, members: Member[], dataRoot: string): Promise<RestartRound> {
  const m = members[RESTARTED] as Member;
  await stopMember(m, "SIGKILL");
  await sleep(downMs);
  const agent = new Agent({ keepAlive: true });
  const t0 = performance.now();
  const child = startMember(server, m, members, dataRoot);
  const samples: ProbeSample[] = [];
  const until = t0 + probeMs;
  const probe = async (first: number): Promise<void> => {
    // Each client takes the four requests in turn; n numbers its keys and values apart from the others'.
    for (let i = 0; performance.now() < until; i++) {
      const n = first + i * PROBE_CLIENTS;
      const [method, path, body, type] = (PROBES[(first + i) % PROBES.length] as (typeof PROBES)[number])(n);
      const startMs = performance.now() - t0;
      const a = await send(agent, m.clientPort, method, path, body, type);
      samples.push({ startMs, ...a });
      // A refused or failed request is tried again 10 ms later, as a client that backs off.
      if (a.outcome !== ProbeOutcome.answered) await sleep(10);
    }
  };
  let cpuAt1s: number | null = null;
  const cpuReading = (async () => {
    await sleep(t0 + 1000 - performance.now());
    cpuAt1s = processCpuMs(child.pid);
  })();
  await Promise.all([...Array(PROBE_CLIENTS).keys()].map(probe));
  await cpuReading;
  const cpuAtEnd = processCpuMs(child.pid);
  agent.destroy();
  return summarizeRound(samples, cpuAt1s, cpuAtEnd);
}

async function block(server: string): Promise<RestartRound[]> {
  const members: Member[] = [...Array(MEMBERS).keys()].map((i) => ({ name: `r${i}`, clientPort: basePort + i, peerPort: basePort + 10 + i, child: undefined }));
  for (const m of members) if ((await portInUse(m.clientPort)) || (await portInUse(m.peerPort))) throw new Error(`port ${m.clientPort} or ${m.peerPort} is in use: pick another --base-port`);
  const dataRoot = opts["data-root"] === undefined ? mkdtempSync(join(tmpdir(), "kv-bench-restart-")) : join(opts["data-root"], `${server}-${Date.now()}`);
  mkdirSync(dataRoot, { recursive: true });
  const writers = new Agent({ keepAlive: true });
  let writing = true;
  let written = 0;
  try {
    for (const m of members) startMember(server, m, members, dataRoot);
    for (const m of members) await waitHealthy(`http://127.0.0.1:${m.clientPort}`, { deadlineMs: 30_000, alive: () => m.child?.pid !== undefined && m.child.exitCode === null });
    // The background writes go to the two members that stay up: the restarted one has entries to catch up on.
    const writer = async (w: number): Promise<void> => {
      for (let n = 0; writing; n++) {
        const port = (members[n % 2] as Member).clientPort;
        const a = await send(writers, port, "PUT", `/v2/keys/bench-restart/w${n % 16}`, `value=w${w}-${n}`, FORM);
        if (a.outcome === ProbeOutcome.answered) written++;
        else await sleep(20);
      }
    };
    const background = [...Array(BACKGROUND_WRITERS).keys()].map(writer);
    await sleep(2000);
    const out: RestartRound[] = [];
    for (let r = 0; r < rounds; r++) {
      const round = await restartOnce(server, members, dataRoot);
      log(`${server} round ${r + 1}: port ${round.acceptMs?.toFixed(0) ?? "-"} ms, first answer ${round.firstAnswerMs?.toFixed(0) ?? "-"} ms, first second ${round.answeredFirstSecond} answered / ${round.refusedFirstSecond} refused, CPU ${round.cpuMsAt1s ?? "-"} / ${round.cpuMsAtEnd ?? "-"} ms`);
      out.push(round);
      // The member settles (and the background writes run on) before the next kill.
      await sleep(1500);
    }
    writing = false;
    await Promise.all(background);
    log(`${server}: ${written} background writes`);
    return out;
  } finally {
    writing = false;
    writers.destroy();
    for (const m of members) await stopMember(m, "SIGTERM");
    rmSync(dataRoot, { recursive: true, force: true });
  }
}

const results = new Map<string, RestartRound[]>();
for (const server of order) {
  log(`${server}: a fresh cluster of ${MEMBERS}, ${rounds} restarts`);
  results.set(server, [...(results.get(server) ?? []), ...(await block(server))]);
}
const table: ServerRestarts[] = [...results.entries()].map(([server, rs]) => ({ server, rounds: rs }));
process.stdout.write(`${renderRestartTable(table)}\n`);
