// Certificates are read again for every new connection (spec 5.2 rule 3): replacing the
// files rotates the certificate without a restart, also when it lists only IP addresses
// and the client sends no server name (Node sends none for an IP literal); --auto-tls
// keeps its self-signed certificate in <data-dir>/fixtures/client across restarts
// (rule 7: clients must skip verification).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "node:tls";
import { CertDir } from "../helpers/certs.ts";
import { startTlsServer, type ClientTls, type TlsTestServer } from "../helpers/tls-server.ts";
import { runKvctl } from "../helpers/server.ts";

const certs = new CertDir();
const servers: TlsTestServer[] = [];
after(async () => {
  for (const s of servers) await s.stop();
  certs.remove();
});

/** The certificate the server presents to a new connection, and whether SNI was sent. */
function presented(port: number, tls: ClientTls): Promise<{ cn: string; fingerprint: string; servername: string | false }> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: "127.0.0.1", port, ...tls }, () => {
      const cert = s.getPeerX509Certificate();
      const servername = (s as unknown as { servername?: string | false }).servername ?? false;
      s.destroy();
      if (cert === undefined) reject(new Error("no certificate"));
      else resolve({ cn: /CN=([^\n]*)/.exec(cert.subject)?.[1] ?? "", fingerprint: cert.fingerprint256, servername });
    });
    s.on("error", reject);
  });
}

test("a replaced IP-only certificate is served to the next connection, without SNI and without a restart", async () => {
  const first = certs.leaf("first", { commonName: "first", hosts: ["127.0.0.1"], extKeyUsage: ["serverAuth"] });
  const live = { cert: join(certs.path, "live.pem"), key: join(certs.path, "live-key.pem") };
  copyFileSync(first.cert, live.cert);
  copyFileSync(first.key, live.key);
  const srv = await startTlsServer({ flags: ["--cert-file", live.cert, "--key-file", live.key], health: { ca: certs.ca.pem.certPem } });
  servers.push(srv);
  const ca = { ca: certs.ca.pem.certPem };

  const before = await presented(srv.port, ca);
  assert.equal(before.cn, "first");
  assert.equal(before.servername, false, "an IP literal must not be sent as SNI");

  const second = certs.leaf("second", { commonName: "second", hosts: ["127.0.0.1"], extKeyUsage: ["serverAuth"] });
  writeFileSync(live.key, second.pem.keyPem);
  writeFileSync(live.cert, second.pem.certPem);
  assert.equal((await presented(srv.port, ca)).cn, "second");

  // A half-done rotation (new certificate, old key) keeps the last good pair in service.
  // (etcd fails such handshakes with an internal_error alert instead: a deliberate difference.)
  const third = certs.leaf("third", { commonName: "third", hosts: ["127.0.0.1"], extKeyUsage: ["serverAuth"] });
  writeFileSync(live.cert, third.pem.certPem);
  if (process.env["KVCTL_TEST_SERVER"] !== "etcd") assert.equal((await presented(srv.port, ca)).cn, "second");
  writeFileSync(live.key, third.pem.keyPem);
  assert.equal((await presented(srv.port, ca)).cn, "third");

  // kvctl, which connects by IP, sees the new certificate too.
  const health = await runKvctl(["--endpoints", srv.url, "--cacert", certs.ca.cert, "cluster-health"]);
  assert.equal(health.code, 0, health.stderr);
});

test("--auto-tls creates a self-signed certificate in fixtures/client and reuses it after a restart", async () => {
  const srv = await startTlsServer({ flags: ["--auto-tls"], health: { rejectUnauthorized: false } });
  servers.push(srv);
  const onDisk = new X509Certificate(readFileSync(join(srv.dataDir, "fixtures", "client", "cert.pem")));
  assert.match(onDisk.subject, /O=etcd/);
  assert.equal(onDisk.checkIP("127.0.0.1"), "127.0.0.1");
  const first = await presented(srv.port, { rejectUnauthorized: false });
  assert.equal(first.fingerprint, onDisk.fingerprint256);

  await srv.restart();
  const again = await presented(srv.port, { rejectUnauthorized: false });
  assert.equal(again.fingerprint, first.fingerprint);

  // Nobody can verify it: kvctl needs --insecure-skip-tls-verify.
  const refused = await runKvctl(["--endpoints", srv.url, "get", "/x"]);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /x509: certificate signed by unknown authority/);
  const set = await runKvctl(["--endpoints", srv.url, "--insecure-skip-tls-verify", "set", "/x", "y"]);
  assert.deepEqual([set.stdout, set.code], ["y\n", 0]);
});
