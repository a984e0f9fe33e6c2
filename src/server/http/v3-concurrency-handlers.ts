// The gateway's routes of etcd's Lock and Election services (/v3/lock/*, /v3/election/*),
// over v3-concurrency.ts as the gRPC ones. grpc-gateway passes the HTTP request's
// context to the call, so a client that goes away ends a waiting Lock or Campaign (its key
// is taken back) and an Observe. Bodies are read and answers written as every other route's
// (v3-wire.ts, v3-encode.ts): errors come back from the call as code 2, HTTP 500.
import type { ServerResponse } from "node:http";
import type { KeyValue } from "../../store/v3/index.ts";
import { V3Concurrency, type ConcurrencyCall, type LeaderKey } from "./v3-concurrency.ts";
import type { V3CallContext, V3GatewayContext, V3Header } from "./v3-backend.ts";
import { header, keyValue, streamLine, type JsonObject } from "./v3-encode.ts";
import { V3StreamWriter } from "./v3-respond.ts";
import { drainedOrClosed, trackStream } from "./v3-streams.ts";
import { bytes, int64, int64Number, messageFields, pick, type Fields } from "./v3-wire.ts";

function leaderKeyOf(n: Fields | undefined): LeaderKey | undefined {
  if (n === undefined) return undefined;
  return { name: bytes(pick(n, "name")), key: bytes(pick(n, "key")), rev: int64Number(pick(n, "rev")), lease: int64(pick(n, "lease")) };
}

/** v3electionpb.LeaderKey as jsonpb prints it (zero values left out). */
export function encodeLeaderKey(k: LeaderKey): JsonObject {
  const o: JsonObject = {};
  if (k.name.length > 0) o.name = k.name.toString("base64");
  if (k.key.length > 0) o.key = k.key.toString("base64");
  if (k.rev !== 0) o.rev = String(k.rev);
  if (k.lease !== 0n) o.lease = String(k.lease);
  return o;
}

function headerOnly(h: V3Header): JsonObject {
  return { header: header(h) };
}

function leaderResponse(h: V3Header, kv: KeyValue): JsonObject {
  return { header: header(h), kv: keyValue(kv) };
}

type Hdr = (revision: number) => V3Header;
type Handler = (f: Fields | undefined, svc: V3Concurrency, call: ConcurrencyCall, hdr: Hdr) => Promise<JsonObject>;

/** The unary routes (path after /v3/). */
const UNARY: ReadonlyMap<string, Handler> = new Map<string, Handler>([
  [
    "lock/lock",
    async (f, svc, call, hdr) => {
      const r = await svc.lock({ name: bytes(pick(f, "name")), lease: int64(pick(f, "lease")) }, call);
      return { header: header(hdr(r.revision)), key: r.key.toString("base64") };
    },
  ],
  ["lock/unlock", async (f, svc, call, hdr) => headerOnly(hdr((await svc.unlock(bytes(pick(f, "key")), call)).revision))],
  [
    "election/campaign",
    async (f, svc, call, hdr) => {
      const r = await svc.campaign({ name: bytes(pick(f, "name")), lease: int64(pick(f, "lease")), value: bytes(pick(f, "value")) }, call);
      return { header: header(hdr(r.revision)), leader: encodeLeaderKey(r.leader) };
    },
  ],
  [
    "election/proclaim",
    async (f, svc, call, hdr) => headerOnly(hdr((await svc.proclaim(leaderKeyOf(messageFields(pick(f, "leader"))), bytes(pick(f, "value")), call)).revision)),
  ],
  ["election/resign", async (f, svc, call, hdr) => headerOnly(hdr((await svc.resign(leaderKeyOf(messageFields(pick(f, "leader"))), call)).revision))],
  [
    "election/leader",
    async (f, svc, call, hdr) => {
      const r = await svc.leader(bytes(pick(f, "name")), call);
      return leaderResponse(hdr(r.revision), r.kv);
    },
  ],
]);

/** The routes these handlers serve, Observe's stream included. */
export const CONCURRENCY_ROUTES: ReadonlySet<string> = new Set([...UNARY.keys(), "election/observe"]);

/** A call that ends when the client goes away before its answer. */
export function callEndedWith(res: ServerResponse, ctx: V3CallContext): ConcurrencyCall {
  const ended = new AbortController();
  res.once("close", () => ended.abort());
  return { ctx, signal: ended.signal };
}

/** Serves a unary route of the two services; `f` is the decoded body. */
export async function serveConcurrency(route: string, f: Fields | undefined, res: ServerResponse, gw: V3GatewayContext, ctx: V3CallContext): Promise<JsonObject | undefined> {
  const handler = UNARY.get(route);
  if (handler === undefined) return undefined;
  const b = gw.backend;
  return await handler(f, new V3Concurrency(b, { maxTxnOps: gw.maxTxnOps, maxRequestBytes: gw.maxRequestBytes }), callEndedWith(res, ctx), (revision) => (revision > 0 ? b.header(revision) : b.header()));
}

/**
 * POST /v3/election/observe: one `{"result":{header, kv}}` line per leader change, until
 * the client goes away; when the service stops by itself (a failed read), the stream ends
 * without an error (etcd's handler returns nil then).
 */
export async function serveObserve(f: Fields | undefined, res: ServerResponse, gw: V3GatewayContext, ctx: V3CallContext): Promise<void> {
  const writer = new V3StreamWriter(res);
  trackStream(res, gw);
  const b = gw.backend;
  const call = callEndedWith(res, ctx);
  await new V3Concurrency(b, { maxTxnOps: gw.maxTxnOps, maxRequestBytes: gw.maxRequestBytes }).observe(bytes(pick(f, "name")), call, {
    send: (r) => writer.line(streamLine(leaderResponse(b.header(r.revision), r.kv))) && !res.writableNeedDrain,
    drained: () => drainedOrClosed(res),
  });
  writer.end();
}
