// Start and stop one single-member server (etcd or kvctl) with etcd's flags, so the PID we
// hold is the server itself (its RSS is what we measure). Every started process is tracked
// in `live` so the driver can kill exactly the processes it started if it is interrupted.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { connect } from "node:net";
import { groupRssKb } from "./stats.ts";
import { waitHealthy } from "./http.ts";

export const SERVER_KINDS = ["etcd", "kvctl"] as const;
export type ServerKind = (typeof SERVER_KINDS)[number];

export interface ServerSpec {
  readonly kind: ServerKind;
  /** Executable (e.g. /usr/bin/etcd or process.execPath). */
  readonly command: string;
  /** Arguments before etcd's member flags (e.g. ["dist/bundle/cli/main.js", "serve"]). */
  readonly prefixArgs: readonly string[];
  readonly clientPort: number;
  readonly peerPort: number;
  /** Extra environment for the server process. */
  readonly env?: Readonly<Record<string, string>>;
}

export interface StartOptions {
  readonly spec: ServerSpec;
  readonly dataDir: string;
  readonly logFile: string;
  /** How long to wait for /health (restart with 100k keys may replay a long log). */
  readonly deadlineMs: number;
}

/** The member flags both servers accept (one member, loopback only). */
export function memberArgs(spec: ServerSpec, dataDir: string): string[] {
  const c = `http://127.0.0.1:${spec.clientPort}`;
  const p = `http://127.0.0.1:${spec.peerPort}`;
  return [
    "--name", "b", "--data-dir", dataDir,
    "--listen-client-urls", c, "--advertise-client-urls", c,
    "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
    "--initial-cluster", `b=${p}`, "--initial-cluster-state", "new",
  ];
}

/** True when something accepts connections on 127.0.0.1:port. */
export function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port });
    const done = (v: boolean): void => {
      s.destroy();
      resolve(v);
    };
    s.setTimeout(500, () => done(false));
    s.on("connect", () => done(true));
    s.on("error", () => done(false));
  });
}

const live = new Set<ServerProcess>();

/** SIGKILL every server this process started and has not stopped yet (for interrupts and crashes). */
export function killAllStartedSync(): void {
  for (const s of live) s.killSync();
}

export class ServerProcess {
  readonly spec: ServerSpec;
  readonly dataDir: string;
  readonly url: string;
  readonly commandLine: string;
  #child: ChildProcess;
  #exited = false;
  #exitPromise: Promise<void>;
  #startupMs = 0;

  private constructor(spec: ServerSpec, dataDir: string, child: ChildProcess, commandLine: string) {
    this.spec = spec;
    this.dataDir = dataDir;
    this.url = `http://127.0.0.1:${spec.clientPort}`;
    this.commandLine = commandLine;
    this.#child = child;
    this.#exitPromise = new Promise((resolve) => {
      child.once("exit", () => {
        this.#exited = true;
        live.delete(this);
        resolve();
      });
    });
  }

  /** Spawn the server on dataDir (created if missing) and wait until /health is OK. */
  static async start(options: StartOptions): Promise<ServerProcess> {
    const { spec } = options;
    for (const port of [spec.clientPort, spec.peerPort]) {
      if (await portInUse(port)) throw new Error(`Cannot start ${spec.kind}: port ${port} is already in use`);
    }
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    const args = [...spec.prefixArgs, ...memberArgs(spec, options.dataDir)];
    const log = openSync(options.logFile, "a");
    const t0 = performance.now();
    let child: ChildProcess;
    try {
      // detached: the server leads its own process group, so stop() reaches helpers it may fork
      child = spawn(spec.command, args, {
        detached: true,
        stdio: ["ignore", log, log],
        env: { ...process.env, ...spec.env },
      });
    } finally {
      closeSync(log);
    }
    const s = new ServerProcess(spec, options.dataDir, child, [spec.command, ...args].join(" "));
    if (child.pid === undefined) throw new Error(`Cannot start ${spec.kind}: spawn of ${spec.command} failed`);
    live.add(s);
    try {
      await waitHealthy(s.url, { deadlineMs: options.deadlineMs, alive: () => !s.#exited });
    } catch (e) {
      await s.stop();
      throw new Error(`${(e as Error).message} (log: ${options.logFile})`, { cause: e });
    }
    s.#startupMs = performance.now() - t0;
    return s;
  }

  get pid(): number {
    return this.#child.pid ?? -1;
  }

  /** Spawn -> first healthy /health, ms. */
  get startupMs(): number {
    return this.#startupMs;
  }

  rssKb(): number | null {
    return this.#exited ? null : groupRssKb(this.pid);
  }

  /** SIGTERM to the group, SIGKILL after 7.5 s (the shared harness's grace period); resolves when exited. */
  async stop(): Promise<void> {
    if (this.#exited) return;
    this.#signal("SIGTERM");
    if (await this.#waitExit(7500)) return;
    this.#signal("SIGKILL");
    if (!(await this.#waitExit(5000))) throw new Error(`Cannot stop ${this.spec.kind} (pid ${this.pid})`);
  }

  killSync(): void {
    if (!this.#exited) this.#signal("SIGKILL");
  }

  #signal(sig: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, sig);
    } catch {
      try {
        this.#child.kill(sig);
      } catch {
        // already gone
      }
    }
  }

  async #waitExit(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const t = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
    const ok = await Promise.race([this.#exitPromise.then(() => true), t]);
    clearTimeout(timer);
    return ok;
  }
}
