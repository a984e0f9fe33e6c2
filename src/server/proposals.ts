// Proposing and waiting: a command or a membership change goes into Raft with a request id,
// and its proposer waits for apply to trigger that id with the result (wait.ts).
//
// Invariants:
// - A proposal dropped because no leader is known is retried when one is, until the
//   request timeout (etcd: 5 s + 2 election timeouts); then NotProposedTimeoutError (etcd:
//   v2 "request timed out", v3 "context deadline exceeded"). One proposed that times out
//   says why (timeout-cause.ts).
// - Every waiter ends: with its apply result, the timeout, or "server stopped" (failAll).
// - Only the proposing member has a waiter: apply on the others triggers nothing.
// - A caller's deadline (gRPC's grpc-timeout) ends the wait as etcd's context does: before
//   the entry is in Raft "context deadline exceeded", after it "request timed out"; the
//   waiter is dropped either way (the entry, once proposed, still applies).
import { ProposalDroppedError, type ConfChange } from "../raft/index.ts";
import type { ApplyResult } from "./apply.ts";
import { encodeCommand, type Command, type CommandBody } from "./request.ts";
import type { Member } from "./membership.ts";
import { WaitRegistry, requestIdGenerator } from "./wait.ts";
import { NotProposedTimeoutError, ServerUnavailableError, type MemberError } from "./errors.ts";
import { V3Errors } from "../api/v3-errors.ts";
import type { ServerMetrics } from "./metrics/server-metrics.ts";
import type { WriteTracer } from "./write-trace.ts";
import { DeadlineExceededError, type Deadline } from "./deadline.ts";

/**
 * The context of a membership change entry: who proposed it (for the waiter), the member,
 * and whether an AddNode promotes a learner (etcd's IsPromote; entries of older logs lack it).
 */
export interface ConfChangeContext {
  proposer: number;
  reqId: number;
  member?: Member;
  promote?: boolean;
}

/** What the proposer needs of the member's Raft node and run loop. */
export interface ProposalHost {
  readonly memberId: number;
  readonly requestTimeoutMs: number;
  readonly metrics: ServerMetrics;
  stopped(): boolean;
  /** Hands bytes to Raft; throws ProposalDroppedError while no leader is known. */
  propose(data: Uint8Array): void;
  proposeConfChange(cc: ConfChange): void;
  /** Runs the Ready loop (the proposal goes out in the next Ready). */
  kick(): void;
  /** Follows sampled writes (write-trace.ts). */
  readonly tracer?: WriteTracer;
  /** Why a proposal begun at `startedAt` (Date.now()) timed out, as etcd says it (timeout-cause.ts). */
  timedOut?(startedAt: number): Error;
}

export class Proposals {
  readonly #host: ProposalHost;
  readonly #waits = new WaitRegistry<ApplyResult>();
  /** A membership change's outcome: refused at apply (etcd's ValidateConfigurationChange), or applied. */
  readonly #confWaits = new WaitRegistry<{ refused?: MemberError }>();
  readonly #nextId: () => number;
  /** Proposals waiting for a leader to be known. */
  #leaderWaiters: Array<() => void> = [];
  /** Proposals made since the start (disk-wait.ts reads it). */
  count = 0;

  constructor(host: ProposalHost, nowMs: number) {
    this.#host = host;
    this.#nextId = requestIdGenerator(nowMs);
  }

  /** Proposes a command and resolves with its apply result; `deadline`: the caller's. */
  propose(body: CommandBody, deadline?: Deadline): Promise<ApplyResult> {
    const id = this.#nextId();
    // Not `{ ...body, m, id }`: bodies come in several shapes, and V8's spread of an object
    // whose shape varies at the call site takes its slow path (~2.5 us a proposal, measured,
    // against ~0.3 us for this). Same keys in the same order, so the same entry bytes.
    const cmd = Object.assign({}, body) as Command;
    cmd.m = this.#host.memberId;
    cmd.id = id;
    return this.#proposeAndWait(
      this.#waits,
      id,
      () => {
        this.#host.propose(encodeCommand(cmd));
        this.#host.tracer?.proposed(id);
      },
      deadline,
    );
  }

  /**
   * Proposes a membership change; resolves once this member applied it, rejects with the
   * MemberError apply refused it with.
   */
  async proposeConfChange(type: ConfChange["type"], nodeId: number, member?: Member, opts: { promote?: boolean } = {}): Promise<void> {
    const reqId = this.#nextId();
    const ctx: ConfChangeContext = { proposer: this.#host.memberId, reqId };
    if (member) ctx.member = member;
    if (opts.promote !== undefined) ctx.promote = opts.promote;
    const res = await this.#proposeAndWait(this.#confWaits, reqId, () =>
      this.#host.proposeConfChange({ type, nodeId, context: Buffer.from(JSON.stringify(ctx)) }),
    );
    if (res.refused !== undefined) throw res.refused;
  }

  /** Apply's answer to the proposer of command `id` (on the proposing member). */
  applied(id: number, result: ApplyResult): void {
    this.#waits.trigger(id, result);
  }

  /**
   * Command `id` was applied in a database that came with a snapshot, so its outcome is not
   * known here: its proposer hears what a timeout says (etcd leaves it waiting until its
   * request times out). The error is built only for a waiter: a restart replays tens of
   * thousands of these with nobody waiting, and each Error captures a stack.
   */
  outcomeUnknown(id: number): void {
    if (this.#waits.has(id)) this.#waits.trigger(id, { ok: false, error: V3Errors.timeout() });
  }

  /** Apply of a membership change this member proposed; `refused`: apply refused it. */
  confApplied(ctx: ConfChangeContext, refused?: MemberError): void {
    if (ctx.proposer === this.#host.memberId) this.#confWaits.trigger(ctx.reqId, refused === undefined ? {} : { refused });
  }

  /** A leader is known: dropped proposals go again. */
  leaderKnown(): void {
    const ws = this.#leaderWaiters;
    this.#leaderWaiters = [];
    for (const w of ws) w();
  }

  failAll(err: unknown): void {
    this.#waits.failAll(err);
    this.#confWaits.failAll(err);
    // Proposals still waiting for a leader stop waiting: their waiter has its answer.
    this.leaderKnown();
  }

  async #proposeAndWait<R>(registry: WaitRegistry<R>, id: number, proposeFn: () => void, callerDeadline?: Deadline): Promise<R> {
    const host = this.#host;
    if (host.stopped()) throw new ServerUnavailableError("etcdserver: server stopped");
    this.count++;
    host.metrics.proposalStarted();
    const result = registry.register(id);
    // Awaited only once proposed: while it waits for a leader, a stop's failAll may reject
    // it first, which must not count as an unhandled rejection (it ended the process).
    result.catch(() => undefined);
    const deadline = Date.now() + host.requestTimeoutMs;
    let proposed = false;
    for (;;) {
      try {
        proposeFn();
        proposed = true;
        break;
      } catch (err) {
        if (!(err instanceof ProposalDroppedError)) {
          registry.fail(id, err);
          break;
        }
        if (host.stopped()) {
          registry.fail(id, new ServerUnavailableError("etcdserver: server stopped"));
          break;
        }
        if (Date.now() >= deadline) {
          registry.fail(id, new NotProposedTimeoutError());
          break;
        }
        if (callerDeadline?.expired === true || !(await this.#waitForLeader(deadline - Date.now(), callerDeadline))) {
          registry.fail(id, new DeadlineExceededError(false));
          break;
        }
      }
    }
    host.kick();
    const timer = setTimeout(() => registry.fail(id, host.timedOut?.(deadline - host.requestTimeoutMs) ?? new ServerUnavailableError("etcdserver: request timed out")), host.requestTimeoutMs);
    const stopWatching = proposed ? callerDeadline?.onExpire(() => registry.fail(id, host.timedOut?.(deadline - host.requestTimeoutMs) ?? new DeadlineExceededError(true))) : undefined;
    let failed = true;
    try {
      const r = await result;
      failed = false;
      return r;
    } finally {
      clearTimeout(timer);
      stopWatching?.();
      host.metrics.proposalEnded(failed);
    }
  }

  /** Resolves true when a leader is known or `ms` passed, false when the caller's deadline did. */
  #waitForLeader(ms: number, callerDeadline: Deadline | undefined): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      let t: NodeJS.Timeout | undefined;
      let stopWatching: (() => void) | undefined;
      const done = (leaderOrTimeout: boolean): void => {
        clearTimeout(t);
        stopWatching?.();
        resolve(leaderOrTimeout);
      };
      t = setTimeout(() => done(true), Math.max(1, ms));
      stopWatching = callerDeadline?.onExpire(() => done(false));
      this.#leaderWaiters.push(() => done(true));
    });
  }
}
