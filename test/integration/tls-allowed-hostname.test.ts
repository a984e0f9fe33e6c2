// --client-cert-allowed-hostname through real handshakes: a client certificate of the
// trusted CA is served only when it is valid for the allowed name (a DNS SAN, `*.` for one
// label); any other gets a bad_certificate alert, as a foreign certificate does.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { CertDir, type CertFiles } from "../helpers/certs.ts";
import { probe, startTlsServer, type TlsTestServer } from "../helpers/tls-server.ts";

let certs: CertDir;
let srv: TlsTestServer;
let allowed: CertFiles;
let wildcard: CertFiles;
let other: CertFiles;

before(async () => {
  certs = new CertDir();
  const server = certs.server();
  allowed = certs.leaf("allowed", { commonName: "root", hosts: ["client.example.com"], extKeyUsage: ["clientAuth"] });
  wildcard = certs.leaf("wildcard", { commonName: "root", hosts: ["*.example.com"], extKeyUsage: ["clientAuth"] });
  other = certs.leaf("other", { commonName: "client.example.com", hosts: ["other.example.org"], extKeyUsage: ["clientAuth"] });
  srv = await startTlsServer({
    flags: ["--cert-file", server.cert, "--key-file", server.key, "--client-cert-auth", "--trusted-ca-file", certs.ca.cert, "--client-cert-allowed-hostname", "client.example.com"],
    health: { ca: certs.ca.pem.certPem, cert: allowed.pem.certPem, key: allowed.pem.keyPem },
  });
});
after(async () => {
  await srv?.stop();
  certs?.remove();
});

const hello = (c: CertFiles) => probe(srv.port, { ca: certs.ca.pem.certPem, cert: c.pem.certPem, key: c.pem.keyPem });

test("a client certificate valid for the allowed hostname is served", async () => {
  assert.equal((await hello(allowed)).ok, true);
  assert.equal((await hello(wildcard)).ok, true, "*.example.com covers client.example.com");
});

test("a certificate of the trusted CA for another name gets bad_certificate (its CN does not count: it has SANs)", async () => {
  const r = await hello(other);
  assert.equal(r.ok, false);
  assert.equal(r.ok ? "" : r.code, "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE", JSON.stringify(r));
});
