// Differential fuzzer of the v2 client CLI: seeded command lines (keys, directories,
// watch from an index, users, roles, auth; valid and bad flags, values and argument counts)
// run as `ETCDCTL_API=2 etcdctl` against a fresh etcd 3.4 and as `kvctl` against a fresh
// kvctl server (the servers of v2-differential.ts), one command at a time on both, so both
// sides hold the same state before each. stdout, stderr and the exit code are compared
// after replacing each side's ports by symbols, and TTLs and expirations (which tick)
// by placeholders. Both servers start at the same index (checked), so indexes compare as
// they are.
//
//   node --import tsx test/fuzz/v2-cli.ts SEED COUNT   (scripts/fuzz-v2.sh cli SEED COUNT)
//
// Differences kept on purpose are in `knownCliDifference` (and test/fuzz/README.md).
import { mulberry32, type Rng } from "../helpers/prng.ts";
import { runProcess, type ProcessResult } from "../helpers/run-process.ts";
import { kvctlBin, repoRoot } from "../helpers/server.ts";
import { sameStartIndex } from "./v2-timing.ts";

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
const chance = (rng: Rng, p: number): boolean => rng() < p;

/** One command line; `{EP}` stands for the side's endpoint URL, `{DEAD}` for a closed port's. */
export interface CliCommand {
  args: string[];
  input?: string;
}

const KEYS = ["/a", "/a/b", "/dir", "/dir/x", "b", "/a/", "/_h", "/c", "/dir/y/z", "a/b", "/", "/x y", "/é", "//a", "/a/../c", "/dir/_h/k", "/a?b", "/%41"];
const VALUES = ["v", "v2", "", "hello world", "-x", "é", "--", "1"];
const TTLS = ["600", "7200", "0", "-1", "abc", "", "1.5"];
const INDEXES = ["1", "2", "0", "-1", "abc", "99999"];
const USERS = ["root", "u1", "guest", "u2", ""];
const ROLES = ["root", "r1", "guest", "r2", ""];
const PASSWORDS = ["pw", "pw2", ""];

/** Global flags, before the command (urfave/cli reads them only there). */
function globals(rng: Rng): string[] {
  const g: string[] = [];
  const r = rng();
  if (r < 0.75) g.push("--endpoints", "{EP}");
  else if (r < 0.85) g.push("--endpoints", chance(rng, 0.5) ? "{EP},{DEAD}" : "{DEAD},{EP}");
  else if (r < 0.9) g.push("--endpoint", "{EP}");
  else if (r < 0.93) g.push("--endpoints", "{DEAD}");
  else g.push(`--endpoints={EP}`);
  if (chance(rng, 0.25)) g.push("-o", pick(rng, ["simple", "json", "extended", "json", "extended", "bogus"]));
  // Without the sync, etcd's client tries several endpoints in a random order (it
  // shuffles them): --no-sync goes with one endpoint only.
  if (chance(rng, 0.1)) {
    if (g[1]?.includes(",") === true) g[1] = chance(rng, 0.5) ? "{EP}" : "{DEAD}";
    g.push("--no-sync");
  }
  if (chance(rng, 0.25)) g.push(pick(rng, ["--username", "-u"]), `${pick(rng, USERS)}:${pick(rng, PASSWORDS)}`);
  if (chance(rng, 0.06)) g.push("--timeout", pick(rng, ["1s", "3s", "500ms", "abc", "0"]));
  if (chance(rng, 0.03)) g.push("--total-timeout", pick(rng, ["5s", "x"]));
  // --debug prints each attempt, in the order etcd's client shuffled the endpoints into:
  // with one endpoint only.
  if (chance(rng, 0.04)) {
    if (g[1]?.includes(",") === true) g[1] = "{EP}";
    g.push("--debug");
  }
  return g;
}

function ttl(rng: Rng): string[] {
  return chance(rng, 0.3) ? ["--ttl", pick(rng, TTLS)] : [];
}

/** The command and its own flags and arguments. */
function command(rng: Rng, index: () => number): CliCommand {
  const key = (): string => pick(rng, KEYS);
  const val = (): string => pick(rng, VALUES);
  const idx = (): string => (chance(rng, 0.7) ? String(Math.max(1, index() - Math.floor(rng() * 4))) : pick(rng, INDEXES));
  const c = pick(rng, ["get", "set", "set", "mk", "mkdir", "rm", "rmdir", "update", "updatedir", "setdir", "ls", "ls", "watch", "user", "role", "auth"]);
  switch (c) {
    case "get":
      return { args: ["get", ...(chance(rng, 0.2) ? ["--sort"] : []), ...(chance(rng, 0.2) ? [pick(rng, ["--quorum", "-q"])] : []), key()] };
    case "set": {
      const f = [...ttl(rng)];
      if (chance(rng, 0.2)) f.push("--swap-with-value", val());
      if (chance(rng, 0.2)) f.push("--swap-with-index", idx());
      return { args: ["set", ...f, key(), val()] };
    }
    case "mk":
      return { args: ["mk", ...ttl(rng), ...(chance(rng, 0.2) ? ["--in-order"] : []), key(), val()] };
    case "mkdir":
    case "setdir":
    case "updatedir":
      return { args: [c, ...ttl(rng), key()] };
    case "update":
      return { args: ["update", ...ttl(rng), key(), val()] };
    case "rm": {
      const f: string[] = [];
      if (chance(rng, 0.25)) f.push("--dir");
      if (chance(rng, 0.25)) f.push(pick(rng, ["--recursive", "-r"]));
      if (chance(rng, 0.15)) f.push("--with-value", val());
      if (chance(rng, 0.15)) f.push("--with-index", idx());
      return { args: ["rm", ...f, key()] };
    }
    case "rmdir":
      return { args: ["rmdir", key()] };
    case "ls": {
      const f: string[] = [];
      if (chance(rng, 0.3)) f.push("--sort");
      if (chance(rng, 0.4)) f.push(pick(rng, ["--recursive", "-r"]));
      if (chance(rng, 0.3)) f.push("-p");
      if (chance(rng, 0.15)) f.push("--quorum");
      return { args: ["ls", ...f, ...(chance(rng, 0.8) ? [key()] : [])] };
    }
    case "watch":
      // One-shot from an index in history: answered at once, never a live wait.
      return { args: ["watch", "--after-index", String(Math.max(1, index() - 1 - Math.floor(rng() * 5))), ...(chance(rng, 0.4) ? [pick(rng, ["--recursive", "-r"])] : []), key()] };
    case "user": {
      const u = pick(rng, USERS);
      switch (Math.floor(rng() * 7)) {
        case 0:
          return { args: ["user", "add", `${u}:${pick(rng, PASSWORDS)}`] };
        case 1:
          return { args: ["user", "get", u] };
        case 2:
          return { args: ["user", "list"] };
        case 3:
          return { args: ["user", "remove", u] };
        case 4:
        case 5:
          return { args: ["user", chance(rng, 0.6) ? "grant" : "revoke", ...(chance(rng, 0.9) ? ["--roles", pick(rng, ROLES)] : []), ...(chance(rng, 0.2) ? ["--roles", pick(rng, ROLES)] : []), u] };
        default:
          // Not `user passwd`: etcdctl reads the password from a terminal only (without one it
          // fails with stty's error), kvctl from stdin.
          return { args: ["user", "add", `${u}:${pick(rng, PASSWORDS)}`] };
      }
    }
    case "role": {
      const r = pick(rng, ROLES);
      switch (Math.floor(rng() * 6)) {
        case 0:
          return { args: ["role", "add", r] };
        case 1:
          return { args: ["role", "get", r] };
        case 2:
          return { args: ["role", "list"] };
        case 3:
          return { args: ["role", "remove", r] };
        default: {
          const f: string[] = [];
          if (chance(rng, 0.9)) f.push("--path", pick(rng, ["/a/*", "/a", "/*", "/dir/*", "*", ""]));
          const m = rng();
          if (m < 0.3) f.push("--read");
          else if (m < 0.6) f.push("--write");
          else if (m < 0.85) f.push(pick(rng, ["--readwrite", "--rw"]));
          else if (m < 0.95) f.push("--read", "--write");
          return { args: ["role", chance(rng, 0.6) ? "grant" : "revoke", ...f, r] };
        }
      }
    }
    default:
      // Not `auth status`: kvctl's addition (kvctl(1)), etcdctl has none.
      return { args: ["auth", pick(rng, ["enable", "disable", "enable", "disable", "bogus"])] };
  }
}

/** Bad usage: a missing or an extra argument, an unknown flag, a flag after the arguments. */
function mangle(rng: Rng, args: string[]): string[] {
  const a = [...args];
  switch (Math.floor(rng() * 4)) {
    case 0:
      if (a.length > 1) a.pop();
      return a;
    case 1:
      return [...a, pick(rng, ["extra", "x", "--"])];
    case 2:
      return [...a.slice(0, 1), pick(rng, ["--bogus", "--ttl", "--after-index=x", "--ttl=abc"]), ...a.slice(1)];
    default:
      // The stray number is long as a TTL: a trailing `--ttl 5` gave a key that expired, or
      // not, before a later command read it, depending on how fast the two sides ran.
      return [...a, pick(rng, ["--ttl", "--recursive", "--sort", "-p"]), ...(chance(rng, 0.5) ? ["600"] : [])];
  }
}

/** A value left out of the command line, for the command to read from stdin (etcdctl's argOrStdin). */
function valueFromStdin(rng: Rng, c: CliCommand): CliCommand {
  if (!["set", "mk", "update"].includes(c.args[0] ?? "") || c.input !== undefined || !chance(rng, 0.15)) return c;
  return { args: c.args.slice(0, -1), input: pick(rng, ["piped\n", "two\nlines\n", "", "no newline"]) };
}

/** A seeded sequence of command lines; `index` is the etcd side's last index seen. */
export function* generateCommands(seed: number, count: number, index: () => number): Generator<CliCommand> {
  const rng = mulberry32(seed);
  for (let n = 0; n < count; n++) {
    const c = valueFromStdin(rng, command(rng, index));
    const args = chance(rng, 0.12) ? mangle(rng, c.args) : c.args;
    yield { args: [...globals(rng), ...args], ...(c.input === undefined ? {} : { input: c.input }) };
  }
}

// ---------------------------------------------------------------- running

export interface CliSide {
  kind: "etcd" | "kvctl";
  endpoint: string;
  ports: number[];
}

export interface CliResult {
  stdout: string;
  stderr: string;
  code: number | null;
}

const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("KV_") && !k.startsWith("ETCDCTL_") && k !== "NO_COLOR"));

/** Runs one command line on a side: etcdctl (API 2) or bin/kvctl. */
export async function runCli(side: CliSide, deadPort: number, cmd: CliCommand): Promise<ProcessResult> {
  const args = cmd.args.map((a) => a.split("{EP}").join(side.endpoint).split("{DEAD}").join(`http://127.0.0.1:${deadPort}`));
  const opts = { env: side.kind === "etcd" ? { ...cleanEnv(), ETCDCTL_API: "2" } : cleanEnv(), cwd: repoRoot, timeoutMs: 10_000, ...(cmd.input === undefined ? {} : { input: cmd.input }) };
  return side.kind === "etcd" ? runProcess("etcdctl", args, opts) : runProcess(process.execPath, [kvctlBin, ...args], opts);
}

/** Ports by symbol; TTLs and expirations, which tick between the two runs, by placeholders. */
export function normalizeCli(r: ProcessResult, side: CliSide, deadPort: number): CliResult {
  const text = (s: string): string => {
    let out = s.split(String(deadPort)).join("<dead>");
    side.ports.forEach((p, i) => (out = out.split(String(p)).join(`<port${i}>`)));
    return out
      .replace(/"ttl":\d+/g, '"ttl":"<ttl>"')
      .replace(/^TTL: \d+$/gm, "TTL: <ttl>")
      .replace(/"expiration":"[^"]*"/g, '"expiration":"<time>"')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>");
  };
  return { stdout: text(r.stdout), stderr: text(r.stderr), code: r.signal !== null ? -1 : r.code };
}

export interface CliDivergence {
  n: number;
  command: string;
  etcd: CliResult;
  kvctl: CliResult;
}

/** Sorts nodes by key at every level of a JSON answer (a listing without --sort). */
function sortNodes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortNodes).sort((a, b) => String((a as { key?: unknown }).key).localeCompare(String((b as { key?: unknown }).key)));
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, sortNodes(x)]));
}

/**
 * etcd lists a directory's children in Go map order (random) unless asked to sort: a
 * listing without --sort compares as the sorted lines, or with its nodes sorted (json).
 */
export function unordered(cmd: CliCommand, r: CliResult): CliResult {
  if (!cmd.args.includes("ls") || cmd.args.includes("--sort")) return r;
  const json = r.stdout.startsWith("{");
  if (json) {
    try {
      return { ...r, stdout: JSON.stringify(sortNodes(JSON.parse(r.stdout))) };
    } catch {
      return r;
    }
  }
  return { ...r, stdout: r.stdout.split("\n").sort().join("\n") };
}

/** Differences kvctl keeps on purpose: kvctl(1), DIFFERENCES FROM ETCD, and test/fuzz/README.md. */
export function knownCliDifference(cmd: CliCommand, e: CliResult, k: CliResult): boolean {
  // A usage error: etcdctl prints `Incorrect Usage` and its own help on stdout and Go's
  // flag error on stderr; kvctl prints the `Incorrect Usage: ...` line on stderr (its help
  // is its own, `kvctl <command> --help`). Same error, same exit code.
  // (A global flag's error is `Incorrect Usage.` and the app's help; Go's flag package
  // also prints the bare error on stderr.)
  const usage = /^Incorrect Usage: (.*)\n$/.exec(k.stderr);
  if (usage !== null && e.code === 1 && k.code === 1 && k.stdout === "" && (e.stdout.includes(`Incorrect Usage: ${usage[1]!}\n`) || e.stdout.includes(`Incorrect Usage. ${usage[1]!}\n`))) return true;
  // A command group without its subcommand: each prints its own help, exit 0.
  if (e.code === 0 && k.code === 0 && e.stdout.startsWith("NAME:\n") && k.stdout.startsWith("kvctl ") && e.stderr === k.stderr) return true;
  // kvctl reads a new password from stdin without printing the prompt on stdout.
  if (cmd.args.includes("passwd") && e.stdout.startsWith("New password: ") && e.stdout.slice("New password: ".length) === k.stdout && e.stderr === k.stderr && e.code === k.code) return true;
  return false;
}

export interface CliOptions {
  seed: number;
  count: number;
  etcd: CliSide;
  kvctl: CliSide;
  /** A port nothing listens on (a dead endpoint in --endpoints). */
  deadPort: number;
  maxDivergences?: number;
  onProgress?: (sent: number, divergence: CliDivergence | undefined) => void;
}

export async function runCliDifferential(o: CliOptions): Promise<{ sent: number; divergences: CliDivergence[] }> {
  let lastIndex = await sameStartIndex(Number(new URL(o.etcd.endpoint).port), Number(new URL(o.kvctl.endpoint).port));
  const divergences: CliDivergence[] = [];
  let sent = 0;
  for (const cmd of generateCommands(o.seed, o.count, () => lastIndex)) {
    const [re, rk] = [await runCli(o.etcd, o.deadPort, cmd), await runCli(o.kvctl, o.deadPort, cmd)];
    sent++;
    for (const m of re.stdout.matchAll(/(?:Modified-Index: |"modifiedIndex":)(\d+)/g)) lastIndex = Math.max(lastIndex, Number(m[1]));
    const e = unordered(cmd, normalizeCli(re, o.etcd, o.deadPort));
    const k = unordered(cmd, normalizeCli(rk, o.kvctl, o.deadPort));
    const same = e.stdout === k.stdout && e.stderr === k.stderr && e.code === k.code;
    if (!same && !knownCliDifference(cmd, e, k)) {
      const dv = { n: sent, command: cmd.args.join(" ") + (cmd.input === undefined ? "" : ` <<< ${JSON.stringify(cmd.input)}`), etcd: e, kvctl: k };
      divergences.push(dv);
      o.onProgress?.(sent, dv);
      if (divergences.length >= (o.maxDivergences ?? 20)) break;
    } else {
      o.onProgress?.(sent, undefined);
    }
  }
  return { sent, divergences };
}

export function showCliDivergence(dv: CliDivergence): string {
  const side = (r: CliResult): string => `code ${r.code} stdout ${JSON.stringify(r.stdout)} stderr ${JSON.stringify(r.stderr)}`;
  return `#${dv.n} ${dv.command}\n  etcd:  ${side(dv.etcd)}\n  kvctl: ${side(dv.kvctl)}`;
}

async function main(): Promise<void> {
  const seed = Number(process.argv[2] ?? Date.now() % 1e9);
  const count = Number(process.argv[3] ?? 300);
  const { freePort } = await import("../helpers/server.ts");
  const { startSide } = await import("./v2-differential.ts");
  const [a, b, c, d, dead] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const etcd = await startSide("etcd", a, b, kvctlBin);
  const kv = await startSide("kvctl", c, d, kvctlBin).catch(async (err: unknown) => {
    await etcd.stop();
    throw err;
  });
  try {
    const r = await runCliDifferential({
      seed,
      count,
      etcd: { kind: "etcd", endpoint: `http://127.0.0.1:${a}`, ports: etcd.ports },
      kvctl: { kind: "kvctl", endpoint: `http://127.0.0.1:${c}`, ports: kv.ports },
      deadPort: dead,
      maxDivergences: Number(process.env["FUZZ_MAX_DIVERGENCES"] ?? 20),
      onProgress: (sent, dv) => {
        if (dv !== undefined) console.log(showCliDivergence(dv));
        if (sent % 100 === 0) console.log(`seed ${seed}: ${sent} commands run`);
      },
    });
    console.log(`seed ${seed}: ${r.sent} commands, ${r.divergences.length} divergences`);
    process.exitCode = r.divergences.length === 0 ? 0 : 1;
  } finally {
    await Promise.all([etcd.stop(), kv.stop()]);
  }
}

if (process.argv[1] !== undefined && import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 2;
  });
}
