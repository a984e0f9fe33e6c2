// Watches against a real member: cheap at thousands, released when clients go away, ended
// with the empty-body close on shutdown, expire events from the replicated SYNC entries.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "../helpers/server.ts";
import { agent, http, json, rawLongPoll, until } from "../helpers/http.ts";

after(() => agent.destroy());

async function watchers(url: string): Promise<number> {
  return (await json<{ watchers: number }>("GET", `${url}/v2/stats/store`)).body.watchers;
}

test("2000 concurrent long-poll watchers all get one write's event, and are released after", async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const port = Number(new URL(srv.url).port);
  const polls = Array.from({ length: 2000 }, () => rawLongPoll(port, "/v2/keys/fan/k?wait=true"));
  await Promise.all(polls.map((p) => p.head));
  assert.equal(await watchers(srv.url), 2000);
  const t0 = Date.now();
  const put = await json<{ node: { modifiedIndex: number } }>("PUT", `${srv.url}/v2/keys/fan/k`, { value: "go" });
  await until(() => polls.every((p) => p.text().includes('"action":"set"')), 15_000, "all watchers to get the event");
  const elapsed = Date.now() - t0;
  for (const p of polls) assert.ok(p.text().includes(`"modifiedIndex":${put.body.node.modifiedIndex}`));
  await until(async () => (await watchers(srv.url)) === 0, 5000, "watchers gauge to drop to 0");
  for (const p of polls) p.socket.destroy();
  assert.ok(elapsed < 10_000, `fan-out took ${elapsed} ms`);
});

test("a watcher is released at once when its client goes away", async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const port = Number(new URL(srv.url).port);
  const polls = Array.from({ length: 300 }, (_, i) => rawLongPoll(port, `/v2/keys/gone/k${i % 7}?wait=true&recursive=true`));
  await Promise.all(polls.map((p) => p.head));
  assert.equal(await watchers(srv.url), 300);
  for (const p of polls) p.socket.destroy();
  await until(async () => (await watchers(srv.url)) === 0, 5000, "abandoned watchers to be released");
});

test("shutdown ends open watches with 200 and an empty body", async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const port = Number(new URL(srv.url).port);
  const p = rawLongPoll(port, "/v2/keys/bye?wait=true");
  await p.head;
  await srv.kill("SIGTERM");
  await p.closed;
  const text = p.text();
  assert.match(text, /^HTTP\/1\.1 200 OK/);
  // chunked: the body is only the terminating chunk
  assert.match(text, /\r\n\r\n0\r\n\r\n$/);
});

test("TTL keys expire through the leader's SYNC entries, notify watchers, and stay expired after restart", async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const set = await json<{ node: { ttl: number; expiration: string } }>("PUT", `${srv.url}/v2/keys/ttl/a`, { value: "x", ttl: "1" });
  assert.equal(set.status, 201);
  assert.equal(set.body.node.ttl, 1);
  const w = await json<{ action: string; node: { key: string }; prevNode: { value: string } }>("GET", `${srv.url}/v2/keys/ttl/a?wait=true`);
  assert.equal(w.body.action, "expire");
  assert.equal(w.body.prevNode.value, "x");
  assert.equal((await http("GET", `${srv.url}/v2/keys/ttl/a`)).status, 404);
  const stats = await json<{ expireCount: number }>("GET", `${srv.url}/v2/stats/store`);
  assert.equal(stats.body.expireCount, 1);
  await srv.restart();
  assert.equal((await http("GET", `${srv.url}/v2/keys/ttl/a`)).status, 404);
});
