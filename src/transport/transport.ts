// PeerTransport: the member's links to the other members (etcd's rafthttp.Transport:
// one long-lived message stream per peer, snapshots in requests of their own).
//
// send() never blocks and never throws for network reasons: messages are queued per
// peer and written to its stream at once (see peer.ts). Incoming messages arrive through handler(),
// which the server mounts on its peer listener; accepted messages go to onMessages in
// the order they were sent.
//
// "Remotes": a member that we do not know yet (it joined, we have not applied that conf
// change) may still write to us; if it sends its URLs (X-Peer-Urls) we keep a remote
// link to it so Raft's answers reach it. addPeer(id) turns a remote into a peer.

import type { AgentOptions, Agent, IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { MessageType, type Message } from "../raft/index.ts";
import { createHandler, type Delivery } from "./handler.ts";
import { createAgent, peerGet, peerPost, type PeerTlsClient } from "./http-client.ts";
import { Peer, type PeerContext } from "./peer.ts";
import { RateWindow, type PeerStats, type SelfTransportStats, type TransportObserver } from "./stats.ts";
import { PeerHeader, defaultLimits, idHex, type SendOptions, type SnapshotAttachment, type TransportLimits, type TransportLogger } from "./types.ts";

export interface PeerTransportOptions {
  memberId: number;
  clusterId: number;
  logger: TransportLogger;
  /**
   * Accepted messages from one request, in the sender's order. Called synchronously.
   * `readAt`: when their bytes were read (performance.now()), for write traces.
   */
  onMessages(msgs: Message[], readAt?: number): void;
  /** A received MsgSnap with the database file that came with it, if any (defaults to onMessages([m])). */
  onSnapshot?(m: Message, dbPath?: string): void;
  /** The database file to stream after a MsgSnap we send (etcd sends its bbolt file). */
  snapshotAttachment?(m: Message): Promise<SnapshotAttachment | undefined>;
  /** A fresh path for a database file received with a snapshot; without it such snapshots are refused. */
  snapshotDbPath?(): string;
  /** A peer failed a request (or its queue overflowed): raft's reportUnreachable(id). */
  onUnreachable?(id: number): void;
  /** A peer answered that THIS member was removed from the cluster: stop serving. */
  onRemoved?(): void;
  /** Outcome of a MsgSnap we sent: raft's reportSnapshot(id, failed). */
  onSnapshotStatus?(id: number, failed: boolean): void;
  /** Passed to both keep-alive agents (messages, snapshots). */
  agentOptions?: AgentOptions;
  /** Peer TLS: https peer URLs, with these options for every new connection. */
  tls?: PeerTlsClient;
  /** Our advertised peer URLs, sent as X-Peer-Urls so a peer that does not know us yet can answer. */
  localUrls?: string[];
  limits?: Partial<TransportLimits>;
}

export class PeerTransport {
  readonly #memberId: number;
  readonly #clusterId: number;
  readonly #log: TransportLogger;
  readonly #opts: PeerTransportOptions;
  readonly #limits: TransportLimits;
  readonly #agent: Agent;
  readonly #snapshotAgent: Agent;
  /** Requests forwarded to the leader (lease keepalives): many small POSTs, kept apart from Raft's stream. */
  readonly #requestAgent: Agent;
  readonly #ctx: PeerContext;
  #peers = new Map<number, Peer>();
  #remotes = new Map<number, Peer>();
  #removed = new Set<number>();
  #stopped = false;
  #stopping: Promise<void> | undefined;
  #self = { messagesSent: 0, bytesSent: 0, messagesReceived: 0, bytesReceived: 0, appSent: 0, appReceived: 0, unknownDropped: 0 };
  /** Set by the server for its metrics; undefined: nothing reported. */
  observer: TransportObserver | undefined;
  #sendRate = new RateWindow();
  #recvRate = new RateWindow();
  /** Peers holding messages queued by a deferred send(), and the turn that writes them. */
  #deferred = new Set<Peer>();
  #deferredFlush: NodeJS.Immediate | undefined;
  /** The latest moment lingering messages (SendOptions.lingerMs) are written, if any wait. */
  #lingerFlush: NodeJS.Timeout | undefined;

  constructor(opts: PeerTransportOptions) {
    this.#memberId = opts.memberId;
    this.#clusterId = opts.clusterId;
    this.#log = opts.logger;
    this.#opts = opts;
    this.#limits = { ...defaultLimits, ...opts.limits };
    this.#agent = createAgent(opts.agentOptions, opts.tls);
    this.#snapshotAgent = createAgent(opts.agentOptions, opts.tls);
    this.#requestAgent = createAgent(opts.agentOptions, opts.tls);
    const base: Record<string, string> = {
      [PeerHeader.clusterId]: idHex(this.#clusterId),
      [PeerHeader.from]: idHex(this.#memberId),
    };
    if (opts.localUrls !== undefined && opts.localUrls.length > 0) base[PeerHeader.peerUrls] = opts.localUrls.join(",");
    this.#ctx = {
      logger: this.#log,
      agent: this.#agent,
      snapshotAgent: this.#snapshotAgent,
      limits: this.#limits,
      tls: opts.tls !== undefined,
      headers: (to) => ({ ...base, [PeerHeader.to]: idHex(to) }),
      now: () => performance.now(),
      onUnreachable: (id) => this.#opts.onUnreachable?.(id),
      onRemoved: () => this.#opts.onRemoved?.(),
      onSnapshotStatus: (id, failed) => this.#opts.onSnapshotStatus?.(id, failed),
      onDelivered: (msgs, sizes) => this.#onDelivered(msgs, sizes),
      onRoundTrip: (id, ms) => this.observer?.roundTrip(id, ms),
      onHeartbeatDropped: (id) => this.observer?.heartbeatDropped(id),
      onActive: (id, active) => this.observer?.peerActive(id, active),
      onSendFailed: (id, n) => this.observer?.sendFailed(id, n),
      ...(opts.snapshotAttachment === undefined ? {} : { snapshotAttachment: opts.snapshotAttachment }),
    };
  }

  /** Starts a link to a member. Throws TransportError (ERR_PEER_URL) on a bad URL. */
  addPeer(id: number, urls: string[]): void {
    if (this.#stopped || id === this.#memberId) return;
    this.#removed.delete(id);
    if (this.#peers.has(id)) return this.updatePeer(id, urls);
    const remote = this.#remotes.get(id);
    if (remote !== undefined) {
      this.#remotes.delete(id);
      void remote.stop();
    }
    const peer = new Peer(id, urls, this.#ctx);
    this.#peers.set(id, peer);
    this.#log.info("added peer", { remotePeerId: idHex(id), urls });
    peer.connect();
  }

  updatePeer(id: number, urls: string[]): void {
    const p = this.#peers.get(id);
    if (p === undefined) return this.addPeer(id, urls);
    p.updateUrls(urls);
    this.#log.info("updated peer URLs", { remotePeerId: idHex(id), urls });
  }

  /** Stops the link: queued messages are dropped, an open request is aborted. */
  removePeer(id: number): void {
    // A removed member may keep writing to us: never re-learn it as a remote.
    this.#removed.add(id);
    const p = this.#peers.get(id) ?? this.#remotes.get(id);
    if (p === undefined) return;
    this.#peers.delete(id);
    this.#remotes.delete(id);
    void p.stop();
    this.#log.info("removed peer", { remotePeerId: idHex(id) });
  }

  /**
   * Queues messages for their peers and writes them to the peers' streams (one write per
   * peer). The bytes reach the kernel when this turn of the event loop ends (node:http
   * corks the socket until then, so several sends in one turn share a syscall), or before
   * send() returns with `immediate`: for a caller about to block on its disk, or whose
   * messages someone is waiting for.
   */
  send(msgs: readonly Message[], opts: SendOptions = {}): void {
    if (this.#stopped) return;
    const touched = new Set<Peer>();
    for (const m of msgs) {
      if (m.to === 0) continue;
      const p = this.#peers.get(m.to) ?? this.#remotes.get(m.to);
      if (p === undefined) {
        this.#self.unknownDropped++;
        this.#log.debug("dropped message to unknown peer", { remotePeerId: idHex(m.to), type: m.type });
        // Raft waits for the outcome of a snapshot; tell it this one went nowhere.
        if (m.type === MessageType.MsgSnap) this.#opts.onSnapshotStatus?.(m.to, true);
        continue;
      }
      p.enqueue(m);
      touched.add(p);
    }
    if (opts.deferred === true) {
      for (const p of touched) this.#deferred.add(p);
      const linger = opts.lingerMs ?? 0;
      if (linger > 0) this.#lingerFlush ??= setTimeout(() => this.#flushDeferred(), linger);
      else this.#deferredFlush ??= setImmediate(() => this.#flushDeferred());
      return;
    }
    for (const p of touched) {
      this.#deferred.delete(p);
      p.flush(opts);
    }
    // Every lingering message went along: the timer would only wake the loop for nothing.
    if (this.#lingerFlush !== undefined && this.#deferred.size === 0) {
      clearTimeout(this.#lingerFlush);
      this.#lingerFlush = undefined;
    }
  }

  #flushDeferred(): void {
    clearTimeout(this.#lingerFlush);
    this.#lingerFlush = undefined;
    clearImmediate(this.#deferredFlush);
    this.#deferredFlush = undefined;
    const peers = [...this.#deferred];
    this.#deferred.clear();
    for (const p of peers) p.flush({ immediate: true });
  }

  /** The peer endpoint: mount it for /raft and /raft/snapshot (it answers 404 elsewhere). */
  handler(): (req: IncomingMessage, res: ServerResponse) => void {
    return createHandler({
      memberId: this.#memberId,
      clusterId: this.#clusterId,
      logger: this.#log,
      limits: this.#limits,
      isStopped: () => this.#stopped,
      isRemoved: (id) => this.#removed.has(id),
      deliver: (d) => this.#deliver(d),
      onReceiveFailed: (addr) => this.observer?.receiveFailed?.(addr),
      ...(this.#opts.snapshotDbPath === undefined ? {} : { snapshotDbPath: this.#opts.snapshotDbPath }),
    });
  }

  /** A GET on another member's peer port (membership probes), over the transport's TLS. */
  probe(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
    return peerGet(new URL(url), { agent: this.#snapshotAgent, timeoutMs });
  }

  /**
   * A POST on another member's peer port over the transport's TLS, carrying this member's
   * cluster and member IDs (a request forwarded to the leader, such as a lease keepalive).
   */
  request(url: string, body: Uint8Array, timeoutMs: number): Promise<{ status: number; body: Buffer }> {
    if (this.#stopped) return Promise.reject(new Error("transport stopped"));
    const headers = { [PeerHeader.clusterId]: idHex(this.#clusterId), [PeerHeader.from]: idHex(this.#memberId) };
    return peerPost(new URL(url), body, { agent: this.#requestAgent, timeoutMs, headers });
  }

  /** Per-peer counters for /v2/stats/leader, keyed by hex member id (remotes excluded). */
  stats(): Record<string, PeerStats> {
    const out: Record<string, PeerStats> = {};
    for (const [id, p] of this.#peers) out[idHex(id)] = p.stats();
    return out;
  }

  /**
   * Since when (performance.now() ms) the link to member `id` has been up; undefined while
   * it is down or unknown (etcd's Transport.ActiveSince, read by --strict-reconfig-check).
   */
  activeSince(id: number): number | undefined {
    return this.#peers.get(id)?.activeSince;
  }

  /** Member-wide counters and rates for /v2/stats/self. */
  selfStats(): SelfTransportStats {
    const now = performance.now();
    const [sendPkgRate, sendBandwidthRate] = this.#sendRate.rate(now);
    const [recvPkgRate, recvBandwidthRate] = this.#recvRate.rate(now);
    const s = this.#self;
    return {
      messagesSent: s.messagesSent,
      bytesSent: s.bytesSent,
      messagesReceived: s.messagesReceived,
      bytesReceived: s.bytesReceived,
      sendAppendRequestCnt: s.appSent,
      recvAppendRequestCnt: s.appReceived,
      sendPkgRate,
      sendBandwidthRate,
      recvPkgRate,
      recvBandwidthRate,
    };
  }

  /** Aborts every open request, clears every timer, closes the agents' sockets. Idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    this.#stopped = true;
    clearImmediate(this.#deferredFlush);
    this.#deferredFlush = undefined;
    clearTimeout(this.#lingerFlush);
    this.#lingerFlush = undefined;
    this.#deferred.clear();
    const all = [...this.#peers.values(), ...this.#remotes.values()];
    this.#peers.clear();
    this.#remotes.clear();
    await Promise.all(all.map((p) => p.stop()));
    this.#agent.destroy();
    this.#snapshotAgent.destroy();
    this.#requestAgent.destroy();
  }

  #onDelivered(msgs: readonly Message[], sizes: readonly number[]): void {
    const now = performance.now();
    msgs.forEach((m, i) => {
      const size = sizes[i] ?? 0;
      this.#self.messagesSent++;
      this.#self.bytesSent += size;
      this.observer?.sent(m.to, size);
      if (m.type === MessageType.MsgApp) {
        this.#self.appSent++;
        this.#sendRate.add(now, size);
      }
    });
  }

  #deliver(d: Delivery): void {
    const now = performance.now();
    d.messages.forEach((m, i) => {
      const size = d.sizes[i] ?? 0;
      this.#self.messagesReceived++;
      this.#self.bytesReceived += size;
      if (m.type === MessageType.MsgApp) {
        this.#self.appReceived++;
        this.#recvRate.add(now, size);
      }
    });
    if (this.observer !== undefined) {
      let total = 0;
      for (const s of d.sizes) total += s;
      this.observer.received(d.from, total);
    }
    this.#learnRemote(d.from, d.fromUrls);
    const peer = this.#peers.get(d.from);
    if (peer !== undefined && d.messages.some((m) => m.type === MessageType.MsgHeartbeatResp)) peer.onHeartbeatResponse();
    const snap = d.messages[0];
    if (d.snapshot && snap !== undefined && this.#opts.onSnapshot !== undefined) this.#opts.onSnapshot(snap, d.snapshotDb);
    else this.#opts.onMessages(d.messages, d.readAt);
  }

  #learnRemote(from: number, urls: string[]): void {
    if (urls.length === 0 || this.#peers.has(from) || this.#remotes.has(from) || this.#removed.has(from)) return;
    try {
      this.#remotes.set(from, new Peer(from, urls, this.#ctx));
      this.#log.info("added remote link to unknown member", { remotePeerId: idHex(from), urls });
    } catch (err) {
      this.#log.warn("ignored unusable X-Peer-Urls", { remotePeerId: idHex(from), urls, error: String(err) });
    }
  }
}
