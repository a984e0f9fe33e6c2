// proxiedRequest against a tiny proxy: a plain http target by absolute URL, an https target
// through CONNECT with TLS inside the tunnel, a refused CONNECT.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { issueCertificate } from "./tls/issue-cert.ts";
import { startTinyProxy } from "./tiny-proxy.test-helper.ts";
import { discoveryProxyUrl } from "./discovery-proxy-url.ts";
import { proxiedRequest } from "./proxied-request.ts";

// 1024-bit keys: fast to make on a shared machine; nothing is written to disk.
const ca = issueCertificate({ commonName: "proxied-request test CA", isCa: true, keyBits: 1024 });
const cert = issueCertificate({ commonName: "disc", hosts: ["127.0.0.1", "localhost"], extKeyUsage: ["serverAuth"], issuer: ca, keyBits: 1024 });

test("an https target is reached through CONNECT, TLS inside the tunnel; a refused CONNECT fails the request", async () => {
  const target = createHttpsServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      res.writeHead(201, { "x-etcd-index": "7" });
      res.end(`${req.method} ${req.url} ${req.headers.host} ${body}`);
    });
  });
  await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
  const port = (target.address() as AddressInfo).port;
  const proxy = await startTinyProxy({ credentials: "me:secret" });
  try {
    const via = new URL(proxy.url);
    via.username = "me";
    via.password = "secret";
    const a = await proxiedRequest(new URL(`https://localhost:${port}/tok/k?prevExist=false`), via, { method: "PUT", body: "value=x", timeoutMs: 5000, ca: ca.certPem });
    assert.equal(a.status, 201);
    assert.equal(a.header("X-Etcd-Index"), "7");
    assert.equal(a.text, `PUT /tok/k?prevExist=false localhost:${port} value=x`);
    assert.deepEqual(proxy.asked, [`CONNECT localhost:${port}`]);
    await assert.rejects(proxiedRequest(new URL(`https://localhost:${port}/`), new URL(proxy.url), { method: "GET", timeoutMs: 5000 }), /refused CONNECT localhost:\d+: 407/);
  } finally {
    await proxy.close();
    target.closeAllConnections();
    await new Promise<void>((r) => target.close(() => r()));
  }
});

test("a proxy address is read as etcd's newProxyFunc reads it", () => {
  assert.equal(discoveryProxyUrl("http://p:8080").href, "http://p:8080/");
  assert.equal(discoveryProxyUrl("p:8080").href, "http://p:8080/");
  assert.equal(discoveryProxyUrl("10.0.0.1:3128").href, "http://10.0.0.1:3128/");
  assert.equal(discoveryProxyUrl("https://p").href, "https://p/");
});
