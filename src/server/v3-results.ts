// What apply answers for each v3 command. ApplyResult carries every answer as the union
// V3Answer (its `v3` field); V3Results says which type apply.ts gives each command (V3KeySpace's own
// method types, v3 auth's result by op kind), and the two functions here are the one place
// the server reads an answer back as that type.
import type { V3AuthOp, V3AuthResults } from "../auth/index.ts";
import type { V3KeySpace } from "../store/v3/index.ts";
import type { ApplyResult } from "./apply.ts";
import type { V3Op } from "./v3-command.ts";

export interface V3Results {
  put: ReturnType<V3KeySpace["put"]>["response"];
  deleteRange: ReturnType<V3KeySpace["deleteRange"]>["response"];
  txn: ReturnType<V3KeySpace["txn"]>["response"];
  compact: ReturnType<V3KeySpace["compact"]>;
  leaseGrant: ReturnType<V3KeySpace["leaseGrant"]>;
  leaseRevoke: ReturnType<V3KeySpace["leaseRevoke"]>["response"];
  leaseCheckpoint: ReturnType<V3KeySpace["leaseCheckpoint"]>;
  leaseRenew: ReturnType<V3KeySpace["leaseRenew"]>;
  leasePromote: null;
  alarm: ReturnType<V3KeySpace["alarm"]>;
}

/** Any v3 answer, as ApplyResult carries it: a union, which v3ResultOf narrows by the command. */
export type V3Answer = V3Results[keyof V3Results] | V3AuthResults[keyof V3AuthResults];

/** A command that applied (a refused one carries its error instead). */
export type Applied = Extract<ApplyResult, { ok: true }>;

/** The answer of `op` (any v3 command but auth), which applied as `result`; `op` only selects the type. */
export function v3ResultOf<K extends keyof V3Results>(op: Extract<V3Op, { k: K }>, result: Applied): V3Results[K] {
  return result.v3 as V3Results[K];
}

/** The answer of the auth command `op`, which applied as `result`; `op` only selects the type. */
export function v3AuthResultOf<K extends V3AuthOp["kind"]>(op: Extract<V3AuthOp, { kind: K }>, result: Applied): V3AuthResults[K] {
  return result.v3 as V3AuthResults[K];
}
