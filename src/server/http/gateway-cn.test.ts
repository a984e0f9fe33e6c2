import { test } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { GATEWAY_CN_MESSAGE, refuseGatewayCommonName } from "./gateway-cn.ts";
import { issueCertificate } from "../tls/issue-cert.ts";

const withCn = new X509Certificate(issueCertificate({ commonName: "alice", keyBits: 1024 }).certPem);
const withoutCn = new X509Certificate(issueCertificate({ organization: "etcd", keyBits: 1024 }).certPem);

function call(opts: { url: string; cert: X509Certificate | undefined; encrypted: boolean; clientCertAuth: boolean; v3AuthEnabled: boolean }): { refused: boolean; status?: number; body?: string } {
  const req = { url: opts.url, socket: { encrypted: opts.encrypted, getPeerX509Certificate: () => opts.cert }, resume() {} } as unknown as IncomingMessage;
  const out: { status?: number; body?: string } = {};
  const res = { writeHead: (s: number) => (out.status = s), end: (b: string) => (out.body = b) } as unknown as ServerResponse;
  return { refused: refuseGatewayCommonName(req, res, opts), ...out };
}

const base = { url: "/v3/kv/range", cert: withCn, encrypted: true, clientCertAuth: true, v3AuthEnabled: true };
const cases: { name: string; change: Partial<typeof base>; refused: boolean }[] = [
  { name: "refuses a gateway request whose certificate has a CN", change: {}, refused: true },
  { name: "refuses it on /v3beta/ too", change: { url: "/v3beta/kv/put" }, refused: true },
  { name: "lets a certificate without CN through", change: { cert: withoutCn }, refused: false },
  { name: "lets v2 paths through", change: { url: "/v2/keys/a" }, refused: false },
  { name: "does nothing with v3 auth disabled", change: { v3AuthEnabled: false }, refused: false },
  { name: "does nothing without --client-cert-auth", change: { clientCertAuth: false }, refused: false },
  { name: "does nothing on plain HTTP", change: { encrypted: false }, refused: false },
];
for (const c of cases) {
  test(`refuseGatewayCommonName ${c.name}`, () => {
    const r = call({ ...base, ...c.change });
    assert.equal(r.refused, c.refused);
    if (c.refused) assert.deepEqual([r.status, r.body], [400, GATEWAY_CN_MESSAGE + "\n"]);
  });
}
