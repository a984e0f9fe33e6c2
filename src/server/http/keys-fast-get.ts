// The fast lane's handler (fast-lane.ts): a plain `GET /v2/keys/...` answered from the
// local store without node:http. It takes only requests that the router and
// keys-handler.ts would answer with one local store read and nothing else — no redirect,
// no percent-escapes, no quorum, wait or watch — and answers them with the same bytes.
// With a host whitelist, only whitelisted hosts. With v2 access control on, it makes the
// router's check (a password not verified yet goes through the KDF first: the answer is
// then a promise) and answers a refusal as the router does; client certificate
// authentication is left to the router. Anything else, including every parameter error,
// is declined and goes the normal way.
import { V2Error } from "../../api/v2-errors.ts";
import { deniedKeyAccess, keyReadAllowed } from "./auth-access.ts";
import type { FastHandler, FastResponse } from "./fast-lane.ts";
import { parseQuery, type FormValues } from "./form.ts";
import { eventJSON, raftHeaders, readKey, type KeysContext, type V2KeysHost } from "./keys-handler.ts";
import { isHostWhitelisted, requestHostname } from "./host-whitelist.ts";
import { parseKeyRequest, type KeyRequest } from "./parse-key-request.ts";
import { jsonBase, v2ErrorParts } from "./respond.ts";
import { plainKeyOfPath, requestLineTooLong, splitTarget } from "./router.ts";
import { allowsAnyOrigin } from "./cors.ts";

/** What the lane uses of the member besides the keys handler's view: the router's gates and its request count. */
export interface KeysFastGetHost extends V2KeysHost {
  readonly config: V2KeysHost["config"] & {
    readonly enableV2: boolean;
    readonly cors: readonly string[];
    readonly hostWhitelist: readonly string[];
  };
  /** Every request the lane answers counts as a client request (disk-wait.ts). */
  noteClientRequest(): void;
}

export interface KeysFastGetContext extends KeysContext {
  server: KeysFastGetHost;
}

export function keysFastGet(ctx: KeysFastGetContext): FastHandler {
  // --enable-v2=false and a restricted --cors change every answer: the router gives those.
  const { enableV2, cors } = ctx.server.config;
  if (!enableV2 || !allowsAnyOrigin(cors)) return () => undefined;
  const counted = ctx.server.metrics.v2Http.of("GET");
  return (head): ReturnType<FastHandler> => {
    const server = ctx.server;
    if (head.method !== "GET") return undefined;
    const start = performance.now();
    const whitelist = server.config.hostWhitelist;
    if (whitelist.length > 0 && !isHostWhitelisted(whitelist, requestHostname(head.host))) return undefined;
    const target = head.target;
    if (requestLineTooLong(head.method, target)) return undefined;
    const { rawPath, rawQuery } = splitTarget(target);
    const key = plainKeyOfPath(rawPath);
    if (key === undefined) return undefined;
    const form: FormValues = new Map();
    if (rawQuery !== undefined && parseQuery(rawQuery, form).error !== undefined) return undefined;
    let kr: KeyRequest;
    try {
      kr = parseKeyRequest("GET", key, form, Date.now());
    } catch {
      return undefined;
    }
    if (kr.kind !== "get" || kr.quorum || kr.head) return undefined;
    const get = kr;
    const answer = (allowed: boolean): FastResponse | undefined => {
      server.noteClientRequest();
      // Counted as the router counts (keys-handler.ts): a refused caller not at all.
      try {
        if (!allowed) throw deniedKeyAccess();
        const ev = readKey(server, get);
        counted.received();
        counted.succeeded(start, performance.now());
        return { status: 200, headers: jsonBase.concat(raftHeaders(ctx, ev.etcdIndex)), body: eventJSON(ev) };
      } catch (err) {
        if (!(err instanceof V2Error)) return undefined;
        const r = v2ErrorParts(err, ctx.clusterId);
        if (allowed) {
          counted.received();
          counted.failed(r.status);
        }
        return { status: r.status, headers: jsonBase.concat(r.extra), body: r.body };
      }
    };
    if (!server.auth.enabled) return answer(true);
    // "/" may be bare /v2/keys, which access control checks as "" (auth-access.ts requestKey).
    if (key === "/") return undefined;
    const allowed = keyReadAllowed(server, head.authorization, key, kr.recursive);
    if (allowed === undefined) return undefined;
    return allowed instanceof Promise ? allowed.then(answer) : answer(allowed);
  };
}
