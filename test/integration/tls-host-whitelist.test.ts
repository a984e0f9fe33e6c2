// --host-whitelist (spec 5.2 rule 6): on plain HTTP only listed Host names get through,
// the rest get etcd's 421 answer; loopback names are not implicit; HTTPS admits any Host.
// The refusal comes before authentication and CORS, so it is the same with auth on.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { CertDir } from "../helpers/certs.ts";
import { request, startTlsServer, type TlsTestServer } from "../helpers/tls-server.ts";

let certs: CertDir;
let plain: TlsTestServer;
let secure: TlsTestServer;

before(async () => {
  certs = new CertDir();
  const server = certs.server();
  plain = await startTlsServer({ scheme: "http", flags: ["--host-whitelist", "example.com,127.0.0.1"] });
  secure = await startTlsServer({ flags: ["--host-whitelist", "example.com", "--cert-file", server.cert, "--key-file", server.key], health: { ca: certs.ca.pem.certPem } });
});
after(async () => {
  await plain?.stop();
  await secure?.stop();
  certs?.remove();
});

const refusal = (host: string): string => `
etcd received your request, but the Host header was unrecognized.

To fix this, choose one of the following options:
- Enable TLS, then any HTTPS request will be allowed.
- Add the hostname you want to use to the whitelist in settings.
  - e.g. etcd --host-whitelist "${host}"

This requirement has been added to help prevent "DNS Rebinding" attacks (CVE-2018-5702).

`;

const cases: { host: string; path: string; status: number }[] = [
  { host: "example.com:2379", path: "/v2/keys", status: 200 },
  { host: "example.com", path: "/health", status: 200 },
  { host: "127.0.0.1", path: "/v2/keys", status: 200 },
  { host: "localhost", path: "/v2/keys", status: 421 },
  { host: "EXAMPLE.com", path: "/version", status: 421 },
  { host: "evil.example", path: "/v2/members", status: 421 },
];

for (const c of cases) {
  test(`plain HTTP with a whitelist answers ${c.status} to Host ${c.host}`, async () => {
    const r = await request(plain.url, { path: c.path, headers: { Host: c.host } });
    assert.equal(r.status, c.status, r.body);
    if (c.status === 421) {
      const hostname = c.host.replace(/:\d+$/, "");
      assert.equal(r.body, refusal(hostname));
      assert.equal(r.headers["content-type"], "text/plain; charset=utf-8");
      assert.equal(r.headers["x-content-type-options"], "nosniff");
      assert.equal(r.headers["access-control-allow-origin"], undefined);
    }
  });
}

test("plain HTTP with a whitelist refuses OPTIONS from an unlisted Host too", async () => {
  const r = await request(plain.url, { method: "OPTIONS", path: "/v2/keys", headers: { Host: "evil.example" } });
  assert.equal(r.status, 421);
});

test("HTTPS admits any Host whatever the whitelist says", async () => {
  const r = await request(secure.url, { path: "/v2/keys", headers: { Host: "evil.example" }, tls: { ca: certs.ca.pem.certPem, servername: "localhost" } });
  assert.equal(r.status, 200, r.body);
});
