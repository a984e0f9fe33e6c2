// The apply chain: the deterministic state machine behind the Raft log. Given the same
// committed commands in the same order it produces the same state on every member: it
// never reads the clock, the environment or the disk (time comes from the command).
import { V2Error } from "../api/v2-errors.ts";
import type { V2Event, V2Store } from "../store/v2/store.ts";
import type { Command, V2Request } from "./request.ts";
import type { Membership } from "./membership.ts";
import type { V2AuthResult, V2AuthState } from "../auth/index.ts"; // v2 access control (issue 3)

/** `auth` is set for auth commands: their own success or typed failure (status + etcd message). */
export type ApplyResult = { ok: true; event?: V2Event; auth?: V2AuthResult } | { ok: false; error: V2Error };

export interface StateMachine {
  store: V2Store;
  membership: Membership;
  /** v2 users, roles and the enabled flag (issue 3). */
  auth: V2AuthState;
}

function applyV2(store: V2Store, r: V2Request, now: number): V2Event {
  const ttl = r.expiration === undefined ? {} : { expireTime: r.expiration };
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

/** Applies one command. Store errors are results (the proposer reports them), not failures. */
export function applyCommand(sm: StateMachine, cmd: Command): ApplyResult {
  switch (cmd.t) {
    case "v2":
      try {
        return { ok: true, event: applyV2(sm.store, cmd.r, cmd.time) };
      } catch (err) {
        if (err instanceof V2Error) return { ok: false, error: err };
        throw err;
      }
    case "sync":
      sm.store.deleteExpiredKeys(cmd.time);
      return { ok: true };
    case "attr":
      sm.membership.setAttributes(cmd.a.id, cmd.a.name, cmd.a.clientUrls);
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
