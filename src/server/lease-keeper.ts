// Lease keepalives and expiry as etcd 3.4 does them (etcdserver/v3_server.go LeaseRenew and
// LeaseTimeToLive, lease/leasehttp, the lessor's expiry loop):
//
// - The leader renews in memory (lease-deadlines.ts): no log entry, no fsync, no apply. A
//   member that does not lead forwards the keepalive, or the TTL question, to the leader's
//   peer port (POST /leases, /leases/internal: etcd's paths and protobuf bodies) and retries
//   until the request timeout, through elections.
// - Only the leader decides expiry, from its deadlines: it proposes a LeaseRevoke of each
//   lease past its deadline, and the revocation is applied like a client's, the same on
//   every member. Followers never expire anything.
// - A leader becomes the primary lessor when it applies the first entry of its term (all
//   grants of earlier terms are applied by then): every lease gets now + TTL + an election
//   timeout (etcd's Promote), since its keepalives may have gone to the old leader or found
//   none. Losing leadership forgets every deadline (etcd's Demote).
// - With --experimental-enable-lease-checkpoint, the leader also proposes a LeaseCheckpoint
//   of each lease's seconds left every checkpoint interval (at most 1000 leases per entry,
//   as etcd's maxLeaseCheckpointBatchSize); every member applies it, and a new leader then
//   starts the lease from there instead of from its full TTL. A keepalive of a lease with a
//   checkpoint in effect first clears it through the log (and waits for that), so that a
//   renewed lease is not cut short by an older checkpoint after a leader change.
// - A follower sends the keepalives it forwards together: while a request to the leader is
//   unanswered, the keepalives that arrive wait and then go as one request (POST
//   /leases/batch, kvctl's own: etcd's /leases takes one lease). Each keepalive still
//   reaches the leader after it arrived, so it renews from then on. A leader that does not
//   know the path (an older kvctl) gets them one by one on /leases.
//
// This file is the follower's side of those requests and the primary lessor's answers
// (renewForPeer, timeToLiveForPeer); the leader's HTTP endpoints are http/peer-leases.ts,
// the bytes and texts on the wire lease-peer-wire.ts.
import { performance } from "node:perf_hooks";
import { V3Error, V3Errors } from "../api/v3-errors.ts";
import type { LeaseId, LeaseTimeToLiveResponse, V3KeySpace } from "../store/v3/index.ts";
import { v3ResultOf } from "./v3-results.ts";
import type { ApplyResult } from "./apply.ts";
import type { CommandBody } from "./request.ts";
import type { Membership } from "./membership.ts";
import type { Logger } from "./logger.ts";
import type { V3Op } from "./v3-command.ts";
import { LeaseDeadlines, NotPrimaryError } from "./lease-deadlines.ts";
import {
  PEER_LEASE_BATCH_PATH,
  PEER_LEASE_INTERNAL_PATH,
  PEER_LEASE_PATH,
  UNKNOWN_PATH_TEXT,
  decodeRenewResponse,
  decodeTimeToLiveResponse,
  decodeTtls,
  encodeLeaseIds,
  encodeRenewRequest,
  encodeTimeToLiveRequest,
  joinPath,
} from "./lease-peer-wire.ts";

/** etcd's leasehttp applyTimeout: how long a new leader may take to become the primary lessor. */
const PRIMARY_WAIT_MS = 1000;
/** How often the leader looks for expired leases (etcd: every 500 ms). */
const EXPIRY_CHECK_MS = 100;
/** etcd's leaseRevokeRate / 2: revocations proposed per check at most. */
const REVOKES_PER_CHECK = 500;
/** etcd's maxLeaseCheckpointBatchSize: leases per LeaseCheckpoint entry. */
const CHECKPOINTS_PER_ENTRY = 1000;
/** LeaseCheckpoint entries proposed per check at most (etcd: 500 per 500 ms). */
const CHECKPOINT_ENTRIES_PER_CHECK = 100;
/**
 * Batches to one leader URL unanswered at a time. One: every keepalive that arrives during
 * a round trip waits for it and goes in the next batch. Two halved the batches and cost a
 * follower 40 % more CPU per keepalive (16 in flight on one stream); a batch waits on the
 * log only to clear a checkpoint, once per lease and checkpoint interval.
 */
const RENEW_BATCHES_IN_FLIGHT = 1;
/** Leases per batch at most (the leader parses and answers a batch in one go). */
const RENEW_BATCH_MAX = 1024;

/** What the keeper needs of its member (KvServer). */
export interface LeaseKeeperHost {
  readonly memberId: number;
  readonly leaderId: number;
  readonly isLeader: boolean;
  readonly requestTimeoutMs: number;
  readonly config: { readonly electionTimeout: number; readonly leaseCheckpoint: { readonly enabled: boolean; readonly intervalMs: number } };
  readonly v3: V3KeySpace;
  readonly membership: Membership;
  readonly transport: { request(url: string, body: Uint8Array, timeoutMs: number): Promise<{ status: number; body: Buffer }> };
  propose(body: CommandBody): Promise<ApplyResult>;
  /** etcd_debugging_server_lease_expired_total: expired leases this leader revoked. */
  readonly metrics: { readonly leaseExpired: { inc(): void } };
}

/** Why a forwarded request is not served: this member does not lead, or is not the primary lessor yet. */
export type PeerRefusal = "notPrimary" | "catchingUp";
export type PrimaryAnswer<T> = { value: T } | { refused: PeerRefusal };

/** A forwarded request the leader could not serve yet (not primary, catching up): try again. */
class RetryLaterError extends Error {}

/** A revocation's refusal because its lease is gone already (not a failure to revoke it). */
function isLeaseNotFound(err: unknown): boolean {
  return err instanceof V3Error && err.code === V3Errors.leaseNotFound().code && err.message === V3Errors.leaseNotFound().message;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(1, ms)));

interface PendingRenew {
  readonly id: LeaseId;
  /** performance.now() after which the caller has given up on this try. */
  readonly deadline: number;
  resolve(ttl: number | undefined): void;
  reject(err: unknown): void;
}

/** The keepalives on their way to one leader URL. */
interface RenewQueue {
  waiting: PendingRenew[];
  inFlight: number;
  /** A flush is scheduled for the end of this turn of the event loop. */
  scheduled: boolean;
}

export class LeaseKeeper {
  readonly #host: LeaseKeeperHost;
  readonly #log: Logger;
  readonly #table: LeaseDeadlines;
  /** --experimental-enable-lease-checkpoint (etcd: a checkpointer is set). */
  readonly #checkpointing: boolean;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** Resolvers of callers waiting for this leader to become primary. */
  #primaryWaiters: Array<() => void> = [];
  /** Forwarded keepalives by leader peer URL, waiting to be sent together. */
  readonly #renewQueues = new Map<string, RenewQueue>();
  /** Leader URLs that answered PEER_LEASE_BATCH_PATH as an unknown path: one keepalive per request there, until this member restarts. */
  readonly #noBatchUrls = new Set<string>();

  constructor(host: LeaseKeeperHost, log: Logger, opts: { now?: () => number } = {}) {
    this.#host = host;
    this.#log = log;
    const cp = host.config.leaseCheckpoint;
    this.#checkpointing = cp.enabled;
    // A monotonic clock: deadlines never leave this member, and a wall-clock step must not expire leases.
    this.#table = new LeaseDeadlines({ now: opts.now ?? (() => performance.now()), ...(cp.enabled ? { checkpointIntervalMs: cp.intervalMs } : {}) });
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.#expire();
      this.#checkpoint();
    }, EXPIRY_CHECK_MS);
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#wakePrimaryWaiters();
  }

  /** This member leads and applied the first entry of its term. */
  promote(): void {
    const leases = this.#host.v3.leases();
    this.#table.promote(leases, this.#host.config.electionTimeout);
    if (leases.length > 0) {
      const resumed = leases.reduce((n, l) => n + (l.remainingTtl !== undefined ? 1 : 0), 0);
      this.#log.info("promoted to primary lessor: every lease refreshed", { leases: leases.length, fromCheckpoint: resumed, extendMs: this.#host.config.electionTimeout });
    }
    this.#wakePrimaryWaiters();
  }

  /** This member no longer leads. */
  demote(): void {
    if (!this.#table.primary) return;
    this.#table.demote();
    this.#wakePrimaryWaiters();
  }

  /**
   * Told of every applied v3 operation: grants start a deadline, revocations end one,
   * checkpoints schedule the next. A revocation apply refused for its caller's permissions
   * (etcd's checkLeasePuts) left the lease and its keys: its deadline stays, or the lease
   * would never expire. One of a lease already gone ends the deadline too.
   */
  applied(op: V3Op, result: ApplyResult): void {
    if (op.k === "leaseGrant") {
      const r = result.ok ? v3ResultOf(op, result) : undefined;
      if (r !== undefined) this.#table.granted(r.id, r.ttl);
    } else if (op.k === "leaseRevoke") {
      if (result.ok || isLeaseNotFound(result.error)) this.#table.revoked(op.id);
    } else if (op.k === "leaseCheckpoint" && result.ok) {
      for (const c of op.cps) this.#table.checkpointed(c.id, c.remainingTtl);
    }
  }

  /** A keepalive from a client of this member: the granted TTL, or undefined for a lease that is gone. */
  async renew(id: LeaseId): Promise<number | undefined> {
    return this.#leaderCall(
      () => this.#renewLocal(id),
      (url, timeoutMs) => this.#forwardRenew(url, id, timeoutMs),
    );
  }

  /**
   * etcd's Renew on the primary: the lease lives its TTL from now. A checkpoint in effect
   * is cleared through the log before the answer (etcd waits for that entry too), or a
   * new leader would start the renewed lease from the older, shorter remaining TTL.
   */
  async #renewLocal(id: LeaseId): Promise<number | undefined> {
    const r = this.#table.renew(id);
    if (!("ttl" in r)) return undefined;
    if (this.#checkpointing && (this.#host.v3.leaseRemainingTtl(id) ?? 0) > 0) {
      const op: V3Op = { k: "leaseCheckpoint", cps: [{ id, remainingTtl: 0 }] };
      // As etcd: a clear that fails (leadership lost meanwhile) does not fail the keepalive.
      await this.#host.propose({ t: "v3", time: Date.now(), op }).catch((err: unknown) => this.#log.debug("failed to clear a lease checkpoint", { leaseId: id.toString(16), error: String(err) }));
    }
    return r.ttl;
  }

  /** #renewLocal without checkpoints, which then has nothing to wait for. */
  #renewInMemory(id: LeaseId): number | undefined {
    const r = this.#table.renew(id);
    return "ttl" in r ? r.ttl : undefined;
  }

  /** LeaseTimeToLive as the leader sees it; undefined for a lease that does not exist. */
  async timeToLive(id: LeaseId, keys: boolean): Promise<LeaseTimeToLiveResponse | undefined> {
    const r = await this.#leaderCall(
      async () => this.#localTimeToLive(id, keys),
      (url, timeoutMs) => this.#forwardTimeToLive(url, id, keys, timeoutMs),
    );
    // The header is this member's, as etcd fills it after the forward.
    return r === undefined ? undefined : { ...r, revision: this.#host.v3.revision };
  }

  /**
   * A follower's forwarded keepalives, served as the primary lessor (http/peer-leases.ts):
   * each lease renewed as a client's keepalive here would be, undefined for one that does
   * not exist. Refused when this member does not lead, or leads and is not the primary
   * lessor within etcd's applyTimeout.
   */
  async renewForPeer(ids: readonly LeaseId[]): Promise<PrimaryAnswer<(number | undefined)[]>> {
    const refused = await this.#primaryOrRefusal();
    if (refused !== undefined) return { refused };
    return { value: this.#checkpointing ? await Promise.all(ids.map((id) => this.#renewLocal(id))) : ids.map((id) => this.#renewInMemory(id)) };
  }

  /** A follower's forwarded TTL question, served as the primary lessor (see renewForPeer). */
  async timeToLiveForPeer(id: LeaseId, keys: boolean): Promise<PrimaryAnswer<LeaseTimeToLiveResponse | undefined>> {
    const refused = await this.#primaryOrRefusal();
    if (refused !== undefined) return { refused };
    return { value: this.#localTimeToLive(id, keys) };
  }

  async #primaryOrRefusal(): Promise<PeerRefusal | undefined> {
    if (await this.#waitPrimary(PRIMARY_WAIT_MS)) return undefined;
    return this.#host.isLeader ? "catchingUp" : "notPrimary";
  }

  /** The leader's answer: existence, granted TTL and keys from the key space; seconds left from the deadlines. */
  #localTimeToLive(id: LeaseId, keys: boolean): LeaseTimeToLiveResponse | undefined {
    const r = this.#host.v3.timeToLive(id, Date.now(), { keys });
    if (r === undefined) return undefined;
    const ms = this.#table.remainingMs(id);
    return ms === undefined ? r : { ...r, ttl: Math.trunc(ms / 1000) };
  }

  /**
   * Runs `local` on the primary lessor (this member once it leads and is promoted), or
   * `forward` against the leader's peer URLs, retrying through elections until the request
   * timeout: then "no leader" when none is known, else "request timed out" (etcd's LeaseRenew).
   */
  async #leaderCall<T>(local: () => Promise<T>, forward: (url: string, timeoutMs: number) => Promise<T>): Promise<T> {
    const deadline = performance.now() + this.#host.requestTimeoutMs;
    for (;;) {
      if (this.#stopped) throw V3Errors.stopped();
      const left = deadline - performance.now();
      if (this.#host.isLeader) {
        if (this.#table.primary || (await this.#waitPrimary(Math.min(left, PRIMARY_WAIT_MS)))) {
          try {
            return await local();
          } catch (err) {
            if (!(err instanceof NotPrimaryError)) throw err;
          }
        }
      } else {
        const lead = this.#host.leaderId;
        const leader = lead === 0 ? undefined : this.#host.membership.get(lead);
        if (leader === undefined || leader.peerUrls.length === 0) {
          if (left <= 0) throw V3Errors.noLeader();
          await sleep(Math.min(left, 50));
          continue;
        }
        for (const url of leader.peerUrls) {
          if (this.#stopped) throw V3Errors.stopped();
          const remaining = deadline - performance.now();
          if (remaining <= 0) break;
          try {
            return await forward(url, remaining);
          } catch (err) {
            if (err instanceof V3Error) throw err;
            this.#log.debug("lease request to the leader failed", { url, error: String(err) });
            // Unreachable, not the leader any more, or not yet promoted: the next URL, then wait for the leader.
          }
        }
      }
      if (performance.now() >= deadline) throw this.#host.leaderId === 0 ? V3Errors.noLeader() : V3Errors.timeout();
      await sleep(Math.min(deadline - performance.now(), 50));
    }
  }

  /** Queues the keepalive for the next batch to `peerUrl`; settled by that batch's answer. */
  #forwardRenew(peerUrl: string, id: LeaseId, timeoutMs: number): Promise<number | undefined> {
    if (this.#noBatchUrls.has(peerUrl)) return this.#forwardRenewOne(peerUrl, id, timeoutMs);
    let q = this.#renewQueues.get(peerUrl);
    if (q === undefined) {
      q = { waiting: [], inFlight: 0, scheduled: false };
      this.#renewQueues.set(peerUrl, q);
    }
    const queue = q;
    return new Promise((resolve, reject) => {
      queue.waiting.push({ id, deadline: performance.now() + timeoutMs, resolve, reject });
      // At the end of this turn, so the keepalives that arrived in one read go in one batch.
      if (queue.inFlight < RENEW_BATCHES_IN_FLIGHT && !queue.scheduled) {
        queue.scheduled = true;
        setImmediate(() => {
          queue.scheduled = false;
          this.#sendRenewBatch(peerUrl, queue);
        });
      }
    });
  }

  /** Sends what waits for `peerUrl` as one request, then the next batch once it is answered. */
  #sendRenewBatch(peerUrl: string, q: RenewQueue): void {
    if (q.waiting.length === 0 || q.inFlight >= RENEW_BATCHES_IN_FLIGHT) return;
    const batch = q.waiting.length <= RENEW_BATCH_MAX ? q.waiting : q.waiting.slice(0, RENEW_BATCH_MAX);
    q.waiting = batch === q.waiting ? [] : q.waiting.slice(RENEW_BATCH_MAX);
    q.inFlight++;
    // The first caller to give up ends the request; every caller then tries again as it would after any failure.
    let deadline = Number.POSITIVE_INFINITY;
    for (const p of batch) deadline = Math.min(deadline, p.deadline);
    const settled = (): void => {
      q.inFlight--;
      if (q.waiting.length > 0) this.#sendRenewBatch(peerUrl, q);
      else if (q.inFlight === 0) this.#renewQueues.delete(peerUrl);
    };
    this.#host.transport.request(joinPath(peerUrl, PEER_LEASE_BATCH_PATH), encodeLeaseIds(batch.map((p) => p.id)), deadline - performance.now()).then(
      (res) => {
        let ttls: number[] | undefined;
        let err: unknown;
        if (res.status === 200) {
          try {
            ttls = decodeTtls(res.body);
            if (ttls.length !== batch.length) throw new Error("lease: batch answer of another length");
          } catch (e) {
            err = e;
          }
        } else {
          const text = res.body.toString("utf8").trim();
          if (res.status === 400 && text.startsWith(UNKNOWN_PATH_TEXT)) this.#noBatchUrls.add(peerUrl);
          err = new RetryLaterError(`lease: unknown error(${text})`);
        }
        settled();
        if (ttls !== undefined) for (let i = 0; i < batch.length; i++) batch[i]!.resolve(ttls[i]! < 0 ? undefined : ttls[i]);
        else for (const p of batch) p.reject(err);
      },
      (err: unknown) => {
        settled();
        for (const p of batch) p.reject(err);
      },
    );
  }

  async #forwardRenewOne(peerUrl: string, id: LeaseId, timeoutMs: number): Promise<number | undefined> {
    const res = await this.#host.transport.request(joinPath(peerUrl, PEER_LEASE_PATH), encodeRenewRequest(id), timeoutMs);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new RetryLaterError(`lease: unknown error(${res.body.toString("utf8").trim()})`);
    const r = decodeRenewResponse(res.body);
    if (r.id !== id) throw new RetryLaterError("lease: renew id mismatch");
    return r.ttl;
  }

  async #forwardTimeToLive(peerUrl: string, id: LeaseId, keys: boolean, timeoutMs: number): Promise<LeaseTimeToLiveResponse | undefined> {
    const res = await this.#host.transport.request(joinPath(peerUrl, PEER_LEASE_INTERNAL_PATH), encodeTimeToLiveRequest(id, keys), timeoutMs);
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw new RetryLaterError(`lease: unknown error(${res.body.toString("utf8").trim()})`);
    const r = decodeTimeToLiveResponse(res.body);
    if (r.id !== id) throw new RetryLaterError("lease: renew id mismatch");
    return r;
  }

  /** True once this member is the primary lessor; false when `ms` passed, it stopped leading, or stopped. */
  async #waitPrimary(ms: number): Promise<boolean> {
    const until = performance.now() + ms;
    while (!this.#table.primary) {
      const left = until - performance.now();
      if (this.#stopped || !this.#host.isLeader || left <= 0) return false;
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(left, 50));
        const waiters = this.#primaryWaiters;
        function done(): void {
          clearTimeout(t);
          resolve();
        }
        waiters.push(done);
      });
    }
    return true;
  }

  #wakePrimaryWaiters(): void {
    const ws = this.#primaryWaiters;
    this.#primaryWaiters = [];
    for (const w of ws) w();
  }

  /** The leader revokes what its deadlines say has expired; the revocations go through the log. */
  #expire(): void {
    if (!this.#host.isLeader || !this.#table.primary) return;
    const next = this.#table.nextDeadline();
    if (next === undefined || next > performance.now()) return;
    for (const id of this.#table.due(REVOKES_PER_CHECK)) {
      const op: V3Op = { k: "leaseRevoke", id };
      this.#host.propose({ t: "v3", time: Date.now(), op }).then(
        (r) => {
          // Counted as etcd counts it: once the revocation applied (not for a lease already gone).
          if (r.ok) this.#host.metrics.leaseExpired.inc();
          else if (!isLeaseNotFound(r.error)) {
            this.#log.warn("failed to revoke an expired lease", { leaseId: id.toString(16), error: r.error.message });
          }
        },
        // Not applied (leadership lost, timeout): the table offers it again after the retry interval.
        (err: unknown) => this.#log.warn("failed to revoke an expired lease", { leaseId: id.toString(16), error: String(err) }),
      );
    }
  }

  /**
   * The leader proposes the lease checkpoints that are due (etcd's checkpointScheduledLeases):
   * up to 1000 leases per entry. A checkpoint that is not applied is due again an interval later.
   */
  #checkpoint(): void {
    if (!this.#checkpointing || !this.#host.isLeader || !this.#table.primary) return;
    const next = this.#table.nextCheckpoint();
    if (next === undefined || next > performance.now()) return;
    for (let i = 0; i < CHECKPOINT_ENTRIES_PER_CHECK; i++) {
      const cps = this.#table.dueCheckpoints(CHECKPOINTS_PER_ENTRY);
      if (cps.length === 0) break;
      const op: V3Op = { k: "leaseCheckpoint", cps };
      const lost = (why: string): void => {
        this.#log.warn("failed to checkpoint leases", { leases: cps.length, error: why });
        this.#table.checkpointsLost(cps.map((c) => c.id));
      };
      this.#host.propose({ t: "v3", time: Date.now(), op }).then(
        (r) => {
          if (!r.ok) lost(r.error.message);
        },
        (err: unknown) => lost(String(err)),
      );
      if (cps.length < CHECKPOINTS_PER_ENTRY) break;
    }
  }
}
