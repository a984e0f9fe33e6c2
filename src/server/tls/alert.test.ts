import { test } from "node:test";
import assert from "node:assert/strict";
import { createDecipheriv } from "node:crypto";
import { AlertDescription, encryptedAlert, plaintextAlert, serverTrafficSecret } from "./alert.ts";

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s/g, ""), "hex");

test("plaintextAlert is a TLS 1.2 fatal alert record", () => {
  assert.deepEqual([...plaintextAlert(AlertDescription.badCertificate)], [21, 3, 3, 0, 2, 2, 42]);
});

test("encryptedAlert encrypts under the key and IV of RFC 8448's server application traffic secret", () => {
  // RFC 8448 §3 (simple 1-RTT handshake), TLS_AES_128_GCM_SHA256.
  const secret = hex("a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32 82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43");
  const key = hex("9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56");
  const iv = hex("cf 78 2b 88 dd 83 54 9a ad f1 e9 84");
  const record = encryptedAlert({ suite: "TLS_AES_128_GCM_SHA256", trafficSecret: secret, description: AlertDescription.badCertificate });
  assert.ok(record);
  const header = record.subarray(0, 5);
  assert.deepEqual([...header], [23, 3, 3, 0, 19]);
  const d = createDecipheriv("aes-128-gcm", key, iv, { authTagLength: 16 });
  d.setAAD(header);
  d.setAuthTag(record.subarray(record.length - 16));
  const inner = Buffer.concat([d.update(record.subarray(5, record.length - 16)), d.final()]);
  assert.deepEqual([...inner], [2, 42, 21]);
});

test("encryptedAlert builds records for the three TLS 1.3 suites and none for others", () => {
  const secret = Buffer.alloc(48, 7);
  for (const suite of ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"]) {
    assert.equal(encryptedAlert({ suite, trafficSecret: secret, description: 42 })?.length, 24, suite);
  }
  assert.equal(encryptedAlert({ suite: "TLS_AES_128_CCM_SHA256", trafficSecret: secret, description: 42 }), undefined);
});

test("serverTrafficSecret reads only SERVER_TRAFFIC_SECRET_0 keylog lines", () => {
  assert.deepEqual(serverTrafficSecret(Buffer.from("SERVER_TRAFFIC_SECRET_0 abcd 0102ff\n")), Buffer.from([1, 2, 255]));
  assert.equal(serverTrafficSecret(Buffer.from("CLIENT_TRAFFIC_SECRET_0 abcd 0102ff\n")), undefined);
});
