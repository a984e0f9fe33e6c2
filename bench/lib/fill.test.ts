// fill() and watchFanout() against a tiny in-process v2 keys server (port 0), so the
// clients' bookkeeping is checked without etcd or kvctl.
import assert from "node:assert/strict";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { fill } from "./fill.ts";
import { watchFanout } from "./watch.ts";

let server: Server;
let base = "";
const store = new Map<string, string>();
const waiters = new Map<string, ServerResponse[]>();
let index = 0;

function event(action: string, key: string, value: string): string {
  return JSON.stringify({ action, node: { key: `/${key}`, value, modifiedIndex: index, createdIndex: index } });
}

before(async () => {
  server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    if (u.pathname === "/health") {
      res.end('{"health":"true"}');
      return;
    }
    const key = u.pathname.replace(/^\/v2\/keys\//, "");
    if (req.method === "PUT") {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const value = new URLSearchParams(body).get("value") ?? "";
        index++;
        const existed = store.has(key);
        store.set(key, value);
        for (const w of waiters.get(key) ?? []) w.end(event("set", key, value));
        waiters.delete(key);
        res.writeHead(existed ? 200 : 201, { "Content-Type": "application/json" });
        res.end(event("set", key, value));
      });
      return;
    }
    if (u.searchParams.get("wait") === "true") {
      // like etcd: the head goes out as soon as the watcher is registered
      res.writeHead(200, { "Content-Type": "application/json" });
      res.flushHeaders();
      waiters.set(key, [...(waiters.get(key) ?? []), res]);
      return;
    }
    res.writeHead(store.has(key) ? 200 : 404);
    res.end(store.has(key) ? event("get", key, store.get(key) ?? "") : "{}");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

test("fill writes every key once over the given connections and counts statuses", async () => {
  const r = await fill({ url: base, n: 300, concurrency: 8, prefix: "f", timeoutMs: 20_000 });
  assert.equal(r.completed, 300);
  assert.equal(r.timed_out, false);
  assert.equal(r.non2xx, 0);
  assert.equal(r.errors, 0);
  assert.equal(r.status_counts["201"], 300);
  assert.equal(store.get("f/299")?.length, 64);
  assert.ok(r.p50_ms !== null && r.p99_ms !== null && r.p50_ms <= r.p99_ms);
});

test("watchFanout sees every watcher registered and every event delivered", async () => {
  const r = await watchFanout({ url: base, n: 40, key: "w/k", rssKb: () => 1, eventTimeoutMs: 10_000 });
  assert.equal(r.headers_received, 40);
  assert.equal(r.registered_via_headers, true);
  assert.ok(r.register_all_ms !== null);
  assert.equal(r.received, 40);
  assert.equal(r.all_received, true);
  assert.ok(r.all_ms !== null && r.first_ms !== null && r.first_ms <= r.all_ms);
  assert.equal(r.errors + r.bad_status + r.wrong_body, 0);
  assert.equal(r.rss_kb_with_watchers, 1);
});
