// Thousands of v3 watch streams on one member are cheap — 1000
// concurrent /v3/watch streams each get the one write's event, and a stream that stops
// reading does not hold up the others.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { startServer, type TestServer } from "../helpers/server.ts";
import { until } from "../helpers/http.ts";

let srv: TestServer | undefined;
const sockets: net.Socket[] = [];
after(async () => {
  for (const s of sockets) s.destroy();
  await srv?.stop();
});

const b64 = (s: string): string => Buffer.from(s).toString("base64");

/** A raw watch stream (one socket each, no agent limits); collects what the server sends. */
function openWatch(port: number, key: string, opts: { read: boolean }): { text(): string } {
  const body = JSON.stringify({ create_request: { key: b64(key) } });
  const s = net.connect(port, "127.0.0.1");
  sockets.push(s);
  let text = "";
  s.setEncoding("utf8");
  s.on("data", (c: string) => (text += c));
  s.on("error", () => undefined);
  s.write(`POST /v3/watch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  if (!opts.read) s.once("data", () => s.pause());
  return { text: () => text };
}

test("1000 concurrent v3 watch streams all get one write's event, a paused reader holding none of them up", { timeout: 60_000 }, async () => {
  srv = await startServer();
  const port = Number(new URL(srv.url).port);
  const stalled = openWatch(port, "fan/k", { read: false });
  const streams = Array.from({ length: 1000 }, () => openWatch(port, "fan/k", { read: true }));
  await until(() => streams.every((w) => w.text().includes('"created":true')), 20_000, "every stream created");
  const t0 = performance.now();
  const put = await fetch(`${srv.url}/v3/kv/put`, { method: "POST", body: JSON.stringify({ key: b64("fan/k"), value: b64("v") }) });
  assert.equal(put.status, 200);
  await until(() => streams.every((w) => w.text().includes(`"value":"${b64("v")}"`)), 15_000, "every stream to get the event");
  const ms = performance.now() - t0;
  assert.ok(ms < 15_000, `fan-out took ${ms} ms`);
  assert.ok(stalled.text().includes('"created":true'));
});
