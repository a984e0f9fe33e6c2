// The v3 operations the Raft log carries, and their JSON form. Requests hold raw bytes
// (Buffer) and lease IDs (bigint), which plain JSON cannot carry: they travel tagged,
// {"$b": base64} and {"$n": "decimal"}, and come back as the same types, so apply sees
// exactly what the proposer built.
import type { AlarmActionValue, AlarmTypeValue, CompactionRequest, DeleteRangeRequest, LeaseId, PutRequest, TxnRequest } from "../store/v3/index.ts";
import type { V3AuthInfo, V3AuthOp } from "../auth/index.ts";

/**
 * A write's caller as the proposing member saw it: etcd's RequestHeader{Username,
 * AuthRevision}, which every client write carries whatever the member's auth state. null
 * is a caller without a token (nor a client certificate name): apply refuses it while auth
 * is on there ('user name is empty'), as etcd's empty Username, even when auth was still
 * off at the proposing member (an AuthEnable committed through another member ahead of
 * it). Apply judges the write against the auth state of its log position, so a revoke
 * committed between the member's lookup and the write's turn is in effect. Absent: an
 * older log's write (checked before it was proposed), or the leader's own revocation of an
 * expired lease (etcd revokes those as root): not judged at apply.
 */
export type V3WriteStamp = V3AuthInfo | null;

export type V3Op =
  | { k: "put"; r: PutRequest; a?: V3WriteStamp }
  | { k: "deleteRange"; r: DeleteRangeRequest; a?: V3WriteStamp }
  | { k: "txn"; r: TxnRequest; a?: V3WriteStamp }
  | { k: "compact"; r: CompactionRequest }
  | { k: "leaseGrant"; id: LeaseId; ttl: number }
  /** `a` as a write's: etcd's authApplierV3.LeaseRevoke checks the caller may write every key of the lease. */
  | { k: "leaseRevoke"; id: LeaseId; a?: V3WriteStamp }
  /**
   * etcd's LeaseCheckpointRequest: the leader's view of each lease's seconds left
   * (--experimental-enable-lease-checkpoint); 0 clears a lease's checkpoint.
   */
  | { k: "leaseCheckpoint"; cps: { id: LeaseId; remainingTtl: number }[] }
  /**
   * Older logs only: a keepalive through the log, and a new leader's extension of every
   * lease. Keepalives and promotion now live in the leader's memory (lease-keeper.ts); these
   * are never proposed, and applied as before when an old log is replayed.
   */
  | { k: "leaseRenew"; id: LeaseId }
  | { k: "leasePromote"; extendMs: number }
  /** `info` is the caller (null without a token): apply checks the admin rules against the state it applies to. */
  | { k: "auth"; op: V3AuthOp; info: V3AuthInfo | null }
  /** Raise or clear an alarm (etcd's Alarm request; GET is served without the log). */
  | { k: "alarm"; r: { action: AlarmActionValue; memberId: string; alarm: AlarmTypeValue } };

/** JSON.stringify replacer: Buffers and bigints as tagged objects. `this` is the holder. */
function replacer(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  if (Buffer.isBuffer(raw)) return { $b: raw.toString("base64") };
  if (typeof value === "bigint") return { $n: value.toString() };
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    if (typeof o["$b"] === "string" && Object.keys(o).length === 1) return Buffer.from(o["$b"], "base64");
    if (typeof o["$n"] === "string" && Object.keys(o).length === 1) return BigInt(o["$n"]);
  }
  return value;
}

export function stringifyWithBytes(v: unknown): string {
  return JSON.stringify(v, replacer);
}

export function parseWithBytes(s: string): unknown {
  return JSON.parse(s, reviver);
}
