// Handing leadership over: to the most up-to-date voter before a graceful stop (etcd does
// the same, so the cluster does not wait an election timeout), or to a chosen member
// (etcd's MoveLeader). Both wait at most two election timeouts.
import type { ConfState, Status } from "../raft/index.ts";
import { RequestTimeoutError } from "./errors.ts";
import type { Deadline } from "./deadline.ts";
import type { Logger } from "./logger.ts";

/** What a leadership transfer needs of its member. */
export interface LeadershipHost {
  readonly memberId: number;
  readonly electionTimeoutMs: number;
  readonly log: Logger;
  leaderId(): number;
  status(): Status;
  confState(): ConfState;
  /** Raft's transferLeader, then a run of the Ready loop. */
  transferLeader(to: number): void;
}

/** The voter (not `self`) whose log matches the leader's furthest; 0 for none. */
export function bestTransferee(self: number, status: Status, confState: ConfState): number {
  let best = 0;
  let bestMatch = -1;
  for (const [n, p] of status.progress ?? []) {
    if (n !== self && p.match > bestMatch && confState.voters.includes(n)) {
      best = n;
      bestMatch = p.match;
    }
  }
  return best;
}

export class Leadership {
  readonly #host: LeadershipHost;

  constructor(host: LeadershipHost) {
    this.#host = host;
  }

  /** Before stopping: hands leadership to the best follower, if this member leads. */
  async handOver(): Promise<void> {
    const h = this.#host;
    if (h.leaderId() !== h.memberId) return;
    const best = bestTransferee(h.memberId, h.status(), h.confState());
    if (best === 0) return;
    h.log.info("transferring leadership before stopping", { to: best.toString(16) });
    h.transferLeader(best);
    await this.#until(() => h.leaderId() !== h.memberId);
  }

  /**
   * Hands leadership to `target` (etcd's MoveLeader); resolves when it leads. etcd waits for
   * that until the caller's deadline, then answers "leader transfer took too long"; a caller
   * without one (the gateway's) would wait for ever there, so here two election timeouts.
   */
  async moveTo(target: number, deadline?: Deadline): Promise<void> {
    const h = this.#host;
    h.transferLeader(target);
    if (!(await this.#until(() => h.leaderId() === target, deadline))) throw new RequestTimeoutError("timeoutLeaderTransfer");
  }

  async #until(done: () => boolean, deadline?: Deadline): Promise<boolean> {
    const end = Date.now() + 2 * this.#host.electionTimeoutMs;
    const over = deadline === undefined ? (): boolean => Date.now() >= end : (): boolean => deadline.expired;
    // Woken at the deadline itself, not at the next poll: the gRPC server answers a call
    // whose backend did not end its wait a turn after the deadline, with the context's error.
    let wake: (() => void) | undefined;
    const stopWatching = deadline?.onExpire(() => wake?.());
    try {
      while (!done() && !over()) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 10);
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
    } finally {
      stopWatching?.();
    }
    return done();
  }
}
