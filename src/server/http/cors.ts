// --cors. With etcd's default ("*") every response carries the CORS headers of
// respond.ts and nothing here runs. With a list of origins, etcd's accessController adds
// them only when the request's Origin is listed (compared as a string, exactly), with that
// origin in Access-Control-Allow-Origin; other requests get none, OPTIONS included. The
// handlers keep writing corsHeaders; this rewrites them at writeHead, so every path
// (errors, redirects, streams) answers alike.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { corsHeaders } from "./respond.ts";

/** Does --cors allow every origin (etcd: "*" listed, or an empty list)? */
export function allowsAnyOrigin(cors: readonly string[]): boolean {
  return cors.length === 0 || cors.includes("*");
}

const corsNames = new Set(Object.keys(corsHeaders).map((k) => k.toLowerCase()));

type Headers = OutgoingHttpHeaders | readonly string[] | undefined;

function rewrite(headers: Headers, origin: string | undefined): OutgoingHttpHeaders | string[] {
  const add: [string, string][] =
    origin === undefined ? [] : Object.entries(corsHeaders).map(([k, v]) => [k, k === "Access-Control-Allow-Origin" ? origin : String(v)]);
  if (Array.isArray(headers)) {
    const flat = headers as readonly string[];
    const out: string[] = add.flat();
    for (let i = 0; i + 1 < flat.length; i += 2) if (!corsNames.has(flat[i]!.toLowerCase())) out.push(flat[i]!, flat[i + 1]!);
    return out;
  }
  const out: OutgoingHttpHeaders = Object.fromEntries(add);
  for (const [k, v] of Object.entries((headers ?? {}) as OutgoingHttpHeaders)) if (!corsNames.has(k.toLowerCase())) out[k] = v;
  return out;
}

/** Makes `res` carry the CORS headers etcd would give `req` under a restricted --cors list. */
export function restrictCors(req: IncomingMessage, res: ServerResponse, cors: readonly string[]): void {
  const originHeader = req.headers.origin;
  const origin = typeof originHeader === "string" && cors.includes(originHeader) ? originHeader : undefined;
  const writeHead = res.writeHead.bind(res) as (status: number, a?: unknown, b?: unknown) => ServerResponse;
  res.writeHead = ((status: number, a?: unknown, b?: unknown): ServerResponse =>
    typeof a === "string" ? writeHead(status, a, rewrite(b as Headers, origin)) : writeHead(status, rewrite(a as Headers, origin))) as ServerResponse["writeHead"];
}
