// Pending ReadIndex requests on the leader (etcd's read_only.go, ReadOnlySafe only).
//
// Linearizable reads without a log write (Raft thesis §6.4): the leader records its
// commit index when the request arrives, then broadcasts a heartbeat carrying the
// request's ctx. Once a quorum acknowledged that heartbeat, the leader knows it was
// still the leader when the request arrived, so the recorded index is safe to read at:
// the requester waits until applied >= index, then reads locally.

import type { Message } from "./types.ts";
import { bytesKey } from "./util.ts";

export interface ReadIndexStatus {
  /** The original MsgReadIndex (local, or forwarded by a follower). */
  req: Message;
  /** The leader's commit index when the request arrived. */
  index: number;
  /** Voters that acknowledged a heartbeat carrying this ctx (only `true` recorded). */
  acks: Map<number, boolean>;
}

/**
 * Invariant: queue holds exactly the keys of pending, in arrival order. A request
 * confirmed by a quorum confirms every request queued before it too (the heartbeat
 * round trip happened after they all arrived).
 */
export class ReadOnly {
  readonly pending = new Map<string, ReadIndexStatus>();
  queue: string[] = [];

  /** Queues a request; a duplicate ctx is ignored (the first one will answer). */
  addRequest(index: number, m: Message): void {
    const key = bytesKey(m.entries[0]!.data);
    if (this.pending.has(key)) return;
    this.pending.set(key, { index, req: m, acks: new Map() });
    this.queue.push(key);
  }

  /** Records id's heartbeat ack for ctx; returns the acks so far (undefined if unknown). */
  recvAck(id: number, context: Uint8Array): Map<number, boolean> | undefined {
    const rs = this.pending.get(bytesKey(context));
    if (rs === undefined) return undefined;
    rs.acks.set(id, true);
    return rs.acks;
  }

  /**
   * Dequeues and returns every request up to and including the one with m's ctx
   * (empty if that ctx is not pending).
   */
  advance(m: Message): ReadIndexStatus[] {
    const ctx = bytesKey(m.context);
    const at = this.queue.indexOf(ctx);
    if (at < 0) return [];
    const done = this.queue.slice(0, at + 1);
    this.queue = this.queue.slice(at + 1);
    return done.map((k) => {
      const rs = this.pending.get(k)!;
      this.pending.delete(k);
      return rs;
    });
  }

  /** ctx of the newest pending request, piggybacked on periodic heartbeats. */
  lastPendingRequestCtx(): Uint8Array | undefined {
    const k = this.queue[this.queue.length - 1];
    return k === undefined ? undefined : this.pending.get(k)!.req.entries[0]!.data;
  }
}
