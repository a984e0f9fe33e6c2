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
// Sources are looked up only when a partition needs them: a lookup reads /proc/net/tcp and
// may read every member's /proc/<pid>/fd, CPU the harness takes from the members on a
// small machine, and more from a server that dials more (etcd redials a down member's
// proxy several times a second; looking each dial up cost etcd's runs ~20 % of a core).
// While no partition is in force a new connection is forwarded at once and not looked up.
// When a partition starts, the open links not yet looked up are, in one batch, and each is
// cut if the partition blocks its source. During a partition the proxy waits for a new
// connection's source, to hold or forward. While the member behind a proxy is down the
// proxy does not listen (setTargetUp), so dials to it are refused as without a proxy.

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
  /** The source lookup, once asked (only a partition asks: see the header). */
  identified: Promise<void> | undefined;
  inbound: Socket;
  outbound: Socket | undefined;
  /** Held in the black hole (never forwarded). */
  held: boolean;
}

export interface ProxyStats {
  forwarded: number;
  /** Connections whose member was down (the forward was refused): reset, as a refusal would be. */
  refused: number;
  held: number;
  cut: number;
  /** Source lookups asked (each reads /proc: the harness's own CPU, taken from the members'). */
  lookups: number;
  unknownSource: number;
  /** Source lookups that took over 100 ms. */
  slowLookups: number;
  /** The longest source lookup, ms. */
  maxLookupMs: number;
}

export class FaultProxy {
  #opts: ProxyOptions;
  #server: Server | undefined;
  #links = new Set<Link>();
  #port: number;
  #wantListening = true;
  /** The last listen or unlisten asked (setTargetUp runs them in order). */
  #listening: Promise<void> = Promise.resolve();
  #stats: ProxyStats = { forwarded: 0, refused: 0, held: 0, cut: 0, lookups: 0, unknownSource: 0, slowLookups: 0, maxLookupMs: 0 };

  constructor(opts: ProxyOptions) {
    this.#opts = opts;
    this.#port = opts.listenPort;
    opts.network.onChange(() => this.#enforce());
  }

  get stats(): ProxyStats {
    return { ...this.#stats };
  }

  /** The member behind the proxy. */
  get member(): number {
    return this.#opts.member;
  }

  /** The port the proxy listens on (useful when started on port 0); kept while it does not. */
  get port(): number {
    return this.#port;
  }

  async start(): Promise<void> {
    await this.#listen();
  }

  /**
   * Whether the member behind the proxy runs. While it does not, the proxy stops listening:
   * a dial is then refused by the kernel, as it would be with no proxy in the path, instead
   * of accepted, forwarded, refused and reset (etcd redials a down member several times a
   * second: 13,609 such dials in a 4-minute run, each an accept and a connect of the
   * proxy's). Open links stay until their ends close.
   */
  setTargetUp(up: boolean): Promise<void> {
    if (up === this.#wantListening) return this.#listening;
    this.#wantListening = up;
    this.#listening = this.#listening
      .then(() => (up ? this.#listen() : this.#unlisten()))
      .catch((err: unknown) => {
        // Not silent: a proxy that cannot listen again cuts its member off for the rest of the run.
        process.stderr.write(`fault proxy of member ${this.#opts.member}: cannot ${up ? "listen again on" : "stop listening on"} port ${this.#port}: ${err instanceof Error ? err.message : String(err)}\n`);
      });
    return this.#listening;
  }

  async close(): Promise<void> {
    this.#wantListening = false;
    for (const link of this.#links) this.#destroy(link, false);
    await this.#listening;
    await this.#unlisten();
  }

  // On #port: the port asked at first (0: any), then the one the first listen got.
  async #listen(): Promise<void> {
    if (this.#server !== undefined) return;
    const server = createServer((socket) => void this.#accept(socket));
    this.#server = server;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(this.#port, "127.0.0.1", () => resolve());
      });
    } catch (err) {
      this.#server = undefined;
      throw err;
    }
    const addr = server.address();
    if (typeof addr === "object" && addr !== null) this.#port = addr.port;
  }

  async #unlisten(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #accept(inbound: Socket): Promise<void> {
    inbound.pause();
    // A network does not add Nagle's algorithm to a path: both members set TCP_NODELAY on
    // their ends, so the proxy's two sockets must too, or each small frame it forwards
    // waits on the next hop's delayed acknowledgement (tens of ms per message).
    inbound.setNoDelay(true);
    inbound.on("error", () => {});
    const link: Link = { from: undefined, identified: undefined, inbound, outbound: undefined, held: false };
    this.#links.add(link);
    inbound.once("close", () => this.#destroy(link, false));
    if (!this.#opts.network.partitioned) {
      this.#forward(link);
      return;
    }
    await this.#identify(link);
    if (inbound.destroyed || !this.#links.has(link)) return;
    if (this.#blocks(link.from)) {
      link.held = true;
      this.#stats.held++;
      return;
    }
    this.#forward(link);
  }

  /** Looks the link's source up once; later calls share the first. */
  #identify(link: Link): Promise<void> {
    if (link.identified !== undefined) return link.identified;
    const port = link.inbound.remotePort;
    const lookup = this.#opts.lookup ?? socketOwner;
    const startedAt = performance.now();
    this.#stats.lookups++;
    const source = port === undefined ? Promise.resolve(undefined) : lookup(port, this.port, this.#opts.owners());
    link.identified = source.then((from) => {
      const took = performance.now() - startedAt;
      this.#stats.maxLookupMs = Math.max(this.#stats.maxLookupMs, Math.round(took));
      if (took > 100) this.#stats.slowLookups++;
      link.from = from;
      if (from === undefined) this.#stats.unknownSource++;
    });
    return link.identified;
  }

  #forward(link: Link): void {
    const inbound = link.inbound;
    const outbound = createConnection({ host: "127.0.0.1", port: this.#opts.targetPort, noDelay: true });
    link.outbound = outbound;
    let connected = false;
    outbound.on("error", () => {});
    // A member that is down refuses the forward: the dialler gets a reset, the nearest a
    // proxy can come to the refusal it would get without one (and no socket of the proxy's
    // lingers in TIME_WAIT, which every lookup's read of /proc/net/tcp would have to list).
    outbound.once("close", () => {
      if (!connected && this.#links.has(link)) this.#stats.refused++;
      this.#destroy(link, !connected);
    });
    outbound.once("connect", () => {
      connected = true;
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

  // Called on every partition change: cut what is now blocked, release what is not. A link
  // forwarded while no partition was in force has not been looked up: it is, now, and
  // judged when its source is known (a few milliseconds during which it still forwards).
  #enforce(): void {
    const partitioned = this.#opts.network.partitioned;
    for (const link of this.#links) {
      if (partitioned && link.identified === undefined) void this.#identify(link).then(() => this.#judge(link));
      else this.#judge(link);
    }
  }

  #judge(link: Link): void {
    if (!this.#links.has(link)) return;
    const blocked = this.#blocks(link.from);
    if (blocked && !link.held) {
      this.#stats.cut++;
      this.#destroy(link, true);
    } else if (!blocked && link.held) {
      this.#destroy(link, true);
    }
  }

  // `reset`: close with RST rather than FIN (cuts, releases, refusals: faults, after which
  // neither end should linger in TIME_WAIT).
  #destroy(link: Link, reset: boolean): void {
    if (!this.#links.delete(link)) return;
    for (const s of [link.inbound, link.outbound]) {
      if (s === undefined || s.destroyed) continue;
      if (reset && s.readyState === "open") s.resetAndDestroy();
      else s.destroy();
    }
  }
}
