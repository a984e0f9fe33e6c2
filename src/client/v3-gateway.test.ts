import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { gatewayError, V3AuthError, V3Client } from "./v3-gateway.ts";
import { MessageSplitter } from "./v3-stream.ts";
import { createNodeTransport } from "./transport.ts";
import { V3Error } from "../api/v3-errors.ts";

const errorCases: { name: string; status: number; body: string; code?: number; message?: string }[] = [
  { name: "passes a 2xx answer", status: 200, body: "{}" },
  { name: "reads the gateway's error body", status: 400, body: '{"error":"etcdserver: key is not provided","message":"etcdserver: key is not provided","code":3}', code: 3, message: "etcdserver: key is not provided" },
  { name: "names a non-JSON failure", status: 502, body: "bad gateway", code: 2, message: "unexpected HTTP status 502 Bad Gateway: bad gateway" },
];
for (const c of errorCases) {
  test(`gatewayError ${c.name}`, () => {
    const e = gatewayError({ status: c.status, statusText: c.status === 502 ? "Bad Gateway" : "", headers: {}, body: c.body });
    if (c.code === undefined) assert.equal(e, undefined);
    else assert.deepEqual([e?.code, e?.message], [c.code, c.message]);
  });
}

const splits: { chunks: string[]; want: unknown[] }[] = [
  { chunks: ['{"result":{"a":1}}\n{"result":{"b":"}{"}}\n'], want: [{ result: { a: 1 } }, { result: { b: "}{" } }] },
  { chunks: ['{"res', 'ult":{"a":"x\\"', '"}}{"r":2}'], want: [{ result: { a: 'x"' } }, { r: 2 }] },
];
for (const [i, c] of splits.entries()) {
  test(`MessageSplitter splits a stream into JSON messages (case ${i})`, () => {
    const got: unknown[] = [];
    const s = new MessageSplitter((m) => got.push(m));
    for (const ch of c.chunks) s.push(ch);
    s.end();
    assert.deepEqual(got, c.want);
  });
}

/** A fake gateway: answers from a handler, records requests. */
async function fake(handler: (path: string, body: string, auth: string | undefined) => [number, string]): Promise<{ server: Server; url: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push(`${req.url ?? ""} ${req.headers.authorization ?? "-"}`);
      const [status, text] = handler(req.url ?? "", body, req.headers.authorization);
      res.writeHead(status, { "content-type": "application/json" }).end(text);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const addr = server.address();
  const port = typeof addr === "object" && addr !== null ? addr.port : 0;
  return { server, url: `http://127.0.0.1:${port}`, seen };
}

test("V3Client authenticates once and sends the token raw, skipping a refused endpoint", async () => {
  const g = await fake((path) => (path === "/v3/auth/authenticate" ? [200, '{"token":"tok.1"}'] : [200, '{"count":"1"}']));
  const client = new V3Client({ endpoints: ["http://127.0.0.1:1", g.url], transport: await createNodeTransport(), credentials: { username: "u", password: "p" } });
  try {
    assert.deepEqual(await client.call("/v3/kv/range", {}), { count: "1" });
    await client.call("/v3/kv/range", {});
    assert.deepEqual(g.seen, ["/v3/auth/authenticate -", "/v3/kv/range tok.1", "/v3/kv/range tok.1"]);
  } finally {
    client.close();
    g.server.close();
  }
});

test("V3Client reports a refused password as V3AuthError and ignores disabled auth", async () => {
  const bad = await fake(() => [400, '{"error":"x","message":"etcdserver: authentication failed, invalid user ID or password","code":3}']);
  const off = await fake((path) => (path === "/v3/auth/authenticate" ? [412, '{"message":"etcdserver: authentication is not enabled","code":9}'] : [200, "{}"]));
  const mk = async (url: string): Promise<V3Client> => new V3Client({ endpoints: [url], transport: await createNodeTransport(), credentials: { username: "u", password: "p" } });
  const c1 = await mk(bad.url);
  const c2 = await mk(off.url);
  try {
    await assert.rejects(c1.call("/v3/kv/range", {}), (e: unknown) => e instanceof V3AuthError && e.cause instanceof V3Error);
    assert.deepEqual(await c2.call("/v3/kv/range", {}), {});
    assert.deepEqual(off.seen, ["/v3/auth/authenticate -", "/v3/kv/range -"]);
  } finally {
    c1.close();
    c2.close();
    bad.server.close();
    off.server.close();
  }
});
