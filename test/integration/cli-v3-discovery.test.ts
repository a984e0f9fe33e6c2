// `kvctl v3 --discovery-srv` against a real `kvctl serve`, its SRV records served by a
// test DNS server (KV_DNS_SERVER points kvctl at it; etcdctl cannot be pointed at one, so
// its texts were taken from etcd 3.4.23 by hand against the system resolver):
// (a) -d <domain> finds the member through _etcd-client._tcp.<domain>;
// (b) --discovery-srv-name N asks _etcd-client-N._tcp.<domain>;
// (c) --insecure-discovery=false drops http endpoints ("ignoring discovered insecure
//     endpoint …") and falls back to --endpoints;
// (d) no records: "Error: dns lookup errors: lookup _etcd-client-ssl._tcp.<d> on <server>:
//     no such host and lookup _etcd-client._tcp.<d> on <server>: no such host", exit 1.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { runKvctl, startServer, type TestServer } from "../helpers/server.ts";
import { startDnsServer, type TestDnsServer } from "../helpers/dns-server.ts";
import { freePort } from "../helpers/server.ts";

describe("v3 --discovery-srv", { timeout: 60_000 }, () => {
  let s: TestServer;
  let dns: TestDnsServer;
  before(async () => {
    s = await startServer();
    dns = await startDnsServer({ port: await freePort() });
    const port = Number(new URL(s.url).port);
    dns.setTable({
      srv: {
        "_etcd-client._tcp.example.test": [{ target: "127.0.0.1", port }],
        "_etcd-client-blue._tcp.example.test": [{ target: "127.0.0.1", port }],
      },
    });
  });
  after(async () => {
    await dns?.close();
    await s?.stop();
  });

  const v3 = (args: string[]) => runKvctl(["v3", ...args], { env: { KV_DNS_SERVER: dns.address }, timeoutMs: 20_000 });

  test("finds the member from the domain's SRV records, with or without a service name", async () => {
    const put = await v3(["-d", "example.test", "put", "found", "yes"]);
    assert.equal(put.code, 0, put.stderr);
    assert.equal(put.stdout, "OK\n");
    const get = await v3(["--discovery-srv", "example.test", "--discovery-srv-name", "blue", "get", "found", "--print-value-only"]);
    assert.equal(get.code, 0, get.stderr);
    assert.equal(get.stdout, "yes\n");
    assert.ok(dns.questions.includes("SRV _etcd-client-ssl._tcp.example.test"), dns.questions.join(","));
    assert.ok(dns.questions.includes("SRV _etcd-client-blue._tcp.example.test"), dns.questions.join(","));
  });

  test("--insecure-discovery=false drops http endpoints and falls back to --endpoints", async () => {
    const port = new URL(s.url).port;
    const r = await v3(["-d", "example.test", "--insecure-discovery=false", "--endpoints", s.url, "get", "found", "--print-value-only"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, `ignoring discovered insecure endpoint "http://127.0.0.1:${port}"\n`);
    assert.equal(r.stdout, "yes\n");
  });

  test("a domain without records: etcdctl's dns lookup error, exit 1", async () => {
    const r = await v3(["-d", "nothing.test", "get", "a"]);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `Error: dns lookup errors: lookup _etcd-client-ssl._tcp.nothing.test on ${dns.address}: no such host and lookup _etcd-client._tcp.nothing.test on ${dns.address}: no such host\n`,
    );
  });
});
