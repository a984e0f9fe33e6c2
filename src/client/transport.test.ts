// One contract, two implementations: every Transport must pass the same suite.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server, type ServerResponse } from "node:http";
import { createNodeTransport, readTlsFiles, type Transport } from "./transport.ts";
import { createGotTransport } from "./got-transport.ts";
import { DeadlineExceededError, HeaderTimeoutError, NetworkError } from "./errors.ts";
import { createServer as createTcpServer } from "node:net";

/** A port nothing listens on (bound to 0, then released). */
async function freePortForTest(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createTcpServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === "object" && addr !== null ? addr.port : 0));
    });
  });
}

let server: Server;
let origin: string;
const held: ServerResponse[] = [];

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      if (req.url === "/hold") {
        held.push(res); // never answers: header timeout / deadline tests
        return;
      }
      if (req.url === "/hold-body") {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.write("{");
        held.push(res);
        return;
      }
      res.writeHead(req.url === "/missing" ? 404 : 200, { "Content-Type": "application/json", "X-Kv-Index": "12" });
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          body,
          auth: req.headers.authorization ?? null,
          type: req.headers["content-type"] ?? null,
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  origin = `http://127.0.0.1:${typeof addr === "object" && addr !== null ? addr.port : 0}`;
});

after(() => {
  for (const res of held) res.destroy();
  server.closeAllConnections();
  server.close();
});

const implementations: [string, () => Promise<Transport>][] = [
  ["node:http transport", () => createNodeTransport()],
  ["got transport", () => createGotTransport()],
];

for (const [name, create] of implementations) {
  describe(name, () => {
    let t: Transport;
    before(async () => {
      t = await create();
    });
    after(() => t.close());

    test("returns status, lower-case headers and body", async () => {
      const res = await t.request({ method: "GET", origin, path: "/v2/keys/a?x=1" });
      assert.equal(res.status, 200);
      assert.equal(res.headers["x-kv-index"], "12");
      assert.deepEqual(JSON.parse(res.body), { method: "GET", url: "/v2/keys/a?x=1", body: "", auth: null, type: null });
    });

    test("sends the method, headers and body as given", async () => {
      const res = await t.request({
        method: "PUT",
        origin,
        path: "/v2/keys/sp%20ace",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic eDp5" },
        body: "value=a+b",
      });
      assert.deepEqual(JSON.parse(res.body), {
        method: "PUT",
        url: "/v2/keys/sp%20ace",
        body: "value=a+b",
        auth: "Basic eDp5",
        type: "application/x-www-form-urlencoded",
      });
    });

    test("returns non-2xx answers instead of throwing", async () => {
      const res = await t.request({ method: "GET", origin, path: "/missing" });
      assert.equal(res.status, 404);
    });

    test("fails with HeaderTimeoutError when no headers arrive in time", async () => {
      await assert.rejects(
        t.request({ method: "GET", origin, path: "/hold", headerTimeoutMs: 100 }),
        (err: unknown) => err instanceof HeaderTimeoutError && err.message === `client: endpoint ${origin} exceeded header timeout`,
      );
    });

    test("fails with the signal's DeadlineExceededError, also while reading the body", async () => {
      for (const path of ["/hold", "/hold-body"]) {
        const c = new AbortController();
        setTimeout(() => c.abort(new DeadlineExceededError()), 100);
        await assert.rejects(t.request({ method: "GET", origin, path, signal: c.signal }), DeadlineExceededError);
      }
    });

    test("maps a refused connection to Go's dial error", async () => {
      const port = await freePortForTest();
      await assert.rejects(
        t.request({ method: "GET", origin: `http://127.0.0.1:${port}`, path: "/" }),
        (err: unknown) =>
          err instanceof NetworkError &&
          err.message === `dial tcp 127.0.0.1:${port}: connect: connection refused` &&
          !err.sent &&
          err.connection,
      );
    });
  });
}

test("readTlsFiles: a server name (etcdctl v2's discovery domain) is the name certificates are checked against, never an IP", () => {
  assert.equal(readTlsFiles({ serverName: "example.test" }).servername, "example.test");
  assert.equal(readTlsFiles({}).servername, undefined);
  assert.equal(readTlsFiles({ serverName: "" }).servername, undefined);
  assert.equal(readTlsFiles({ serverName: "10.0.0.1" }).servername, undefined);
});
