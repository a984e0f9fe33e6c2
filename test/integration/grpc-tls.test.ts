// etcdctl over gRPC on an https:// client URL: ALPN h2 through the TLS acceptor, client
// certificate verification, the certificate's Common Name as the v3 user, and HTTP/1.1
// (curl-like clients) still served on the same port. Skipped without etcdctl.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CertDir } from "../helpers/certs.ts";
import { errorLine, etcdctl, installed, startGrpcServer, waitGrpcReady, type GrpcTestServer } from "../helpers/grpc.ts";

describe("etcdctl over gRPC with TLS", { skip: installed("etcdctl") ? false : "etcdctl not installed (apt-get install etcd-client)" }, () => {
  const certs = new CertDir("kvctl-grpc-tls-");
  const server = certs.server();
  const root = certs.client("root");
  const alice = certs.client("alice");
  let kv: GrpcTestServer;
  const as = (c: { cert: string; key: string }): string[] => [`--cacert=${certs.ca.cert}`, `--cert=${c.cert}`, `--key=${c.key}`];

  before(async () => {
    kv = await startGrpcServer("kvctl", ["--cert-file", server.cert, "--key-file", server.key, "--trusted-ca-file", certs.ca.cert, "--client-cert-auth"], "https");
    kv.endpoint = kv.url;
    await waitGrpcReady(kv, as(root));
  });
  after(async () => {
    await kv?.stop();
    certs.remove();
  });

  test("put and get over TLS with a client certificate", async () => {
    assert.equal((await etcdctl(kv.endpoint, [...as(root), "put", "k", "v"])).stdout, "OK\n");
    assert.equal((await etcdctl(kv.endpoint, [...as(root), "get", "k"])).stdout, "k\nv\n");
  });

  test("without a client certificate the handshake is refused", async () => {
    const r = await etcdctl(kv.endpoint, [`--cacert=${certs.ca.cert}`, "--command-timeout=2s", "get", "k"]);
    assert.notEqual(r.code, 0);
  });

  test("with auth enabled the certificate's CN is the user", async () => {
    for (const args of [["user", "add", "root:pw"], ["user", "add", "alice:pw"], ["role", "add", "r"], ["role", "grant-permission", "r", "read", "k"], ["user", "grant-role", "alice", "r"], ["auth", "enable"]]) {
      const r = await etcdctl(kv.endpoint, [...as(root), ...args]);
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    }
    assert.equal((await etcdctl(kv.endpoint, [...as(alice), "get", "k"])).stdout, "k\nv\n");
    assert.equal(errorLine((await etcdctl(kv.endpoint, [...as(alice), "put", "k", "w"])).stderr), "Error: etcdserver: permission denied");
    assert.equal((await etcdctl(kv.endpoint, [...as(root), "put", "k", "w"])).stdout, "OK\n");
    assert.equal((await etcdctl(kv.endpoint, [...as(root), "auth", "disable"])).code, 0);
  });

  test("HTTP/1.1 clients offering h2 too keep HTTP/1.1 on the same port", async () => {
    const { request } = await import("node:https");
    const { readFileSync } = await import("node:fs");
    const body = await new Promise<string>((resolve, reject) => {
      const opts: import("node:https").RequestOptions & import("node:tls").ConnectionOptions = {
        ca: readFileSync(certs.ca.cert),
        cert: readFileSync(root.cert),
        key: readFileSync(root.key),
        ALPNProtocols: ["h2", "http/1.1"],
      };
      const req = request(`${kv.url}/version`, opts, (res) => {
        let s = "";
        res.on("data", (c: Buffer) => (s += c.toString()));
        res.on("end", () => resolve(s));
      });
      req.on("error", reject);
      req.end();
    });
    assert.match(body, /"etcdserver":"3\.4\.23"/);
  });
});
