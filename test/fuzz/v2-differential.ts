// Differential fuzzer of the v2 HTTP API: a seeded generator of requests, valid and
// malformed, sent in the same order to a real etcd 3.4 and to kvctl, both fresh, and
// their answers compared after normalisation (indexes by rank of first appearance, as
// ../shared/conformance/run.mjs does; cluster/member ids as opaque symbols; TTLs and
// expirations within a second; ports). Requests travel as raw bytes on their own
// connection (v2-raw.ts), so odd methods, targets and bodies reach each server exactly as
// written.
//
//   node --import tsx test/fuzz/v2-differential.ts SEED COUNT   (scripts/fuzz-v2.sh)
//
// The generator keeps clear of what differs by design or by timing: TTLs are long (no
// key expires during a run; a run stops before the shortest could), stats counters
// (etcd's quirks) and request lines over 4096 bytes (REFERENCE.md) are not sent. The one
// TTL that expires at once (a wrapped one on an update or CAS) is waited out on both
// servers before the next request (`dueAtOnce`). Both start at the same index (checked):
// the waitIndex and prevIndex values taken from etcd's answers are sent to kvctl as they are.
// Divergences kvctl keeps on purpose are listed in kvctl(1), DIFFERENCES FROM ETCD, and in
// `knownDifference` below.
import { spawn, type ChildProcess } from "node:child_process";
import { stopProcess } from "../helpers/run-process.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mulberry32, type Rng } from "../helpers/prng.ts";
import { paramsOf, send, type FuzzRequest, type RawResponse } from "./v2-raw.ts";
import { awaitExpiry, dueAtOnce, indexOf, sameStartIndex } from "./v2-timing.ts";

export { send, type FuzzRequest, type RawResponse } from "./v2-raw.ts";

// ---------------------------------------------------------------- generator

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
const chance = (rng: Rng, p: number): boolean => rng() < p;

const SEGMENTS = ["a", "b", "c", "d", "dir", "_h", "x%20y", "%2F", "%C3%A9", "+", "a.b", "..", ".", "", "%zz", "%41", "k%3Fq", "10", "9", "B"];
const BOOLS = ["true", "false", "1", "0", "t", "F", "TRUE", "True", "yes", "", "maybe"];
const TTLS = ["7200", "600", "3600", "abc", "-1", "1.5", "", " 5", "99999999999", "18446744073709551616"];
/** The shortest valid TTL generated (s): a run ends before keys with it could expire. */
export const SHORTEST_TTL_S = 600;
const INDEXES = ["abc", "-1", "1e3", "", "0"];
const VALUES = ["v", "", "hello world", "%26x%3D", "a+b", "%zz", "é", "1", "v2"];
const PARAMS = ["value", "ttl", "prevExist", "prevValue", "prevIndex", "dir", "recursive", "sorted", "wait", "waitIndex", "quorum", "refresh", "noValueOnSuccess", "stream"];

function keyPath(rng: Rng): string {
  const depth = 1 + Math.floor(rng() * 3);
  const segs: string[] = [];
  for (let i = 0; i < depth; i++) segs.push(pick(rng, chance(rng, 0.75) ? SEGMENTS.slice(0, 7) : SEGMENTS));
  return "/" + segs.join("/") + (chance(rng, 0.08) ? "/" : "");
}

function paramValue(rng: Rng, name: string, index: () => number): string {
  switch (name) {
    case "value":
    case "prevValue":
      return pick(rng, VALUES);
    case "ttl":
      return pick(rng, TTLS);
    case "prevIndex":
    case "waitIndex":
      return chance(rng, 0.7) ? String(Math.max(1, index() - Math.floor(rng() * 6))) : pick(rng, INDEXES);
    case "wait":
    case "stream":
      return chance(rng, 0.8) ? pick(rng, ["true", "false"]) : pick(rng, BOOLS);
    default:
      return chance(rng, 0.8) ? pick(rng, ["true", "false"]) : pick(rng, BOOLS);
  }
}

/**
 * Request shapes the independent parameters rarely make: directories with prevExist,
 * sorted recursive listings, watches from an index in history (answered at once) and far
 * behind it (401 once 1000 events passed), refreshes, and repeated parameters (Go takes
 * the first value, body before query).
 */
function shapedParams(rng: Rng, method: string, index: () => number): string[] {
  const i = index();
  switch (Math.floor(rng() * 8)) {
    case 0:
      return ["dir=true", `prevExist=${pick(rng, ["true", "false"])}`];
    case 1:
      return method === "GET" ? ["recursive=true", "sorted=true"] : ["dir=true"];
    case 2:
      return method === "GET" ? ["wait=true", `waitIndex=${Math.max(1, i - Math.floor(rng() * 20))}`, ...(chance(rng, 0.5) ? ["recursive=true"] : [])] : ["prevExist=true", "ttl=7200"];
    case 3:
      return method === "GET" ? ["wait=true", `waitIndex=${Math.max(1, i - 1000 - Math.floor(rng() * 50))}`] : ["ttl=600", "refresh=true", "prevExist=true"];
    case 4:
      return [`value=${pick(rng, VALUES)}`, `value=${pick(rng, VALUES)}`];
    case 5:
      return [`ttl=${pick(rng, TTLS)}`, `ttl=${pick(rng, TTLS)}`];
    case 6:
      return ["sorted=false", "sorted=true", "recursive=true"];
    default:
      return [`prevIndex=${Math.max(1, i - Math.floor(rng() * 3))}`, `prevIndex=${pick(rng, INDEXES)}`];
  }
}

/**
 * Head lines Go's server refuses or handles itself before a handler: transfer codings other
 * than one `chunked` line (not `chunked` itself: with the Content-Length the raw client
 * always writes, llhttp refuses what Go reads), a second Host line, expectations (100
 * Continue before a body only, 417 otherwise), a header far over node:http's default limit
 * and under Go's 1 MiB.
 */
export function headBend(rng: Rng): [string, string][] {
  switch (Math.floor(rng() * 6)) {
    case 0:
      return [["Transfer-Encoding", pick(rng, ["gzip", "identity", "chunked, chunked", "gzip, chunked", "", "Chunked , x"])]];
    case 1:
      return [["Transfer-Encoding", "chunked"], ["Transfer-Encoding", "chunked"]];
    case 2:
      return [["Host", pick(rng, ["127.0.0.1", "other"])]];
    case 3:
      return [["Expect", pick(rng, ["100-continue", "100-CONTINUE", "foo", ""])]];
    case 4:
      return [["X-Big", "y".repeat(20_000 + Math.floor(rng() * 100_000))]];
    default:
      return [["Expect", "100-continue"], ["Transfer-Encoding", "gzip"]];
  }
}

/**
 * A seeded request generator. `index` tells it the reference server's current v2 index
 * (last one seen), so prevIndex/waitIndex hit real entries often.
 */
export function* generateRequests(seed: number, count: number, index: () => number, opts: { shapes?: boolean } = {}): Generator<FuzzRequest> {
  const rng = mulberry32(seed);
  for (let n = 0; n < count; n++) {
    const r = rng();
    let method = "GET";
    if (r < 0.3) method = "PUT";
    else if (r < 0.4) method = "POST";
    else if (r < 0.55) method = "DELETE";
    else if (r < 0.62) method = "HEAD";
    else if (r < 0.66) method = pick(rng, ["PATCH", "OPTIONS", "FOO", "get", "PROPFIND"]);
    let path: string;
    const other = rng();
    if (other < 0.06) {
      path = pick(rng, ["/v2/machines", "/v2/members", "/v2/members/leader", "/v2/members/zz", "/version", "/health", "/v2/keysfoo", "/v2", "/", "/v2/keys", "/v2/keys/", "/v2/auth/enable", "/v2/auth/users", "/v2/stats/self"]);
    } else if (other < 0.1) {
      path = pick(rng, ["//v2/keys/a", "/v2/keys/../a", "/v2/keys/a/./b", "/v2/keys//a"]);
    } else {
      path = "/v2/keys" + keyPath(rng);
    }
    const params: string[] = [];
    if (opts.shapes === true && path.startsWith("/v2/keys/") && chance(rng, 0.15)) params.push(...shapedParams(rng, method, index));
    const nParams = Math.floor(rng() * (params.length > 0 ? 2 : 4));
    for (let i = 0; i < nParams; i++) {
      const name = pick(rng, PARAMS);
      // A live watch without an index blocks until the wait ends: rarer.
      if ((name === "wait" || name === "stream") && chance(rng, 0.5)) continue;
      params.push(chance(rng, 0.05) ? name : `${name}=${paramValue(rng, name, index)}`);
    }
    if (chance(rng, 0.03)) params.push(pick(rng, ["a;b", "%zz=1", "value=%zz"]));
    const inBody = (method === "PUT" || method === "POST") && chance(rng, 0.35);
    const headers: [string, string][] = [];
    let body: string | undefined;
    let rawBody: string | undefined;
    let query = params;
    if (inBody) {
      const ct = pick(rng, ["application/x-www-form-urlencoded", "application/x-www-form-urlencoded; charset=utf-8", "application/json", "text/plain", "", "APPLICATION/X-WWW-FORM-URLENCODED", "application/x-www-form-urlencoded;charset=UTF-8", " application/x-www-form-urlencoded ; x=y", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded; charset"]);
      if (ct !== "") headers.push(["Content-Type", ct]);
      const split = Math.floor(rng() * (params.length + 1));
      body = params.slice(0, split).join("&");
      query = params.slice(split);
      if (ct === "application/json") body = JSON.stringify({ value: "j" });
      if (chance(rng, 0.1)) {
        rawBody = pick(rng, ["zz\r\nvalue=1\r\n0\r\n\r\n", "7\r\nvalue=1XX\r\n0\r\n\r\n", "\r\n\r\n"]);
        body = undefined;
      }
    }
    if (chance(rng, 0.03)) path = "http://127.0.0.1" + path; // absolute form
    if (chance(rng, 0.04)) headers.push(...headBend(rng));
    if (path.startsWith("/v2/members") && (method === "POST" || method === "PUT")) {
      headers.push(["Content-Type", pick(rng, ["application/json", "text/plain", "Application/JSON"])]);
      body = pick(rng, ["[1]", '{"peerURLs":5}', '{"peerURLs":["foo"]}', "{}", '{"peerURLs":["http://a"]}', "x"]);
    }
    const target = method === "OPTIONS" && chance(rng, 0.2) ? "*" : path + (query.length > 0 ? "?" + query.join("&") : "");
    const q = new URLSearchParams(query.join("&").replace(/%(?![0-9a-fA-F]{2})/g, "%25"));
    const waits = [...q.entries()].some(([k, v]) => (k === "wait" || k === "stream") && /^(1|t|T|TRUE|true|True)$/.test(v));
    yield { method, target, headers, ...(body === undefined ? {} : { body }), ...(rawBody === undefined ? {} : { rawBody }), mayBlock: waits || (body !== undefined && rawBody !== undefined) };
  }
}

// ---------------------------------------------------------------- normalisation

const IGNORED = new Set(["date", "connection", "keep-alive", "content-length", "transfer-encoding", "x-raft-index", "x-raft-term"]);

/** Per-server symbol tables: indexes by rank of first appearance, ids as opaque names. */
export class Normalizer {
  readonly #ranks = new Map<string, number>();
  readonly #ids = new Map<string, number>();
  readonly #ports: number[];
  constructor(ports: number[]) {
    this.#ports = ports;
  }
  index(v: number | string): string {
    const k = String(v);
    if (k === "0") return "0";
    if (!this.#ranks.has(k)) this.#ranks.set(k, this.#ranks.size + 1);
    return `<i${this.#ranks.get(k)!}>`;
  }
  id(v: string): string {
    if (!this.#ids.has(v)) this.#ids.set(v, this.#ids.size + 1);
    return `<id${this.#ids.get(v)!}>`;
  }
  text(s: string): string {
    let out = s;
    this.#ports.forEach((p, i) => (out = out.split(String(p)).join(`<port${i}>`)));
    return out;
  }
}

/** A TTL or expiration compared within a tolerance: [kind, value]. */
type Fuzzy = { fuzzy: "ttl" | "time"; v: number };

/** Indexes in a cause by rank, except the request's own prevIndex / waitIndex echoed back. */
function normCause(N: Normalizer, cause: string, params: Map<string, string>): string {
  const sym = (d: string, param: string): string => (params.get(param) === d ? `<${param}>` : N.index(Number(d)));
  return cause
    .replace(/\d{20}/g, (d) => N.index(Number(d)))
    .replace(/\[(\d+) != (\d+)\]/g, (_m, a: string, b: string) => `[${sym(a, "prevIndex")} != ${N.index(Number(b))}]`)
    .replace(/\[(\d+)\/(\d+)\]/g, (_m, a: string, b: string) => `[${N.index(Number(a))}/${sym(b, "waitIndex")}]`);
}

function normV2(N: Normalizer, v: unknown, sorted: boolean, at: number, params: Map<string, string> = new Map()): unknown {
  if (Array.isArray(v)) return v.map((x) => normV2(N, x, sorted, at, params));
  if (v === null || typeof v !== "object") return typeof v === "string" ? N.text(v) : v;
  const obj = v as Record<string, unknown>;
  const o: Record<string, unknown> = {};
  for (const k of Object.keys(obj).sort()) {
    const x = obj[k];
    if ((k === "createdIndex" || k === "modifiedIndex" || (k === "index" && "errorCode" in obj)) && typeof x === "number") o[k] = N.index(x);
    else if (k === "ttl" && typeof x === "number") o[k] = { fuzzy: "ttl", v: x } satisfies Fuzzy;
    else if (k === "expiration" && typeof x === "string") o[k] = { fuzzy: "time", v: Date.parse(x) - at, text: /\.\d{1,9}Z$/.test(x) || /:\d\dZ$/.test(x) } as Fuzzy;
    else if (k === "key" && typeof x === "string") o[k] = x.replace(/\d{20}/g, (d) => N.index(Number(d)));
    else if (k === "cause" && typeof x === "string") o[k] = normCause(N, x, params);
    else if (k === "nodes" && Array.isArray(x) && !sorted) o[k] = (normV2(N, x, sorted, at, params) as Record<string, unknown>[]).sort((a, b) => String(a["key"]).localeCompare(String(b["key"])));
    else if ((k === "id" || k === "name") && typeof x === "string") o[k] = N.id(x);
    else o[k] = normV2(N, x, sorted, at, params);
  }
  return o;
}

export interface Normalized {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  pending?: boolean;
  noHead?: boolean;
}

export function normalize(N: Normalizer, req: FuzzRequest, r: RawResponse): Normalized {
  if (r.noHead === true) return { status: 0, headers: {}, body: "", noHead: true };
  const headers: Record<string, string> = {};
  const h = r.headers;
  for (const [k0, v] of [...h.entries()].sort()) {
    // etcd's X-Etcd-* are kvctl's X-Kv-*; kvctl's X-Etcd-* aliases equal to them are dropped.
    if (k0.startsWith("x-etcd-") && h.has("x-kv-" + k0.slice(7))) continue;
    const k = k0.startsWith("x-etcd-") ? "x-kv-" + k0.slice(7) : k0;
    if (IGNORED.has(k)) continue;
    if (k === "x-kv-index") headers[k] = N.index(v);
    else if (k === "x-kv-cluster-id") headers[k] = N.id(v);
    else headers[k] = N.text(v);
  }
  if (r.continued === true) headers["(100 continue)"] = "sent";
  // Framing: Go gives a short complete answer a Content-Length.
  if (!r.pending && r.body.length < 2000 && req.method !== "HEAD" && r.status !== 204 && r.status !== 304) {
    headers["(framing)"] = h.get("transfer-encoding") === "chunked" ? "chunked" : "whole";
  }
  let body: unknown = N.text(r.body);
  const path = req.target.replace(/^[a-z]+:\/\/[^/]*/, "").split("?")[0] ?? "";
  if ((h.get("content-type") ?? "").startsWith("application/json") && r.body.trim() !== "") {
    // The first value decides, as Go's Form.Get (the fuzzer repeats parameters).
    const sorted = /^(1|t|T|TRUE|true|True)$/.test(paramsOf(req).get("sorted") ?? "");
    const lines = r.body.split("\n").filter((l) => l !== "");
    try {
      body = lines.map((l) => normV2(N, JSON.parse(l), sorted, r.at, paramsOf(req)));
      if (r.body.endsWith("\n")) (body as unknown[]).push("<newline>");
    } catch {
      body = N.text(r.body);
    }
    if (path === "/version" && Array.isArray(body)) body = body.map((b) => (b !== null && typeof b === "object" ? { ...b, kvctl: undefined } : b));
  }
  return { status: r.status, headers, body, ...(r.pending ? { pending: true } : {}) };
}

/** The first difference between two normalised answers, as "path: etcd vs kvctl". */
export function firstDifference(e: unknown, k: unknown, at = ""): string | undefined {
  if (e !== null && k !== null && typeof e === "object" && typeof k === "object") {
    const fe = e as Partial<Fuzzy>;
    const fk = k as Partial<Fuzzy>;
    if (fe.fuzzy !== undefined && fe.fuzzy === fk.fuzzy) {
      const tol = fe.fuzzy === "ttl" ? 1 : 1500;
      if (Math.abs((fe.v ?? 0) - (fk.v ?? 0)) > tol) return `${at}: ${JSON.stringify(e)} vs ${JSON.stringify(k)}`;
      return undefined;
    }
    if (Array.isArray(e) !== Array.isArray(k)) return `${at}: ${JSON.stringify(e)} vs ${JSON.stringify(k)}`;
    const keys = new Set([...Object.keys(e), ...Object.keys(k)]);
    for (const key of [...keys].sort()) {
      const d = firstDifference((e as Record<string, unknown>)[key], (k as Record<string, unknown>)[key], `${at}.${key}`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  return e === k ? undefined : `${at}: ${JSON.stringify(e)} vs ${JSON.stringify(k)}`;
}

/**
 * Differences kvctl keeps on purpose (kvctl(1), DIFFERENCES FROM ETCD): the /version
 * answer names kvctl's own version too, and /v2/members and /v2/stats/self name each
 * server's own members, ids and start times.
 */
export function knownDifference(req: FuzzRequest, diff: string, etcd: Normalized, kvctl: Normalized): boolean {
  // cmux drops a connection whose request line it cannot read (a space or control byte in
  // the target); kvctl answers Go's 400 instead (REFERENCE.md, as for long request lines).
  if (etcd.noHead === true && kvctl.status === 400) return true;
  // With auth on, etcd 3.4.23 reads the user of Basic credentials with an empty name as
  // the users directory and dereferences its nil value: the handler panics and Go drops the
  // connection (userFromBasicAuth -> getUser("")). kvctl answers 401 as for any unknown user.
  if (etcd.noHead === true && kvctl.status === 401 && basicUser(req) === "") return true;
  // A raw byte above 0x7f in the query of a redirected target: kvctl's link shows it
  // escaped (%c3%a9, as in the Location header), Go's shows the raw byte.
  if (etcd.status === 301 && diff.startsWith(".body:") && /[\x80-\uffff]/.test(req.target)) return true;
  const path = req.target.replace(/^[a-z]+:\/\/[^/]*/, "").split("?")[0] ?? "";
  if (path === "/v2/stats/self" && /^\.body\.0\.(startTime|leaderInfo|recvAppendRequestCnt|sendAppendRequestCnt|recvPkgRate|recvBandwidthRate)/.test(diff)) return true;
  if (historyScanDifference(req, path, etcd, kvctl)) return true;
  if (streamReplayDifference(req, etcd, kvctl)) return true;
  // Go sends 100 Continue when the handler reads the body; kvctl once it accepts the head of
  // a request with one, also when its handler then ignores the body (a JSON keys write).
  if (kvctl.headers["(100 continue)"] !== undefined && etcd.headers["(100 continue)"] === undefined && req.body !== undefined && req.body !== "") {
    return equalWithout(etcd, kvctl, "(100 continue)");
  }
  // Framing is compared for bodies under 2000 characters; a body near that, with expirations
  // (whose text ticks), can fall on either side of it on each server.
  if ((etcd.headers["(framing)"] === undefined) !== (kvctl.headers["(framing)"] === undefined) && typeof etcd.body !== "string" && JSON.stringify(etcd.body).includes('"fuzzy":"time"')) {
    return equalWithout(etcd, kvctl, "(framing)");
  }
  return false;
}

/**
 * A stream watch from an index in history (src/store/v2/README.md, deliberate): etcd sends
 * the first matching event and then nothing more from history, kvctl every matching
 * retained event. Known when kvctl's answer begins with etcd's event, all else equal.
 */
function streamReplayDifference(req: FuzzRequest, etcd: Normalized, kvctl: Normalized): boolean {
  const params = paramsOf(req);
  if (!isTrue(params.get("stream")) || !isTrue(params.get("wait")) || (params.get("waitIndex") ?? "") === "") return false;
  if (!Array.isArray(etcd.body) || !Array.isArray(kvctl.body) || etcd.body.length !== 2 || etcd.body[1] !== "<newline>" || kvctl.body.length <= 2) return false;
  return firstDifference({ ...etcd, body: etcd.body[0] }, { ...kvctl, body: kvctl.body[0] }) === undefined;
}

/** Whether two answers are equal but for one header. */
function equalWithout(etcd: Normalized, kvctl: Normalized, header: string): boolean {
  const without = (n: Normalized): Normalized => ({ ...n, headers: Object.fromEntries(Object.entries(n.headers).filter(([k]) => k !== header)) });
  return firstDifference(without(etcd), without(kvctl)) === undefined;
}

/** The user name of the request's Basic credentials, if it has well-formed ones. */
function basicUser(req: FuzzRequest): string | undefined {
  const h = req.headers.find(([k]) => k.toLowerCase() === "authorization")?.[1];
  const m = /^Basic ([A-Za-z0-9+/=]+)$/.exec(h ?? "");
  if (m === null) return undefined;
  const text = Buffer.from(m[1]!, "base64").toString("utf8");
  return text.includes(":") ? text.slice(0, text.indexOf(":")) : undefined;
}

interface WatchEvent {
  action?: string;
  node?: { key?: string; dir?: boolean };
  prevNode?: { key?: string; dir?: boolean };
}

const isTrue = (v: string | undefined): boolean => /^(1|t|T|TRUE|true|True)$/.test(v ?? "");

/**
 * A watch answered from the event history where kvctl(1) (DIFFERENCES FROM ETCD) differs on
 * purpose: etcd's history scan returns events on hidden nodes below a recursive watch
 * (its live delivery skips them, as kvctl does both ways), and the delete or expiry of a
 * directory whose path is a mere string prefix of the watched key (/d for /dir/a; kvctl
 * compares whole segments). Known only when etcd's event is one of those, and kvctl
 * answered the same status and index with nothing yet or an event the watch does match.
 */
function historyScanDifference(req: FuzzRequest, path: string, etcd: Normalized, kvctl: Normalized): boolean {
  const params = paramsOf(req);
  if (req.method !== "GET" || !path.startsWith("/v2/keys") || !isTrue(params.get("wait")) || (params.get("waitIndex") ?? "") === "") return false;
  if (etcd.status !== 200 || kvctl.status !== 200 || etcd.headers["x-kv-index"] !== kvctl.headers["x-kv-index"]) return false;
  let watched: string;
  try {
    watched = "/" + decodeURIComponent(path.slice("/v2/keys".length)).split("/").filter((s) => s !== "").join("/");
  } catch {
    return false;
  }
  const recursive = isTrue(params.get("recursive"));
  const below = (key: string): string | undefined => (watched === "/" ? key.slice(1) : key.startsWith(watched + "/") ? key.slice(watched.length + 1) : undefined);
  const hiddenBelow = (key: string): boolean => below(key)?.split("/").some((seg) => seg.startsWith("_")) === true;
  const deletedDir = (e: WatchEvent): string | undefined => ((e.action === "delete" || e.action === "expire") && e.prevNode?.dir === true ? e.prevNode.key : undefined);
  const eventOf = (n: Normalized): WatchEvent | undefined => (Array.isArray(n.body) && typeof n.body[0] === "object" && n.body[0] !== null ? (n.body[0] as WatchEvent) : undefined);
  const e = eventOf(etcd);
  const key = e?.node?.key;
  if (e === undefined || key === undefined || key === watched) return false;
  const dir = deletedDir(e);
  const hidden = recursive && hiddenBelow(key);
  const prefixOnly = dir !== undefined && watched.startsWith(dir) && watched !== dir && !watched.startsWith(dir === "/" ? "/" : dir + "/") && !(recursive && below(key) !== undefined);
  if (!hidden && !prefixOnly) return false;
  if (kvctl.pending === true && kvctl.body === "") return true;
  const k = eventOf(kvctl);
  const kkey = k?.node?.key;
  if (k === undefined || kkey === undefined) return false;
  const kdir = deletedDir(k);
  return kkey === watched || (recursive && below(kkey) !== undefined && !hiddenBelow(kkey)) || (kdir !== undefined && (watched === kdir || watched.startsWith(kdir + "/")));
}

// ---------------------------------------------------------------- running

export interface Divergence {
  n: number;
  request: string;
  difference: string;
  etcd: string;
  kvctl: string;
}

/**
 * A request kvctl answered with a 500 or left unanswered (nothing, or a body cut off, within
 * the wait of a request that does not block). Where etcd fails the same way kvctl copies it
 * (a form it cannot parse is etcd's 500 too); where etcd does not, kvctl has a fault, even
 * if a known difference hides it from the comparison.
 */
export interface Failure {
  n: number;
  request: string;
  kvctl: string;
  /** etcd failed the same way (no divergence then, still worth a look). */
  etcdToo: boolean;
}

/** Whether an answer is a failure in the sense of Failure: a 500, no answer, a body cut off. */
export function failed(req: FuzzRequest, r: Normalized): boolean {
  return r.status === 500 || r.status === 0 || (r.pending === true && !req.mayBlock);
}

export interface DifferentialOptions {
  seed: number;
  count: number;
  etcdPort: number;
  kvctlPort: number;
  /** Ports appearing in answers (both servers'), replaced by symbols. */
  etcdPorts: number[];
  kvctlPorts: number[];
  /** How long a long poll is given (ms). */
  waitMs?: number;
  /** Stop after this many divergences (a divergence often cascades). */
  maxDivergences?: number;
  /** Also generate shapedParams' request shapes (scripts/fuzz-v2.sh does; FUZZ_SHAPES=0 turns them off). */
  shapes?: boolean;
  /** Another request generator than the keys one (v2-auth.ts's generateAuthRequests). */
  generate?: (seed: number, count: number, index: () => number) => Generator<FuzzRequest>;
  /** Called after every request (a long run reports as it goes, and a killed run still said something). */
  onProgress?: (sent: number, divergence: Divergence | undefined) => void;
  /** Called when the run ends before `count` (it ran so long that TTLs would expire). */
  onStop?: (sent: number, why: string) => void;
}

function show(req: FuzzRequest): string {
  return `${req.method} ${req.target}${req.body !== undefined ? ` body=${JSON.stringify(req.body)}` : ""}${req.rawBody !== undefined ? ` chunked=${JSON.stringify(req.rawBody)}` : ""}${req.headers.length > 0 ? ` ${JSON.stringify(req.headers.map(([k, v]) => [k, v.length > 200 ? `${v.slice(0, 20)}…(${v.length})` : v]))}` : ""}`;
}

export async function runDifferential(o: DifferentialOptions): Promise<{ sent: number; divergences: Divergence[]; failures: Failure[] }> {
  const NE = new Normalizer(o.etcdPorts);
  const NK = new Normalizer(o.kvctlPorts);
  const divergences: Divergence[] = [];
  const failures: Failure[] = [];
  let lastIndex = await sameStartIndex(o.etcdPort, o.kvctlPort);
  let sent = 0;
  const started = Date.now();
  const requests = o.generate !== undefined ? o.generate(o.seed, o.count, () => lastIndex) : generateRequests(o.seed, o.count, () => lastIndex, { shapes: o.shapes === true });
  for (const req of requests) {
    // Past this, keys given the shortest TTL would expire, each server at its own SYNC.
    if (Date.now() - started > (SHORTEST_TTL_S - 60) * 1000) {
      o.onStop?.(sent, `stopped after ${sent} requests: keys with a ${SHORTEST_TTL_S} s TTL would start expiring`);
      break;
    }
    const wait = req.mayBlock ? (o.waitMs ?? 400) : 5000;
    const e = await send(o.etcdPort, req, wait);
    const k = await send(o.kvctlPort, req, wait);
    sent++;
    const idx = Number(e.headers.get("x-etcd-index"));
    if (Number.isFinite(idx) && idx > lastIndex) lastIndex = idx;
    if (dueAtOnce(req, e)) await awaitExpiry(o.etcdPort, indexOf(e));
    if (dueAtOnce(req, k)) await awaitExpiry(o.kvctlPort, indexOf(k));
    const ne = normalize(NE, req, e);
    const nk = normalize(NK, req, k);
    if (failed(req, nk)) failures.push({ n: sent, request: show(req), kvctl: JSON.stringify(nk).slice(0, 600), etcdToo: failed(req, ne) });
    const d = firstDifference(ne, nk);
    if (d !== undefined && !knownDifference(req, d, ne, nk)) {
      const dv = { n: sent, request: show(req), difference: d, etcd: JSON.stringify(ne), kvctl: JSON.stringify(nk) };
      divergences.push(dv);
      o.onProgress?.(sent, dv);
      if (divergences.length >= (o.maxDivergences ?? 20)) break;
    } else {
      o.onProgress?.(sent, undefined);
    }
  }
  return { sent, divergences, failures };
}

/** kvctl's own failures: those etcd does not share. */
export const ownFailures = (failures: Failure[]): Failure[] => failures.filter((f) => !f.etcdToo);

/** The run's last lines: kvctl's own failures (a 500, no answer), each, then the counts. */
export function showFailures(seed: number, failures: Failure[]): string {
  const own = ownFailures(failures);
  const lines = own.slice(0, 20).map((f) => `kvctl failed #${f.n} ${f.request}\n  kvctl: ${f.kvctl}`);
  return [...lines, `seed ${seed}: kvctl answered 500 or nothing ${failures.length} times, etcd the same on ${failures.length - own.length}`].join("\n");
}

// ---------------------------------------------------------------- servers

export interface Side {
  port: number;
  ports: number[];
  stop(): Promise<void>;
}

async function waitReady(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited: ${log()}`);
    const r = await send(port, { method: "GET", target: "/v2/members", headers: [], mayBlock: false }, 1000);
    if (r.status === 200 && /"name":"[^"]+"/.test(r.body)) {
      const h = await send(port, { method: "GET", target: "/health", headers: [], mayBlock: false }, 2000);
      if (h.status === 200) return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server not ready on ${port}: ${log()}`);
}

/** Starts a fresh single-member server: `etcd` (the binary on PATH) or kvctl (bin/kvctl). */
export async function startSide(kind: "etcd" | "kvctl", clientPort: number, peerPort: number, kvctlBin: string): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `fuzz-${kind}-`));
  const name = kind === "etcd" ? "ref" : "sut";
  const c = `http://127.0.0.1:${clientPort}`;
  const p = `http://127.0.0.1:${peerPort}`;
  const flags = ["--name", name, "--data-dir", join(dir, "data"), "--listen-client-urls", c, "--advertise-client-urls", c, "--listen-peer-urls", p, "--initial-advertise-peer-urls", p, "--initial-cluster", `${name}=${p}`];
  const child = kind === "etcd"
    ? spawn("etcd", [...flags, "--enable-v2=true", "--log-level", "error"], { stdio: ["ignore", "pipe", "pipe"] })
    : spawn(process.execPath, [kvctlBin, "serve", ...flags, "--log-level", "warn"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const keep = (b: Buffer): void => void (out = (out + b.toString()).slice(-4000));
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const stop = async (): Promise<void> => {
    await stopProcess(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(clientPort, child, () => out);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port: clientPort, ports: [clientPort, peerPort], stop };
}

/** Is an etcd binary on PATH? */
export function etcdAvailable(): Promise<boolean> {
  return new Promise((resolve) => {
    const c = spawn("etcd", ["--version"], { stdio: "ignore" });
    c.on("error", () => resolve(false));
    c.on("exit", (code) => resolve(code === 0));
  });
}

async function main(): Promise<void> {
  const seed = Number(process.argv[2] ?? Date.now() % 1e9);
  const count = Number(process.argv[3] ?? 1000);
  const { freePort, kvctlBin } = await import("../helpers/server.ts");
  const [a, b, c, d] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const etcd = await startSide("etcd", a, b, kvctlBin);
  const kv = await startSide("kvctl", c, d, kvctlBin).catch(async (err: unknown) => {
    await etcd.stop();
    throw err;
  });
  try {
    const onProgress = (sent: number, dv: Divergence | undefined): void => {
      if (dv !== undefined) console.log(`#${dv.n} ${dv.request}\n  ${dv.difference}\n  etcd:  ${dv.etcd}\n  kvctl: ${dv.kvctl}`);
      if (sent % 1000 === 0) console.log(`seed ${seed}: ${sent} requests sent`);
    };
    const onStop = (_sent: number, why: string): void => console.log(`seed ${seed}: ${why}`);
    const generate = process.env["FUZZ_MODE"] === "auth" ? (await import("./v2-auth.ts")).generateAuthRequests : undefined;
    const r = await runDifferential({ seed, count, etcdPort: a, kvctlPort: c, etcdPorts: etcd.ports, kvctlPorts: kv.ports, maxDivergences: Number(process.env["FUZZ_MAX_DIVERGENCES"] ?? 20), shapes: process.env["FUZZ_SHAPES"] !== "0", ...(generate === undefined ? {} : { generate }), onProgress, onStop });
    console.log(showFailures(seed, r.failures));
    console.log(`seed ${seed}: ${r.sent} requests, ${r.divergences.length} divergences`);
    process.exitCode = r.divergences.length === 0 && ownFailures(r.failures).length === 0 ? 0 : 1;
  } finally {
    await Promise.all([etcd.stop(), kv.stop()]);
  }
}

// Not awaited at top level: v2-auth.ts, loaded by main, imports this module back, and a
// module still in its top-level await would hold that import forever.
if (process.argv[1] !== undefined && import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 2;
  });
}
