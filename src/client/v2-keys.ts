// Typed client for the v2 key space (/v2/keys), shaped like etcd's Go KeysAPI: the same
// query parameters in the same places, so a kvctl server and etcd see identical requests.

import type { V2NodeJSON, V2ResponseJSON } from "../api/v2-types.ts";
import { V2Error } from "../api/v2-errors.ts";
import { Header } from "../api/headers.ts";
import type { ClusterClient } from "./cluster.ts";
import { ClientError, invalidJsonError } from "./errors.ts";
import { goEncodeQuery, v2KeysPath } from "./go-url.ts";
import type { HttpResponse } from "./transport.ts";

export const v2KeysPrefix = "/v2/keys";

/** A successful key-space answer with the headers that matter to callers. */
/**
 * An index as etcd's Go client sends it: etcdctl reads `--swap-with-index -1` as an int and
 * the client sends it as uint64, so a negative index wraps (18446744073709551615, which
 * the server takes as a real, never matching index, not as a malformed one).
 */
export function uint64Text(n: number): string {
  return BigInt.asUintN(64, BigInt(Math.trunc(n))).toString();
}

export interface V2Result {
  response: V2ResponseJSON & { node: V2NodeJSON };
  /** X-Kv-Index (falling back to X-Etcd-Index); 0 when absent. */
  index: number;
  /** X-Kv-Cluster-Id (falling back to X-Etcd-Cluster-Id); "" when absent. */
  clusterId: string;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface GetOptions extends CallOptions {
  recursive?: boolean;
  sorted?: boolean;
  quorum?: boolean;
}

export type PrevExist = "" | "true" | "false";

export interface SetOptions extends CallOptions {
  prevValue?: string;
  prevIndex?: number;
  prevExist?: PrevExist;
  /** Seconds; sent only when > 0. */
  ttl?: number;
  refresh?: boolean;
  dir?: boolean;
  noValueOnSuccess?: boolean;
}

export interface CreateInOrderOptions extends CallOptions {
  ttl?: number;
}

export interface DeleteOptions extends CallOptions {
  prevValue?: string;
  prevIndex?: number;
  dir?: boolean;
  recursive?: boolean;
}

export interface WatcherOptions {
  /** Watch for changes after this index (etcdctl --after-index); 0 = from now. */
  afterIndex?: number;
  recursive?: boolean;
}

export interface V2Watcher {
  /** Resolves with the next event; follows on from the previous one's modifiedIndex. */
  next(opts?: CallOptions): Promise<V2Result>;
}

export interface V2KeysApi {
  get(key: string, opts?: GetOptions): Promise<V2Result>;
  set(key: string, value: string, opts?: SetOptions): Promise<V2Result>;
  create(key: string, value: string, opts?: CallOptions & { ttl?: number }): Promise<V2Result>;
  createInOrder(dir: string, value: string, opts?: CreateInOrderOptions): Promise<V2Result>;
  update(key: string, value: string, opts?: CallOptions & { ttl?: number }): Promise<V2Result>;
  delete(key: string, opts?: DeleteOptions): Promise<V2Result>;
  watcher(key: string, opts?: WatcherOptions): V2Watcher;
}

const formType = "application/x-www-form-urlencoded";

export function createV2KeysApi(cluster: ClusterClient, prefix: string = v2KeysPrefix): V2KeysApi {
  const url = (key: string, query: Record<string, string>) => (base: string) => {
    const q = goEncodeQuery(query);
    return v2KeysPath(base, prefix, key) + (q === "" ? "" : `?${q}`);
  };
  const call = (signal: AbortSignal | undefined) => (signal !== undefined ? { signal } : {});

  const api: V2KeysApi = {
    async get(key, opts = {}) {
      const query = {
        recursive: String(opts.recursive === true),
        sorted: String(opts.sorted === true),
        quorum: String(opts.quorum === true),
      };
      const res = await cluster.do({ method: "GET", path: url(key, query) }, call(opts.signal));
      return toResult(res);
    },

    async set(key, value, opts = {}) {
      const query: Record<string, string> = {};
      const form: Record<string, string> = {};
      if (opts.dir === true) {
        query["dir"] = "true";
      } else {
        if (opts.prevValue !== undefined && opts.prevValue !== "") query["prevValue"] = opts.prevValue;
        form["value"] = value;
      }
      if (opts.prevIndex !== undefined && opts.prevIndex !== 0) query["prevIndex"] = uint64Text(opts.prevIndex);
      if (opts.prevExist !== undefined && opts.prevExist !== "") query["prevExist"] = opts.prevExist;
      if (opts.ttl !== undefined && opts.ttl > 0) form["ttl"] = String(Math.floor(opts.ttl));
      if (opts.refresh === true) form["refresh"] = "true";
      if (opts.noValueOnSuccess === true) query["noValueOnSuccess"] = "true";
      const res = await cluster.do(
        { method: "PUT", path: url(key, query), body: goEncodeQuery(form), contentType: formType },
        // etcd's client sends a create (prevExist=false) to one endpoint only.
        { ...call(opts.signal), oneShot: opts.prevExist === "false", goOneShot: opts.prevExist === "false" },
      );
      return toResult(res);
    },

    create(key, value, opts = {}) {
      return api.set(key, value, { ...opts, prevExist: "false" });
    },

    async createInOrder(dir, value, opts = {}) {
      const form: Record<string, string> = { value };
      if (opts.ttl !== undefined && opts.ttl > 0) form["ttl"] = String(Math.floor(opts.ttl));
      const res = await cluster.do(
        { method: "POST", path: url(dir, {}), body: goEncodeQuery(form), contentType: formType },
        call(opts.signal),
      );
      return toResult(res);
    },

    update(key, value, opts = {}) {
      return api.set(key, value, { ...opts, prevExist: "true" });
    },

    async delete(key, opts = {}) {
      const query: Record<string, string> = {};
      if (opts.prevValue !== undefined && opts.prevValue !== "") query["prevValue"] = opts.prevValue;
      if (opts.prevIndex !== undefined && opts.prevIndex !== 0) query["prevIndex"] = uint64Text(opts.prevIndex);
      if (opts.dir === true) query["dir"] = "true";
      if (opts.recursive === true) query["recursive"] = "true";
      const res = await cluster.do(
        { method: "DELETE", path: url(key, query), contentType: formType },
        { ...call(opts.signal), oneShot: true, goOneShot: true },
      );
      return toResult(res);
    },

    watcher(key, opts = {}) {
      let waitIndex = opts.afterIndex !== undefined && opts.afterIndex > 0 ? opts.afterIndex + 1 : 0;
      const recursive = String(opts.recursive === true);
      return {
        async next(callOpts = {}) {
          for (;;) {
            const query = { wait: "true", waitIndex: String(waitIndex), recursive };
            const res = await cluster.do({ method: "GET", path: url(key, query), wait: true }, call(callOpts.signal));
            // An empty 200 is the server ending a long poll without an event: poll again.
            if ((res.status === 200 || res.status === 201) && res.body === "") continue;
            const result = toResult(res);
            waitIndex = (result.response.node.modifiedIndex ?? 0) + 1;
            return result;
          }
        },
      };
    },
  };
  return api;
}

/** Reads a number header, preferring kvctl's name over etcd's. */
export function indexHeader(headers: Readonly<Record<string, string>>): number {
  const raw = headers[Header.kvIndex.toLowerCase()] ?? headers[Header.etcdIndex.toLowerCase()];
  if (raw === undefined || raw === "") return 0;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

export function clusterIdHeader(headers: Readonly<Record<string, string>>): string {
  return headers[Header.kvClusterId.toLowerCase()] ?? headers[Header.etcdClusterId.toLowerCase()] ?? "";
}

/** etcd client's unmarshalHTTPResponse: 200/201 is a response, anything else an error body. */
export function toResult(res: HttpResponse): V2Result {
  if (res.status === 200 || res.status === 201) {
    if (res.body === "") throw new ClientError("EMPTY_BODY", "client: response body is empty");
    const parsed = parseJson(res.body);
    if (!isResponse(parsed)) throw invalidJsonError();
    return { response: parsed, index: indexHeader(res.headers), clusterId: clusterIdHeader(res.headers) };
  }
  throw parseV2Error(res.body);
}

/** Turns a v2 error body into the shared V2Error. */
export function parseV2Error(body: string): V2Error | ClientError {
  let parsed: unknown;
  try {
    parsed = parseJson(body);
  } catch (err) {
    return err as ClientError;
  }
  if (typeof parsed !== "object" || parsed === null) return invalidJsonError();
  const o = parsed as Record<string, unknown>;
  const code = typeof o["errorCode"] === "number" ? o["errorCode"] : 0;
  const cause = typeof o["cause"] === "string" ? o["cause"] : "";
  const index = typeof o["index"] === "number" ? o["index"] : 0;
  const message = typeof o["message"] === "string" ? o["message"] : "";
  return new V2Error(code, cause, index, message);
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw invalidJsonError();
  }
}

function isResponse(v: unknown): v is V2ResponseJSON & { node: V2NodeJSON } {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o["action"] === "string" && typeof o["node"] === "object" && o["node"] !== null;
}
