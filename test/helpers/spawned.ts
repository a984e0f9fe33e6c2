// A server process a test started: the last 20 kB of its output kept for failure messages,
// stopped with SIGTERM and SIGKILL after 5 s; whatever still runs when the test process
// exits is killed.
import { spawn, type ChildProcess } from "node:child_process";
import { stopProcess } from "./run-process.ts";

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of running) c.kill("SIGKILL");
});

export interface Spawned {
  child: ChildProcess;
  log(): string;
  /** Resolves once the process exited (at once when it already had). */
  stop(): Promise<void>;
}

export function spawnServer(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Spawned {
  const child = spawn(file, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  child.once("exit", () => running.delete(child));
  let out = "";
  const keep = (c: Buffer): void => {
    out = (out + c.toString("utf8")).slice(-20_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const stop = (): Promise<void> => stopProcess(child);
  return { child, log: () => out, stop };
}

/** The flags of a one-member cluster named "t" (etcd's and kvctl's alike). */
export function singleMemberFlags(dataDir: string, url: string, peerUrl: string): string[] {
  return [
    "--name", "t",
    "--data-dir", dataDir,
    "--listen-client-urls", url,
    "--advertise-client-urls", url,
    "--listen-peer-urls", peerUrl,
    "--initial-advertise-peer-urls", peerUrl,
    "--initial-cluster", `t=${peerUrl}`,
  ];
}
