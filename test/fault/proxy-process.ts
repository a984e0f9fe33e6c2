// The fault proxies (proxy.ts) in a process of their own, driven from the harness over
// node's IPC channel.
//
// Why: in the harness process the proxies shared one event loop with the workload's
// clients, the nemesis and the checker. Under load that loop answered late, and every
// byte between members waited for it: 150-245 ms per hop at load 6-10, for kvctl and etcd
// alike, which a real network does not add and which made elections look slow. The child
// (proxy-child.ts) runs only the proxies, their partition table and the source lookups
// (proc-net.ts).
//
// The harness keeps the authoritative state: the pid → member map of running members and
// the partition table (Network). It sends each change as it happens; IPC messages arrive
// in order, and a member spawned after an owners message cannot dial before the child has
// read it in practice (a member needs tens of ms to start; the message is in the pipe
// before the member's process runs).
//
// The child dies with the harness: it exits when the IPC channel disconnects (the harness
// exited or was killed) or when its parent pid changes, so no proxy outlives a run.

import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ProxyStats } from "./proxy.ts";

/** Event-loop delay of a process over a window: ms a 10 ms timer fired late (perf_hooks, resolution 10 ms). */
export interface LoopDelay {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export type ProxyRequest =
  | { id: number; op: "open"; members: number; member: number; listenPort: number; targetPort: number }
  | { id: number; op: "owners"; owners: Array<[number, number]> }
  | { id: number; op: "blocked"; size: number; pairs: Array<[number, number]> }
  | { id: number; op: "stats" }
  | { id: number; op: "loop-delay"; reset: boolean }
  | { id: number; op: "close" };

/** A request's answer (id 0, ready: the child's first message, once it listens for requests). */
export interface ProxyOk {
  id: number;
  ok: true;
  ready?: true;
  port?: number;
  stats?: ProxyStats[];
  loop?: LoopDelay;
}
export type ProxyReply = ProxyOk | { id: number; ok: false; error: string };

/** The proxy process failed to start, answered an error, did not answer in time, or is gone. */
export class ProxyProcessError extends Error {
  readonly code = "PROXY_PROCESS";
}

const childPath = fileURLToPath(new URL("./proxy-child.ts", import.meta.url));
const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const REQUEST_TIMEOUT_MS = 10_000;

type Pending = { resolve: (r: ProxyOk) => void; reject: (e: Error) => void; timer: NodeJS.Timeout };
type RequestBody = ProxyRequest extends infer R ? (R extends ProxyRequest ? Omit<R, "id"> : never) : never;

export class ProxyProcess {
  #child: ChildProcess;
  #nextId = 1;
  #pending = new Map<number, Pending>();
  #exited = false;
  #closing = false;
  #onUnexpectedExit: (why: string) => void;

  private constructor(child: ChildProcess, onUnexpectedExit: (why: string) => void) {
    this.#child = child;
    this.#onUnexpectedExit = onUnexpectedExit;
    child.on("message", (m: ProxyReply) => this.#reply(m));
    child.once("exit", (code, signal) => {
      this.#exited = true;
      const why = `proxy process (pid ${child.pid}) exited: ${code ?? signal}`;
      for (const p of this.#pending.values()) {
        clearTimeout(p.timer);
        p.reject(new ProxyProcessError(why));
      }
      this.#pending.clear();
      if (!this.#closing) this.#onUnexpectedExit(why);
    });
  }

  /**
   * Forks the proxy process and waits until it is ready. `onUnexpectedExit` hears of its
   * death unless close() asked for it (every peer link dies with it: a run must not pass).
   */
  static async start(onUnexpectedExit: (why: string) => void, timeoutMs = 30_000): Promise<ProxyProcess> {
    // The child is TypeScript: it loads through tsx like the harness itself, resolved
    // from the repository (cwd), whatever flags the parent was started with (node --test
    // passes its own).
    const child = fork(childPath, [], { cwd: repoRoot, execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new ProxyProcessError(`proxy process not ready after ${timeoutMs} ms`));
      }, timeoutMs);
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        clearTimeout(timer);
        reject(new ProxyProcessError(`proxy process exited during start-up: ${code ?? signal}`));
      };
      child.once("exit", onExit);
      child.once("error", (err) => {
        clearTimeout(timer);
        child.off("exit", onExit);
        reject(new ProxyProcessError(`Cannot start the proxy process: ${err.message}`));
      });
      child.once("message", () => {
        clearTimeout(timer);
        child.off("exit", onExit);
        resolve();
      });
    });
    return new ProxyProcess(child, onUnexpectedExit);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Starts a proxy for `member` (of `members`) on `listenPort` (0: any) in front of `targetPort`; resolves with its port. */
  async open(members: number, member: number, listenPort: number, targetPort: number): Promise<number> {
    const r = await this.#request({ op: "open", members, member, listenPort, targetPort });
    return r.port ?? listenPort;
  }

  /** The pid → member map of the running members (sent at once; later lookups use it). */
  setOwners(owners: ReadonlyMap<number, number>): void {
    this.#send({ op: "owners", owners: [...owners] });
  }

  /** The partition table (sent at once; the child cuts and releases links on arrival). */
  setBlocked(size: number, pairs: Array<[number, number]>): void {
    this.#send({ op: "blocked", size, pairs });
  }

  /** Each proxy's counters, in the order they were opened. */
  async stats(): Promise<ProxyStats[]> {
    return (await this.#request({ op: "stats" })).stats ?? [];
  }

  /** The child's event-loop delay since the last reset: how long a byte could wait in it. */
  async loopDelay(reset: boolean): Promise<LoopDelay | undefined> {
    return (await this.#request({ op: "loop-delay", reset })).loop;
  }

  /** Closes every proxy and lets the child exit (SIGKILL after 5 s). Idempotent. */
  async close(): Promise<void> {
    if (this.#exited) return;
    this.#closing = true;
    const exited = new Promise<void>((resolve) => this.#child.once("exit", () => resolve()));
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 5000);
    try {
      await this.#request({ op: "close" });
    } catch {
      // gone already or not answering: the timer kills it
    }
    await exited;
    clearTimeout(timer);
  }

  /** Synchronous last resort for process exit handlers. */
  killSync(): void {
    this.#closing = true;
    if (this.#exited || this.#child.pid === undefined) return;
    try {
      process.kill(this.#child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }

  #send(body: RequestBody): number {
    const id = this.#nextId++;
    if (this.#exited || !this.#child.connected) return id;
    // A send failure means the child is gone; its exit handler reports that.
    this.#child.send({ ...body, id } as ProxyRequest, (err) => {
      if (err !== null) this.#fail(id, new ProxyProcessError(`Cannot reach the proxy process: ${err.message}`));
    });
    return id;
  }

  #request(body: RequestBody): Promise<ProxyOk> {
    if (this.#exited) return Promise.reject(new ProxyProcessError(`proxy process is gone (asked to ${body.op})`));
    return new Promise((resolve, reject) => {
      const id = this.#nextId;
      const timer = setTimeout(() => this.#fail(id, new ProxyProcessError(`proxy process did not answer ${body.op} within ${REQUEST_TIMEOUT_MS} ms`)), REQUEST_TIMEOUT_MS);
      this.#pending.set(id, { resolve, reject, timer });
      this.#send(body);
    });
  }

  #fail(id: number, err: Error): void {
    const p = this.#pending.get(id);
    if (p === undefined) return;
    this.#pending.delete(id);
    clearTimeout(p.timer);
    p.reject(err);
  }

  #reply(m: ProxyReply): void {
    const p = this.#pending.get(m.id);
    if (p === undefined) return;
    this.#pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.ok) p.resolve(m);
    else p.reject(new ProxyProcessError(m.error));
  }
}
