// `kvctl -D/--discovery-srv` (etcdctl v2's global flag) against a real `kvctl serve`, its
// SRV records served by a test DNS server (KV_DNS_SERVER points kvctl at it; etcdctl
// cannot be pointed at one, so its texts were taken from etcd 3.4.23 by hand against the
// system resolver):
// - the SRV endpoints replace --endpoints; v2's --insecure-discovery is off by default, so
//   http ones are dropped ("ignoring discovered insecure endpoint …") and --endpoints is
//   used when none is left;
// - ETCDCTL_DISCOVERY_SRV, ETCDCTL_INSECURE_DISCOVERY (any value) and
//   ETCDCTL_DISCOVERY_SRV_NAME are read as etcdctl reads them;
// - no records: the bare "dns lookup errors: …" line, exit 1, before --endpoints or TLS files;
// - secure discovery checks https certificates against the domain, not the endpoint's host.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer as createHttpsServer, type Server } from "node:https";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { freePort, runKvctl, startServer, type TestServer } from "../helpers/server.ts";
import { startDnsServer, type TestDnsServer } from "../helpers/dns-server.ts";
import { CertDir } from "../helpers/certs.ts";

describe("v2 -D/--discovery-srv", { timeout: 90_000 }, () => {
  let s: TestServer;
  let dns: TestDnsServer;
  let certs: CertDir;
  let tlsServer: Server;
  let port: number;
  before(async () => {
    s = await startServer();
    port = Number(new URL(s.url).port);
    dns = await startDnsServer({ port: await freePort() });
    // A member-less https answer is enough for `get --no-sync`: its certificate names only
    // the domain, so it verifies only when checked against the domain.
    certs = new CertDir("kvctl-cl-certs-");
    const leaf = certs.leaf("secure", { hosts: ["secure.test"], extKeyUsage: ["serverAuth"] });
    tlsServer = createHttpsServer({ cert: readFileSync(leaf.cert), key: readFileSync(leaf.key) }, (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "x-etcd-index": "7" });
      res.end(JSON.stringify({ action: "get", node: { key: "/k", value: "over-tls", modifiedIndex: 7, createdIndex: 7 } }));
    });
    const tlsPort = await freePort();
    await new Promise<void>((resolve) => tlsServer.listen(tlsPort, "127.0.0.1", resolve));
    dns.setTable({
      srv: {
        "_etcd-client._tcp.example.test": [{ target: "127.0.0.1", port }],
        "_etcd-client-blue._tcp.example.test": [{ target: "127.0.0.1", port }],
        "_etcd-client-ssl._tcp.secure.test": [{ target: "127.0.0.1", port: (tlsServer.address() as AddressInfo).port }],
      },
    });
    const put = await runKvctl(["--endpoints", s.url, "set", "/found", "yes"]);
    assert.equal(put.code, 0, put.stderr);
  });
  after(async () => {
    await new Promise<void>((resolve) => (tlsServer === undefined ? resolve() : tlsServer.close(() => resolve())));
    certs?.remove();
    await dns?.close();
    await s?.stop();
  });

  const kv = (args: string[], env: Record<string, string> = {}) =>
    runKvctl(args, { env: { KV_DNS_SERVER: dns.address, ...env }, timeoutMs: 20_000 });

  test("--insecure-discovery uses the http endpoints found, in place of --endpoints", async () => {
    const r = await kv(["-D", "example.test", "--insecure-discovery", "--endpoints", "http://127.0.0.1:1", "get", "/found"]);
    assert.deepEqual([r.stdout, r.stderr, r.code], ["yes\n", "", 0]);
    assert.ok(dns.questions.includes("SRV _etcd-client-ssl._tcp.example.test"), dns.questions.join(","));
    assert.ok(dns.questions.includes("SRV _etcd-client._tcp.example.test"), dns.questions.join(","));
  });

  test("without it (v2's default) http endpoints are dropped, one line each, and --endpoints is used", async () => {
    const r = await kv(["--discovery-srv", "example.test", "--endpoints", s.url, "get", "/found"]);
    assert.deepEqual([r.stdout, r.stderr, r.code], ["yes\n", `ignoring discovered insecure endpoint "http://127.0.0.1:${port}"\n`, 0]);
  });

  test("etcdctl's variables: the domain, the service name, and an insecure flag set to any value", async () => {
    const r = await kv(["--endpoints", "http://127.0.0.1:1", "get", "/found"], {
      ETCDCTL_DISCOVERY_SRV: "example.test",
      ETCDCTL_DISCOVERY_SRV_NAME: "blue",
      ETCDCTL_INSECURE_DISCOVERY: "false",
    });
    assert.deepEqual([r.stdout, r.stderr, r.code], ["yes\n", "", 0]);
    assert.ok(dns.questions.includes("SRV _etcd-client-blue._tcp.example.test"), dns.questions.join(","));
  });

  test("a domain without records: etcdctl's bare dns lookup error, exit 1, before --endpoints and TLS files", async () => {
    const want = `dns lookup errors: lookup _etcd-client-ssl._tcp.nothing.test on ${dns.address}: no such host and lookup _etcd-client._tcp.nothing.test on ${dns.address}: no such host\n`;
    for (const args of [["get", "/found"], ["--insecure-discovery", "--endpoints", s.url, "--ca-file", "/nonexistent/ca.pem", "member", "list"], ["cluster-health"]]) {
      const r = await kv(["-D", "nothing.test", ...args]);
      assert.deepEqual([r.stdout, r.stderr, r.code], ["", want, 1], args.join(" "));
    }
  });

  test("secure discovery checks certificates against the domain; --insecure-discovery against the host", async () => {
    const ok = await kv(["--no-sync", "--ca-file", certs.ca.cert, "-D", "secure.test", "get", "/k"]);
    assert.deepEqual([ok.stdout, ok.stderr, ok.code], ["over-tls\n", "", 0]);
    const bad = await kv(["--no-sync", "--ca-file", certs.ca.cert, "-D", "secure.test", "--insecure-discovery", "get", "/k"]);
    assert.equal(bad.code, 4, bad.stderr);
    assert.match(bad.stderr, /x509: cannot validate certificate for 127\.0\.0\.1 because it doesn't contain any IP SANs/);
  });
});
