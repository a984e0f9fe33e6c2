// Events: the result of every store operation and what watchers receive (etcd's event.go).

import type { V2Action, V2NodeJSON } from "../../api/v2-types.ts";

export interface V2Event {
  action: V2Action;
  node: V2NodeJSON;
  prevNode?: V2NodeJSON;
  /**
   * Store index after the op (etcd's EtcdIndex), for the X-Kv-Index header. Not part of
   * the JSON body: serialize only action, node and prevNode. For an event replayed from
   * history it is the store index when the watch started.
   */
  etcdIndex: number;
}

/** Receives watch events. Called synchronously for live events. */
export type WatchSink = (event: V2Event) => void;

export interface V2Watcher {
  /** Store index when the watch started (X-Kv-Index of the watch response). */
  readonly startIndex: number;
  /** Stops delivery; idempotent. A non-stream watcher removes itself after one event. */
  remove(): void;
}

export const Action = {
  Get: "get",
  Create: "create",
  Set: "set",
  Update: "update",
  Delete: "delete",
  CompareAndSwap: "compareAndSwap",
  CompareAndDelete: "compareAndDelete",
  Expire: "expire",
} as const satisfies Record<string, V2Action>;

/** The index an event happened at (etcd's Event.Index: the node's modifiedIndex). */
export function eventIndex(e: V2Event): number {
  return e.node.modifiedIndex ?? 0;
}

/** A copy for a history replay: shares the (never mutated) node objects. */
export function withEtcdIndex(e: V2Event, etcdIndex: number): V2Event {
  return e.prevNode === undefined
    ? { action: e.action, node: e.node, etcdIndex }
    : { action: e.action, node: e.node, prevNode: e.prevNode, etcdIndex };
}
