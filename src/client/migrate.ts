// Copies a running etcd's data into kvctl (kvctl migrate), through the two public APIs:
// - v2: one recursive listing at an index, plus the hidden nodes it cannot show (etcd
//   never lists `_` names) found in the event history (the last 1000 events), each written
//   with its own name (in-order keys keep theirs), empty directories made, TTLs set to
//   what remains;
// - v3: every key read at one revision (pages of PAGE_KEYS), each lease granted again on
//   the destination with its remaining TTL (under the same ID when it is free), the keys
//   written in transactions of up to TXN_OPS puts.
// follow* then apply the source's later changes from the copied index / revision, so a
// cut-over loses no write; falling out of the source's history is a HistoryLostError.

import { V2Error } from "../api/v2-errors.ts";
import type { V2NodeJSON } from "../api/v2-types.ts";
import { V3Error } from "../api/v3-errors.ts";
import type { ClusterClient } from "./cluster.ts";
import { ClientError } from "./errors.ts";
import { createV2KeysApi, type V2KeysApi, type V2Result } from "./v2-keys.ts";
import type { V3Client } from "./v3-gateway.ts";
import type {
  WireEvent,
  WireKeyValue,
  WireLeaseGrantResponse,
  WireLeaseKeepAliveResponse,
  WireLeaseTimeToLiveResponse,
  WireRangeResponse,
  WireWatchResponse,
} from "./v3-types.ts";

/** One side of the migration: the v2 cluster client and the v3 gateway client of the same members. */
export interface MigrateSide {
  cluster: ClusterClient;
  v3: V3Client;
}

/** The source no longer holds the history a watch needs (v2: 401 event index cleared; v3: compacted). */
export class HistoryLostError extends ClientError {
  constructor(message: string) {
    super("HISTORY_LOST", message);
    this.name = "HistoryLostError";
  }
}

export interface V2CopySummary {
  /** false: the source answers /v2/keys with 404 (etcd 3.4's --enable-v2=false). */
  enabled: boolean;
  dirs: number;
  emptyDirs: number;
  keys: number;
  hidden: number;
  withTtl: number;
  /** The source's X-Etcd-Index of the listing: follow from the next one. */
  index: number;
}

export interface V3CopySummary {
  keys: number;
  leasedKeys: number;
  leases: number;
  /** Keys left out because their lease expired before it was copied. */
  expired: number;
  revision: number;
}

export interface MigrateProgress {
  (what: string): void;
}

const V2_WRITE_CONCURRENCY = 16;
const PAGE_KEYS = 1000;
const TXN_OPS = 100;
/** Under kvctl's and etcd's 1.5 MiB request limit, with room for the JSON around the values. */
const TXN_BYTES = 1024 * 1024;
/** A history scan step answered by nothing within this time: the scan reached the end. */
const SCAN_STEP_MS = 300;

const V2_KEY_NOT_FOUND = 100;
const V2_NODE_EXIST = 105;
const V2_INDEX_CLEARED = 401;

const b64 = (s: string | Buffer): string => (typeof s === "string" ? Buffer.from(s) : s).toString("base64");
const unb64 = (s: string | undefined): Buffer => Buffer.from(s ?? "", "base64");
const isHiddenName = (key: string): boolean => (key.split("/").pop() ?? "").startsWith("_");

/** The v3 range [key, end) a prefix covers: every key for "" (etcd's "\0" to "\0"). */
export function prefixRange(prefix: string): { key: string; range_end: string } {
  if (prefix === "") return { key: b64(Buffer.from([0])), range_end: b64(Buffer.from([0])) };
  const p = Buffer.from(prefix);
  const end = Buffer.from(p);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return { key: b64(p), range_end: b64(end.subarray(0, i + 1)) };
    }
  }
  return { key: b64(p), range_end: b64(Buffer.from([0])) };
}

/** The v2 path a --prefix names ("/" for none). */
export function v2Root(prefix: string): string {
  if (prefix === "" || prefix === "/") return "/";
  return prefix.startsWith("/") ? prefix : `/${prefix}`;
}

/**
 * The hidden paths an event key reveals: each prefix whose last name starts with "_"
 * ("/a/_b/c" -> "/a/_b"), under `root`.
 */
export function hiddenPaths(key: string, root: string): string[] {
  const out: string[] = [];
  const parts = key.split("/").filter((p) => p !== "");
  let path = "";
  for (const p of parts) {
    path += `/${p}`;
    if (p.startsWith("_") && (root === "/" || path === root || path.startsWith(`${root}/`))) out.push(path);
  }
  return out;
}

/** etcd's cause of a 401 "[first index still held/requested]", e.g. "the requested history has been cleared [1008/7]". */
export function clearedStart(err: V2Error): number | undefined {
  const m = /\[(\d+)\/(\d+)\]/.exec(err.cause_);
  return m === null ? undefined : Number(m[1]);
}

async function v2Enabled(side: MigrateSide, signal: AbortSignal | undefined): Promise<boolean> {
  const res = await side.cluster.do({ method: "GET", path: (base) => `${base}/v2/keys/` }, signal === undefined ? {} : { signal });
  return !(res.status === 404 && !res.body.trimStart().startsWith("{"));
}

/** Runs `fn` over `items` with at most `n` at a time; the first failure rejects. */
async function pool<T>(items: readonly T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
}

function ignoreV2(codes: readonly number[]) {
  return (err: unknown): undefined => {
    if (err instanceof V2Error && codes.includes(err.errorCode)) return undefined;
    throw err;
  };
}

/** Writes one directory as the source has it: made (empty or with its TTL) if missing, its TTL set if present. */
async function writeDir(dst: V2KeysApi, key: string, ttl: number | undefined, signal: AbortSignal | undefined): Promise<void> {
  const opts = { dir: true, ...(ttl !== undefined ? { ttl } : {}), ...(signal !== undefined ? { signal } : {}) };
  try {
    await dst.set(key, "", { ...opts, prevExist: "false" });
  } catch (err) {
    if (!(err instanceof V2Error && err.errorCode === V2_NODE_EXIST)) throw err;
    if (ttl !== undefined) await dst.set(key, "", { ...opts, prevExist: "true" });
  }
}

/** Reads the hidden nodes the history names (they exist now, or are gone: skipped). */
async function hiddenNodes(src: V2KeysApi, root: string, index: number, signal: AbortSignal | undefined): Promise<V2NodeJSON[]> {
  const paths = new Set<string>();
  // The history holds the last 1000 events; a start before them answers 401 with the first one held.
  // (The watcher reads "after 0" as "from now"; index 1 is never a key: a cluster starts with members.)
  let after = Math.max(1, index - 1000);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await scanHistory(src, root, after, index, paths, signal);
      break;
    } catch (err) {
      if (!(err instanceof V2Error && err.errorCode === V2_INDEX_CLEARED)) throw err;
      after = Math.max(after + 1, (clearedStart(err) ?? after + 1) - 1);
    }
  }
  const nodes: V2NodeJSON[] = [];
  for (const path of [...paths].sort((a, b) => a.length - b.length || (a < b ? -1 : 1))) {
    try {
      const r = await src.get(path, { recursive: true, sorted: true, ...(signal !== undefined ? { signal } : {}) });
      nodes.push(r.response.node);
    } catch (err) {
      ignoreV2([V2_KEY_NOT_FOUND])(err);
    }
  }
  return nodes;
}

async function scanHistory(src: V2KeysApi, root: string, after: number, until: number, paths: Set<string>, signal: AbortSignal | undefined): Promise<void> {
  const w = src.watcher(root, { afterIndex: after, recursive: true });
  for (;;) {
    const step = AbortSignal.timeout(SCAN_STEP_MS);
    let r: V2Result;
    try {
      r = await w.next({ signal: signal === undefined ? step : AbortSignal.any([signal, step]) });
    } catch (err) {
      if (step.aborted && signal?.aborted !== true) return; // nothing more in the history
      throw err;
    }
    const node = r.response.node;
    for (const p of hiddenPaths(node.key ?? "", root)) paths.add(p);
    if ((node.modifiedIndex ?? 0) >= until) return;
  }
}

/** Copies the v2 key space under `prefix` (all of it for ""). */
export async function copyV2(src: MigrateSide, dst: MigrateSide, opts: { prefix: string; signal?: AbortSignal; progress?: MigrateProgress }): Promise<V2CopySummary> {
  const signal = opts.signal;
  const sig = signal === undefined ? {} : { signal };
  const summary: V2CopySummary = { enabled: true, dirs: 0, emptyDirs: 0, keys: 0, hidden: 0, withTtl: 0, index: 0 };
  if (!(await v2Enabled(src, signal))) return { ...summary, enabled: false };
  const s = createV2KeysApi(src.cluster);
  const d = createV2KeysApi(dst.cluster);
  const root = v2Root(opts.prefix);
  let top: V2NodeJSON | undefined;
  try {
    const r = await s.get(root, { recursive: true, sorted: true, ...sig });
    top = r.response.node;
    summary.index = r.index;
  } catch (err) {
    if (!(err instanceof V2Error && err.errorCode === V2_KEY_NOT_FOUND)) throw err;
    summary.index = err.index;
  }
  opts.progress?.(`v2: looking for hidden nodes in the source's event history (index ${summary.index})`);
  const trees = top === undefined ? [] : [top];
  trees.push(...(await hiddenNodes(s, root, summary.index, signal)));

  const dirs: V2NodeJSON[] = [];
  const leaves: V2NodeJSON[] = [];
  const walk = (n: V2NodeJSON): void => {
    const key = n.key ?? "/";
    if (isHiddenName(key)) summary.hidden++;
    if (n.ttl !== undefined) summary.withTtl++;
    if (n.dir === true) {
      if (key !== "/") {
        dirs.push(n);
        summary.dirs++;
        if ((n.nodes ?? []).length === 0) summary.emptyDirs++;
      }
      for (const c of n.nodes ?? []) walk(c);
    } else {
      leaves.push(n);
      summary.keys++;
    }
  };
  trees.forEach(walk);
  // Directories first, parents before children, so each is made with its own TTL
  // (a key written first would make its parents without one).
  for (const n of dirs) await writeDir(d, n.key ?? "/", n.ttl, signal);
  let done = 0;
  await pool(leaves, V2_WRITE_CONCURRENCY, async (n) => {
    await d.set(n.key ?? "/", n.value ?? "", { ...(n.ttl !== undefined ? { ttl: n.ttl } : {}), ...sig });
    if (++done % 100 === 0) opts.progress?.(`v2: ${done}/${leaves.length} keys copied`);
  });
  return summary;
}

function int(v: string | number | undefined): number {
  return v === undefined ? 0 : Number(v);
}

/** Leases of the source, granted again on the destination: source id -> destination id. */
export class LeaseMap {
  readonly #src: V3Client;
  readonly #dst: V3Client;
  readonly #ids = new Map<string, { id: string; ttl: number; checkAt: number }>();

  constructor(src: V3Client, dst: V3Client) {
    this.#src = src;
    this.#dst = dst;
  }

  get size(): number {
    return this.#ids.size;
  }

  /**
   * The destination lease for source lease `id`, granted with the source's remaining TTL
   * (under the same ID when it is free); undefined when the source lease is gone.
   */
  async map(id: string, signal?: AbortSignal): Promise<string | undefined> {
    const known = this.#ids.get(id);
    if (known !== undefined) return known.id;
    const sig = signal === undefined ? {} : { signal };
    const ttl = await this.#src.call<WireLeaseTimeToLiveResponse>("/v3/lease/timetolive", { ID: id }, sig);
    const remaining = int(ttl.TTL);
    if (remaining <= 0) return undefined;
    let granted: WireLeaseGrantResponse;
    try {
      granted = await this.#dst.call<WireLeaseGrantResponse>("/v3/lease/grant", { ID: id, TTL: String(remaining) }, sig);
    } catch (err) {
      // A lease of that ID exists on the destination already (an earlier run): a new ID.
      if (!(err instanceof V3Error && /lease already exists/.test(err.message))) throw err;
      granted = await this.#dst.call<WireLeaseGrantResponse>("/v3/lease/grant", { ID: "0", TTL: String(remaining) }, sig);
    }
    const mapped = String(granted.ID ?? id);
    const grantedTtl = Math.max(1, int(ttl.grantedTTL));
    this.#ids.set(id, { id: mapped, ttl: grantedTtl, checkAt: Date.now() + (grantedTtl * 1000) / 3 });
    return mapped;
  }

  /**
   * While following: a destination lease lives as long as its source lease. Each lease is
   * checked every third of its TTL: renewed on the destination while the source one lives
   * (its clients keep it alive there), revoked once the source one is gone.
   */
  async tend(keepAliveOnce: (dst: V3Client, id: string) => Promise<WireLeaseKeepAliveResponse>, signal?: AbortSignal): Promise<void> {
    const now = Date.now();
    const sig = signal === undefined ? {} : { signal };
    for (const [srcId, m] of this.#ids) {
      if (m.checkAt > now) continue;
      m.checkAt = now + (m.ttl * 1000) / 3;
      const ttl = await this.#src.call<WireLeaseTimeToLiveResponse>("/v3/lease/timetolive", { ID: srcId }, sig);
      if (int(ttl.TTL) <= 0) {
        this.#ids.delete(srcId);
        await this.#dst.call("/v3/lease/revoke", { ID: m.id }, sig).catch(() => undefined);
      } else {
        await keepAliveOnce(this.#dst, m.id);
      }
    }
  }
}

function putOp(kv: WireKeyValue, lease: string | undefined): { request_put: { key: string; value: string; lease?: string } } {
  return { request_put: { key: kv.key ?? "", value: kv.value ?? "", ...(lease !== undefined ? { lease } : {}) } };
}

/** Copies the v3 keys under `prefix` (all for "") at one revision, leases included. */
export async function copyV3(
  src: MigrateSide,
  dst: MigrateSide,
  leases: LeaseMap,
  opts: { prefix: string; signal?: AbortSignal; progress?: MigrateProgress },
): Promise<V3CopySummary> {
  const sig = opts.signal === undefined ? {} : { signal: opts.signal };
  const range = prefixRange(opts.prefix);
  const summary: V3CopySummary = { keys: 0, leasedKeys: 0, leases: 0, expired: 0, revision: 0 };
  let key = range.key;
  let batch: ReturnType<typeof putOp>[] = [];
  let batchBytes = 0;
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    await dst.v3.call("/v3/kv/txn", { success: batch }, sig);
    batch = [];
    batchBytes = 0;
  };
  for (;;) {
    const page = await src.v3.call<WireRangeResponse>(
      "/v3/kv/range",
      { key, range_end: range.range_end, limit: String(PAGE_KEYS), ...(summary.revision > 0 ? { revision: String(summary.revision) } : {}) },
      sig,
    );
    if (summary.revision === 0) summary.revision = int(page.header?.revision);
    const kvs = page.kvs ?? [];
    for (const kv of kvs) {
      const lease = int(kv.lease) !== 0 ? String(kv.lease) : undefined;
      let mapped: string | undefined;
      if (lease !== undefined) {
        mapped = await leases.map(lease, opts.signal);
        if (mapped === undefined) {
          summary.expired++;
          continue;
        }
        summary.leasedKeys++;
      }
      const op = putOp(kv, mapped);
      const bytes = op.request_put.key.length + op.request_put.value.length + 64;
      if (batch.length >= TXN_OPS || (batch.length > 0 && batchBytes + bytes > TXN_BYTES)) await flush();
      batch.push(op);
      batchBytes += bytes;
      summary.keys++;
    }
    opts.progress?.(`v3: ${summary.keys} keys copied (revision ${summary.revision})`);
    const last = kvs.at(-1);
    if (page.more !== true || last === undefined) break;
    key = b64(Buffer.concat([unb64(last.key), Buffer.from([0])]));
  }
  await flush();
  summary.leases = leases.size;
  return summary;
}

export interface FollowCounts {
  v2Events: number;
  v2Index: number;
  v3Events: number;
  v3Revision: number;
}

/** Applies the source's v2 events after `index` until `signal` aborts. */
export async function followV2(src: MigrateSide, dst: MigrateSide, opts: { prefix: string; index: number; signal: AbortSignal; counts: FollowCounts }): Promise<void> {
  const s = createV2KeysApi(src.cluster);
  const d = createV2KeysApi(dst.cluster);
  const w = s.watcher(v2Root(opts.prefix), { afterIndex: opts.index, recursive: true });
  const signal = opts.signal;
  for (;;) {
    let r: V2Result;
    try {
      r = await w.next({ signal });
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof V2Error && err.errorCode === V2_INDEX_CLEARED) {
        throw new HistoryLostError(
          `v2 watch: the source's event history no longer holds index ${opts.counts.v2Index + 1} (${err.cause_}): etcd keeps the last 1000 events; run kvctl migrate again`,
        );
      }
      throw err;
    }
    const { action } = r.response;
    const node = r.response.node;
    const key = node.key ?? "/";
    if (action === "delete" || action === "expire" || action === "compareAndDelete") {
      const wasDir = node.dir === true || r.response.prevNode?.dir === true;
      await d.delete(key, { ...(wasDir ? { recursive: true } : {}), signal }).catch(ignoreV2([V2_KEY_NOT_FOUND]));
    } else if (node.dir === true) {
      await writeDir(d, key, node.ttl, signal);
    } else {
      await d.set(key, node.value ?? "", { ...(node.ttl !== undefined ? { ttl: node.ttl } : {}), signal });
    }
    opts.counts.v2Events++;
    opts.counts.v2Index = node.modifiedIndex ?? opts.counts.v2Index;
  }
}

/** Applies the source's v3 events after `revision` until `signal` aborts. */
export async function followV3(
  src: MigrateSide,
  dst: MigrateSide,
  leases: LeaseMap,
  opts: { prefix: string; revision: number; signal: AbortSignal; counts: FollowCounts },
): Promise<void> {
  const range = prefixRange(opts.prefix);
  const signal = opts.signal;
  // Events are applied one after another, in the order the watch delivers them.
  let chain: Promise<void> = Promise.resolve();
  let failure: unknown;
  const stop = new AbortController();
  const both = AbortSignal.any([signal, stop.signal]);
  const apply = async (ev: WireEvent, revision: number): Promise<void> => {
    const kv = ev.kv ?? {};
    if (ev.type === "DELETE" || ev.type === 1) {
      await dst.v3.call("/v3/kv/deleterange", { key: kv.key ?? "" }, { signal });
    } else {
      const lease = int(kv.lease) !== 0 ? String(kv.lease) : undefined;
      const mapped = lease === undefined ? undefined : await leases.map(lease, signal);
      // A key whose lease is already gone on the source will be deleted there too.
      if (lease !== undefined && mapped === undefined) return;
      await dst.v3.call("/v3/kv/put", putOp(kv, mapped).request_put, { signal });
    }
    opts.counts.v3Events++;
    opts.counts.v3Revision = revision;
  };
  await src.v3.stream(
    "/v3/watch",
    { create_request: { ...range, start_revision: String(opts.revision + 1) } },
    (result) => {
      const w = result as WireWatchResponse;
      if (int(w.compact_revision) > 0 || (w.canceled === true && /compacted/.test(w.cancel_reason ?? ""))) {
        failure = new HistoryLostError(
          `v3 watch: revision ${opts.revision + 1} has been compacted on the source (compact revision ${int(w.compact_revision)}); run kvctl migrate again`,
        );
        stop.abort();
        return;
      }
      if (w.canceled === true) {
        failure = new ClientError("WATCH_CANCELED", `v3 watch canceled by the source: ${w.cancel_reason ?? ""}`);
        stop.abort();
        return;
      }
      for (const ev of w.events ?? []) {
        const revision = int(ev.kv?.mod_revision);
        chain = chain.then(() => apply(ev, revision)).catch((err: unknown) => {
          failure ??= err;
          stop.abort();
        });
      }
    },
    { signal: both },
  );
  await chain;
  if (failure !== undefined && !signal.aborted) throw failure;
  if (!signal.aborted && failure === undefined) throw new ClientError("WATCH_ENDED", "v3 watch: the source ended the stream");
}

/** One keep-alive exchange on `client`: the first message of a /v3/lease/keepalive stream. */
export async function keepAliveOnce(client: V3Client, id: string): Promise<WireLeaseKeepAliveResponse> {
  const stop = new AbortController();
  let first: WireLeaseKeepAliveResponse | undefined;
  await client.stream(
    "/v3/lease/keepalive",
    { ID: id },
    (result) => {
      first ??= result as WireLeaseKeepAliveResponse;
      stop.abort();
    },
    { signal: stop.signal },
  );
  if (first === undefined) throw new ClientError("KEEPALIVE", "keep-alive stream ended without an answer");
  return first;
}
