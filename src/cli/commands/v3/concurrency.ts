// clientv3/concurrency's recipes over the JSON gateway, for `lock` and `elect`:
// a session (a lease kept alive until the process ends), waitDeletes (wait until every
// key under a prefix created before ours is gone, watching the newest of them each time),
// and the first-created key under a prefix. The key of a contender is
// `<name>/<lease ID in hex>`, as concurrency.Mutex and Election name it, so kvctl and
// etcdctl contenders queue behind each other.

import { b64, type WireHeader, type WireKeyValue, type WireRangeResponse, type WireTxnResponse, type WireWatchResponse } from "../../../client/v3-types.ts";
import type { V3Context } from "./context.ts";
import { prefixRangeEnd } from "./printers-admin.ts";

/** A canceled wait (SIGINT/SIGTERM): Go's context.Canceled text. */
export class CanceledError extends Error {
  constructor() {
    super("context canceled");
    this.name = "CanceledError";
  }
}

export interface Session {
  /** The lease ID as decimal digits (for requests) and as %x (for keys). */
  lease: string;
  leaseHex: string;
  /** Resolves when the lease is gone (a keep-alive answered TTL 0) or close() was called. */
  done: Promise<void>;
  close(): void;
}

interface KeepAliveAnswer {
  TTL?: string | number;
}

/** One keep-alive exchange: the gateway's keepalive stream answers once per request sent. */
async function keepAlive(ctx: V3Context, lease: string, signal: AbortSignal): Promise<KeepAliveAnswer | undefined> {
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  let first: KeepAliveAnswer | undefined;
  try {
    await ctx.client.stream("/v3/lease/keepalive", { ID: lease }, (r) => {
      first ??= r as KeepAliveAnswer;
      stop.abort();
    }, { signal: stop.signal });
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  return first;
}

/**
 * concurrency.NewSession: a lease of `ttl` seconds, renewed every ttl/3 (clientv3's
 * keep-alive pace). A renewal that fails to reach the cluster is retried at the next
 * beat; the session ends only when the server says the lease is gone.
 */
export async function newSession(ctx: V3Context, ttl: number): Promise<Session> {
  const r = await ctx.request((signal) => ctx.client.call<{ ID?: string | number }>("/v3/lease/grant", { TTL: ttl }, { signal }));
  const lease = String(r.ID ?? "0");
  const stop = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    stop.signal.addEventListener("abort", () => resolve(), { once: true });
    const beat = (): void => {
      timer = setTimeout(() => {
        keepAlive(ctx, lease, stop.signal)
          .then((a) => {
            if (stop.signal.aborted) return;
            if (a !== undefined && Number(a.TTL ?? 0) <= 0) resolve();
            else beat();
          })
          .catch(() => {
            if (!stop.signal.aborted) beat();
          });
      }, Math.max(500, (ttl * 1000) / 3));
    };
    beat();
  });
  return {
    lease,
    leaseHex: BigInt(lease).toString(16),
    done,
    close() {
      clearTimeout(timer);
      stop.abort();
    },
  };
}

const prefixRange = (pfx: string): { key: string; range_end: string } => ({
  key: b64(pfx),
  range_end: prefixRangeEnd(Buffer.from(pfx)).toString("base64"),
});

/** clientv3's Get(pfx, WithFirstCreate()) as a gateway RangeRequest. */
export const firstCreateRequest = (pfx: string): Record<string, unknown> => ({
  ...prefixRange(pfx),
  limit: 1,
  sort_order: "ASCEND",
  sort_target: "CREATE",
});

/** Raises CanceledError once `signal` fired, so that a wait ends as etcdctl's does. */
function throwIfCanceled(signal: AbortSignal): void {
  if (signal.aborted) throw new CanceledError();
}

/** Streams a watch until `until(event)` holds for one of its events (true), or it ends. */
export async function watchUntil(
  ctx: V3Context,
  createRequest: Record<string, unknown>,
  until: (r: WireWatchResponse) => boolean,
  signal: AbortSignal,
): Promise<void> {
  throwIfCanceled(signal);
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  let met = false;
  try {
    await ctx.client.stream("/v3/watch", { create_request: createRequest }, (r) => {
      if (met) return;
      const w = r as WireWatchResponse;
      if (w.canceled === true) {
        stop.abort();
        return;
      }
      if (until(w)) {
        met = true;
        stop.abort();
      }
    }, { signal: stop.signal });
  } catch (err) {
    if (!stop.signal.aborted) throw err;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  throwIfCanceled(signal);
  if (!met) throw new Error("lost watcher waiting for delete");
}

const isDelete = (w: WireWatchResponse): boolean => (w.events ?? []).some((e) => e.type === "DELETE" || e.type === 1);

/**
 * concurrency's waitDeletes: until no key under `pfx` was created at or before
 * `maxCreateRev`, wait for the deletion of the newest such key. Returns the header of the
 * last (empty) read, which is what the lock's ETCD_LOCK_REV reports.
 */
export async function waitDeletes(ctx: V3Context, pfx: string, maxCreateRev: bigint, signal: AbortSignal): Promise<WireHeader | undefined> {
  for (;;) {
    throwIfCanceled(signal);
    const req = { ...prefixRange(pfx), limit: 1, sort_order: "DESCEND", sort_target: "CREATE", max_create_revision: maxCreateRev.toString() };
    const r = await ctx.request((s) => ctx.client.call<WireRangeResponse>("/v3/kv/range", req, { signal: s }));
    const last = r.kvs?.[0];
    if (last === undefined) return r.header;
    await watchUntil(ctx, { key: last.key, start_revision: String(r.header?.revision ?? "0") }, isDelete, signal);
  }
}

/** One transaction through the gateway, under --command-timeout. */
export const txn = (ctx: V3Context, body: Record<string, unknown>): Promise<WireTxnResponse> =>
  ctx.request((s) => ctx.client.call<WireTxnResponse>("/v3/kv/txn", body, { signal: s }));

/** Compare: the key's create revision equals `rev`. */
export const createRevisionIs = (key: string, rev: bigint | number): Record<string, unknown> => ({
  key: b64(key),
  target: "CREATE",
  result: "EQUAL",
  create_revision: String(rev),
});

export const kvOf = (r: WireTxnResponse, i: number): WireKeyValue | undefined => r.responses?.[i]?.response_range?.kvs?.[0];

/** Resolves once `signal` fired: at once when it already has (a listener added later would never run). */
export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** Whether the session outlived the interrupt: true when interrupted first, false when the session ended. */
export const interruptedBeforeExpiry = (signal: AbortSignal, session: Session): Promise<boolean> =>
  Promise.race([whenAborted(signal).then(() => true), session.done.then(() => false)]);

/** Resolves at the first SIGINT or SIGTERM, as signal.Notify in lock/elect_command.go. */
export function onInterrupt(): { signal: AbortSignal; dispose(): void } {
  const c = new AbortController();
  const fire = (): void => c.abort();
  process.once("SIGINT", fire);
  process.once("SIGTERM", fire);
  return {
    signal: c.signal,
    dispose() {
      process.off("SIGINT", fire);
      process.off("SIGTERM", fire);
    },
  };
}
