// The apply chain: the deterministic state machine behind the Raft log. Given the same
// committed commands in the same order it produces the same state on every member: it
// never reads the clock, the environment or the disk (time comes from the command).
import { V2Error } from "../api/v2-errors.ts";
import type { V2Event, V2Store } from "../store/v2/store.ts";
import type { Command, V2Request } from "./request.ts";
import type { Membership } from "./membership.ts";
import type { V2AuthResult, V2AuthState, V3AuthState } from "../auth/index.ts"; // v2 access control
import { V3Error } from "../api/v3-errors.ts";
import type { LeaseId, RevisionEvents, V3KeySpace } from "../store/v3/index.ts";
import type { V3Op, V3WriteStamp } from "./v3-command.ts";
import { checkDeleteRangeRequest, checkLeaseKeys, checkPutRequest, checkTxnRequest } from "../auth/index.ts";
import type { V3Answer } from "./v3-results.ts";
import { quotaCost } from "./quota.ts";

/**
 * `auth` is set for v2 auth commands, `v3` for v3 commands (the operation's response).
 * `changes` lists the v3 revisions the entry produced (for the watch hub), whoever proposed it.
 */
export type ApplyResult =
  | { ok: true; event?: V2Event; auth?: V2AuthResult; v3?: V3Answer; changes?: RevisionEvents[]; noSpace?: true }
  | { ok: false; error: V2Error | V3Error };

export interface StateMachine {
  store: V2Store;
  membership: Membership;
  /** v2 users, roles and the enabled flag. */
  auth: V2AuthState;
  /** The v3 key space and its leases. */
  v3: V3KeySpace;
  /** v3 users, roles, tokens. */
  v3auth: V3AuthState;
  /**
   * etcd's quotaApplierV3: would a write of `cost` bytes keep this member's database under
   * --quota-backend-bytes? Absent: no quota.
   */
  quotaAvailable?(cost: number): boolean;
}

/**
 * etcd's authApplierV3.Put: the stamped caller may write the key (and read it for prevKv)
 * in the auth state this entry meets, and, as checkLeasePuts, write every key its lease
 * already holds (revoking the lease deletes them). A stamp older than the state's auth
 * revision is refused whatever it asks (ErrAuthOldRevision); auth off lets every write by.
 */
function checkPutAtApply(sm: StateMachine, r: Extract<V3Op, { k: "put" }>["r"], a: V3WriteStamp, time: number): void {
  checkPutRequest(sm.v3auth, a, r);
  if (r.lease !== 0n) checkLeasePuts(sm, r.lease, a, time);
}

/**
 * etcd's checkLeasePuts: with auth on, the stamped caller may write every key lease `id`
 * holds. A lease without keys (or unknown here) asks nothing, not even a user: etcd
 * revokes a key-less lease for a caller without a token.
 */
function checkLeasePuts(sm: StateMachine, id: LeaseId, a: V3WriteStamp, time: number): void {
  if (sm.v3auth.enabled) checkLeaseKeys(sm.v3auth, a, sm.v3.timeToLive(id, time, { keys: true })?.keys ?? []);
}

/** Applies one v3 operation at the entry's time and index. Throws V3Error for a refused one. */
function applyV3(sm: StateMachine, op: V3Op, at: { time: number; index: number }): { v3: V3Answer; changes?: RevisionEvents[] } {
  const one = <R extends V3Answer>(w: { response: R; changes?: RevisionEvents }): { v3: V3Answer; changes?: RevisionEvents[] } =>
    w.changes === undefined ? { v3: w.response } : { v3: w.response, changes: [w.changes] };
  switch (op.k) {
    case "put":
      if (op.a !== undefined) checkPutAtApply(sm, op.r, op.a, at.time);
      return one(sm.v3.put(op.r));
    case "deleteRange":
      if (op.a !== undefined) checkDeleteRangeRequest(sm.v3auth, op.a, op.r);
      return one(sm.v3.deleteRange(op.r));
    case "txn":
      if (op.a !== undefined) checkTxnRequest(sm.v3auth, op.a, op.r);
      return one(sm.v3.txn(op.r));
    case "compact":
      return { v3: sm.v3.compact(op.r.revision) };
    case "leaseGrant":
      return { v3: sm.v3.leaseGrant({ id: op.id, ttl: op.ttl }, at.time) };
    case "leaseRevoke":
      // Refused, the lease and its keys stay, and so does its deadline (lease-keeper.ts).
      if (op.a !== undefined) checkLeasePuts(sm, op.id, op.a, at.time);
      return one(sm.v3.leaseRevoke(op.id));
    case "leaseCheckpoint":
      return { v3: sm.v3.leaseCheckpoint(op.cps) };
    // leaseRenew and leasePromote are only in older logs (lease-keeper.ts renews in memory).
    case "leaseRenew":
      return { v3: sm.v3.leaseRenew(op.id, at.time) };
    case "leasePromote":
      sm.v3.leasePromote(at.time, { extendMs: op.extendMs });
      return { v3: null };
    case "alarm":
      return { v3: sm.v3.alarm(op.r) };
    case "auth":
      sm.v3auth.authorize(op.op, op.info);
      return { v3: sm.v3auth.apply(op.op, { index: at.index }) };
  }
}

/** An entry's nanoseconds, or 0 when absent or not 0..999999: a bad value must not stop apply on every member. */
function validNs(ns: number | undefined): number {
  return ns !== undefined && Number.isInteger(ns) && ns >= 0 && ns < 1_000_000 ? ns : 0;
}

function applyV2(store: V2Store, r: V2Request, now: number): V2Event {
  const ttl = r.expiration === undefined ? {} : { expireTime: r.expiration, expireNs: validNs(r.expirationNs) };
  const refresh = r.refresh === true ? { refresh: true } : {};
  switch (r.method) {
    case "POST":
      return store.create(r.path, { dir: r.dir, value: r.val, unique: true, ...ttl }, now);
    case "DELETE":
      if (r.prevIndex > 0 || r.prevValue !== "") {
        return store.compareAndDelete(r.path, { prevValue: r.prevValue, prevIndex: r.prevIndex }, now);
      }
      return store.delete(r.path, { dir: r.dir, recursive: r.recursive }, now);
    case "QGET":
      return store.get(r.path, { recursive: r.recursive, sorted: r.sorted }, now);
    case "PUT":
      if (r.prevExist !== undefined) {
        if (r.prevExist) {
          if (r.prevIndex === 0 && r.prevValue === "") return store.update(r.path, { value: r.val, ...ttl, ...refresh }, now);
          return store.compareAndSwap(r.path, { prevValue: r.prevValue, prevIndex: r.prevIndex, value: r.val, ...ttl, ...refresh }, now);
        }
        return store.create(r.path, { dir: r.dir, value: r.val, unique: false, ...ttl }, now);
      }
      if (r.prevIndex > 0 || r.prevValue !== "") {
        return store.compareAndSwap(r.path, { prevValue: r.prevValue, prevIndex: r.prevIndex, value: r.val, ...ttl, ...refresh }, now);
      }
      return store.set(r.path, { dir: r.dir, value: r.val, ...ttl, ...refresh }, now);
  }
}

/**
 * Applies one command. Store errors are results (the proposer reports them), not failures.
 * `v3` false: the v3 key space already holds this entry's effects (its backend committed
 * them before a restart or came with a snapshot: etcd's consistent index), so only the
 * rest of the state machine applies it.
 */
export function applyCommand(sm: StateMachine, cmd: Command, index: number, opts: { v3: boolean } = { v3: true }): ApplyResult {
  switch (cmd.t) {
    case "v2":
      try {
        return { ok: true, event: applyV2(sm.store, cmd.r, cmd.time) };
      } catch (err) {
        if (err instanceof V2Error) return { ok: false, error: err };
        throw err;
      }
    case "sync": {
      sm.store.deleteExpiredKeys(cmd.time);
      if (!opts.v3 || cmd.keysOnly === true) return { ok: true };
      // An entry from an older log, where the leader's clock also ended v3 leases (by the
      // expiry replicated with grants and renewals): replayed as it was first applied.
      const { changes } = sm.v3.expireLeases(cmd.time);
      return changes.length > 0 ? { ok: true, changes } : { ok: true };
    }
    case "v3":
      // v3 auth lives in the snapshot image, not in the key space's backend: always applied.
      if (!opts.v3 && cmd.op.k !== "auth") return { ok: true };
      try {
        // etcd's quotaApplierV3 judges the write against this member's database before it
        // applies, and applies it all the same: members' files differ in size, their state
        // must not. Only the answer changes (noSpace: 'database space exceeded', and the
        // member raises the NOSPACE alarm, which caps every member once it applies).
        const cost = quotaCost(cmd.op);
        const fits = cost === 0 || sm.quotaAvailable === undefined || sm.quotaAvailable(cost);
        const applied = applyV3(sm, cmd.op, { time: cmd.time, index });
        return fits ? { ok: true, ...applied } : { ok: true, ...applied, noSpace: true };
      } catch (err) {
        if (err instanceof V3Error) return { ok: false, error: err };
        throw err;
      }
    case "attr":
      sm.membership.setAttributes(cmd.a.id, cmd.a.name, cmd.a.clientUrls);
      sm.store.consumeIndex();
      return { ok: true };
    case "ver":
      sm.membership.setVersion(cmd.v);
      sm.store.consumeIndex();
      return { ok: true };
    case "auth": {
      // etcd keeps auth data in its v2 store, so auth writes spend v2 indexes (REFERENCE "v2 auth").
      const applied = sm.auth.apply(cmd.op);
      for (let i = 0; i < applied.consumedIndexes; i++) sm.store.consumeIndex();
      return { ok: true, auth: applied.result };
    }
  }
}
