// python-etcd3 (Debian's python3-etcd3: python-etcd3 0.12 over grpcio, a C-core gRPC
// stack, not etcdctl's grpc-go nor the etcd3 npm package's grpc-js) against `kvctl serve`:
// test/clients/python-etcd3.py drives its whole API and prints one normalized line per
// step; the lines must be etcd 3.4.23's, recorded in test/clients/python-etcd3.expected*.txt.
// Three runs at once: one member (the main scenario), three members (the same scenario,
// member changes included), one member over TLS with client certificates (its TLS
// section). Skipped, with a notice, when /usr/bin/python3 cannot import etcd3.
//
// To record the expected files again from etcd (installed as `etcd`):
//   KVCTL_PY_ETCD3_RECORD=1 node --import tsx --test test/integration/python-etcd3.test.ts
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { issueCertificate } from "../../src/server/tls/issue-cert.ts";
import { startGrpcCluster, startGrpcServer, type GrpcTestCluster, type GrpcTestServer } from "../helpers/grpc.ts";
import { runProcess } from "../helpers/run-process.ts";
import { repoRoot } from "../helpers/server.ts";

const PYTHON = "/usr/bin/python3";
const script = join(repoRoot, "test", "clients", "python-etcd3.py");
const expectedFile = (name: string): string => join(repoRoot, "test", "clients", `python-etcd3.${name}.txt`);
const record = process.env["KVCTL_PY_ETCD3_RECORD"] === "1";
const kind = record ? "etcd" : "kvctl";
// The peer URL the scenario adds a member with (nothing listens there): printed, so fixed.
const SPARE_PORT = "23900";

function unavailable(): string | false {
  const r = spawnSync(PYTHON, ["-c", "import etcd3"], { encoding: "utf8" });
  if (r.error === undefined && r.status === 0) return false;
  const why = `${PYTHON} cannot import etcd3 (apt-get install python3-etcd3)`;
  process.stderr.write(`python-etcd3 test skipped: ${why}\n`);
  return why;
}

/** Certificates with 2048-bit keys: Debian's OpenSSL (security level 2), which grpcio uses, refuses the 1024-bit ones of helpers/certs.ts. */
function certificates(): { dir: string; ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string } {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-py-etcd3-"));
  const ca = issueCertificate({ commonName: "python-etcd3 test CA", isCa: true, keyBits: 2048 });
  const server = issueCertificate({ hosts: ["127.0.0.1", "localhost"], extKeyUsage: ["serverAuth", "clientAuth"], issuer: ca, keyBits: 2048 });
  // CN root: with auth on, the user of a call that has no token.
  const client = issueCertificate({ commonName: "root", hosts: [], extKeyUsage: ["clientAuth"], issuer: ca, keyBits: 2048 });
  const file = (name: string, pem: string): string => {
    const path = join(dir, name);
    writeFileSync(path, pem, { mode: 0o600 });
    return path;
  };
  return {
    dir,
    ca: file("ca.pem", ca.certPem),
    serverCert: file("server.pem", server.certPem),
    serverKey: file("server-key.pem", server.keyPem),
    clientCert: file("client.pem", client.certPem),
    clientKey: file("client-key.pem", client.keyPem),
  };
}

/** The scenario's lines against `endpoint`, without its comment lines (versions, timings). */
async function scenario(endpoint: string, args: string[], logs: () => string): Promise<string> {
  const [host, port] = endpoint.replace(/^https?:\/\//, "").split(":") as [string, string];
  const r = await runProcess(PYTHON, [script, "--host", host, "--port", port, "--spare-port", SPARE_PORT, "--wait", "20", ...args], { cwd: repoRoot, env: process.env, timeoutMs: 100_000 });
  assert.equal(r.code, 0, `scenario exited ${r.code ?? r.signal}: ${r.stderr.slice(-2000)}\nserver: ${logs().slice(-2000)}`);
  return r.stdout
    .split("\n")
    .filter((l) => !l.startsWith("# "))
    .join("\n");
}

function compare(name: string, actual: string): void {
  if (record) {
    writeFileSync(expectedFile(name), actual);
    return;
  }
  const expected = readFileSync(expectedFile(name), "utf8");
  // Line by line, so that a failure names the steps that differ.
  assert.deepEqual(actual.split("\n"), expected.split("\n"), `python-etcd3 against kvctl differs from etcd 3.4.23 (${name})`);
}

describe(`python-etcd3 against ${kind}`, { skip: unavailable(), concurrency: true }, () => {
  const stops: Array<() => Promise<void>> = [];
  after(async () => {
    await Promise.all(stops.map((s) => s()));
  });

  test("one member: every step answers as etcd 3.4.23's", async () => {
    const s: GrpcTestServer = await startGrpcServer(kind);
    stops.push(s.stop);
    compare("expected", await scenario(s.endpoint, ["--members", "1"], s.logs));
  });

  test("three members: the same, member add, update and remove included", async () => {
    const c: GrpcTestCluster = await startGrpcCluster(kind, 3);
    stops.push(c.stop);
    const a = c.members[0]!;
    compare("expected-cluster", await scenario(a.endpoint, ["--members", "3"], () => c.members.map((m) => m.proc.log()).join("\n")));
  });

  test("TLS with client certificates, and auth over TLS", async () => {
    const certs = certificates();
    stops.push(async () => rmSync(certs.dir, { recursive: true, force: true }));
    const s = await startGrpcServer(kind, ["--cert-file", certs.serverCert, "--key-file", certs.serverKey, "--trusted-ca-file", certs.ca, "--client-cert-auth"], "https");
    stops.push(s.stop);
    compare("expected-tls", await scenario(s.url, ["--tls", `${certs.ca},${certs.clientCert},${certs.clientKey}`], s.logs));
  });
});
