// N real members on loopback, each behind a fault proxy on its peer port, and the
// process-level faults: kill (any signal), restart on the same data, pause/resume.
//
// Ports, from `portBase` (b): member i serves clients on b+i, listens for peers on b+10+i
// and advertises its proxy at b+20+i. Every child is tracked by PID and killed on
// destroy(); destroy() also removes the data root. Nothing here waits without a deadline.
// The proxies run in a child process of their own (proxy-process.ts), which this class
// keeps told of the running members' pids and of the partition table.

import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync, type WriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Network, type ProxyStats } from "./proxy.ts";
import { ProxyProcess, type LoopDelay } from "./proxy-process.ts";

export const ServerKind = { kvctl: "kvctl", etcd: "etcd" } as const;
export type ServerKind = (typeof ServerKind)[keyof typeof ServerKind];

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Extra node flags for kvctl members, from KVCTL_FAULT_NODE_FLAGS (space-separated), e.g.
 * "--trace-opt --trace-deopt" to see what V8 compiles in a member's life. Any V8 flag on
 * the command line makes V8 refuse serve.cjs's code cache, so start-up costs more with one.
 */
function nodeFlags(): string[] {
  return (process.env["KVCTL_FAULT_NODE_FLAGS"] ?? "").split(" ").filter((f) => f !== "");
}

/**
 * The members' environment: the harness's, without NODE_EXTRA_CA_CERTS. On this workplace
 * it names the system CA bundle, which every Node process then parses at start (~40 ms of
 * CPU, and the port bound ~35 ms later, for each kvctl restart), a cost a user's machine
 * does not have and etcd (Go) never pays; the benchmarks remove it too (bench/README.md).
 */
function memberEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env["NODE_EXTRA_CA_CERTS"];
  return env;
}

export const MemberState = { running: "running", paused: "paused", stopped: "stopped" } as const;
export type MemberState = (typeof MemberState)[keyof typeof MemberState];

export interface Member {
  index: number;
  name: string;
  clientUrl: string;
  peerPort: number;
  proxyPort: number;
  dataDir: string;
  state: MemberState;
  pid: number | undefined;
}

export interface ClusterOptions {
  members: number;
  server: ServerKind;
  portBase: number;
  log: (line: string) => void;
  /** Keep the data root (with member logs) instead of removing it. */
  keep?: { value: boolean };
  /** --election-timeout in ms (default 500); the heartbeat is a tenth of it. */
  electionTimeoutMs?: number;
  /** --snapshot-count passed to every member (default: the server's own). */
  snapshotCount?: number;
  /** kvctl only: --experimental-snapshot-catchup-entries, small so lagging followers get snapshots. */
  catchupEntries?: number;
}

/** What a kvctl member's peer endpoint GET /hash answers. */
export interface StateHash {
  appliedIndex: number;
  storeIndex: number;
  hash: string;
}

export const DEFAULT_ELECTION_TIMEOUT_MS = 500;

/** Thrown when the processes run but do not form an N-member cluster with a leader. */
export class ClusterNotReadyError extends Error {
  readonly code = "CLUSTER_NOT_READY";
}

export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return;
  await new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

async function getJson(url: string, timeoutMs: number): Promise<{ status: number; body: unknown } | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body };
  } catch {
    return undefined;
  }
}

export class Cluster {
  readonly members: Member[];
  readonly network: Network;
  readonly root: string;
  #opts: ClusterOptions;
  #children = new Map<number, ChildProcess>();
  #logs = new Map<number, WriteStream>();
  /** Members' processes this run stopped on purpose (any other exit is a crash). */
  #signalled = new Set<number>();
  /** Every exit no fault and no stop asked for: a member that crashed. */
  readonly crashes: string[] = [];
  /** Snapshots members installed from their leader (their log says so): streamed catch-ups. */
  snapshotsInstalled = 0;
  #proxies: ProxyProcess | undefined;

  constructor(opts: ClusterOptions) {
    this.#opts = opts;
    this.root = mkdtempSync(join(tmpdir(), "kvctl-fault-"));
    this.network = new Network(opts.members);
    this.network.onChange(() => this.#proxies?.setBlocked(this.members.length, this.network.pairs()));
    this.members = Array.from({ length: opts.members }, (_, i) => ({
      index: i,
      name: `m${i}`,
      clientUrl: `http://127.0.0.1:${opts.portBase + i}`,
      peerPort: opts.portBase + 10 + i,
      proxyPort: opts.portBase + 20 + i,
      dataDir: join(this.root, `m${i}`),
      state: MemberState.stopped,
      pid: undefined,
    }));
  }

  /** pid → member index of the members whose process is alive. */
  owners(): Map<number, number> {
    const out = new Map<number, number>();
    for (const m of this.members) if (m.pid !== undefined) out.set(m.pid, m.index);
    return out;
  }

  #flags(m: Member): string[] {
    const cluster = this.members.map((x) => `${x.name}=http://127.0.0.1:${x.proxyPort}`).join(",");
    return [
      "--name", m.name,
      "--data-dir", m.dataDir,
      "--listen-client-urls", m.clientUrl,
      "--advertise-client-urls", m.clientUrl,
      "--listen-peer-urls", `http://127.0.0.1:${m.peerPort}`,
      "--initial-advertise-peer-urls", `http://127.0.0.1:${m.proxyPort}`,
      "--initial-cluster", cluster,
      "--initial-cluster-state", "new",
      "--heartbeat-interval", String(Math.max(1, Math.round(this.electionTimeoutMs / 10))),
      "--election-timeout", String(this.electionTimeoutMs),
      ...(this.#opts.snapshotCount === undefined ? [] : ["--snapshot-count", String(this.#opts.snapshotCount)]),
      // etcd 3.4 has no such flag (3.5 does): kvctl members only.
      ...(this.#opts.catchupEntries === undefined || this.#opts.server === ServerKind.etcd ? [] : ["--experimental-snapshot-catchup-entries", String(this.#opts.catchupEntries)]),
    ];
  }

  get electionTimeoutMs(): number {
    return this.#opts.electionTimeoutMs ?? DEFAULT_ELECTION_TIMEOUT_MS;
  }

  /** Starts the proxies and every member; resolves once all answer /health (or throws). */
  async start(timeoutMs = 30_000): Promise<void> {
    // Without its proxies no member reaches another: their process's death is the run's failure.
    const proxies = await ProxyProcess.start((why) => this.crashes.push(why));
    this.#proxies = proxies;
    proxies.setBlocked(this.members.length, this.network.pairs());
    for (const m of this.members) await proxies.open(this.members.length, m.index, m.proxyPort, m.peerPort);
    for (const m of this.members) this.startMember(m.index);
    const deadline = Date.now() + timeoutMs;
    for (const m of this.members) {
      while (!(await this.healthy(m.index))) {
        if (m.state === MemberState.stopped) throw new ClusterNotReadyError(`${m.name} exited during start-up (see ${this.root}/${m.name}.log)`);
        if (Date.now() > deadline) throw new ClusterNotReadyError(`${m.name} not healthy after ${timeoutMs} ms`);
        await sleep(100);
      }
    }
  }

  startMember(i: number): void {
    const m = this.members[i]!;
    if (m.state !== MemberState.stopped) return;
    const flags = this.#flags(m);
    const [file, args] =
      this.#opts.server === ServerKind.etcd ? ["etcd", ["--enable-v2=true", ...flags]] : [process.execPath, [...nodeFlags(), join(repoRoot, "bin", "kvctl"), "serve", ...flags]];
    let log = this.#logs.get(i);
    if (log === undefined) {
      log = createWriteStream(join(this.root, `${m.name}.log`), { flags: "a" });
      this.#logs.set(i, log);
    }
    log.write(`--- start ${new Date().toISOString()}\n`);
    const child = spawn(file, args, { cwd: repoRoot, env: memberEnv(), stdio: ["ignore", "pipe", "pipe"] });
    const pid = child.pid;
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    // The last lines a member wrote to stderr: a crash's report carries its stack.
    const tail: string[] = [];
    const countInstalls = (chunk: Buffer): void => {
      for (let at = chunk.indexOf("installed snapshot from the leader"); at >= 0; at = chunk.indexOf("installed snapshot from the leader", at + 1)) this.snapshotsInstalled++;
    };
    child.stdout?.on("data", countInstalls);
    child.stderr?.on("data", countInstalls);
    child.stderr?.on("data", (chunk: Buffer) => {
      tail.push(...chunk.toString().split("\n").filter((l) => l.trim() !== "" && !l.startsWith("{")));
      tail.splice(0, Math.max(0, tail.length - 8));
    });
    if (pid === undefined) throw new Error(`Cannot start ${m.name}: spawn failed`);
    m.pid = pid;
    m.state = MemberState.running;
    this.#children.set(pid, child);
    this.#proxies?.setOwners(this.owners());
    child.once("exit", (code, signal) => {
      this.#children.delete(pid);
      if (!this.#signalled.delete(pid)) this.crashes.push(`${m.name} (pid ${pid}) exited by itself: ${code ?? signal}\n${tail.map((l) => `      ${l}`).join("\n")}`);
      if (m.pid === pid) {
        m.pid = undefined;
        m.state = MemberState.stopped;
        this.#proxies?.setOwners(this.owners());
      }
      this.#opts.log(`${m.name} (pid ${pid}) exited: ${code ?? signal}`);
    });
  }

  /** Sends `signal` and waits (≤ 10 s, then SIGKILL) for the member to exit. */
  async stopMember(i: number, signal: NodeJS.Signals): Promise<void> {
    const m = this.members[i]!;
    const child = m.pid === undefined ? undefined : this.#children.get(m.pid);
    if (child === undefined || m.pid === undefined) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    this.#signalled.add(m.pid);
    if (m.state === MemberState.paused) process.kill(m.pid, "SIGCONT");
    process.kill(m.pid, signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }

  pause(i: number): void {
    const m = this.members[i]!;
    if (m.state !== MemberState.running || m.pid === undefined) return;
    process.kill(m.pid, "SIGSTOP");
    m.state = MemberState.paused;
  }

  resume(i: number): void {
    const m = this.members[i]!;
    if (m.state !== MemberState.paused || m.pid === undefined) return;
    process.kill(m.pid, "SIGCONT");
    m.state = MemberState.running;
  }

  async healthy(i: number): Promise<boolean> {
    const r = await getJson(`${this.members[i]!.clientUrl}/health`, 1000);
    return r?.status === 200;
  }

  /**
   * GET /hash on member i's own peer port (not through its proxy, so a partition does not
   * hide it). undefined when the member is not running, does not answer, or is etcd.
   */
  async stateHash(i: number): Promise<StateHash | undefined> {
    const m = this.members[i]!;
    if (m.state !== MemberState.running) return undefined;
    const r = await getJson(`http://127.0.0.1:${m.peerPort}/hash`, 1000);
    const b = r?.body as Partial<StateHash> | undefined;
    if (r?.status !== 200 || typeof b?.appliedIndex !== "number" || typeof b.storeIndex !== "number" || typeof b.hash !== "string") return undefined;
    return { appliedIndex: b.appliedIndex, storeIndex: b.storeIndex, hash: b.hash };
  }

  /**
   * Whether member i answers GET /v2/stats/leader with 200 (1 s deadline): a member that
   * leads now (etcd and kvctl answer 403 "not current leader" otherwise). Not
   * /v2/stats/self's state: etcd sets StateFollower there only when an append arrives, so
   * a deposed leader kept saying StateLeader, and a leader-kill could hit a follower and
   * "elect" the sitting leader at once.
   */
  async saysLeader(i: number, timeoutMs = 1000): Promise<boolean> {
    const m = this.members[i]!;
    if (m.state !== MemberState.running) return false;
    const r = await getJson(`${m.clientUrl}/v2/stats/leader`, timeoutMs);
    return r?.status === 200;
  }

  /** The index of a member that says it is the leader (GET /v2/stats/leader), if any. */
  async leader(): Promise<number | undefined> {
    const answers = await Promise.all(this.members.map((m) => this.saysLeader(m.index)));
    const i = answers.indexOf(true);
    return i < 0 ? undefined : i;
  }

  /** Waits until a leader exists and member `via` lists all N members; throws ClusterNotReadyError. */
  async waitReady(timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let seen = "";
    for (;;) {
      const leader = await this.leader();
      if (leader !== undefined) {
        const r = await getJson(`${this.members[leader]!.clientUrl}/v2/members`, 1000);
        const list = (r?.body as { members?: unknown[] } | undefined)?.members;
        if (Array.isArray(list) && list.length === this.members.length) return leader;
        seen = `leader m${leader} lists ${Array.isArray(list) ? list.length : "no"} members`;
      } else {
        seen = "no member answers /v2/stats/leader";
      }
      if (Date.now() > deadline) throw new ClusterNotReadyError(`not a ${this.members.length}-member cluster after ${timeoutMs} ms: ${seen}`);
      await sleep(200);
    }
  }

  /** Kills every process by PID, closes the proxies, removes the data root. Idempotent. */
  async destroy(): Promise<void> {
    for (const [pid, child] of this.#children) {
      this.#signalled.add(pid);
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
      child.stdout?.destroy();
      child.stderr?.destroy();
    }
    this.#children.clear();
    await this.#proxies?.close();
    this.#proxies = undefined;
    for (const log of this.#logs.values()) log.end();
    this.#logs.clear();
    if (this.#opts.keep?.value !== true) rmSync(this.root, { recursive: true, force: true });
  }

  /** Synchronous last resort for process exit handlers. */
  killAllSync(): void {
    this.#proxies?.killSync();
    for (const pid of this.#children.keys()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    if (this.#opts.keep?.value !== true) rmSync(this.root, { recursive: true, force: true });
  }

  /** Each member's proxy counters ([] when the proxy process is gone). */
  async proxyStats(): Promise<ProxyStats[]> {
    try {
      return (await this.#proxies?.stats()) ?? [];
    } catch {
      return [];
    }
  }

  /** The proxy process's event-loop delay since the last reset (undefined when it is gone). */
  async proxyLoopDelay(reset: boolean): Promise<LoopDelay | undefined> {
    try {
      return await this.#proxies?.loopDelay(reset);
    } catch {
      return undefined;
    }
  }
}
