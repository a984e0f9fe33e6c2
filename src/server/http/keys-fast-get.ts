// The fast lane's handler (fast-lane.ts): a plain `GET /v2/keys/...` answered from the
// local store without node:http. It takes only requests that the router and
// keys-handler.ts would answer with one local store read and nothing else — no redirect,
// no percent-escapes, no quorum, wait or watch, no v2 authentication (on: credentials
// to check), no host whitelist — and answers them with the same bytes. Anything else,
// including every parameter error, is declined and goes the normal way.
import { V2Error } from "../../api/v2-errors.ts";
import type { FastHandler, FastResponse } from "./fast-lane.ts";
import { parseQuery, type FormValues } from "./form.ts";
import { eventJSON, raftHeaders, readKey, type KeysContext } from "./keys-handler.ts";
import { parseKeyRequest, type KeyRequest } from "./parse-key-request.ts";
import { muxCleanPath } from "./path.ts";
import { jsonBase, v2ErrorParts } from "./respond.ts";
import { keyOfPath, requestLineTooLong } from "./router.ts";

export function keysFastGet(ctx: KeysContext): FastHandler {
  return (head): FastResponse | undefined => {
    const server = ctx.server;
    if (head.method !== "GET" || server.config.hostWhitelist.length > 0 || server.auth.enabled) return undefined;
    const target = head.target;
    if (requestLineTooLong(head.method, target)) return undefined;
    const q = target.indexOf("?");
    const path = q < 0 ? target : target.slice(0, q);
    // No escapes: the raw path is then the decoded one the router would route.
    const key = path.includes("%") || muxCleanPath(path) !== path ? undefined : keyOfPath(path);
    if (key === undefined) return undefined;
    const form: FormValues = new Map();
    if (q >= 0 && parseQuery(target.slice(q + 1), form).error !== undefined) return undefined;
    let kr: KeyRequest;
    try {
      kr = parseKeyRequest("GET", key, form, Date.now());
    } catch {
      return undefined;
    }
    if (kr.kind !== "get" || kr.quorum || kr.head) return undefined;
    try {
      const ev = readKey(server, kr);
      return { status: 200, headers: jsonBase.concat(raftHeaders(ctx, ev.etcdIndex)), body: eventJSON(ev) };
    } catch (err) {
      if (!(err instanceof V2Error)) return undefined;
      const r = v2ErrorParts(err, ctx.clusterId);
      return { status: r.status, headers: jsonBase.concat(r.extra), body: r.body };
    }
  };
}
