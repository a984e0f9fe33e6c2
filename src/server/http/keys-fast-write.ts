// The fast lane's handler for v2 writes (fast-lane.ts): a `PUT`, `POST` or `DELETE` of
// `/v2/keys/...` proposed and answered without node:http. For a one-connection writer
// node:http's request and response objects, header maps, body stream and outgoing-message
// machinery were most of the CPU between the socket read and the proposal, and again
// between the apply and the response write.
//
// It takes only requests the router and keys-handler.ts would turn into a proposal with
// nothing else to do: no redirect, no percent-escapes, a urlencoded form (or none) that
// parses, parameters that validate into a write, v2 access control off, an allowed host,
// and --cors at its default. Everything else is declined before anything is proposed and
// goes the normal way, where it is answered (errors included) as before. Once proposed, a
// write is never declined: its result, or its failure, is answered here with the router's
// bytes.
import type { FastHandler, FastResponse, RequestHead } from "./fast-lane.ts";
import { goMediaType, MAX_FORM_BYTES } from "./body.ts";
import { parseQuery, type FormValues } from "./form.ts";
import { raftHeaders, writeAnswer } from "./keys-handler.ts";
import type { KeysFastGetContext } from "./keys-fast-get.ts";
import { isHostWhitelisted, requestHostname } from "./host-whitelist.ts";
import { echoPrevIndex, parseKeyRequest, type KeyRequest } from "./parse-key-request.ts";
import { jsonBase, proposalErrorParts } from "./respond.ts";
import { plainKeyOfPath, requestLineTooLong, splitTarget } from "./router.ts";
import { allowsAnyOrigin } from "./cors.ts";
import { wallClockNs } from "../wall-clock.ts";
import type { WriteTracer } from "../write-trace.ts";

const WRITES: ReadonlySet<string> = new Set(["PUT", "POST", "DELETE"]);

/** The form Go's ParseForm builds for this request, or undefined when the router should have it. */
function formOf(head: RequestHead, rawQuery: string): FormValues | undefined {
  const form: FormValues = new Map();
  const body = head.body ?? "";
  if (head.method === "DELETE") {
    // ParseForm reads no body for DELETE: leave any to the router.
    if (body !== "") return undefined;
  } else if (head.contentType !== undefined) {
    const media = goMediaType(head.contentType);
    if (media.error !== undefined || media.type !== "application/x-www-form-urlencoded" || body.length > MAX_FORM_BYTES) return undefined;
    if (parseQuery(Buffer.from(body, "latin1").toString("utf8"), form).error !== undefined) return undefined;
  } else if (body !== "") {
    return undefined;
  }
  if (rawQuery !== "" && parseQuery(rawQuery, form).error !== undefined) return undefined;
  return form;
}

export function keysFastWrite(ctx: KeysFastGetContext, tracer?: WriteTracer): FastHandler {
  const { enableV2, cors } = ctx.server.config;
  if (!enableV2 || !allowsAnyOrigin(cors)) return () => undefined;
  const metrics = ctx.server.metrics.v2Http;
  return (head): ReturnType<FastHandler> => {
    const server = ctx.server;
    const method = head.method;
    if (!WRITES.has(method) || server.auth.enabled) return undefined;
    const start = performance.now();
    const whitelist = server.config.hostWhitelist;
    if (whitelist.length > 0 && !isHostWhitelisted(whitelist, requestHostname(head.host))) return undefined;
    const target = head.target;
    if (requestLineTooLong(method, target)) return undefined;
    const { rawPath, rawQuery } = splitTarget(target);
    const key = plainKeyOfPath(rawPath);
    if (key === undefined) return undefined;
    const form = formOf(head, rawQuery ?? "");
    if (form === undefined) return undefined;
    // etcd stamps expirations with Go's nanosecond clock (keys-handler.ts does the same).
    const clock = wallClockNs();
    let kr: KeyRequest;
    try {
      kr = parseKeyRequest(method, key, form, clock.ms, clock.ns);
    } catch {
      return undefined;
    }
    if (kr.kind !== "write") return undefined;
    const write = kr;
    server.noteClientRequest();
    // Counted as the router counts (keys-handler.ts).
    const counted = metrics.of(method);
    counted.received();
    const trace = tracer?.begin(method, target);
    const propose = (): Promise<FastResponse> =>
      server.doV2({ t: "v2", time: clock.ms + clock.ns / 1e6, r: write.request }).then(
        (ev) => {
          const answer = writeAnswer(ev, write.noValueOnSuccess);
          counted.succeeded(start, performance.now());
          return { status: answer.status, headers: jsonBase.concat(raftHeaders(ctx, ev.etcdIndex)), body: answer.body };
        },
        (err: unknown) => {
          // Proposed: answered here whatever happened, never handed to the router (it would propose again).
          const r = proposalErrorParts(echoPrevIndex(err, write), ctx.clusterId);
          counted.failed(r.status);
          return { status: r.status, headers: jsonBase.concat(r.extra), body: r.body };
        },
      );
    if (trace === undefined || tracer === undefined) return propose();
    // doV2 proposes before its first await: the trace is handed over without AsyncLocalStorage.
    return tracer.withinSync(trace, propose).then((res) => ({ ...res, written: () => tracer.end(trace) }));
  };
}

/** The lane's handler for plain reads and for writes: each declines what it does not take. */
export function keysFast(read: FastHandler, write: FastHandler): FastHandler {
  return (head) => (head.method === "GET" ? read(head) : write(head));
}
