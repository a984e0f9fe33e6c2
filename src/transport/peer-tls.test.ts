import { test } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { canonicalIp, checkAllowedCn, checkAllowedHostname, checkCertSan, peerCertNames, PeerCertError, type PeerCertNames, type PeerResolver } from "./peer-tls.ts";
import { issueCertificate } from "../server/tls/issue-cert.ts";

/** A resolver from tables; records the lookups it answered, in order. */
function fakeResolver(hosts: Record<string, string[] | Error>, ptr: Record<string, string[] | Error>): PeerResolver & { calls: string[] } {
  const calls: string[] = [];
  const answer = async (table: Record<string, string[] | Error>, key: string): Promise<string[]> => {
    const v = table[key];
    if (v instanceof Error) throw v;
    return v ?? [];
  };
  return {
    calls,
    lookupHost: (name) => (calls.push(`host ${name}`), answer(hosts, name)),
    lookupAddr: (ip) => (calls.push(`addr ${ip}`), answer(ptr, ip)),
  };
}

const cert = (ipAddresses: string[], dnsNames: string[], commonName = "m1"): PeerCertNames => ({ commonName, ipAddresses, dnsNames });

interface SanCase {
  name: string;
  cert: PeerCertNames;
  remote: string;
  hosts?: Record<string, string[] | Error>;
  ptr?: Record<string, string[] | Error>;
  /** undefined: accepted. */
  error?: string;
  calls?: string[];
}

const sanCases: SanCase[] = [
  { name: "accepts a remote IP listed in the IP SANs without any lookup", cert: cert(["10.0.0.1", "10.0.0.2"], ["m1.example"]), remote: "10.0.0.2", calls: [] },
  { name: "accepts an IPv4-mapped IPv6 remote address for an IPv4 SAN", cert: cert(["127.0.0.1"], []), remote: "::ffff:127.0.0.1" },
  { name: "rejects an IP mismatch with Go's HostnameError when there are no DNS names", cert: cert(["10.0.0.1", "10.0.0.3"], []), remote: "10.0.0.2", error: "x509: certificate is valid for 10.0.0.1, 10.0.0.3, not 10.0.0.2" },
  { name: "accepts a certificate without SAN entries", cert: cert([], []), remote: "10.0.0.9", calls: [] },
  {
    name: "accepts a DNS-only certificate whose name resolves to the remote IP (forward lookup)",
    cert: cert([], ["m1.example"]),
    remote: "10.0.0.2",
    hosts: { "m1.example": ["10.0.0.1", "10.0.0.2"] },
    calls: ["host m1.example"],
  },
  {
    name: "falls back to DNS names after an IP mismatch",
    cert: cert(["10.0.0.1"], ["m1.example"]),
    remote: "10.0.0.2",
    hosts: { "m1.example": ["10.0.0.2"] },
  },
  {
    name: "accepts a reverse lookup matching a wildcard name (trailing dot stripped)",
    cert: cert([], ["*.peers.example"]),
    remote: "10.0.0.2",
    ptr: { "10.0.0.2": ["m2.peers.example."] },
    calls: ["addr 10.0.0.2"],
  },
  {
    name: "accepts a reverse lookup equal to a listed name",
    cert: cert([], ["m1.example", "m2.example"]),
    remote: "10.0.0.2",
    hosts: { "m1.example": ["10.9.9.9"], "m2.example": ["10.9.9.8"] },
    ptr: { "10.0.0.2": ["m2.example."] },
    calls: ["host m1.example", "host m2.example", "addr 10.0.0.2"],
  },
  {
    name: "rejects with etcd's DNSNames message and the last lookup error",
    cert: cert([], ["m1.example", "*.peers.example"]),
    remote: "10.0.0.2",
    hosts: { "m1.example": new Error("lookup m1.example: no such host") },
    ptr: { "10.0.0.2": ["other.example."] },
    error: 'tls: "10.0.0.2" does not match any of DNSNames ["m1.example" "*.peers.example"] (lookup m1.example: no such host)',
    calls: ["host m1.example", "addr 10.0.0.2", "host m1.example"],
  },
  {
    name: "rejects without an error suffix when every lookup answered",
    cert: cert([], ["m1.example"]),
    remote: "10.0.0.2",
    hosts: { "m1.example": ["10.0.0.1"] },
    error: 'tls: "10.0.0.2" does not match any of DNSNames ["m1.example"]',
  },
];

for (const c of sanCases) {
  test(`checkCertSan ${c.name}`, async () => {
    const r = fakeResolver(c.hosts ?? {}, c.ptr ?? {});
    if (c.error === undefined) await checkCertSan(c.cert, c.remote, r);
    else await assert.rejects(checkCertSan(c.cert, c.remote, r), (err: unknown) => err instanceof PeerCertError && err.message === c.error);
    if (c.calls !== undefined) assert.deepEqual(r.calls, c.calls);
  });
}

test("checkCertSan forward-looks-up each name again when the first lookup failed", async () => {
  let first = true;
  const r: PeerResolver = {
    async lookupHost() {
      if (first) {
        first = false;
        throw new Error("temporary failure");
      }
      return ["10.0.0.2"];
    },
    async lookupAddr() {
      return [];
    },
  };
  await checkCertSan(cert([], ["m1.example"]), "10.0.0.2", r);
});

test("checkAllowedCn rejects another Common Name with etcd's message", () => {
  checkAllowedCn(cert([], [], "member"), "member");
  checkAllowedCn(cert([], [], "anything"), "");
  assert.throws(() => checkAllowedCn(cert([], [], "intruder"), "member"), { message: "CommonName authentication failed" });
});

test("peerCertNames reads CN, IP and DNS SANs of a real certificate", () => {
  const pem = issueCertificate({ commonName: "m1", hosts: ["10.0.0.1", "::1", "m1.example", "*.peers.example"], keyBits: 1024 });
  assert.deepEqual(peerCertNames(new X509Certificate(pem.certPem)), {
    commonName: "m1",
    ipAddresses: ["10.0.0.1", "::1"],
    dnsNames: ["m1.example", "*.peers.example"],
  });
});

test("canonicalIp writes addresses as Go prints them", () => {
  assert.equal(canonicalIp("0:0:0:0:0:0:0:1"), "::1");
  assert.equal(canonicalIp("::ffff:10.1.2.3"), "10.1.2.3");
  assert.equal(canonicalIp("[fe80::1]"), "fe80::1");
  assert.equal(canonicalIp("m1.example"), undefined);
});

test("checkAllowedHostname: DNS SANs (one-label wildcard), IP SANs, the CN only without SANs", () => {
  const names = (dnsNames: string[], ipAddresses: string[] = [], commonName = "cn.example.com") => ({ commonName, dnsNames, ipAddresses });
  assert.doesNotThrow(() => checkAllowedHostname(names(["a.example.com"]), "A.Example.com"));
  assert.doesNotThrow(() => checkAllowedHostname(names(["*.example.com"]), "a.example.com"));
  assert.throws(() => checkAllowedHostname(names(["*.example.com"]), "a.b.example.com"), /not valid for "a.b.example.com"/);
  assert.throws(() => checkAllowedHostname(names(["*.example.com"]), "example.com"));
  assert.doesNotThrow(() => checkAllowedHostname(names([], ["10.0.0.1"]), "10.0.0.1"));
  assert.throws(() => checkAllowedHostname(names(["10.0.0.1"]), "10.0.0.1"), "an IP is matched against IP SANs only");
  assert.doesNotThrow(() => checkAllowedHostname(names([]), "cn.example.com"), "no SANs: the CN");
  assert.throws(() => checkAllowedHostname(names(["x.example.com"]), "cn.example.com"), "with SANs the CN does not count");
  assert.doesNotThrow(() => checkAllowedHostname(names(["x"]), ""), '"" allows all');
});
