// Several `kvctl serve` members on loopback for integration tests. Each member gets free
// client and peer ports; stop() kills every process by PID and removes the data dirs.
import { spawn, type ChildProcess } from "node:child_process";
import { stopProcess } from "./run-process.ts";
import { eventually } from "../../src/until.test-helper.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, kvctlBin, repoRoot } from "./server.ts";

export interface ClusterMember {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  process: ChildProcess | undefined;
  log: string[];
}

export interface TestCluster {
  members: ClusterMember[];
  /** Starts (or restarts) a member with its original flags plus `extra`. */
  start(m: ClusterMember, opts?: { state?: "new" | "existing"; initialCluster?: string; flags?: string[] }): Promise<void>;
  kill(m: ClusterMember, signal?: NodeJS.Signals): Promise<void>;
  /** A new member's ports and dir, not started and not yet in the cluster. */
  spare(name: string): Promise<ClusterMember>;
  leader(): Promise<ClusterMember | undefined>;
  initialCluster(): string;
  stop(): Promise<void>;
}

/** Polls /health until it answers 200 (true), the deadline passes or `gone()` holds (false). */
async function healthy(url: string, deadlineMs: number, gone: () => boolean = () => false): Promise<boolean> {
  const probe = async (): Promise<boolean | undefined> => {
    if (gone()) return false;
    try {
      const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(500) });
      await r.arrayBuffer();
      return r.status === 200 ? true : undefined;
    } catch {
      return undefined; // not up yet
    }
  };
  return eventually(probe, `${url} healthy`, deadlineMs, { intervalMs: 50 }).catch(() => false);
}

async function newMember(root: string, name: string): Promise<ClusterMember> {
  const cp = await freePort();
  const pp = await freePort();
  return { name, clientUrl: `http://127.0.0.1:${cp}`, peerUrl: `http://127.0.0.1:${pp}`, dataDir: join(root, name), process: undefined, log: [] };
}

export async function startCluster(n: number, flags: string[] = ["--heartbeat-interval", "50", "--election-timeout", "500"]): Promise<TestCluster> {
  // freePort() only finds a port free at that moment: an outgoing connection of a test
  // running beside us may take it as its ephemeral port before the member listens. Such a
  // start is retried with new ports (nothing else is).
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(n, flags);
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt === 3) throw err;
    }
  }
}

class PortTakenError extends Error {}

async function startClusterOnce(n: number, flags: string[]): Promise<TestCluster> {
  const root = mkdtempSync(join(tmpdir(), "kvctl-cluster-"));
  const members: ClusterMember[] = [];
  for (let i = 0; i < n; i++) members.push(await newMember(root, `m${i}`));
  const spares: ClusterMember[] = [];
  const initialCluster = (): string => members.map((m) => `${m.name}=${m.peerUrl}`).join(",");
  const kill = async (m: ClusterMember, signal: NodeJS.Signals = "SIGKILL"): Promise<void> => {
    if (m.process !== undefined) await stopProcess(m.process, signal, 8000);
  };
  const cluster: TestCluster = {
    members,
    initialCluster,
    async start(m, opts = {}) {
      const args = [
        kvctlBin, "serve", "--name", m.name, "--data-dir", m.dataDir,
        "--listen-client-urls", m.clientUrl, "--advertise-client-urls", m.clientUrl,
        "--listen-peer-urls", m.peerUrl, "--initial-advertise-peer-urls", m.peerUrl,
        "--initial-cluster", opts.initialCluster ?? initialCluster(), "--initial-cluster-state", opts.state ?? "new", ...flags, ...(opts.flags ?? []),
      ];
      const p = spawn(process.execPath, args, { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
      const keep = (c: Buffer): void => {
        m.log.push(c.toString());
        if (m.log.length > 300) m.log.splice(0, 100);
      };
      p.stdout.on("data", keep);
      p.stderr.on("data", keep);
      m.process = p;
    },
    kill,
    async spare(name) {
      // Stopped with the cluster: a member left running keeps the test file from exiting.
      const m = await newMember(root, name);
      spares.push(m);
      return m;
    },
    async leader() {
      for (const m of members) {
        if (!m.process || m.process.exitCode !== null || m.process.signalCode !== null) continue;
        try {
          const r = await fetch(`${m.clientUrl}/v2/stats/self`, { signal: AbortSignal.timeout(1000) });
          const j = (await r.json()) as { state: string };
          if (j.state === "StateLeader") return m;
        } catch {
          // down or slow: not the leader we can use
        }
      }
      return undefined;
    },
    async stop() {
      await Promise.all([...members, ...spares].map((m) => kill(m, "SIGKILL")));
      rmSync(root, { recursive: true, force: true });
    },
  };
  for (const m of members) await cluster.start(m);
  for (const m of members) {
    if (!(await healthy(m.clientUrl, 20_000, () => m.process?.exitCode !== null || m.process?.signalCode !== null))) {
      await cluster.stop();
      const log = m.log.join("");
      const Failure = log.includes("EADDRINUSE") ? PortTakenError : Error;
      throw new Failure(`member ${m.name} not healthy:\n${log.slice(-3000)}`);
    }
  }
  return cluster;
}

export { healthy };

/**
 * The time (ms since the epoch) of a member's first JSON log line whose msg matches `re`:
 * when the member itself did something, however late the test saw it.
 */
export function firstLogAt(m: ClusterMember, re: RegExp): number | undefined {
  for (const line of m.log.join("").split("\n")) {
    if (!line.startsWith("{")) continue;
    let j: { ts?: string; msg?: string };
    try {
      j = JSON.parse(line) as typeof j;
    } catch {
      continue; // stdout and stderr chunks interleaved mid-line
    }
    if (typeof j.msg === "string" && re.test(j.msg) && j.ts !== undefined) return Date.parse(j.ts);
  }
  return undefined;
}
