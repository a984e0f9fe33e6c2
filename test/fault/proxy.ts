// A fault-injecting TCP proxy in front of each member's peer port, and the partition
// table they share. The harness runs them in a process of their own (proxy-process.ts),
// away from its clients' event loop.
//
// Partition model. Member i listens for peers on P_i but advertises P'_i, where its proxy
// listens and forwards to P_i. Every peer connection to i therefore crosses i's proxy,
// which knows the destination (i) and finds the source member by asking the kernel which
// of our member processes owns the client end of the connection (proc-net.ts). A
// partition is a set of blocked unordered pairs {a, b}: blocking a pair cuts both
// directions, because every connection between a and b, whoever dialled it, passes
// through a's proxy or b's proxy and is checked there.
//   - isolate(i): block {i, j} for every j ≠ i;
//   - split(A, B): block every pair across the two groups.
// When a partition starts, the proxies destroy the open connections it blocks. New
// connections across it are accepted and then held without forwarding a byte (a
// black hole, like a real partition: the dialler times out rather than being refused);
// on heal the held connections are destroyed so the members redial at once.
// A connection whose source cannot be found (seen when the dialler died or closed it
// before the lookup) is counted, forwarded only while there is no partition, and cut when
// one starts.
//
// While no partition is in force a new connection is forwarded at once and its source
// looked up beside it: a lookup may read every member's /proc/<pid>/fd, a delay no real
// network adds (proc-net.ts keeps it to milliseconds of synchronous reads). Until the
// source is known the link counts as of unknown source (cut if a partition starts); once
// known, a partition that blocks it cuts it too. During a partition the proxy waits for
// the source, to hold or forward.

import { createConnection, createServer, type Server, type Socket } from "node:net";
import { socketOwner } from "./proc-net.ts";

/** Which pairs of members may not talk. Members are numbered 0..n-1. */
export class Network {
  #blocked = new Set<string>();
  #listeners: Array<() => void> = [];
  readonly size: number;

  constructor(size: number) {
    this.size = size;
  }

  static #pair(a: number, b: number): string {
    return a < b ? `${a}-${b}` : `${b}-${a}`;
  }

  isBlocked(a: number, b: number): boolean {
    return a !== b && this.#blocked.has(Network.#pair(a, b));
  }

  /** Cuts member i off from all others. */
  isolate(i: number): void {
    const others = [...Array(this.size).keys()].filter((j) => j !== i);
    this.split([i], others);
  }

  /** Blocks every pair with one member in `a` and the other in `b`. */
  split(a: readonly number[], b: readonly number[]): void {
    for (const x of a) for (const y of b) if (x !== y) this.#blocked.add(Network.#pair(x, y));
    this.#changed();
  }

  heal(): void {
    this.#blocked.clear();
    this.#changed();
  }

  /** The blocked pairs, each [low, high] (to hand the table to another process). */
  pairs(): Array<[number, number]> {
    return [...this.#blocked].map((p) => {
      const [a, b] = p.split("-").map(Number);
      return [a!, b!];
    });
  }

  /** Replaces the whole table with `pairs` in one change (a copy taking its source's state). */
  replace(pairs: ReadonlyArray<readonly [number, number]>): void {
    this.#blocked.clear();
    for (const [a, b] of pairs) if (a !== b) this.#blocked.add(Network.#pair(a, b));
    this.#changed();
  }

  get partitioned(): boolean {
    return this.#blocked.size > 0;
  }

  onChange(fn: () => void): void {
    this.#listeners.push(fn);
  }

  #changed(): void {
    for (const fn of this.#listeners) fn();
  }
}

export interface ProxyOptions {
  /** The member behind this proxy. */
  member: number;
  listenPort: number;
  targetPort: number;
  network: Network;
  /** Current pid → member map of the running members (read at each new connection). */
  owners: () => ReadonlyMap<number, number>;
  /** Which member dialled (default: proc-net.ts's socketOwner); tests inject a slow one. */
  lookup?: (remotePort: number, localPort: number, owners: ReadonlyMap<number, number>) => Promise<number | undefined>;
}

interface Link {
  from: number | undefined;
  inbound: Socket;
  outbound: Socket | undefined;
  /** Held in the black hole (never forwarded). */
  held: boolean;
}

export interface ProxyStats {
  forwarded: number;
  held: number;
  cut: number;
  unknownSource: number;
  /** Source lookups that took over 100 ms (the connection was not held up by them unless partitioned). */
  slowLookups: number;
  /** The longest source lookup, ms. */
  maxLookupMs: number;
}

export class FaultProxy {
  #opts: ProxyOptions;
  #server: Server | undefined;
  #links = new Set<Link>();
  #stats: ProxyStats = { forwarded: 0, held: 0, cut: 0, unknownSource: 0, slowLookups: 0, maxLookupMs: 0 };

  constructor(opts: ProxyOptions) {
    this.#opts = opts;
    opts.network.onChange(() => this.#enforce());
  }

  get stats(): ProxyStats {
    return { ...this.#stats };
  }

  /** The port the proxy listens on (useful when started on port 0). */
  get port(): number {
    const addr = this.#server?.address();
    return typeof addr === "object" && addr !== null ? addr.port : this.#opts.listenPort;
  }

  async start(): Promise<void> {
    const server = createServer((socket) => void this.#accept(socket));
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.#opts.listenPort, "127.0.0.1", () => resolve());
    });
  }

  async close(): Promise<void> {
    for (const link of this.#links) this.#destroy(link);
    const server = this.#server;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #accept(inbound: Socket): Promise<void> {
    inbound.pause();
    // A network does not add Nagle's algorithm to a path: both members set TCP_NODELAY on
    // their ends, so the proxy's two sockets must too, or each small frame it forwards
    // waits on the next hop's delayed acknowledgement (tens of ms per message).
    inbound.setNoDelay(true);
    inbound.on("error", () => {});
    const link: Link = { from: undefined, inbound, outbound: undefined, held: false };
    this.#links.add(link);
    inbound.once("close", () => this.#destroy(link));
    const port = inbound.remotePort;
    const lookup = this.#opts.lookup ?? socketOwner;
    const startedAt = performance.now();
    const source = port === undefined ? Promise.resolve(undefined) : lookup(port, this.port, this.#opts.owners());
    const known = source.then((from) => {
      const took = performance.now() - startedAt;
      this.#stats.maxLookupMs = Math.max(this.#stats.maxLookupMs, Math.round(took));
      if (took > 100) this.#stats.slowLookups++;
      link.from = from;
      if (from === undefined) this.#stats.unknownSource++;
    });
    if (!this.#opts.network.partitioned) {
      this.#forward(link);
      await known;
      // A partition that started during the lookup cut the link already (unknown source);
      // one that is in force now and blocks the source cuts it here.
      if (this.#links.has(link) && this.#blocks(link.from)) {
        this.#stats.cut++;
        this.#destroy(link);
      }
      return;
    }
    await known;
    if (inbound.destroyed || !this.#links.has(link)) return;
    if (this.#blocks(link.from)) {
      link.held = true;
      this.#stats.held++;
      return;
    }
    this.#forward(link);
  }

  #forward(link: Link): void {
    const inbound = link.inbound;
    const outbound = createConnection({ host: "127.0.0.1", port: this.#opts.targetPort, noDelay: true });
    link.outbound = outbound;
    outbound.on("error", () => {});
    outbound.once("close", () => this.#destroy(link));
    outbound.once("connect", () => {
      this.#stats.forwarded++;
      inbound.pipe(outbound);
      outbound.pipe(inbound);
      inbound.resume();
    });
  }

  // An unknown source counts as blocked during any partition: better to drop a legitimate
  // connection than to let one leak across the partition.
  #blocks(from: number | undefined): boolean {
    const network = this.#opts.network;
    return from === undefined ? network.partitioned : network.isBlocked(from, this.#opts.member);
  }

  // Called on every partition change: cut what is now blocked, release what is not.
  #enforce(): void {
    for (const link of this.#links) {
      const blocked = this.#blocks(link.from);
      if (blocked && !link.held) {
        this.#stats.cut++;
        this.#destroy(link);
      } else if (!blocked && link.held) {
        this.#destroy(link);
      }
    }
  }

  #destroy(link: Link): void {
    if (!this.#links.delete(link)) return;
    link.inbound.destroy();
    link.outbound?.destroy();
  }
}
