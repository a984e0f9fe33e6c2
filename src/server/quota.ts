// etcd's backend quota costs (etcdserver/quota.go): what a write is charged against
// --quota-backend-bytes, judged where a request arrives and again where it applies.
import { AlarmAction, AlarmType, type PutRequest, type TxnRequest } from "../store/v3/index.ts";
import type { V3Op } from "./v3-command.ts";

/** etcd's estimates of a key's metadata and of a lease. */
const KV_OVERHEAD = 256;
export const LEASE_OVERHEAD = 64;

export function costPut(r: PutRequest): number {
  return KV_OVERHEAD + r.key.length + r.value.length;
}

/** etcd's costTxn: the larger branch's top-level puts. */
export function costTxn(r: TxnRequest): number {
  const cost = (ops: TxnRequest["success"]): number => ops.reduce((n, op) => n + ("put" in op ? costPut(op.put) : 0), 0);
  return Math.max(cost(r.success), cost(r.failure));
}

/**
 * The operation a member proposes when a write does not fit: the NOSPACE alarm, raised by
 * `memberId` (where the request arrived, or where it applied), as etcd's quotaAlarmer and
 * applyEntryNormal raise it.
 */
export function noSpaceAlarm(memberId: number): Extract<V3Op, { k: "alarm" }> {
  return { k: "alarm", r: { action: AlarmAction.ACTIVATE, memberId: BigInt(memberId).toString(), alarm: AlarmType.NOSPACE } };
}

/** The operations etcd's quotaApplierV3 judges (put, txn, lease grant), 0 for the others. */
export function quotaCost(op: V3Op): number {
  switch (op.k) {
    case "put":
      return costPut(op.r);
    case "txn":
      return costTxn(op.r);
    case "leaseGrant":
      return LEASE_OVERHEAD;
    default:
      return 0;
  }
}
