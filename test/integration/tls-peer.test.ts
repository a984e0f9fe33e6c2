// The peer side as the lead will wire it (preparePeerTls + listen), in process.
// preparePeerTls and clientListenerTls through real handshakes on loopback, in process:
// the peer listener refuses a certificate of another Common Name with a bad_certificate
// alert (--peer-cert-allowed-cn) and closes on a SAN that does not fit the remote IP;
// clientOptions() dials with the member's own certificate. Ports: the reserved test range.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:https";
import { parseServeArgs } from "../../src/server/config.ts";
import { silentLogger } from "../../src/server/logger.ts";
import { listen, type Listener } from "../../src/server/http/listener.ts";
import { preparePeerTls } from "../../src/server/tls/server-tls.ts";
import type { PeerResolver } from "../../src/transport/peer-tls.ts";
import { CertDir, type CertFiles } from "../helpers/certs.ts";
import { probe, reservedPort } from "../helpers/tls-server.ts";

const certs = new CertDir();
const listeners: Listener[] = [];
after(() => {
  for (const l of listeners) l.server.close();
  certs.remove();
});

const noDns: PeerResolver = {
  lookupHost: async () => [],
  lookupAddr: async () => [],
};

async function peerServer(allowedCn: string): Promise<{ port: number; member: CertFiles; clientOptions: () => Promise<object> }> {
  const port = await reservedPort();
  const member = certs.leaf("member", { commonName: "member", hosts: ["127.0.0.1"] });
  const url = `https://127.0.0.1:${port}`;
  const config = await parseServeArgs(
    [
      "--listen-peer-urls", url, "--initial-advertise-peer-urls", url, "--data-dir", certs.path,
      "--peer-cert-file", member.cert, "--peer-key-file", member.key,
      "--peer-client-cert-auth", "--peer-trusted-ca-file", certs.ca.cert,
      "--peer-cert-allowed-cn", allowedCn,
    ],
    {},
    () => undefined,
  );
  assert.ok(config);
  const peer = await preparePeerTls(config, silentLogger, noDns);
  assert.ok(peer);
  const ls = await listen(config.listenPeerUrls, (_req, res) => res.end("peer ok"), silentLogger, { traffic: "peer", tls: peer.listener });
  listeners.push(...ls);
  return { port, member, clientOptions: () => peer.clientOptions() };
}

test("the peer listener serves a member whose CN is allowed and whose IP SAN is the remote IP", async () => {
  const { port, member } = await peerServer("member");
  const r = await probe(port, { ca: certs.ca.pem.certPem, cert: member.pem.certPem, key: member.pem.keyPem });
  assert.equal(r.ok, true, JSON.stringify(r));
});

test("the peer listener refuses another CN with a bad_certificate alert", async () => {
  const { port } = await peerServer("member");
  const other = certs.leaf("intruder", { commonName: "intruder", hosts: ["127.0.0.1"] });
  const r = await probe(port, { ca: certs.ca.pem.certPem, cert: other.pem.certPem, key: other.pem.keyPem });
  assert.deepEqual(r.ok ? "" : r.code, "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE");
});

test("the peer listener closes on a certificate valid for another IP", async () => {
  const { port } = await peerServer("");
  const elsewhere = certs.leaf("elsewhere", { commonName: "member", hosts: ["10.9.9.9"] });
  const r = await probe(port, { ca: certs.ca.pem.certPem, cert: elsewhere.pem.certPem, key: elsewhere.pem.keyPem });
  assert.equal(r.ok, false);
  assert.notEqual(r.ok ? "" : r.code, "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE");
});

test("clientOptions() dials another member with the member's certificate", async () => {
  const { port, clientOptions } = await peerServer("member");
  const opts = await clientOptions();
  const body = await new Promise<string>((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/", agent: false, ...opts }, (res) => {
      let b = "";
      res.on("data", (c: Buffer) => (b += c.toString()));
      res.on("end", () => resolve(b));
    });
    req.on("error", reject);
    req.end();
  });
  assert.equal(body, "peer ok");
});
