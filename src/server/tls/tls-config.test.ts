// The TLS flags of `kvctl serve` (config.ts): names, KV_ variables, aliases and the
// cross-flag rules, with etcd's wording where etcd has one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError, parseServeArgs, type ServerConfig } from "../config.ts";

const https = ["--listen-client-urls", "https://127.0.0.1:2379", "--advertise-client-urls", "https://127.0.0.1:2379"];

async function parse(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerConfig> {
  const c = await parseServeArgs(args, env, () => undefined);
  assert.ok(c);
  return c;
}

test("TLS flags default to off, with an empty whitelist and cipher list", async () => {
  const c = await parse([]);
  assert.deepEqual(c.clientTls, { certFile: "", keyFile: "", trustedCaFile: "", clientCertAuth: false, autoTls: false, crlFile: "", allowedCn: "", allowedHostname: "", skipClientSanVerify: false });
  assert.deepEqual(c.peerTls.certFile, "");
  assert.deepEqual(c.cipherSuites, []);
  assert.deepEqual(c.hostWhitelist, []);
});

test("client TLS flags are read, bool flags take no value and accept =false", async () => {
  const c = await parse([...https, "--cert-file", "c.pem", "--key-file=k.pem", "--client-cert-auth", "--trusted-ca-file", "ca.pem", "--auto-tls=false"]);
  assert.deepEqual(c.clientTls, { certFile: "c.pem", keyFile: "k.pem", trustedCaFile: "ca.pem", clientCertAuth: true, autoTls: false, crlFile: "", allowedCn: "", allowedHostname: "", skipClientSanVerify: false });
});

test("--ca-file and --peer-ca-file are the older names of the trusted CA flags", async () => {
  const c = await parse(["--ca-file", "a.pem", "--peer-ca-file", "p.pem"]);
  assert.equal(c.clientTls.trustedCaFile, "a.pem");
  assert.equal(c.peerTls.trustedCaFile, "p.pem");
});

test("KV_ variables set TLS flags, including KV_CA_FILE and KV_PEER_CA_FILE", async () => {
  const c = await parse([], {
    KV_CA_FILE: "a.pem",
    KV_PEER_CA_FILE: "p.pem",
    KV_CLIENT_CERT_AUTH: "true",
    KV_PEER_CERT_ALLOWED_CN: "member",
    KV_HOST_WHITELIST: "a.example, b.example,a.example",
    KV_CIPHER_SUITES: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
  });
  assert.equal(c.clientTls.trustedCaFile, "a.pem");
  assert.equal(c.peerTls.trustedCaFile, "p.pem");
  assert.equal(c.clientTls.clientCertAuth, true);
  assert.equal(c.peerTls.allowedCn, "member");
  assert.deepEqual(c.hostWhitelist, ["a.example", "b.example"]);
  assert.deepEqual(c.cipherSuites, ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]);
});

interface Refusal {
  name: string;
  args: string[];
  message: RegExp;
}

const refusals: Refusal[] = [
  { name: "a certificate without its key", args: ["--cert-file", "c.pem"], message: /^--key-file is required: KeyFile and CertFile must both be present\[key: , cert: c\.pem\]$/ },
  { name: "a key without its certificate", args: ["--peer-key-file", "k.pem"], message: /^--peer-cert-file is required/ },
  { name: "an https client URL without certificate", args: https, message: /^TLS key\/cert \(--cert-file, --key-file\) must be provided for client url https:\/\/127\.0\.0\.1:2379 with HTTPS scheme$/ },
  {
    name: "an https peer URL without certificate",
    args: ["--listen-peer-urls", "https://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380"],
    message: /--peer-cert-file, --peer-key-file\) must be provided for peer url https:\/\/127\.0\.0\.1:2380/,
  },
  { name: "an unknown cipher suite, listing the valid names", args: ["--cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,FOO"], message: /^unexpected TLS cipher suite "FOO" \(valid: .*TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256.*\)$/ },
  { name: "a bool flag with a bad value", args: ["--client-cert-auth=maybe"], message: /invalid boolean value "maybe" for -client-cert-auth/ },
];

for (const r of refusals) {
  test(`parseServeArgs refuses ${r.name}`, async () => {
    await assert.rejects(parseServeArgs(r.args, {}, () => undefined), (err: unknown) => err instanceof ConfigError && r.message.test(err.message));
  });
}

test("--auto-tls stands in for a certificate on https URLs", async () => {
  const c = await parse([...https, "--auto-tls"]);
  assert.equal(c.clientTls.autoTls, true);
});

test("a bool flag does not take the next argument as its value", async () => {
  const c = await parse(["--client-cert-auth", "--name", "x"]);
  assert.equal(c.clientTls.clientCertAuth, true);
  assert.equal(c.name, "x");
});

test("peer links: a client certificate whose SANs miss the peer's address is refused, unless --experimental-peer-skip-client-san-verification", async () => {
  const { X509Certificate } = await import("node:crypto");
  const { issueCertificate } = await import("./issue-cert.ts");
  const { peerCheck } = await import("./server-tls.ts");
  const cert = new X509Certificate(issueCertificate({ commonName: "m1", hosts: ["10.9.9.9"], extKeyUsage: ["clientAuth"], keyBits: 1024 }).certPem);
  const socket = { getPeerX509Certificate: () => cert } as unknown as Parameters<ReturnType<typeof peerCheck>>[0];
  const resolver = { lookupHost: async (): Promise<string[]> => [], lookupAddr: async (): Promise<string[]> => [] };
  const strict = await peerCheck({ allowedCn: "", resolver })(socket, "127.0.0.1");
  assert.equal(strict?.refuse, "close");
  assert.match(strict?.reason ?? "", /127\.0\.0\.1/);
  assert.equal(await peerCheck({ allowedCn: "", resolver, skipSanCheck: true })(socket, "127.0.0.1"), undefined);
  // The allowed-CN rule still applies when the SAN check is skipped.
  assert.equal((await peerCheck({ allowedCn: "other", resolver, skipSanCheck: true })(socket, "127.0.0.1"))?.refuse, "bad-certificate");
});
