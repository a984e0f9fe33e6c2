// etcd 3.4's require-leader rule (v3rpc/interceptor.go), for calls whose metadata carries
// hasleader=true (clientv3.WithRequireLeader; Kubernetes' API server opens its watches so):
// - a call, unary or stream, is refused with "etcdserver: no leader" (code 14) when the
//   member knows no leader as it arrives;
// - a stream opened so is ended with that status once the member has had no leader at
//   MAX_NO_LEADER_CHECKS checks in a row, one check per election timeout (monitorLeader:
//   reconnecting streams costs more than refusing calls, so it waits). A member cut off
//   from its cluster then tells its watchers, which move to another member, instead of
//   keeping them open and silent.
import { GrpcCode } from "../../api/v3-errors.ts";
import type { RequestHeaders } from "./h2/stream.ts";

/** etcd's maxNoLeaderCnt. */
export const MAX_NO_LEADER_CHECKS = 3;

/** rpctypes.ErrGRPCNoLeader. */
export const NO_LEADER = { code: GrpcCode.Unavailable, message: "etcdserver: no leader" } as const;

/** Whether the call asked for a leader (rpctypes.MetadataRequireLeaderKey = MetadataHasLeader). */
export function requiresLeader(headers: RequestHeaders): boolean {
  const v = headers["hasleader"];
  return (typeof v === "string" ? v : v?.[0]) === "true";
}

/** A stream the monitor can end. */
export interface LeaderBoundStream {
  finish(status: { code: number; message: string }): void;
}

export class LeaderMonitor {
  readonly #hasLeader: () => boolean;
  readonly #streams = new Set<LeaderBoundStream>();
  #noLeader = 0;
  readonly #timer: NodeJS.Timeout | undefined;

  /** `electionMs` 0: no timer (tests call check()). */
  constructor(hasLeader: () => boolean, electionMs: number) {
    this.#hasLeader = hasLeader;
    if (electionMs > 0) {
      this.#timer = setInterval(() => this.check(), electionMs);
      this.#timer.unref();
    }
  }

  get hasLeader(): boolean {
    return this.#hasLeader();
  }

  /** Streams tracked now (tests). */
  get size(): number {
    return this.#streams.size;
  }

  /** Watches `s` until the returned function is called (the call ended). */
  track(s: LeaderBoundStream): () => void {
    this.#streams.add(s);
    return () => {
      this.#streams.delete(s);
    };
  }

  /** One election timeout passed: count it, and end the streams once the count is reached. */
  check(): void {
    this.#noLeader = this.#hasLeader() ? 0 : this.#noLeader + 1;
    if (this.#noLeader < MAX_NO_LEADER_CHECKS || this.#streams.size === 0) return;
    const streams = [...this.#streams];
    this.#streams.clear();
    for (const s of streams) s.finish(NO_LEADER);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
