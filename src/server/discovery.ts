// --discovery: the initial cluster from a discovery service (discovery.etcd.io, or a path
// of any etcd v2 key space), as etcd 3.4.23's etcdserver/api/v2discovery builds it.
//
// The URL is http[s]://host/<path>; keys live under <path> on that host, without the
// /v2/keys prefix (the discovery service maps /<token>/... to its etcd's
// /v2/keys/_etcd/registry/<token>/...; a plain etcd is used as .../v2/keys/<dir>):
//   <path>/_config/size   the cluster size the token was created for
//   <path>/<member id>    "name=peerURL[,name=peerURL]" of each member that registered
// A member (joinDiscoveryCluster): reads the size and the registered members; a token that
// already lists `size` others is full. Else it creates its own key (prevExist=false: a key
// there already means this ID registered before: "found duplicate id"), waits until the
// key shows, then watches the path (recursive, from the index of its last read) until
// `size` members registered. The first `size` members by creation index form the cluster.
// Its member ID is derived from its advertised peer URLs and the discovery URL as cluster
// token (etcd's embed config: the URL is the token), so every member computes every ID.
// A proxy (discoveryPeerUrls) reads the same list, a full one included.
//
// Errors the server gave up on (connection refused, 5xx) are retried as etcd does: after
// 2, 4, ... 256 s, then every 256 s; everything else ends the bootstrap with etcd's text.
import { proxiedRequest } from "./proxied-request.ts";
import type { Logger } from "./logger.ts";
import { idHex, memberIdFor } from "./membership.ts";

/** One of etcd's v2discovery errors: `message` is etcd's text ("discovery: ..."). */
export type DiscoveryErrorCode = "invalid-url" | "bad-size" | "duplicate-id" | "duplicate-name" | "full-cluster" | "bad-endpoint" | "too-many-retries";

export class DiscoveryError extends Error {
  readonly code: DiscoveryErrorCode;
  constructor(code: DiscoveryErrorCode, message: string) {
    super(message);
    this.name = "DiscoveryError";
    this.code = code;
  }
}

/** A token that lists `size` members already; a proxy starts from them. */
export class FullClusterError extends DiscoveryError {
  readonly nodes: readonly Node[];
  readonly size: number;
  constructor(nodes: readonly Node[], size: number) {
    super("full-cluster", "discovery: cluster is full");
    this.nodes = nodes;
    this.size = size;
  }
}

const errors = {
  invalidUrl: () => new DiscoveryError("invalid-url", "discovery: invalid URL"),
  badSize: () => new DiscoveryError("bad-size", "discovery: size key is bad"),
  duplicateId: () => new DiscoveryError("duplicate-id", "discovery: found duplicate id"),
  duplicateName: () => new DiscoveryError("duplicate-name", "discovery: found duplicate name"),
  badEndpoint: () => new DiscoveryError("bad-endpoint", "discovery: bad discovery endpoint"),
};

/** The server could not be asked (refused, reset, 5xx): retried, as etcd's ClusterError. */
class UnreachableError extends Error {}

/** An etcd v2 error answer (errorCode 100 key not found, 105 node exists, ...), worded as etcd's Go client words it. */
class KeysError extends Error {
  readonly errorCode: number;
  constructor(body: { errorCode: number; message?: string; cause?: string; index?: number }) {
    super(`${body.errorCode}: ${body.message ?? ""} (${body.cause ?? ""}) [${body.index ?? 0}]`);
    this.errorCode = body.errorCode;
  }
}

export interface Node {
  key: string;
  value?: string;
  createdIndex: number;
  modifiedIndex: number;
  nodes?: Node[];
}

interface Answer {
  node: Node;
  /** X-Etcd-Index */
  index: number;
}

/** client.DefaultRequestTimeout */
const REQUEST_TIMEOUT_MS = 5000;
const MAX_EXPONENTIAL_RETRIES = 8;

export interface DiscoveryOptions {
  log: Logger;
  /** Test hook: the wait before retry number `n` (etcd: 2^min(n,8) s). */
  backoffMs?: (n: number) => number;
  /** Gives up after this many retries (etcd: 2^32). */
  maxRetries?: number;
  /** --discovery-proxy: the HTTP proxy every request to the discovery service goes through. */
  proxy?: URL;
}

const baseName = (key: string): string => key.slice(key.lastIndexOf("/") + 1);

class Discovery {
  readonly #endpoint: string;
  readonly #cluster: string;
  readonly #selfKey: string;
  readonly #log: Logger;
  readonly #backoffMs: (n: number) => number;
  readonly #maxRetries: number;
  readonly #proxy: URL | undefined;
  #retries = 0;

  constructor(durl: string, selfId: number, opts: DiscoveryOptions) {
    let u: URL;
    try {
      u = new URL(durl);
    } catch {
      throw errors.invalidUrl();
    }
    this.#endpoint = `${u.protocol}//${u.host}`;
    this.#cluster = u.pathname.replace(/\/+$/, "");
    this.#selfKey = `${this.#cluster}/${idHex(selfId)}`;
    this.#log = opts.log;
    this.#backoffMs = opts.backoffMs ?? ((n) => 1000 * 2 ** Math.min(n, MAX_EXPONENTIAL_RETRIES));
    this.#maxRetries = opts.maxRetries ?? 2 ** 32 - 1;
    this.#proxy = opts.proxy;
  }

  get selfName(): string {
    return baseName(this.#selfKey);
  }

  async #request(method: "GET" | "PUT", path: string, query: Record<string, string>, body?: string, timeoutMs: number | undefined = REQUEST_TIMEOUT_MS): Promise<Answer> {
    const url = new URL(this.#endpoint + path.split("/").map(encodeURIComponent).join("/"));
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    let res: { status: number; text: string; etcdIndex: string | undefined };
    const headers: Record<string, string> = body === undefined ? {} : { "content-type": "application/x-www-form-urlencoded" };
    try {
      if (this.#proxy !== undefined) {
        const a = await proxiedRequest(url, this.#proxy, { method, headers, ...(body === undefined ? {} : { body }), ...(timeoutMs === undefined ? {} : { timeoutMs }) });
        res = { status: a.status, text: a.text, etcdIndex: a.header("x-etcd-index") };
      } else {
        const r = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }), ...(timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) }) });
        res = { status: r.status, text: await r.text().catch(() => ""), etcdIndex: r.headers.get("x-etcd-index") ?? undefined };
      }
    } catch (err) {
      throw new UnreachableError(`${method} ${url.href}: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`);
    }
    const text = res.text;
    if (res.status >= 500) throw new UnreachableError(`${method} ${url.href}: ${res.status} ${text.trim()}`);
    let parsed: { errorCode?: number; message?: string; cause?: string; index?: number; node?: Node };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw errors.badEndpoint();
    }
    if (parsed.errorCode !== undefined) throw new KeysError({ ...parsed, errorCode: parsed.errorCode });
    if (parsed.node === undefined) throw errors.badEndpoint();
    return { node: parsed.node, index: Number(res.etcdIndex ?? 0) };
  }

  async #backoff(step: string, err: Error): Promise<void> {
    this.#retries++;
    if (this.#retries > this.#maxRetries) throw new DiscoveryError("too-many-retries", "discovery: too many retries");
    const waitMs = this.#backoffMs(this.#retries);
    this.#log.warn("failed to get from discovery server; retrying", { step, error: err.message, retries: this.#retries, backoffMs: waitMs });
    await new Promise((r) => setTimeout(r, waitMs));
  }

  /** The registered members in creation order, the size, the index of the read. */
  async checkCluster(): Promise<{ nodes: Node[]; size: number; index: number }> {
    for (;;) {
      try {
        return await this.#checkOnce();
      } catch (err) {
        if (!(err instanceof UnreachableError)) throw err;
        await this.#backoff("check cluster", err);
      }
    }
  }

  async #checkOnce(): Promise<{ nodes: Node[]; size: number; index: number }> {
    const configKey = `${this.#cluster}/_config`;
    // A missing size key ends the bootstrap with the server's error as it is ("100: Key not
    // found (/_etcd/registry/<token>) [11]"): etcd 3.4.23 means to answer "size key not
    // found" but tests for a *client.Error where its client returns a client.Error.
    const sizeAnswer = await this.#request("GET", `${configKey}/size`, { quorum: "false", recursive: "false", sorted: "false" });
    const value = sizeAnswer.node.value ?? "";
    // Go's ParseUint: digits only.
    if (!/^\d+$/.test(value)) throw errors.badSize();
    const size = Number(value);
    const dir = await this.#request("GET", this.#cluster, { quorum: "false", recursive: "false", sorted: "false" });
    const nodes = (dir.node.nodes ?? []).filter((n) => baseName(n.key) !== "_config").sort((a, b) => a.createdIndex - b.createdIndex);
    for (let i = 0; i < nodes.length; i++) {
      if (baseName(nodes[i]!.key) === this.selfName) break;
      if (i >= size - 1) throw new FullClusterError(nodes.slice(0, size), size);
    }
    return { nodes, size, index: dir.index };
  }

  async createSelf(contents: string): Promise<void> {
    let created: Answer;
    try {
      created = await this.#request("PUT", this.#selfKey, { prevExist: "false" }, `value=${encodeURIComponent(contents)}`);
    } catch (err) {
      if (err instanceof KeysError && err.errorCode === 105) throw errors.duplicateId();
      throw err;
    }
    // The key shows on the server asked (etcd watches from the index before its creation).
    await this.#request("GET", this.#selfKey, { wait: "true", waitIndex: String(created.node.createdIndex) }, undefined, undefined);
  }

  async waitNodes(found: readonly Node[], size: number, index: number): Promise<Node[]> {
    const all = found.slice(0, size);
    for (const n of all) this.#log.info(baseName(n.key) === this.selfName ? "found self from discovery server" : "found peer from discovery server", { peer: baseName(n.key) });
    let waitIndex = index + 1;
    while (all.length < size) {
      this.#log.info("found peers from discovery server; waiting for more", { "found-peers": all.length, "needed-peers": size - all.length });
      let event: Answer;
      try {
        event = await this.#request("GET", this.#cluster, { wait: "true", recursive: "true", waitIndex: String(waitIndex) }, undefined, undefined);
      } catch (err) {
        if (!(err instanceof UnreachableError)) throw err;
        // etcd starts over: read the list again, then wait for the rest.
        await this.#backoff("wait for peers", err);
        const again = await this.checkCluster();
        return this.waitNodes(again.nodes, again.size, again.index);
      }
      waitIndex = event.node.modifiedIndex + 1;
      this.#log.info("found peer from discovery server", { peer: baseName(event.node.key) });
      all.push(event.node);
    }
    this.#log.info("found all needed peers from discovery server", { "found-peers": all.length });
    return all;
  }
}

/** etcd's nodesToCluster: the members' "name=url" lists, parsed; one name per member. */
function nodesToCluster(nodes: readonly Node[], size: number): Map<string, string[]> {
  const cluster = new Map<string, string[]>();
  for (const pair of nodes.map((n) => n.value ?? "").join(",").split(",")) {
    const eq = pair.indexOf("=");
    const name = pair.slice(0, eq);
    const url = pair.slice(eq + 1);
    if (eq < 0 || !/^https?:\/\/[^/]+/.test(url)) throw errors.invalidUrl();
    cluster.set(name, [...(cluster.get(name) ?? []), url]);
  }
  if (cluster.size !== size) throw errors.duplicateName();
  return cluster;
}

/** The "name=url,name=url" this member registers: its advertised peer URLs, sorted. */
export function selfRegistration(name: string, peerUrls: readonly string[]): string {
  return [...peerUrls].sort().map((u) => `${name}=${u}`).join(",");
}

/**
 * Registers this member at the discovery URL and waits for the rest: the initial cluster
 * (name -> peer URLs). The cluster token is the URL.
 */
export async function joinDiscoveryCluster(durl: string, name: string, peerUrls: readonly string[], opts: DiscoveryOptions): Promise<Map<string, string[]>> {
  const d = new Discovery(durl, memberIdFor(peerUrls, durl), opts);
  opts.log.info("joining the cluster through the discovery service", { "discovery-url": durl, self: d.selfName });
  // Fast path: a full token is refused before this member registers.
  await d.checkCluster();
  await d.createSelf(selfRegistration(name, peerUrls));
  const { nodes, size, index } = await d.checkCluster();
  return nodesToCluster(await d.waitNodes(nodes, size, index), size);
}

/** The peer URLs a proxy starts from: the registered members, a full token's included. */
export async function discoveryPeerUrls(durl: string, opts: DiscoveryOptions): Promise<string[]> {
  const d = new Discovery(durl, 0, opts);
  let found: { nodes: Node[]; size: number; index: number };
  try {
    found = await d.checkCluster();
  } catch (err) {
    if (err instanceof FullClusterError) return [...nodesToCluster(err.nodes, err.size).values()].flat();
    throw err;
  }
  return [...nodesToCluster(await d.waitNodes(found.nodes, found.size, found.index), found.size).values()].flat();
}
