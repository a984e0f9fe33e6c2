import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { silentLogger } from "./logger.ts";
import { memberIdFor, idHex } from "./membership.ts";
import { startTinyProxy } from "./tiny-proxy.test-helper.ts";
import { DiscoveryError, FullClusterError, discoveryPeerUrls, joinDiscoveryCluster, selfRegistration } from "./discovery.ts";

interface Kv {
  key: string;
  value: string;
  createdIndex: number;
  modifiedIndex: number;
}

/**
 * A v2 key space as a discovery service shows it: flat keys under one token path, GET of a
 * key or of the token dir, PUT ?prevExist=false, and waits (?wait=true&waitIndex=N) that
 * answer with the first key created at or after N. `before` may answer a request itself.
 */
async function fakeDiscovery(before?: (req: IncomingMessage, res: ServerResponse) => boolean): Promise<{ url: string; keys: Map<string, Kv>; put(key: string, value: string): void; asked: string[]; close(): Promise<void> }> {
  const keys = new Map<string, Kv>();
  let index = 10;
  const waiters: Array<{ from: number; prefix: string; res: ServerResponse }> = [];
  const asked: string[] = [];
  const send = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { "content-type": "application/json", "x-etcd-index": String(index) });
    res.end(JSON.stringify(body));
  };
  const put = (key: string, value: string): Kv => {
    const kv = { key, value, createdIndex: ++index, modifiedIndex: index };
    keys.set(key, kv);
    for (const w of waiters.splice(0)) {
      if (kv.key.startsWith(w.prefix) && kv.modifiedIndex >= w.from) send(w.res, 200, { action: "create", node: kv });
      else waiters.push(w);
    }
    return kv;
  };
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    asked.push(`${req.method} ${u.pathname}${u.search}`);
    if (before?.(req, res) === true) return;
    const path = decodeURIComponent(u.pathname);
    if (u.searchParams.get("wait") === "true") {
      const from = Number(u.searchParams.get("waitIndex"));
      const hit = [...keys.values()].find((k) => k.key.startsWith(path) && k.modifiedIndex >= from);
      if (hit) send(res, 200, { action: "create", node: hit });
      else waiters.push({ from, prefix: path, res });
      return;
    }
    if (req.method === "PUT") {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        if (keys.has(path)) return send(res, 412, { errorCode: 105, message: "Key already exists", cause: path, index });
        const value = new URLSearchParams(body).get("value") ?? "";
        send(res, 201, { action: "create", node: put(path, value) });
      });
      return;
    }
    const kv = keys.get(path);
    if (kv) return send(res, 200, { action: "get", node: kv });
    const children = [...keys.values()].filter((k) => k.key.startsWith(`${path}/`));
    if (children.length === 0) return send(res, 404, { errorCode: 100, message: "Key not found", cause: path, index });
    // Listed in the store's order, not by creation: discovery sorts them.
    const nodes = children.filter((k) => !k.key.slice(path.length + 1).includes("/")).reverse();
    send(res, 200, { action: "get", node: { key: path, dir: true, nodes: [...nodes, { key: `${path}/_config`, dir: true }] } });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    keys,
    put: (k, v) => void put(k, v),
    asked,
    close: async () => {
      for (const w of waiters) w.res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const opts = { log: silentLogger, backoffMs: () => 10 };
const peer = (n: number): string => `http://127.0.0.1:${2380 + n}`;

test("a member registers itself, waits for the others, and gets the first `size` by creation index", async () => {
  let third = (): void => undefined;
  const d = await fakeDiscovery((req) => {
    if (req.url?.startsWith("/tok?") && req.url.includes("wait=true")) setImmediate(third);
    return false;
  });
  try {
    const durl = `${d.url}/tok`;
    d.put("/tok/_config/size", "3");
    const otherId = idHex(memberIdFor([peer(2)], durl));
    d.put(`/tok/${otherId}`, selfRegistration("b", [peer(2)]));
    // The third member registers while the first waits.
    third = () => d.put("/tok/cafe", `c=${peer(3)}`);
    const cluster = await joinDiscoveryCluster(durl, "a", [peer(1), `http://127.0.0.2:2381`], opts);
    assert.deepEqual(Object.fromEntries(cluster), { b: [peer(2)], a: [peer(1), "http://127.0.0.2:2381"], c: [peer(3)] });
    // Its key is its member ID for the discovery URL as cluster token; the value its URLs.
    const self = d.keys.get(`/tok/${idHex(memberIdFor([peer(1), "http://127.0.0.2:2381"], durl))}`);
    assert.equal(self?.value, `a=${peer(1)},a=http://127.0.0.2:2381`);
    assert.ok(d.asked.some((q) => q.startsWith("PUT ") && q.includes("prevExist=false")));
    assert.ok(d.asked.some((q) => q.startsWith("GET /tok?") && q.includes("wait=true") && q.includes("recursive=true")));
  } finally {
    await d.close();
  }
});

test("--discovery-proxy: every request to the discovery service goes through the proxy, Basic credentials from its URL", async () => {
  const d = await fakeDiscovery();
  const proxy = await startTinyProxy({ credentials: "u:p w" });
  try {
    d.put("/tok/_config/size", "1");
    const via = new URL(proxy.url);
    via.username = "u";
    via.password = "p w";
    const cluster = await joinDiscoveryCluster(`${d.url}/tok`, "a", [peer(1)], { ...opts, proxy: via });
    assert.deepEqual(Object.fromEntries(cluster), { a: [peer(1)] });
    assert.ok(d.asked.length >= 3, d.asked.join(" "));
    // The proxy was asked for each, by absolute URL.
    assert.deepEqual(proxy.asked, d.asked.map((q) => q.replace(" ", ` ${d.url}`)));
    assert.deepEqual(await discoveryPeerUrls(`${d.url}/tok`, { ...opts, proxy: via }), [peer(1)]);
    // A proxy that refuses (407, no JSON) is answered as a server that is no etcd.
    await assert.rejects(discoveryPeerUrls(`${d.url}/tok`, { ...opts, maxRetries: 1, proxy: new URL(proxy.url) }), { message: "discovery: bad discovery endpoint" });
  } finally {
    await proxy.close();
    await d.close();
  }
});

test("a full token is refused before registering; a proxy reads its members", async () => {
  const d = await fakeDiscovery();
  try {
    d.put("/tok/_config/size", "2");
    d.put("/tok/aa", `a=${peer(1)}`);
    d.put("/tok/bb", `b=${peer(2)}`);
    d.put("/tok/cc", `c=${peer(3)}`);
    await assert.rejects(joinDiscoveryCluster(`${d.url}/tok`, "d", [peer(4)], opts), (e: unknown) => e instanceof FullClusterError && e.message === "discovery: cluster is full");
    assert.equal(d.asked.filter((q) => q.startsWith("PUT")).length, 0);
    assert.deepEqual(await discoveryPeerUrls(`${d.url}/tok`, opts), [peer(1), peer(2)]);
  } finally {
    await d.close();
  }
});

test("etcd's errors: duplicate id, duplicate name, bad size, unknown token, not an etcd", async () => {
  const d = await fakeDiscovery((req, res) => {
    if (!req.url?.startsWith("/html/")) return false;
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("404 page not found\n");
    return true;
  });
  const code = (c: string) => (e: unknown) => e instanceof DiscoveryError && e.code === c;
  try {
    d.put("/dup/_config/size", "3");
    d.put(`/dup/${idHex(memberIdFor([peer(1)], `${d.url}/dup`))}`, `a=${peer(1)}`);
    await assert.rejects(joinDiscoveryCluster(`${d.url}/dup`, "a", [peer(1)], opts), { message: "discovery: found duplicate id" });

    d.put("/names/_config/size", "2");
    d.put("/names/aa", `x=${peer(1)}`);
    await assert.rejects(joinDiscoveryCluster(`${d.url}/names`, "x", [peer(2)], opts), code("duplicate-name"));

    d.put("/bad/_config/size", "three");
    await assert.rejects(joinDiscoveryCluster(`${d.url}/bad`, "a", [peer(1)], opts), { message: "discovery: size key is bad" });
    // etcd 3.4.23 passes the server's error through here (see discovery.ts).
    await assert.rejects(joinDiscoveryCluster(`${d.url}/none`, "a", [peer(1)], opts), { message: "100: Key not found (/none/_config/size) [16]" });
    await assert.rejects(joinDiscoveryCluster(`${d.url}/html/x`, "a", [peer(1)], opts), { message: "discovery: bad discovery endpoint" });
  } finally {
    await d.close();
  }
});

test("a server that fails (5xx, refused) is asked again after a backoff", async () => {
  let failures = 3;
  const d = await fakeDiscovery((_req, res) => {
    if (failures-- <= 0) return false;
    res.writeHead(503);
    res.end("unavailable");
    return true;
  });
  try {
    d.put("/tok/_config/size", "1");
    const waits: number[] = [];
    const cluster = await joinDiscoveryCluster(`${d.url}/tok`, "a", [peer(1)], { log: silentLogger, backoffMs: (n) => (waits.push(n), 5) });
    assert.deepEqual(Object.fromEntries(cluster), { a: [peer(1)] });
    assert.deepEqual(waits, [1, 2, 3]);
    await assert.rejects(joinDiscoveryCluster("http://127.0.0.1:1/tok", "a", [peer(1)], { log: silentLogger, backoffMs: () => 1, maxRetries: 2 }), { message: "discovery: too many retries" });
  } finally {
    await d.close();
  }
});
