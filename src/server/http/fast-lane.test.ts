import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Server } from "node:http";
import { connect, createServer, type Socket } from "node:net";
import { once } from "node:events";
import { until } from "../../until.test-helper.ts";
import { FastLane, parseHead, renderResponse, type FastHandler, type FastResponse, type RequestHead } from "./fast-lane.ts";

const MAX = 16 * 1024;

function head(text: string): RequestHead {
  const r = parseHead(text, 0, MAX);
  assert.ok(typeof r === "object", `expected a head, got ${String(r)}`);
  return r;
}

test("parseHead reads method, target, Host, Authorization and the head's length", () => {
  const text = "GET /v2/keys/a?recursive=true HTTP/1.1\r\nHost: example:2379\r\nUser-Agent: x\r\nAuthorization: Basic abc\r\n\r\nrest";
  const h = head(text);
  assert.deepEqual(h, { method: "GET", target: "/v2/keys/a?recursive=true", host: "example:2379", authorization: "Basic abc", length: text.length - 4 });
});

test("parseHead starts where asked (pipelined requests) and trims header values", () => {
  const a = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
  const b = "GET /b HTTP/1.1\r\nhOsT:  \t h2 \t\r\nConnection: Keep-Alive\r\n\r\n";
  const r = parseHead(a + b, a.length, MAX);
  assert.ok(typeof r === "object");
  assert.equal(r.target, "/b");
  assert.equal(r.host, "h2");
  assert.equal(r.length, b.length);
});

test("parseHead waits for the empty line, however the head is split", () => {
  const text = "GET /v2/keys/a HTTP/1.1\r\nHost: h\r\n\r\n";
  for (let cut = 0; cut < text.length; cut++) assert.equal(parseHead(text.slice(0, cut), 0, MAX), "incomplete", `cut at ${cut}`);
  assert.equal(head(text).length, text.length);
});

const declined: [string, string][] = [
  ["HTTP/1.0", "GET /a HTTP/1.0\r\nHost: h\r\n\r\n"],
  ["no Host", "GET /a HTTP/1.1\r\nX: y\r\n\r\n"],
  ["two Hosts", "GET /a HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n"],
  ["a body by length", "GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"],
  ["a chunked body", "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"],
  ["Connection: close", "GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"],
  ["Expect", "GET /a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n"],
  ["Upgrade", "GET /a HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n"],
  ["a bare LF", "GET /a HTTP/1.1\nHost: h\r\n\r\n"],
  ["a bare LF ending the head", "GET /a HTTP/1.1\r\nHost: h\r\n\n"],
  ["a leading empty line", "\r\nGET /a HTTP/1.1\r\nHost: h\r\n\r\n"],
  ["a folded header", "GET /a HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n"],
  ["a header without colon", "GET /a HTTP/1.1\r\nHost: h\r\nbroken\r\n\r\n"],
  ["a space in a header name", "GET /a HTTP/1.1\r\nHost: h\r\nX Y: z\r\n\r\n"],
  ["a control byte in a value", "GET /a HTTP/1.1\r\nHost: h\r\nX: a\u0001b\r\n\r\n"],
  ["a byte above ASCII in a value", "GET /a HTTP/1.1\r\nHost: h\r\nX: caf\u00e9\r\n\r\n"],
  ["a byte above ASCII in the target", "GET /caf\u00e9 HTTP/1.1\r\nHost: h\r\n\r\n"],
  ["a lower-case method", "get /a HTTP/1.1\r\nHost: h\r\n\r\n"],
  ["two spaces in the request line", "GET  /a HTTP/1.1\r\nHost: h\r\n\r\n"],
  ["a space in the target", "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n"],
  ["a missing version", "GET /a\r\nHost: h\r\n\r\n"],
];
for (const [why, text] of declined) {
  test(`parseHead leaves ${why} to node:http`, () => {
    assert.equal(parseHead(text, 0, MAX), "decline");
  });
}

test("parseHead declines a head past the size limit, complete or not", () => {
  const big = "GET /a HTTP/1.1\r\nHost: h\r\nX: " + "y".repeat(200) + "\r\n\r\n";
  assert.equal(parseHead(big, 0, 100), "decline");
  assert.equal(parseHead(big.slice(0, 150), 0, 100), "decline");
  assert.equal(parseHead(big.slice(0, 90), 0, 100), "incomplete");
});

/** What node:http itself writes for a response, with the Date header's value blanked. */
async function nodeHttpBytes(status: number, headers: string[], body: string): Promise<string> {
  const srv = new Server({ keepAliveTimeout: 30_000 }, (_req, res) => {
    res.writeHead(status, [...headers, "Content-Length", String(Buffer.byteLength(body))]);
    res.end(body);
  });
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const port = (srv.address() as { port: number }).port;
  const s = connect(port, "127.0.0.1");
  s.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  let got = "";
  const want = Buffer.byteLength(body);
  for await (const c of s) {
    got += (c as Buffer).toString("latin1");
    const end = got.indexOf("\r\n\r\n");
    if (end >= 0 && got.length - end - 4 >= want) break;
  }
  s.destroy();
  srv.close();
  return got.replace(/Date: [^\r]*/, "Date: -");
}

test("renderResponse writes the bytes node:http writes for the same response", async () => {
  const headers = ["Access-Control-Allow-Origin", "*", "Content-Type", "application/json", "X-Kv-Index", "7"];
  for (const [status, body] of [[200, '{"a":"é ✓"}\n'], [404, '{"errorCode":100}\n'], [201, ""]] as const) {
    const lane = renderResponse({ status, headers, body }, 30, Date.now());
    const mine = Buffer.from(lane, "utf8").toString("latin1").replace(/Date: [^\r]*/, "Date: -");
    assert.equal(mine, await nodeHttpBytes(status, headers, body));
  }
});

// --- the lane in front of a real node:http server ---------------------------------------

interface Rig {
  port: number;
  lane: FastLane;
  http: Server;
  /** Requests node:http received, by path. */
  slow: string[];
  /** The server's end of each connection, as accepted. */
  sockets: Socket[];
}

async function rig(handler: FastHandler, opts: { keepAliveMs?: number; headersTimeoutMs?: number } = {}): Promise<Rig> {
  const slow: string[] = [];
  const http = new Server({ keepAliveTimeout: 30_000 }, (req, res) => {
    slow.push(`${req.method ?? ""} ${req.url ?? ""}`);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = `slow ${req.url ?? ""} ${Buffer.concat(chunks).toString()}`;
      // Answer later than the lane would: order must still hold.
      setTimeout(() => res.writeHead(200, { "Content-Length": Buffer.byteLength(body) }).end(body), 5);
    });
  });
  const httpConnection = http.listeners("connection") as ((s: Socket) => void)[];
  http.removeAllListeners("connection");
  const lane = new FastLane({
    handler,
    toHttp: (s) => {
      for (const l of httpConnection) l.call(http, s);
    },
    keepAliveMs: opts.keepAliveMs ?? 30_000,
    maxHeadBytes: MAX,
    headersTimeoutMs: opts.headersTimeoutMs ?? 60_000,
  });
  const sockets: Socket[] = [];
  const net = createServer((s) => {
    sockets.push(s);
    lane.accept(s);
  });
  net.listen(0, "127.0.0.1");
  await once(net, "listening");
  after(() => {
    lane.destroyAll();
    http.closeAllConnections();
    net.close();
  });
  return { port: (net.address() as { port: number }).port, lane, http, slow, sockets };
}

/** Answers GET /fast/* itself (body: the path), declines everything else. */
const fastOnly: FastHandler = (h) => (h.method === "GET" && h.target.startsWith("/fast/") ? { status: 200, headers: ["X-Lane", "1"], body: `fast ${h.target}` } : undefined);

/**
 * Between two chunks of exchange(): time for the server to read the first by itself. No
 * event on the client says it did, and the server's side can pause its socket (a held
 * answer, node:http's pipelining), so this is a pause, not a wait; the answers asserted do
 * not depend on where the reads split.
 */
const CHUNK_GAP_MS = 2;

/** Sends `chunks` (CHUNK_GAP_MS apart) and reads until `n` responses arrived; returns their bodies. */
async function exchange(port: number, chunks: string[], n: number): Promise<string[]> {
  const s = connect(port, "127.0.0.1");
  await once(s, "connect");
  let got = "";
  const bodies: string[] = [];
  const done = new Promise<void>((resolve, reject) => {
    s.on("error", reject);
    s.on("data", (c: Buffer) => {
      got += c.toString("latin1");
      for (;;) {
        const end = got.indexOf("\r\n\r\n");
        if (end < 0) break;
        const len = Number(/Content-Length: (\d+)/i.exec(got.slice(0, end))?.[1]);
        if (got.length < end + 4 + len) break;
        bodies.push(got.slice(end + 4, end + 4 + len));
        got = got.slice(end + 4 + len);
      }
      if (bodies.length >= n) resolve();
    });
  });
  for (const c of chunks) {
    s.write(c);
    await new Promise((r) => setTimeout(r, CHUNK_GAP_MS));
  }
  await done;
  s.destroy();
  return bodies;
}

const get = (p: string): string => `GET ${p} HTTP/1.1\r\nHost: h\r\n\r\n`;
const post = (p: string, body: string): string => `POST ${p} HTTP/1.1\r\nHost: h\r\nContent-Length: ${body.length}\r\n\r\n${body}`;

test("pipelined requests are answered in order: the lane's, then node:http's after the hand-over", async () => {
  const r = await rig(fastOnly);
  const bodies = await exchange(r.port, [get("/fast/1") + get("/fast/2") + post("/slow/3", "abc") + get("/fast/4")], 4);
  assert.deepEqual(bodies, ["fast /fast/1", "fast /fast/2", "slow /slow/3 abc", "slow /fast/4 "]);
  assert.deepEqual(r.slow, ["POST /slow/3", "GET /fast/4"]);
  assert.equal(r.lane.size, 0, "the connection went to node:http");
});

/** Like fastOnly, but /later/* is answered after a delay (a password check): /later/no-* is then declined. */
const withLater: FastHandler = (h) => {
  if (!h.target.startsWith("/later/")) return fastOnly(h);
  return new Promise((resolve) => setTimeout(() => resolve(h.target.startsWith("/later/no-") ? undefined : { status: 200, headers: [], body: `later ${h.target}` }), 20));
};

test("an answer that is a promise holds the requests after it: order is kept, and a late decline hands over every byte", async () => {
  const r = await rig(withLater);
  const bodies = await exchange(r.port, [get("/later/1") + get("/fast/2") + get("/later/3"), get("/fast/4") + get("/later/no-5") + post("/slow/6", "xyz")], 6);
  assert.deepEqual(bodies, ["later /later/1", "fast /fast/2", "later /later/3", "fast /fast/4", "slow /later/no-5 ", "slow /slow/6 xyz"]);
  assert.deepEqual(r.slow, ["GET /later/no-5", "POST /slow/6"]);
});

/** Answers /held/* when the test says so (`answer`), anything else as withLater. */
function holding(): { handler: FastHandler; asked: Promise<void>; answer: (res: FastResponse | undefined) => void } {
  let answer: (res: FastResponse | undefined) => void = () => undefined;
  let asked: () => void = () => undefined;
  const askedP = new Promise<void>((r) => (asked = r));
  const handler: FastHandler = (h) => {
    if (!h.target.startsWith("/held/")) return withLater(h);
    asked();
    return new Promise((resolve) => (answer = resolve));
  };
  return { handler, asked: askedP, answer: (res) => answer(res) };
}

test("a connection closed while its answer is pending is simply forgotten", async () => {
  const held = holding();
  const r = await rig(held.handler);
  const s = connect(r.port, "127.0.0.1");
  await once(s, "connect");
  s.write(get("/held/1"));
  await held.asked;
  s.destroy();
  await until(() => r.lane.size === 0, "the closed connection forgotten");
  held.answer(undefined); // a late decline: nothing to hand over
  await new Promise((res) => setImmediate(res));
  assert.equal(r.lane.size, 0);
  assert.deepEqual(r.slow, []);
  // The lane still serves new connections.
  assert.deepEqual(await exchange(r.port, [get("/later/2")], 1), ["later /later/2"]);
});

test("a request split into single bytes is answered once, and so is the hand-over that follows", async () => {
  const r = await rig(fastOnly);
  const text = get("/fast/a") + post("/slow/b", "body!") + get("/fast/c");
  const bodies = await exchange(r.port, [...text], 3);
  assert.deepEqual(bodies, ["fast /fast/a", "slow /slow/b body!", "slow /fast/c "]);
});

test("a hand-over in the middle of a body passes every byte of it to node:http", async () => {
  const r = await rig(fastOnly);
  const body = "x".repeat(100_000);
  const text = get("/fast/1") + post("/slow/big", body);
  const bodies = await exchange(r.port, [text.slice(0, 50), text.slice(50, 40_000), text.slice(40_000)], 2);
  assert.equal(bodies[0], "fast /fast/1");
  assert.equal(bodies[1], `slow /slow/big ${body}`);
});

test("a client that does not read stops the lane reading; all answers arrive once it reads", async () => {
  const big = "y".repeat(64 * 1024);
  const r = await rig((h) => ({ status: 200, headers: [], body: h.target === "/end" ? "end" : big }));
  const s = connect(r.port, "127.0.0.1");
  await once(s, "connect");
  s.pause();
  const n = 200; // 13 MB of answers: far past the socket buffers
  s.write(get("/x").repeat(n) + get("/end"));
  await until(() => r.sockets[0]?.writableNeedDrain === true && r.sockets[0].isPaused(), "the lane to stop reading");
  let got = 0;
  let text = "";
  s.on("data", (c: Buffer) => {
    got += c.length;
    text = (text + c.toString("latin1")).slice(-10);
  });
  s.resume();
  await until(() => text.endsWith("\r\n\r\nend"), "the last answer", 10_000);
  assert.ok(got > n * big.length, `read ${got} bytes`);
  s.destroy();
});

test("an idle connection is closed after the keep-alive time, and destroyAll closes the rest", async () => {
  const r = await rig(fastOnly, { keepAliveMs: 100 });
  const idle = connect(r.port, "127.0.0.1");
  await once(idle, "connect");
  idle.write(get("/fast/1"));
  const t0 = Date.now();
  idle.resume();
  await once(idle, "close");
  assert.ok(Date.now() - t0 >= 80, "closed too early");

  const r2 = await rig(fastOnly);
  const s = connect(r2.port, "127.0.0.1");
  await once(s, "connect");
  const partial = "GET /fast/partial HTTP/1.1\r\nHo";
  s.write(partial);
  s.resume();
  await until(() => r2.sockets[0]?.bytesRead === partial.length, "the partial head read");
  assert.equal(r2.lane.size, 1);
  r2.lane.destroyAll();
  await once(s, "close");
  assert.equal(r2.lane.size, 0);
});

test("a head dripped in slower than the headers timeout closes the connection", async () => {
  const headersTimeoutMs = 150;
  // A byte every 20 ms: the whole head (36 bytes) would take 720 ms, well past the timeout.
  // The lane's timer runs on real time, so the drip does too.
  const dripMs = 20;
  const r = await rig(fastOnly, { headersTimeoutMs });
  const s = connect(r.port, "127.0.0.1");
  await once(s, "connect");
  s.resume();
  let closed = false;
  s.on("close", () => (closed = true));
  const t0 = Date.now();
  for (const ch of get("/fast/slow")) {
    if (closed) break;
    s.write(ch);
    await new Promise((res) => setTimeout(res, dripMs));
  }
  assert.ok(closed, "the connection outlived the headers timeout");
  assert.ok(Date.now() - t0 >= headersTimeoutMs);
});

test("a head node:http would refuse is handed over and refused by node:http (400), not answered by the lane", async () => {
  const r = await rig(() => ({ status: 200, headers: [], body: "lane" }));
  const s = connect(r.port, "127.0.0.1");
  await once(s, "connect");
  s.write("GET /fast/1 HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n");
  let got = "";
  for await (const c of s) got += (c as Buffer).toString();
  assert.match(got, /^HTTP\/1\.1 400 Bad Request/);
  assert.deepEqual(r.slow, []);
});

test("a graceful close ends idle connections at once and one awaiting an answer right after it", async () => {
  const held = holding();
  const r = await rig(held.handler);
  const idle = connect(r.port, "127.0.0.1");
  await once(idle, "connect");
  idle.resume();
  const busy = connect(r.port, "127.0.0.1");
  await once(busy, "connect");
  let got = "";
  busy.on("data", (c: Buffer) => (got += c.toString()));
  busy.write(get("/held/w"));
  await held.asked;
  await until(() => r.lane.size === 2, "both connections on the lane");
  r.lane.closeIdle();
  await once(idle, "close");
  assert.equal(got, "", "the answer is not there yet");
  held.answer({ status: 200, headers: [], body: "held /held/w" });
  await once(busy, "close");
  assert.match(got, /^HTTP\/1\.1 200 OK\r\n[^]*held \/held\/w$/);
  await until(() => r.lane.size === 0, "the lane empty");
});

test("parseHead hands a write's body over with its head once all of it is there, and leaves the rest to node:http", () => {
  const put = (body: string, extra = ""): string => `PUT /v2/keys/a HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`;
  const text = put("value=1") + "GET /next HTTP/1.1\r\nHost: h\r\n\r\n";
  const r = parseHead(text, 0, MAX, 64);
  assert.ok(typeof r === "object");
  assert.equal(r.body, "value=1");
  assert.equal(r.contentType, "application/x-www-form-urlencoded");
  assert.equal(text.slice(r.length), "GET /next HTTP/1.1\r\nHost: h\r\n\r\n", "length covers head and body");
  assert.equal(parseHead(put("value=1").slice(0, -2), 0, MAX, 64), "decline", "a body still on its way");
  assert.equal(parseHead(put("x".repeat(65)), 0, MAX, 64), "decline", "past the lane's body limit");
  assert.equal(parseHead(put("value=1"), 0, MAX), "decline", "no body limit given: no bodies");
  assert.equal(parseHead(put("v=1", "Content-Length: 3\r\n"), 0, MAX, 64), "decline", "two lengths");
  assert.equal(parseHead(put("v=1", "Content-Type: text/plain\r\n"), 0, MAX, 64), "decline", "two types");
  assert.equal(parseHead("PUT /a HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\nv=1", 0, MAX, 64), "decline");
  assert.equal(parseHead("GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", 0, MAX, 64), "decline", "a GET with a body is node:http's");
  const del = parseHead("DELETE /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", 0, MAX, 64);
  assert.ok(typeof del === "object" && del.body === "");
});

test("a handler answers a request with a body through the lane, and a hand-over after it keeps order", async () => {
  const echo: FastHandler = (h) => (h.method === "PUT" && h.target.startsWith("/fast/") ? Promise.resolve({ status: 200, headers: [], body: `put ${h.target} ${h.body ?? ""}` }) : fastOnly(h));
  const r = await rig(echo);
  const put = (p: string, body: string): string => `PUT ${p} HTTP/1.1\r\nHost: h\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const bodies = await exchange(r.port, [put("/fast/1", "a=1") + get("/fast/2") + put("/fast/3", "b=2") + post("/slow/4", "c")], 4);
  assert.deepEqual(bodies, ["put /fast/1 a=1", "fast /fast/2", "put /fast/3 b=2", "slow /slow/4 c"]);
  assert.deepEqual(r.slow, ["POST /slow/4"]);
});
