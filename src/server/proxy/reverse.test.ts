import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import http, { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createAgent } from "../../transport/index.ts";
import { silentLogger } from "../logger.ts";
import { Director } from "./director.ts";
import { createReverseProxy, forwardedFor, type ReverseProxyOptions } from "./reverse.ts";
import { portPicker } from "./ports.test-helper.ts";
import { until } from "../../until.test-helper.ts";

const reservedPort = portPicker(23405, 23409);

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

let echoUrl = "";
let slowUrl = "";
let deadUrl = "";
const seen: Seen[] = [];
const closedStreams: string[] = [];
const servers: Server[] = [];

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const port = await reservedPort();
  const s = createServer(handler);
  await new Promise<void>((r) => s.listen(port, "127.0.0.1", r));
  servers.push(s);
  return `http://127.0.0.1:${port}`;
}

before(async () => {
  echoUrl = await serve((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      if (req.url?.startsWith("/stream")) {
        res.writeHead(200, { "Content-Type": "application/json", "X-Etcd-Index": "7" });
        res.write('{"first":true}\n');
        res.on("close", () => closedStreams.push(req.url ?? ""));
        return; // held open until the client goes
      }
      res.writeHead(req.url === "/missing" ? 404 : 200, { "Content-Type": "application/json", "X-Etcd-Index": "7" });
      res.end(JSON.stringify({ echo: body }));
    });
  });
  slowUrl = await serve((req) => req.resume()); // never answers
  deadUrl = `http://127.0.0.1:${await reservedPort()}`; // nobody listens
});
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

// One proxy listener for every test (the range has five ports); each test installs its handler.
let proxyUrl = "";
let current: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
before(async () => {
  proxyUrl = await serve((req, res) => current?.(req, res));
});

/** The proxy in front of `urls` (kept in this order). */
async function proxy(urls: string[], extra: Partial<ReverseProxyOptions> = {}): Promise<{ url: string; director: Director }> {
  const director = new Director({ failureWaitMs: 60_000, log: silentLogger, random: () => 0.999 });
  director.setUrls(urls);
  const handler = createReverseProxy({
    director,
    agents: { http: createAgent({ keepAlive: true }), https: createAgent({ keepAlive: true }) },
    timeouts: { dialMs: 1000, writeMs: 5000, readMs: 0 },
    readonly: false,
    log: silentLogger,
    ...extra,
  });
  current = handler;
  return { url: proxyUrl, director };
}

function call(url: string, o: { method?: string; path: string; headers?: Record<string, string>; body?: string | undefined }): Promise<{ status: number; headers: IncomingMessage["headers"]; raw: string[]; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(o.path, url);
    const req = http.request(u, { method: o.method ?? "GET", headers: o.headers ?? {}, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: res.rawHeaders, body }));
    });
    req.on("error", reject);
    req.end(o.body);
  });
}

test("a body over the proxy's cap is answered 413 after it was read, and no member sees it", async () => {
  const p = await proxy([echoUrl], { maxBodyBytes: 1000 });
  seen.length = 0;
  const r = await call(p.url, { method: "PUT", path: "/v2/keys/big", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: `value=${"x".repeat(5000)}` });
  assert.equal(r.status, 413);
  assert.deepEqual(JSON.parse(r.body), { message: "httpproxy: request body larger than 1000 bytes" });
  assert.equal(seen.length, 0);
  const ok = await call(p.url, { method: "PUT", path: "/v2/keys/small", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "value=1" });
  assert.equal(ok.status, 200);
});

test("forwardedFor appends the client's address to earlier proxies' and unmaps IPv4", () => {
  assert.equal(forwardedFor(undefined, "::ffff:127.0.0.1"), "127.0.0.1");
  assert.equal(forwardedFor(["10.0.0.1", "10.0.0.2"], "::1"), "10.0.0.1, 10.0.0.2, ::1");
  assert.equal(forwardedFor("10.0.0.1", undefined), "10.0.0.1");
});

test("the proxy forwards method, path, body and headers, minus hop-by-hop ones, with X-Forwarded-For", async () => {
  const p = await proxy([echoUrl]);
  seen.length = 0;
  const r = await call(p.url, {
    method: "PUT",
    path: "/v2/keys/a?prevExist=false",
    headers: { "Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": "10.0.0.1", "Proxy-Authorization": "secret", "Authorization": "Basic eDp5" },
    body: "value=1",
  });
  assert.equal(r.status, 200);
  assert.equal(r.body, '{"echo":"value=1"}');
  assert.equal(r.headers["x-etcd-index"], "7");
  assert.equal(r.headers["access-control-allow-origin"], "*");
  const s = seen[0]!;
  assert.equal(s.method, "PUT");
  assert.equal(s.url, "/v2/keys/a?prevExist=false");
  assert.equal(s.body, "value=1");
  assert.equal(s.headers["x-forwarded-for"], "10.0.0.1, 127.0.0.1");
  assert.equal(s.headers["authorization"], "Basic eDp5");
  assert.equal(s.headers["proxy-authorization"], undefined);
  assert.equal(s.headers["content-length"], "7");
  assert.equal(s.headers["host"], new URL(p.url).host, "the client's Host reaches the member, as Go's proxy sends it");
});

test("the proxy passes a member's error answer on without trying another member", async () => {
  const p = await proxy([echoUrl, deadUrl]);
  const r = await call(p.url, { path: "/missing" });
  assert.equal(r.status, 404);
  assert.deepEqual(p.director.endpoints(), [echoUrl, deadUrl]);
});

test("the proxy fails over to the next member when one cannot be reached, and skips it afterwards", async () => {
  const p = await proxy([deadUrl, echoUrl]);
  const r = await call(p.url, { path: "/v2/keys/x" });
  assert.equal(r.status, 200);
  assert.deepEqual(p.director.endpoints(), [echoUrl]);
});

test("the proxy treats a member that does not answer within --proxy-read-timeout as failed", async () => {
  const p = await proxy([slowUrl, echoUrl], { timeouts: { dialMs: 1000, writeMs: 5000, readMs: 300 } });
  const r = await call(p.url, { path: "/v2/keys/x" });
  assert.equal(r.status, 200);
  assert.deepEqual(p.director.endpoints(), [echoUrl]);
});

const errorCases: { name: string; urls: () => string[]; status: number; body: string }[] = [
  { name: "503 when no endpoint is known", urls: () => [], status: 503, body: '{"message":"httpproxy: zero endpoints currently available"}' },
  { name: "502 when every endpoint fails", urls: () => [deadUrl], status: 502, body: '{"message":"httpproxy: unable to get response from 1 endpoint(s)"}' },
];
for (const c of errorCases) {
  test(`the proxy answers ${c.name}, as etcd's does`, async () => {
    const p = await proxy(c.urls());
    const r = await call(p.url, { path: "/v2/keys/x" });
    assert.equal(r.status, c.status);
    assert.equal(r.headers["content-type"], "application/json");
    assert.equal(r.body, c.body);
  });
}

test("a readonly proxy answers 501 with no body to every method but GET", async () => {
  const p = await proxy([echoUrl], { readonly: true });
  for (const method of ["PUT", "POST", "DELETE", "HEAD", "PATCH"]) {
    const r = await call(p.url, { method, path: "/v2/keys/a", body: method === "HEAD" ? undefined : "value=1" });
    assert.equal(r.status, 501, method);
    assert.equal(r.headers["content-length"], "0", method);
    assert.equal(r.body, "", method);
  }
  assert.equal((await call(p.url, { path: "/v2/keys/a" })).status, 200);
});

test("the proxy lists its available endpoints at /v2/config/local/proxy, GET only", async () => {
  const p = await proxy([echoUrl, deadUrl]);
  const r = await call(p.url, { path: "/v2/config/local/proxy" });
  assert.equal(r.status, 200);
  assert.equal(r.body, `{"endpoints":["${echoUrl}","${deadUrl}"]}\n`);
  const w = await call(p.url, { method: "POST", path: "/v2/config/local/proxy" });
  assert.equal(w.status, 405);
  assert.equal(w.headers["allow"], "GET");
});

test("the proxy streams an answer as it comes and cancels it at the member when the client leaves", async () => {
  const p = await proxy([echoUrl]);
  closedStreams.length = 0;
  const first = await new Promise<string>((resolve, reject) => {
    const req = http.get(new URL("/stream?wait=true", p.url), { agent: false }, (res) => {
      res.setEncoding("utf8");
      res.once("data", (c: string) => {
        resolve(c);
        req.destroy();
      });
    });
    req.on("error", () => undefined);
    setTimeout(() => reject(new Error("no first chunk in 5 s")), 5000).unref();
  });
  assert.equal(first, '{"first":true}\n');
  await until(() => closedStreams.length > 0, "the upstream stream closed", 5000);
  assert.deepEqual(closedStreams, ["/stream?wait=true"]);
});
