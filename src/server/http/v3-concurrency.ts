// etcd 3.4's Lock and Election services (v3lock, v3election). etcd serves them with
// clientv3/concurrency running against the member itself, as the caller (the call's
// context carries its token); here the same steps run on the V3Backend, with the caller's
// context, so auth, the log and the watch hub are the ones every v3 call uses.
//
// What clientv3 adds is kept, because clients see it:
// - every failure of an inner call comes back as gRPC code 2 with the inner message
//   (clientv3's toErr makes an EtcdError that grpc-go cannot read a code from);
// - lease 0 means "a new lease of 60 s" (concurrency.NewSession grants one: Lock, Campaign,
//   Proclaim and Resign all open a session; Leader and Observe use -1 and grant nothing);
// - a lock's key is `<name>/<lease in Go's %x>`, created only if absent; it waits until no
//   key of the name has a lower create revision, one predecessor deletion at a time
//   (waitDeletes); a call that ends while it waits deletes its key (Mutex.Lock, on error);
// - Campaign answers the header of its first txn, Lock the one of the read that ended the
//   wait; Proclaim with a stale leader is `election: not leader`, Leader of an empty
//   election `election: no leader`, a missing leader `"leader" field must be provided`;
// - Observe ends with status OK, not an error, when an inner read or watch fails.
// One difference: etcd deletes an abandoned lock key with its own client context, which
// carries no token, so with auth on the key stays behind until its lease ends; here the
// delete is made as the caller.
import { GrpcCode, V3Error, V3Errors } from "../../api/v3-errors.ts";
import {
  CompareResult,
  CompareTarget,
  EventType,
  isReadOnlyTxn,
  SortOrder,
  SortTarget,
  prefixRangeEnd,
  rangeRequest,
  validateTxn,
  type KeyValue,
  type LeaseId,
  type RangeRequest,
  type RangeResponse,
  type TxnRequest,
  type TxnResponse,
  type WatchMessage,
} from "../../store/v3/index.ts";
import type { V3Backend, V3CallContext, V3WatchRegistration } from "./v3-backend.ts";
import { RaftField, givenOperand, raftRequestSize, txnRequestSize } from "./v3-proto-size.ts";

/** concurrency.defaultSessionTTL: the lease a session grants when asked for lease 0. */
export const SESSION_TTL_SECONDS = 60;

export const ErrElectionNotLeader = "election: not leader";
export const ErrElectionNoLeader = "election: no leader";
export const ErrMissingLeaderKey = '"leader" field must be provided';

/** v3electionpb.LeaderKey. */
export interface LeaderKey {
  name: Buffer;
  key: Buffer;
  rev: number;
  lease: LeaseId;
}

/** A call: the caller, and the signal that it ended (client cancel, deadline, disconnect). */
export interface ConcurrencyCall {
  ctx: V3CallContext;
  signal: AbortSignal;
}

/** An answer: the revision its header carries, and what it returns. */
export interface LockResult {
  revision: number;
  key: Buffer;
}
export interface CampaignResult {
  revision: number;
  leader: LeaderKey;
}
export interface LeaderResult {
  revision: number;
  kv: KeyValue;
}

/** Where Observe sends its answers: send() false = the client's buffer is full, wait for drained(). */
export interface ObserveSink {
  send(r: LeaderResult): boolean;
  drained(): Promise<void>;
}

// ---- pure parts ----------------------------------------------------------------------------

/** Go's fmt %x of an int64: lower-case hex, a minus sign for negatives. */
export function goHex(n: bigint): string {
  return n < 0n ? `-${(-n).toString(16)}` : n.toString(16);
}

/** The key a lease holds in a lock or an election: `<prefix><lease in hex>`. */
export function ownKey(prefix: Buffer, lease: LeaseId): Buffer {
  return Buffer.concat([prefix, Buffer.from(goHex(lease))]);
}

/** A lock's or an election's key prefix: the name and "/". */
export function prefixOf(name: Buffer): Buffer {
  return Buffer.concat([name, Buffer.from("/")]);
}

const NONE = Buffer.alloc(0);

/** As clientv3's Compare(CreateRevision(key), "=", rev): the operand set, 0 too (on the wire, in the size). */
function createRevisionIs(key: Buffer, rev: number): TxnRequest["compare"][number] {
  return givenOperand({ key, rangeEnd: NONE, result: CompareResult.EQUAL, target: CompareTarget.CREATE, createRevision: rev }, { createRevision: rev });
}

function putOp(key: Buffer, value: Buffer, lease: LeaseId): TxnRequest["success"][number] {
  return { put: { key, value, lease, prevKv: false, ignoreValue: false, ignoreLease: false } };
}

/** clientv3's WithFirstCreate (or WithLastCreate): the key of the prefix created first (last). */
export function firstCreated(prefix: Buffer, order: "first" | "last" = "first", maxCreateRevision = 0): RangeRequest {
  return rangeRequest({
    key: prefix,
    rangeEnd: prefixRangeEnd(prefix),
    limit: 1,
    sortTarget: SortTarget.CREATE,
    sortOrder: order === "first" ? SortOrder.ASCEND : SortOrder.DESCEND,
    maxCreateRevision,
  });
}

/** Mutex.Lock's txn: create the key if absent (else read it), and read the oldest holder. */
export function lockTxn(prefix: Buffer, key: Buffer, lease: LeaseId): TxnRequest {
  const owner = { range: firstCreated(prefix) };
  return {
    compare: [createRevisionIs(key, 0)],
    success: [putOp(key, NONE, lease), owner],
    failure: [{ range: rangeRequest({ key }) }, owner],
  };
}

/**
 * What Mutex.Lock reads from its txn: its key's create revision, and whether it holds the
 * lock already (no older key of the prefix).
 */
export function lockPosition(r: TxnResponse): { myRev: number; owner: boolean } {
  let myRev = r.revision;
  if (!r.succeeded) myRev = rangeOf(r, 0).kvs[0]?.createRevision ?? myRev;
  const first = rangeOf(r, 1).kvs[0];
  return { myRev, owner: first === undefined || first.createRevision === myRev };
}

function rangeOf(r: TxnResponse, i: number): RangeResponse {
  const op = r.responses[i];
  if (op === undefined || !("range" in op)) throw new Error(`txn response ${i} is not a range`);
  return op.range;
}

/** Election.Campaign's txn: put the value under the key if absent, else read the key. */
export function campaignTxn(key: Buffer, value: Buffer, lease: LeaseId): TxnRequest {
  return { compare: [createRevisionIs(key, 0)], success: [putOp(key, value, lease)], failure: [{ range: rangeRequest({ key }) }] };
}

/** Election.Proclaim's txn: the new value, if the key is still the one created at `rev`. */
export function proclaimTxn(key: Buffer, rev: number, value: Buffer, lease: LeaseId): TxnRequest {
  return { compare: [createRevisionIs(key, rev)], success: [putOp(key, value, lease)], failure: [] };
}

/** Election.Resign's txn: delete the key, if it is still the one created at `rev`. */
export function resignTxn(key: Buffer, rev: number): TxnRequest {
  return { compare: [createRevisionIs(key, rev)], success: [{ deleteRange: { key, rangeEnd: NONE, prevKv: false } }], failure: [] };
}

/** An inner call's failure as the service answers it: code 2, the inner message (clientv3's toErr). */
export function asClientError(err: unknown): V3Error {
  if (err instanceof V3Error) return err.code === GrpcCode.Unknown ? err : new V3Error(GrpcCode.Unknown, err.message);
  return new V3Error(GrpcCode.Unknown, err instanceof Error ? err.message : String(err));
}

/** The call ended before the service did (Go's ctx.Err()). */
function endedError(ctx: V3CallContext): V3Error {
  return new V3Error(GrpcCode.Unknown, ctx.deadline?.expired === true ? "context deadline exceeded" : "context canceled");
}

/** The caller without its deadline: for the clean-up after the call ended. */
function withoutDeadline(ctx: V3CallContext): V3CallContext {
  const { deadline: _deadline, ...rest } = ctx;
  return rest;
}

// ---- the services ----------------------------------------------------------------------------

export interface ConcurrencyOptions {
  /** --max-txn-ops: etcd's own txns go through the same checks. */
  maxTxnOps?: number;
  /** --max-request-bytes: a txn that writes is refused past it, as any proposal (a Campaign's large value). */
  maxRequestBytes?: number;
}

export class V3Concurrency {
  readonly #b: V3Backend;
  readonly #maxTxnOps: number | undefined;
  readonly #maxRequestBytes: number;

  constructor(backend: V3Backend, opts: ConcurrencyOptions = {}) {
    this.#b = backend;
    this.#maxTxnOps = opts.maxTxnOps;
    this.#maxRequestBytes = opts.maxRequestBytes ?? Number.POSITIVE_INFINITY;
  }

  /** v3lock Lock: the key once the lock is held. */
  async lock(req: { name: Buffer; lease: LeaseId }, call: ConcurrencyCall): Promise<LockResult> {
    const lease = await this.#session(req.lease, call);
    const prefix = prefixOf(req.name);
    const key = ownKey(prefix, lease);
    // The txn runs to its end whatever the call does, so that a key it created is known
    // and deleted below: a lock key left behind would be granted to no one, later.
    const r = await this.#txn(lockTxn(prefix, key, lease), { ctx: withoutDeadline(call.ctx), signal: call.signal });
    const { myRev, owner } = lockPosition(r);
    try {
      this.#checkEnded(call);
      if (owner) return { revision: r.revision, key };
      return { revision: await this.#waitDeletes(prefix, myRev - 1, call), key };
    } catch (err) {
      await this.#b.deleteRange({ key, rangeEnd: NONE, prevKv: false }, withoutDeadline(call.ctx)).catch(() => undefined);
      throw err;
    }
  }

  /** v3lock Unlock: deletes the key. */
  async unlock(key: Buffer, call: ConcurrencyCall): Promise<{ revision: number }> {
    const req = { key, rangeEnd: NONE, prevKv: false };
    if (key.length === 0) throw asClientError(new V3Error(GrpcCode.InvalidArgument, "etcdserver: key is not provided"));
    const r = await this.#b.deleteRange(req, call.ctx).catch((err: unknown) => {
      throw asClientError(err);
    });
    return { revision: r.revision };
  }

  /** v3election Campaign: the leader key once this lease leads the election. */
  async campaign(req: { name: Buffer; lease: LeaseId; value: Buffer }, call: ConcurrencyCall): Promise<CampaignResult> {
    const lease = await this.#session(req.lease, call);
    const prefix = prefixOf(req.name);
    const key = ownKey(prefix, lease);
    const r = await this.#txn(campaignTxn(key, req.value, lease), { ctx: withoutDeadline(call.ctx), signal: call.signal });
    let rev = r.revision;
    const kv = r.succeeded ? undefined : rangeOf(r, 0).kvs[0];
    if (kv !== undefined) {
      rev = kv.createRevision;
      if (!kv.value.equals(req.value)) {
        try {
          await this.#proclaim(key, rev, req.value, lease, call);
        } catch (err) {
          await this.#txn(resignTxn(key, rev), call).catch(() => undefined);
          throw err;
        }
      }
    }
    try {
      this.#checkEnded(call);
      await this.#waitDeletes(prefix, rev - 1, call);
    } catch (err) {
      // The call ended: its key goes (Campaign resigns); a read that failed leaves it.
      if (call.signal.aborted || call.ctx.deadline?.expired === true) {
        await this.#txn(resignTxn(key, rev), { ctx: withoutDeadline(call.ctx), signal: call.signal }).catch(() => undefined);
      }
      throw err;
    }
    return { revision: r.revision, leader: { name: req.name, key, rev, lease } };
  }

  /** v3election Proclaim: a new value, if `leader` still leads. */
  async proclaim(leader: LeaderKey | undefined, value: Buffer, call: ConcurrencyCall): Promise<{ revision: number }> {
    if (leader === undefined) throw new V3Error(GrpcCode.Unknown, ErrMissingLeaderKey);
    const lease = await this.#session(leader.lease, call);
    return { revision: await this.#proclaim(leader.key, leader.rev, value, lease, call) };
  }

  async #proclaim(key: Buffer, rev: number, value: Buffer, lease: LeaseId, call: ConcurrencyCall): Promise<number> {
    const r = await this.#txn(proclaimTxn(key, rev, value, lease), call);
    if (!r.succeeded) throw new V3Error(GrpcCode.Unknown, ErrElectionNotLeader);
    return r.revision;
  }

  /** v3election Resign: deletes the leader key, if it is still the one created at `rev` (no error otherwise). */
  async resign(leader: LeaderKey | undefined, call: ConcurrencyCall): Promise<{ revision: number }> {
    if (leader === undefined) throw new V3Error(GrpcCode.Unknown, ErrMissingLeaderKey);
    await this.#session(leader.lease, call);
    const r = await this.#txn(resignTxn(leader.key, leader.rev), call);
    return { revision: r.revision };
  }

  /** v3election Leader: the key of the election created first. */
  async leader(name: Buffer, call: ConcurrencyCall): Promise<LeaderResult> {
    const r = await this.#range(firstCreated(prefixOf(name)), call);
    const kv = r.kvs[0];
    if (kv === undefined) throw new V3Error(GrpcCode.Unknown, ErrElectionNoLeader);
    return { revision: r.revision, kv };
  }

  /**
   * v3election Observe: the leader now (or once there is one), then each of its new
   * values, until its key goes, then the next leader, ... until the call ends. Resolves
   * when it stops: the call ended, or an inner read or watch failed (etcd ends the stream
   * with OK then, too).
   */
  async observe(name: Buffer, call: ConcurrencyCall, sink: ObserveSink): Promise<void> {
    const prefix = prefixOf(name);
    try {
      while (!call.signal.aborted) {
        const r = await this.#range(firstCreated(prefix), call);
        let current: LeaderResult | undefined = r.kvs[0] === undefined ? undefined : { revision: r.revision, kv: r.kvs[0] };
        if (current === undefined) {
          // No leader yet: the first put under the prefix is the leader (a header at its revision).
          current = await this.#watch(
            { key: prefix, rangeEnd: prefixRangeEnd(prefix), startRevision: r.revision },
            call,
            (msg) => {
              const put = msg.events.find((e) => e.type === EventType.PUT);
              return put === undefined ? undefined : { revision: put.kv.modRevision, kv: put.kv };
            },
          );
        }
        let blocked = !sink.send(current);
        // Its new values until its key is deleted.
        let drain: Promise<void> | undefined;
        await this.#watch({ key: current.kv.key, rangeEnd: NONE, startRevision: current.revision + 1 }, call, (msg, reg, canRefuse) => {
          if (blocked && canRefuse) {
            drain ??= sink.drained().then(() => {
              blocked = false;
              drain = undefined;
              if (!call.signal.aborted) reg.resume();
            });
            return false;
          }
          for (const e of msg.events) {
            if (e.type === EventType.DELETE) return true;
            blocked = !sink.send({ revision: msg.revision, kv: e.kv });
          }
          return undefined;
        });
      }
    } catch {
      // The call ended, or a read or watch failed: the stream ends (etcd: OK).
    }
  }

  // ---- the steps ----------------------------------------------------------------------------

  /**
   * concurrency.NewSession's lease: the one given (it is not checked: a missing lease fails
   * the first put), or for 0 a new lease of 60 s.
   */
  async #session(lease: LeaseId, call: ConcurrencyCall): Promise<LeaseId> {
    if (lease !== 0n) return lease;
    try {
      return (await this.#b.leaseGrant({ id: 0n, ttl: SESSION_TTL_SECONDS }, call.ctx)).id;
    } catch (err) {
      throw asClientError(err);
    }
  }

  async #txn(req: TxnRequest, call: ConcurrencyCall): Promise<TxnResponse> {
    try {
      validateTxn(req, this.#maxTxnOps);
      if (!isReadOnlyTxn(req) && raftRequestSize(RaftField.txn, txnRequestSize(req)) > this.#maxRequestBytes) throw V3Errors.requestTooLarge();
      return await this.#b.txn(req, call.ctx);
    } catch (err) {
      throw asClientError(err);
    }
  }

  async #range(req: RangeRequest, call: ConcurrencyCall): Promise<RangeResponse> {
    this.#checkEnded(call);
    try {
      return await this.#b.range(req, call.ctx);
    } catch (err) {
      throw asClientError(err);
    }
  }

  #checkEnded(call: ConcurrencyCall): void {
    if (call.signal.aborted) throw endedError(call.ctx);
  }

  /**
   * waitDeletes: until no key of the prefix up to `maxCreateRev` is left, waits for the
   * deletion of the last created one. The revision of the read that found none.
   */
  async #waitDeletes(prefix: Buffer, maxCreateRev: number, call: ConcurrencyCall): Promise<number> {
    for (;;) {
      const r = await this.#range(firstCreated(prefix, "last", maxCreateRev), call);
      const last = r.kvs[0];
      if (last === undefined) return r.revision;
      await this.#watch({ key: last.key, rangeEnd: NONE, startRevision: r.revision }, call, (msg) =>
        msg.events.some((e) => e.type === EventType.DELETE) ? true : undefined,
      );
    }
  }

  /**
   * One watcher as the caller, from `startRevision`, until `take` returns a value (not
   * undefined; false refuses the message: the hub pauses the watcher until resume(); only
   * a message the hub hands over live can be refused, not one replayed before the
   * registration was known, which the hub counts as taken).
   * Rejects when the call ends or the watcher is canceled; the watcher goes in every case.
   */
  #watch<T>(
    w: { key: Buffer; rangeEnd: Buffer; startRevision: number },
    call: ConcurrencyCall,
    take: (msg: WatchMessage, reg: V3WatchRegistration, canRefuse: boolean) => T | false | undefined,
  ): Promise<Exclude<T, false>> {
    this.#checkEnded(call);
    return new Promise((resolve, reject) => {
      let reg: V3WatchRegistration | undefined;
      let settled = false;
      const early: WatchMessage[] = [];
      const finish = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        call.signal.removeEventListener("abort", onAbort);
        reg?.cancel();
        fn();
      };
      const onAbort = (): void => finish(() => reject(endedError(call.ctx)));
      // Returns what the hub is told: false = not taken.
      const deliver = (msg: WatchMessage, r: V3WatchRegistration, canRefuse: boolean): boolean => {
        if (msg.canceled === true) {
          finish(() => reject(new V3Error(GrpcCode.Unknown, "etcdserver: mvcc: required revision has been compacted")));
          return true;
        }
        const v = take(msg, r, canRefuse);
        if (v === false) return false;
        if (v !== undefined) finish(() => resolve(v as Exclude<T, false>));
        return true;
      };
      call.signal.addEventListener("abort", onAbort);
      this.#b
        .watch(
          { key: w.key, rangeEnd: w.rangeEnd, startRevision: w.startRevision, prevKv: false, filters: { noPut: false, noDelete: false }, progressNotify: false },
          {
            send: (msg) => {
              if (settled) return true;
              // History replayed before the registration is known: kept until it is.
              if (reg === undefined) {
                early.push(msg);
                return true;
              }
              return deliver(msg, reg, true);
            },
          },
          call.ctx,
        )
        .then(
          (r) => {
            reg = r;
            if (settled) {
              r.cancel();
              return;
            }
            for (const msg of early.splice(0)) {
              if (settled) break;
              deliver(msg, r, false);
            }
          },
          (err: unknown) => finish(() => reject(asClientError(err))),
        );
    });
  }
}
