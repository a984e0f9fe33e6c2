import { test } from "node:test";
import assert from "node:assert/strict";
import { getCiphers } from "node:tls";
import { goCipherSuiteNames, isGoCipherSuite, TLS13_SUITES, toOpenSslCiphers } from "./cipher-suites.ts";

interface Case {
  name: string;
  go: string[];
  ciphers: string | undefined;
  minVersion?: "TLSv1.2" | "TLSv1.3";
  unavailable?: string[];
}

const cases: Case[] = [
  { name: "an empty list keeps the platform default", go: [], ciphers: undefined },
  {
    name: "ECDHE GCM suites map to OpenSSL names, in the given order, TLS 1.3 suites appended",
    go: ["TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"],
    ciphers: `ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256:${TLS13_SUITES}`,
    minVersion: "TLSv1.2",
  },
  {
    name: "etcd's short CHACHA20 spelling and Go's _SHA256 one are the same suite",
    go: ["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"],
    ciphers: `ECDHE-RSA-CHACHA20-POLY1305:${TLS13_SUITES}`,
    minVersion: "TLSv1.2",
  },
  {
    name: "only TLS 1.3 names leave no TLS 1.2 suite, so TLS 1.2 is refused",
    go: ["TLS_AES_128_GCM_SHA256"],
    ciphers: TLS13_SUITES,
    minVersion: "TLSv1.3",
  },
  {
    name: "RC4 (absent from OpenSSL 3) is reported unavailable and dropped",
    go: ["TLS_RSA_WITH_RC4_128_SHA", "TLS_RSA_WITH_AES_128_CBC_SHA"],
    ciphers: `AES128-SHA:${TLS13_SUITES}`,
    minVersion: "TLSv1.2",
    unavailable: ["TLS_RSA_WITH_RC4_128_SHA"],
  },
];

for (const c of cases) {
  test(`toOpenSslCiphers: ${c.name}`, () => {
    const r = toOpenSslCiphers(c.go, getCiphers());
    assert.equal(r?.ciphers, c.ciphers);
    if (c.minVersion !== undefined) assert.equal(r?.minVersion, c.minVersion);
    if (r !== undefined) assert.deepEqual(r.unavailable, c.unavailable ?? []);
  });
}

test("isGoCipherSuite accepts Go's names only, case-sensitively", () => {
  assert.equal(isGoCipherSuite("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"), true);
  assert.equal(isGoCipherSuite("ECDHE-RSA-AES128-GCM-SHA256"), false);
  assert.equal(isGoCipherSuite("tls_ecdhe_rsa_with_aes_128_gcm_sha256"), false);
  assert.equal(isGoCipherSuite("toString"), false);
});

test("every mapped TLS 1.2 suite that is not RC4 or 3DES exists in this OpenSSL", () => {
  const r = toOpenSslCiphers(goCipherSuiteNames(), getCiphers());
  assert.ok(r);
  assert.deepEqual(r.unavailable.filter((n) => !/RC4|3DES/.test(n)), []);
});

test("toOpenSslCiphers throws on a name that is not a Go suite", () => {
  assert.throws(() => toOpenSslCiphers(["FOO"], getCiphers()), /unexpected TLS cipher suite "FOO"/);
});

test("toOpenSslCiphers reports a suite the given OpenSSL build lacks and leaves it out", () => {
  const r = toOpenSslCiphers(["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA"], ["aes128-sha"]);
  assert.deepEqual(r, { ciphers: `AES128-SHA:${TLS13_SUITES}`, minVersion: "TLSv1.2", unavailable: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"] });
});
