// Client certificate authentication on the client port, through real handshakes against
// a real `kvctl serve` (spec 5.2 rule 1, 7.2; what etcd 3.4 answers, checked by hand with
// KVCTL_TEST_SERVER=etcd): a missing, foreign or clientAuth-less certificate gets a
// bad_certificate alert in TLS 1.2 and 1.3; an unlisted cipher suite a handshake_failure
// alert; then the kvctl client flags, and the v2 rule that the certificate's Common Name
// is the user when no Basic credentials are sent.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { CertDir, type CertFiles } from "../helpers/certs.ts";
import { probe, request, startTlsServer, type ClientTls, type TlsTestServer } from "../helpers/tls-server.ts";
import { runKvctl } from "../helpers/server.ts";

let certs: CertDir;
let srv: TlsTestServer;
let root: CertFiles;
let nobody: CertFiles;
let foreign: CertFiles;
let noClientAuth: CertFiles;
let expired: CertFiles;

before(async () => {
  certs = new CertDir();
  const server = certs.server();
  root = certs.client("root");
  nobody = certs.client("nobody");
  foreign = certs.leaf("foreign", { commonName: "root", extKeyUsage: ["clientAuth"], issuer: certs.otherCa().pem });
  noClientAuth = certs.leaf("server-only", { commonName: "root", extKeyUsage: ["serverAuth"] });
  expired = certs.leaf("expired", { commonName: "root", extKeyUsage: ["clientAuth"], notBefore: new Date(Date.now() - 10 * 86_400_000), days: 1 });
  srv = await startTlsServer({
    flags: [
      "--cert-file", server.cert, "--key-file", server.key,
      "--client-cert-auth", "--trusted-ca-file", certs.ca.cert,
      "--cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ],
    health: { ca: certs.ca.pem.certPem, cert: root.pem.certPem, key: root.pem.keyPem },
  });
});
after(async () => {
  await srv?.stop();
  certs?.remove();
});

const BAD_CERT = "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE";
const HANDSHAKE_FAILURE = "ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE";

interface HandshakeCase {
  name: string;
  client: () => CertFiles | undefined;
  tls?: ClientTls;
  /** An alert's error code, or undefined when the server answers. */
  alert?: string;
  cipher?: string;
}

const handshakes: HandshakeCase[] = [
  { name: "a certificate of the trusted CA with clientAuth is served (TLS 1.3)", client: () => root },
  // The server's order decides: the first listed suite the client also offers.
  { name: "a certificate of the trusted CA is served over TLS 1.2 with the first listed suite", client: () => root, tls: { maxVersion: "TLSv1.2" }, cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" },
  { name: "no certificate gets bad_certificate (TLS 1.3)", client: () => undefined, alert: BAD_CERT },
  { name: "no certificate gets bad_certificate (TLS 1.2)", client: () => undefined, tls: { maxVersion: "TLSv1.2" }, alert: BAD_CERT },
  { name: "a certificate of another CA gets bad_certificate (TLS 1.3)", client: () => foreign, alert: BAD_CERT },
  { name: "a certificate of another CA gets bad_certificate (TLS 1.2)", client: () => foreign, tls: { maxVersion: "TLSv1.2" }, alert: BAD_CERT },
  { name: "a certificate without the clientAuth usage gets bad_certificate", client: () => noClientAuth, alert: BAD_CERT },
  { name: "an expired certificate gets bad_certificate", client: () => expired, tls: { maxVersion: "TLSv1.2" }, alert: BAD_CERT },
  {
    name: "a client offering only unlisted suites gets handshake_failure",
    client: () => root,
    tls: { maxVersion: "TLSv1.2", ciphers: "ECDHE-RSA-AES128-SHA:ECDHE-RSA-CHACHA20-POLY1305" },
    alert: HANDSHAKE_FAILURE,
  },
];

for (const h of handshakes) {
  test(`handshake: ${h.name}`, async () => {
    const c = h.client();
    const r = await probe(srv.port, { ca: certs.ca.pem.certPem, ...(c !== undefined ? { cert: c.pem.certPem, key: c.pem.keyPem } : {}), ...h.tls });
    if (h.alert === undefined) {
      assert.equal(r.ok, true, JSON.stringify(r));
      if (h.cipher !== undefined && r.ok) assert.equal(r.cipher, h.cipher);
    } else {
      assert.equal(r.ok, false);
      assert.equal(r.ok ? "" : r.code, h.alert, JSON.stringify(r));
    }
  });
}

const kv = (extra: string[]): string[] => ["--endpoints", srv.url, ...extra];

test("kvctl --cacert --cert --key talks to an https endpoint", async () => {
  const set = await runKvctl(kv(["--cacert", certs.ca.cert, "--cert", root.cert, "--key", root.key, "set", "/tls/a", "1"]));
  assert.deepEqual([set.stdout, set.stderr, set.code], ["1\n", "", 0]);
});

test("kvctl takes etcdctl v2's --ca-file --cert-file --key-file as aliases", async () => {
  const get = await runKvctl(kv(["--ca-file", certs.ca.cert, "--cert-file", root.cert, "--key-file", root.key, "get", "/tls/a"]));
  assert.deepEqual([get.stdout, get.code], ["1\n", 0]);
});

test("kvctl reads the TLS flags from KV_CACERT, KV_CERT and KV_KEY", async () => {
  const get = await runKvctl(kv(["get", "/tls/a"]), { env: { KV_CACERT: certs.ca.cert, KV_CERT: root.cert, KV_KEY: root.key } });
  assert.deepEqual([get.stdout, get.code], ["1\n", 0]);
});

test("kvctl without the CA reports Go's unknown-authority error", async () => {
  const get = await runKvctl(kv(["--cert", root.cert, "--key", root.key, "get", "/tls/a"]));
  assert.notEqual(get.code, 0);
  assert.match(get.stderr, /x509: certificate signed by unknown authority/);
});

test("kvctl --insecure-skip-tls-verify without a client certificate gets the server's bad certificate alert", async () => {
  const get = await runKvctl(kv(["--insecure-skip-tls-verify", "get", "/tls/a"]));
  assert.notEqual(get.code, 0);
  assert.match(get.stderr, /remote error: tls: bad certificate/);
});

test("kvctl --insecure-skip-tls-verify with a certificate needs no CA", async () => {
  const get = await runKvctl(kv(["--insecure-skip-tls-verify", "--cert", root.cert, "--key", root.key, "get", "/tls/a"]));
  assert.deepEqual([get.stdout, get.code], ["1\n", 0]);
});

test("kvctl --insecure-transport=false dials TLS for an http:// endpoint", async () => {
  const get = await runKvctl(["--endpoints", srv.url.replace("https:", "http:"), "--no-sync", "--insecure-transport=false", "--cacert", certs.ca.cert, "--cert", root.cert, "--key", root.key, "get", "/tls/a"]);
  assert.deepEqual([get.stdout, get.code], ["1\n", 0]);
});

// ---- v2 auth: the Common Name is the user when no Basic credentials are sent ----------

const as = (c: CertFiles): ClientTls => ({ ca: certs.ca.pem.certPem, cert: c.pem.certPem, key: c.pem.keyPem });
const json = { "Content-Type": "application/json" };

test("with auth on, the certificate's CN is the v2 user; Basic credentials take precedence", async () => {
  // Set-up as root by certificate (auth still off): root user, auth on, guest loses access.
  let r = await request(srv.url, { method: "PUT", path: "/v2/auth/users/root", headers: json, body: JSON.stringify({ user: "root", password: "rootpw" }), tls: as(root) });
  assert.equal(r.status, 201, r.body);
  r = await request(srv.url, { method: "PUT", path: "/v2/auth/enable", tls: as(root) });
  assert.equal(r.status, 200, r.body);
  r = await request(srv.url, {
    method: "PUT",
    path: "/v2/auth/roles/guest",
    headers: json,
    body: JSON.stringify({ role: "guest", revoke: { kv: { read: ["/*"], write: ["/*"] } } }),
    tls: as(root), // no Authorization header: CN=root is root, an admin request passes
  });
  assert.equal(r.status, 200, r.body);

  // Keys: CN=root reads; CN=nobody (no such user) is the guest, now without access.
  r = await request(srv.url, { path: "/v2/keys/tls/a", tls: as(root) });
  assert.equal(r.status, 200, r.body);
  r = await request(srv.url, { path: "/v2/keys/tls/a", tls: as(nobody) });
  assert.equal(r.status, 401, r.body);
  assert.equal(JSON.parse(r.body).errorCode, 110);

  // Admin endpoints: a certificate naming no user is refused, not treated as the guest.
  r = await request(srv.url, { path: "/v2/auth/users", tls: as(nobody) });
  assert.deepEqual([r.status, JSON.parse(r.body)], [401, { message: "Insufficient credentials" }]);

  // Basic credentials win over the certificate: a wrong password is refused even as CN=root.
  const basic = (u: string, p: string): Record<string, string> => ({ Authorization: `Basic ${Buffer.from(`${u}:${p}`).toString("base64")}` });
  r = await request(srv.url, { path: "/v2/keys/tls/a", headers: basic("root", "wrong"), tls: as(root) });
  assert.equal(r.status, 401);
  r = await request(srv.url, { path: "/v2/keys/tls/a", headers: basic("root", "rootpw"), tls: as(nobody) });
  assert.equal(r.status, 200, r.body);

  // kvctl: the certificate alone authenticates it.
  const get = await runKvctl(kv(["--cacert", certs.ca.cert, "--cert", root.cert, "--key", root.key, "get", "/tls/a"]));
  assert.deepEqual([get.stdout, get.code], ["1\n", 0]);
  const denied = await runKvctl(kv(["--cacert", certs.ca.cert, "--cert", nobody.cert, "--key", nobody.key, "get", "/tls/a"]));
  assert.notEqual(denied.code, 0);
  assert.match(denied.stderr, /The request requires user authentication/);
});

test("the v3 gateway refuses a certificate's Common Name as an identity once v3 auth is on (400), and serves tokens", async () => {
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    request(srv.url, { method: "POST", path, body: JSON.stringify(body), headers, tls: as(root) });
  // Before v3 auth: the gateway serves the request (the CN authenticates nobody, nothing to refuse).
  let r = await post("/v3/kv/put", { key: Buffer.from("cn").toString("base64"), value: Buffer.from("1").toString("base64") });
  assert.equal(r.status, 200, r.body);
  assert.equal((await post("/v3/auth/user/add", { name: "root", password: "rootpw" })).status, 200);
  assert.equal((await post("/v3/auth/user/grant", { user: "root", role: "root" })).status, 200);
  assert.equal((await post("/v3/auth/enable", {})).status, 200);
  // etcd's accessController: with --client-cert-auth and v3 auth on, a gateway request
  // carrying a certificate with a CN is answered 400, so nobody takes the CN for a login.
  r = await post("/v3/kv/range", { key: Buffer.from("cn").toString("base64") });
  assert.deepEqual([r.status, r.body], [400, "CommonName of client sending a request against gateway will be ignored and not used as expected\n"]);
  // The v2 API is not the gateway: CN-as-user still applies there.
  r = await request(srv.url, { path: "/v2/keys/tls/a", tls: as(root) });
  assert.equal(r.status, 200, r.body);
});
