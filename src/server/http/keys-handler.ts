// /v2/keys: parse and validate at the edge, then writes go through the log (propose and
// wait), plain reads are served from the local store, quorum reads after a ReadIndex
// barrier, and watches are registered in the local watcher hub.
import type { IncomingMessage, ServerResponse } from "node:http";
import { V2Error, V2ErrorCode } from "../../api/v2-errors.ts";
import { Header } from "../../api/headers.ts";
import type { V2Event, V2Store } from "../../store/v2/store.ts";
import type { CommandBody } from "../request.ts";
import { echoPrevIndex, parseKeyRequest } from "./parse-key-request.ts";
import { wallClockNs } from "../wall-clock.ts";
import { parseForm } from "./body.ts";
import { authorizeKeyRequest, type AuthAccessHost, type KeyAccess } from "./auth-access.ts";
import { jsonBase, methodNotAllowed, proposalErrorParts, sendJson } from "./respond.ts";
import { v2MetricMethod, type V2HttpMetrics } from "../metrics/v2-http-metrics.ts";

/** etcd closes an idle long-poll watch after 5 minutes with 200 and an empty body. */
export const WATCH_TIMEOUT_MS = 5 * 60 * 1000;

const KEYS_ALLOW = "HEAD,GET,PUT,POST,DELETE";
const KEYS_METHODS: ReadonlySet<string> = new Set(KEYS_ALLOW.split(","));

/** Renders an event without its internal fields. */
/** The status and body of an applied v2 write (the router's and the fast lane's): 201 for a new node; noValueOnSuccess leaves only the action. */
export function writeAnswer(ev: V2Event, noValueOnSuccess: boolean): { status: number; body: string } {
  const created = ev.action === "create" || (ev.action === "set" && ev.prevNode === undefined);
  const noValue = noValueOnSuccess && (ev.action === "set" || ev.action === "compareAndSwap" || ev.action === "create" || ev.action === "update");
  return { status: created ? 201 : 200, body: eventJSON(ev, noValue) };
}

export function eventJSON(ev: V2Event, noValue = false): string {
  if (noValue) return JSON.stringify({ action: ev.action }) + "\n";
  const out: { action: string; node: unknown; prevNode?: unknown } = { action: ev.action, node: ev.node };
  if (ev.prevNode !== undefined) out.prevNode = ev.prevNode;
  return JSON.stringify(out) + "\n";
}

/**
 * What /v2/keys uses of the member. The server itself is passed (no per-request wrapper):
 * its getters read the current store and indexes at each use.
 */
export interface V2KeysHost extends AuthAccessHost {
  /** Local reads and watches; the same object across snapshot installs. */
  readonly store: Pick<V2Store, "get" | "index" | "watch">;
  /** X-Raft-Index and X-Raft-Term. */
  readonly appliedIndex: number;
  readonly term: number;
  /** Proposes a v2 write and waits for its apply; resolves with its event or throws its V2Error. */
  doV2(body: Extract<CommandBody, { t: "v2" }>): Promise<V2Event>;
  /** The ReadIndex barrier of a quorum read. */
  linearizableRead(): Promise<void>;
  /** Where the v2 API's requests are counted (etcd_http_*). */
  readonly metrics: { readonly v2Http: V2HttpMetrics };
}

/** The status a failed v2 request is answered with, as etcd_http_failed_total labels it. */
export function failedStatus(err: unknown): number {
  return proposalErrorParts(err, "").status;
}

export interface KeysContext {
  server: V2KeysHost;
  clusterId: string;
  /** Tracks open watch responses so shutdown can end them with the empty-body close. */
  watches: Set<ServerResponse>;
}

/** The key-space headers after CORS and Content-Type, as a flat list for writeHead. */
export function raftHeaders(ctx: KeysContext, index: number): string[] {
  const s = ctx.server;
  const idx = String(index);
  return [
    Header.kvClusterId, ctx.clusterId,
    Header.etcdClusterId, ctx.clusterId,
    Header.kvIndex, idx,
    Header.etcdIndex, idx,
    Header.raftIndex, String(s.appliedIndex),
    Header.raftTerm, String(s.term),
  ];
}

export async function handleKeys(req: IncomingMessage, res: ServerResponse, keyPath: string, rawQuery: string, ctx: KeysContext): Promise<void> {
  // etcd times a request from before its body is read (etcd_http_successful_duration_seconds).
  const start = performance.now();
  const method = req.method ?? "GET";
  if (!KEYS_METHODS.has(method)) {
    req.resume();
    throw methodNotAllowed(KEYS_ALLOW);
  }
  const { form, error } = await parseForm(req, rawQuery);
  if (error !== undefined) throw new V2Error(V2ErrorCode.InvalidForm, error, 0);
  // etcd stamps expirations with Go's nanosecond clock and prints every digit: the
  // nanoseconds travel in the entry beside the ms (a double cannot hold both).
  const clock = wallClockNs();
  const now = clock.ms + clock.ns / 1e6;
  const kr = parseKeyRequest(method, keyPath, form, clock.ms, clock.ns);
  const server = ctx.server;
  // v2 access control: after parameter errors, before the log, the store or a watch.
  const access = await authorizeKeyRequest(req, { server, key: keyPath, recursive: kr.kind === "write" ? kr.request.recursive : kr.recursive });

  const counted = server.metrics.v2Http.of(kr.kind === "get" ? v2MetricMethod(method, kr.quorum) : method);
  if (kr.kind === "write" || (kr.kind === "get" && !kr.wait)) counted.received();
  try {
    switch (kr.kind) {
      case "write": {
        const ev = await server.doV2({ t: "v2", time: now, r: kr.request });
        const answer = writeAnswer(ev, kr.noValueOnSuccess);
        sendJson(res, answer.status, raftHeaders(ctx, ev.etcdIndex), answer.body);
        break;
      }
      case "get": {
        if (kr.quorum) await server.linearizableRead();
        const ev = readKey(server, kr);
        if (kr.head) {
          // HEAD: the GET's status and headers, no body (and no length of a body never sent).
          res.writeHead(200, jsonBase.concat(raftHeaders(ctx, ev.etcdIndex)));
          res.end();
        } else {
          sendJson(res, 200, raftHeaders(ctx, ev.etcdIndex), eventJSON(ev));
        }
        break;
      }
      case "watch":
        handleWatch(req, res, kr, ctx, access);
        return;
    }
  } catch (err) {
    counted.failed(failedStatus(err));
    throw echoPrevIndex(err, kr);
  }
  counted.succeeded(start, performance.now());
}

/** A read from the local store; a V2Error (key not found) carries the store's index. */
export function readKey(server: V2KeysHost, kr: { path: string; recursive: boolean; sorted: boolean }): V2Event {
  try {
    return server.store.get(kr.path, { recursive: kr.recursive, sorted: kr.sorted }, Date.now());
  } catch (err) {
    if (err instanceof V2Error) err.index = server.store.index;
    throw err;
  }
}

function handleWatch(
  req: IncomingMessage,
  res: ServerResponse,
  kr: { path: string; recursive: boolean; stream: boolean; sinceIndex: number },
  ctx: KeysContext,
  access: KeyAccess,
): void {
  let finished = false;
  let timer: NodeJS.Timeout | undefined;
  const finish = (): void => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    watcher.remove();
    ctx.watches.delete(res);
    if (!res.writableEnded) res.end();
  };
  ctx.server.metrics.v2Http.storeWatchRequests.inc();
  // Throws V2Error 401 (history cleared) before anything is written: answered as an error.
  const watcher = ctx.server.store.watch(kr.path, { recursive: kr.recursive, stream: kr.stream, sinceIndex: kr.sinceIndex }, (ev) => {
    if (finished) return;
    // Checked at delivery: a caller who lost read access since the watch began gets the empty close, not the event.
    if (!access.stillAllowed()) return finish();
    res.write(eventJSON(ev));
    if (!kr.stream) finish();
  });
  ctx.watches.add(res);
  res.writeHead(200, jsonBase.concat(raftHeaders(ctx, watcher.startIndex)));
  res.flushHeaders();
  timer = setTimeout(finish, WATCH_TIMEOUT_MS);
  // The client going away releases the watcher at once: thousands of abandoned long polls
  // must not accumulate.
  res.on("close", finish);
  req.on("close", () => {
    if (!res.writableEnded) finish();
  });
}
