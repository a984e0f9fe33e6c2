// checkTlsFiles: the refusals etcdctl's transport makes before any request, in Go's words
// (each text compared with etcdctl 3.4.23 by hand).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
// A test may borrow the server's certificate issuer (runtime client code may not).
import { issueCertificate } from "../server/tls/issue-cert.ts";
import { checkTlsFiles, TlsFilesError } from "./tls-files.ts";
import { readTlsFiles } from "./transport.ts";

const dirPath = mkdtempSync(join(tmpdir(), "kvctl-tls-files-"));
after(() => rmSync(dirPath, { recursive: true, force: true }));
function write(name: string, text: string): string {
  const path = join(dirPath, name);
  writeFileSync(path, text);
  return path;
}
const caPem = issueCertificate({ commonName: "test CA", isCa: true, keyBits: 1024 });
const aPem = issueCertificate({ hosts: ["a.test"], issuer: caPem, keyBits: 1024 });
const bPem = issueCertificate({ hosts: ["b.test"], issuer: caPem, keyBits: 1024 });
const dir = { path: dirPath, ca: { cert: write("ca.pem", caPem.certPem) } };
const a = { cert: write("a.pem", aPem.certPem), key: write("a-key.pem", aPem.keyPem) };
const b = { key: write("b-key.pem", bPem.keyPem) };
const both = write("both.pem", aPem.certPem + aPem.keyPem);
const noPem = write("plain.txt", "not a pem file\n");

const rejects = (files: Parameters<typeof checkTlsFiles>[0], message: string) =>
  assert.rejects(checkTlsFiles(files), (e: unknown) => e instanceof TlsFilesError && e.code === "TLS_FILES" && e.message === message);

test("accepted: nothing given, a matching pair, a CA bundle, a file without PEM blocks as CA (Go adds nothing)", async () => {
  await checkTlsFiles({});
  await checkTlsFiles({ certFile: "", keyFile: "", caFile: "" });
  await checkTlsFiles({ certFile: a.cert, keyFile: a.key, caFile: dir.ca.cert });
  await checkTlsFiles({ certFile: both, keyFile: both });
  await checkTlsFiles({ caFile: noPem });
});

test("a certificate without its key, or the reverse", async () => {
  await rejects({ certFile: a.cert }, `KeyFile and CertFile must both be present[key: , cert: ${a.cert}]`);
  await rejects({ keyFile: a.key, certFile: "" }, `KeyFile and CertFile must both be present[key: ${a.key}, cert: ]`);
});

test("files that cannot be read: os.ReadFile's words, the certificate first", async () => {
  await rejects({ certFile: "/nonexistent/c.pem", keyFile: "/nonexistent/k.pem" }, "open /nonexistent/c.pem: no such file or directory");
  await rejects({ certFile: a.cert, keyFile: "/nonexistent/k.pem" }, "open /nonexistent/k.pem: no such file or directory");
  await rejects({ caFile: "/nonexistent/ca.pem" }, "open /nonexistent/ca.pem: no such file or directory");
  await rejects({ caFile: dir.path }, `read ${dir.path}: is a directory`);
});

test("tls.X509KeyPair's refusals", async () => {
  await rejects({ certFile: noPem, keyFile: a.key }, "tls: failed to find any PEM data in certificate input");
  await rejects({ certFile: a.key, keyFile: a.cert }, "tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched");
  await rejects({ certFile: a.cert, keyFile: noPem }, "tls: failed to find any PEM data in key input");
  await rejects({ certFile: a.cert, keyFile: a.cert }, "tls: found a certificate rather than a key in the PEM for the private key");
  await rejects({ certFile: a.cert, keyFile: b.key }, "tls: private key does not match public key");
});

test("a CA bundle block that is not a certificate", async () => {
  await rejects({ caFile: a.key }, "x509: malformed certificate");
});

test("the dial uses the bytes the check read: each file is read once per flags object", async () => {
  const files = { ca: write("once-ca.pem", caPem.certPem), cert: write("once.pem", aPem.certPem), key: write("once-key.pem", aPem.keyPem) };
  const tls = { caFile: files.ca, certFile: files.cert, keyFile: files.key };
  await checkTlsFiles(tls);
  // Changed on disk after the check: the dial still sends what was checked.
  for (const path of Object.values(files)) writeFileSync(path, "changed\n");
  const dial = readTlsFiles(tls);
  assert.equal(dial.ca?.toString(), caPem.certPem);
  assert.equal(dial.cert?.toString(), aPem.certPem);
  assert.equal(dial.key?.toString(), aPem.keyPem);
  // Flags the check never saw (another object, same paths) read the files now.
  assert.equal(readTlsFiles({ ...tls }).cert?.toString(), "changed\n");
});
