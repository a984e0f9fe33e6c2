import { test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { bindListeners, listen, type BoundListener } from "./listener.ts";
import { createLogger } from "../logger.ts";
import { ReloadingCredentials } from "../tls/credentials.ts";
import { issueCertificate } from "../tls/issue-cert.ts";

const quiet = createLogger("error", () => undefined, "json");

function portOf(b: BoundListener): number {
  return (b.server.address() as AddressInfo).port;
}

/** Everything the server sends until the connection closes. */
function reader(socket: Socket): { text: () => string; ended: Promise<void> } {
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (d: string) => (text += d));
  return { text: () => text, ended: once(socket, "close").then(() => undefined) };
}

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

test("a connection made to a bound listener waits, unanswered, and is served once listen() takes the listener over", async () => {
  const [bound] = await bindListeners([new URL("http://127.0.0.1:0")]);
  assert.ok(bound !== undefined);
  const accepted = once(bound.server, "connection");
  const client = connect(portOf(bound), "127.0.0.1");
  const got = reader(client);
  client.write("GET /early HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  await accepted;
  await turns(5);
  assert.equal(got.text(), "", "nothing is answered before listen()");
  const listeners = await listen([bound.url], (req, res) => res.end(`served ${req.url ?? ""}`), quiet, { traffic: "peer" }, [bound]);
  try {
    await got.ended;
    assert.match(got.text(), /^HTTP\/1\.1 200 OK\r\n/);
    assert.ok(got.text().endsWith("served /early"), got.text());
  } finally {
    for (const l of listeners) l.server.close();
  }
});

test("a bound listener taken over by a client listener (lane and gRPC mux in front) serves a held connection", async () => {
  const [bound] = await bindListeners([new URL("http://127.0.0.1:0")]);
  assert.ok(bound !== undefined);
  const accepted = once(bound.server, "connection");
  const client = connect(portOf(bound), "127.0.0.1");
  const got = reader(client);
  client.write("GET /lane HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  await accepted;
  const fast = (): undefined => undefined;
  const listeners = await listen([bound.url], (req, res) => res.end(`served ${req.url ?? ""}`), quiet, { fast, grpc: (s) => s.destroy() }, [bound]);
  try {
    await got.ended;
    assert.ok(got.text().endsWith("served /lane"), got.text());
  } finally {
    for (const l of listeners) l.server.close();
  }
});

test("an https listener holds a connection before the TLS handshake and completes it once taken over", async () => {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-listener-"));
  try {
    const { certPem, keyPem } = issueCertificate({ hosts: ["127.0.0.1"], keyBits: 1024 });
    writeFileSync(join(dir, "cert.pem"), certPem);
    writeFileSync(join(dir, "key.pem"), keyPem);
    const credentials = new ReloadingCredentials({ files: { certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem"), trustedCaFile: "", crlFile: "", flagPrefix: "" }, ciphers: undefined, log: quiet });
    await credentials.init();
    const [bound] = await bindListeners([new URL("https://127.0.0.1:0")]);
    assert.ok(bound !== undefined);
    const accepted = once(bound.server, "connection");
    const client = tlsConnect({ port: portOf(bound), host: "127.0.0.1", rejectUnauthorized: false });
    let secured = false;
    client.once("secureConnect", () => (secured = true));
    const got = reader(client);
    client.write("GET /tls HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    await accepted;
    await turns(5);
    assert.equal(secured, false, "no handshake before listen()");
    const listeners = await listen([bound.url], (req, res) => res.end(`served ${req.url ?? ""}`), quiet, { tls: { credentials, clientCertAuth: false } }, [bound]);
    try {
      await got.ended;
      assert.ok(secured);
      assert.ok(got.text().endsWith("served /tls"), got.text());
    } finally {
      for (const l of listeners) l.server.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("close() of a bound listener ends the connections it holds and frees the port", async () => {
  const [bound] = await bindListeners([new URL("http://127.0.0.1:0")]);
  assert.ok(bound !== undefined);
  const port = portOf(bound);
  const accepted = once(bound.server, "connection");
  const client = connect(port, "127.0.0.1");
  const got = reader(client);
  await accepted;
  bound.close();
  await got.ended;
  assert.equal(got.text(), "");
  const again = createServer();
  again.listen(port, "127.0.0.1");
  await once(again, "listening");
  again.close();
});

test("bindListeners closes what it bound when a later URL cannot be bound", async () => {
  const taken = createServer();
  taken.listen(0, "127.0.0.1");
  await once(taken, "listening");
  const free = createServer();
  free.listen(0, "127.0.0.1");
  await once(free, "listening");
  const freePort = (free.address() as AddressInfo).port;
  free.close();
  await once(free, "close");
  try {
    await assert.rejects(bindListeners([new URL(`http://127.0.0.1:${freePort}`), new URL(`http://127.0.0.1:${(taken.address() as AddressInfo).port}`)]), /EADDRINUSE/);
    const again = createServer();
    again.listen(freePort, "127.0.0.1");
    await once(again, "listening");
    again.close();
  } finally {
    taken.close();
  }
});

/** One raw request to a client listener (lane in front, declining all) and all it answered. */
async function rawExchange(port: number, bytes: string): Promise<string> {
  const client = connect(port, "127.0.0.1");
  const got = reader(client);
  client.on("error", () => undefined);
  client.write(bytes);
  await got.ended;
  return got.text();
}

test("a client listener answers the heads Go's server refuses where llhttp fails them, and frames expectations and head sizes as Go does", async () => {
  const [bound] = await bindListeners([new URL("http://127.0.0.1:0")]);
  assert.ok(bound !== undefined);
  const port = portOf(bound);
  const handler = (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): void => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (d: string) => (body += d));
    req.on("end", () => res.end(`served ${req.url ?? ""} ${body}`));
  };
  const listeners = await listen([bound.url], handler, quiet, { fast: () => undefined }, [bound]);
  const head = (lines: string): string => `PUT /k HTTP/1.1\r\nHost: h\r\n${lines}Connection: close\r\n\r\n`;
  const chunked = "7\r\nvalue=1\r\n0\r\n\r\n";
  const te501 = "HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nUnsupported transfer encoding";
  try {
    // Transfer-Encoding: Go reads one `chunked` line only (the router refuses what llhttp lets through).
    assert.equal(await rawExchange(port, head("Transfer-Encoding: chunked, chunked\r\n") + chunked), te501);
    assert.equal(await rawExchange(port, head("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n") + chunked), te501);
    assert.equal(await rawExchange(port, head("Transfer-Encoding: identity\r\nContent-Length: 7\r\n") + "value=1"), te501);
    // The target is read before: a bad escape is Go's raw 400 whatever the coding.
    assert.equal(await rawExchange(port, "POST /k/%zz HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked), "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request");
    assert.match(await rawExchange(port, head("Transfer-Encoding: chunked\r\n") + chunked), /served \/k value=1$/);
    // Expect: 417 framed by Content-Length; 100 Continue only before a body.
    const e417 = await rawExchange(port, head("Expect: foo\r\nContent-Length: 7\r\n") + "value=1");
    assert.match(e417, /^HTTP\/1\.1 417 Expectation Failed\r\n/);
    assert.match(e417, /\r\nContent-Length: 0\r\n/);
    assert.doesNotMatch(e417, /chunked/i);
    assert.match(await rawExchange(port, head("Expect: \r\nContent-Length: 7\r\n") + "value=1"), /served \/k value=1$/);
    const noBody = await rawExchange(port, "GET /k HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n");
    assert.match(noBody, /^HTTP\/1\.1 200 OK\r\n/);
    const withBody = await rawExchange(port, head("Expect: 100-continue\r\nContent-Length: 7\r\n") + "value=1");
    assert.match(withBody, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    // Go's header limit (1 MiB + 4096), not node:http's 16 KiB.
    assert.match(await rawExchange(port, `GET /k HTTP/1.1\r\nHost: h\r\nX-Big: ${"y".repeat(200_000)}\r\nConnection: close\r\n\r\n`), /served \/k $/);
    assert.match(await rawExchange(port, `GET /k HTTP/1.1\r\nHost: h\r\nX-Big: ${"y".repeat(1_100_000)}\r\nConnection: close\r\n\r\n`), /^HTTP\/1\.1 431 /);
  } finally {
    for (const l of listeners) l.server.close();
  }
});
