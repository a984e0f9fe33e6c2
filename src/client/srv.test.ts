import { test } from "node:test";
import assert from "node:assert/strict";
import { SrvLookupError, discoverEndpoints, srvClientEndpoints, srvService } from "./srv.ts";

test("service names as pkg/srv's GetSRVService", () => {
  assert.equal(srvService("etcd-client", undefined, "http"), "etcd-client");
  assert.equal(srvService("etcd-client", "", "https"), "etcd-client-ssl");
  assert.equal(srvService("etcd-client", "blue", "https"), "etcd-client-ssl-blue");
});

test("https records first, then http; one failed lookup is no error, two are", async () => {
  const table: Record<string, { name: string; port: number }[]> = {
    "_etcd-client-ssl._tcp.d.test": [{ name: "a.d.test", port: 2379 }],
    "_etcd-client._tcp.d.test": [{ name: "b.d.test.", port: 2380 }, { name: "::1", port: 1 }],
  };
  const resolveSrv = async (name: string): Promise<{ name: string; port: number }[]> => {
    const r = table[name];
    if (r === undefined) throw Object.assign(new Error("nx"), { code: "ENOTFOUND" });
    return r;
  };
  assert.deepEqual(await srvClientEndpoints("d.test", { resolveSrv }), ["https://a.d.test:2379", "http://b.d.test:2380", "http://[::1]:1"]);
  delete table["_etcd-client-ssl._tcp.d.test"];
  assert.deepEqual(await srvClientEndpoints("d.test", { resolveSrv }), ["http://b.d.test:2380", "http://[::1]:1"]);
  await assert.rejects(
    srvClientEndpoints("none.test", { resolveSrv }),
    (e: unknown) =>
      e instanceof SrvLookupError &&
      e.message === "dns lookup errors: lookup _etcd-client-ssl._tcp.none.test: no such host and lookup _etcd-client._tcp.none.test: no such host",
  );
});

test("discoverEndpoints: etcdctl v2's choice between the SRV endpoints and --endpoints", async () => {
  const table: Record<string, { name: string; port: number }[]> = {
    "_etcd-client-ssl._tcp.both.test": [{ name: "s.both.test", port: 2379 }],
    "_etcd-client._tcp.both.test": [{ name: "p.both.test", port: 2379 }],
    "_etcd-client._tcp.plain.test": [{ name: "p1.plain.test", port: 1 }, { name: "p2.plain.test", port: 2 }],
    "_etcd-client-blue._tcp.plain.test": [{ name: "b.plain.test", port: 3 }],
  };
  const asked: string[] = [];
  const resolveSrv = async (name: string): Promise<{ name: string; port: number }[]> => {
    asked.push(name);
    const r = table[name];
    if (r === undefined) throw Object.assign(new Error("nx"), { code: "ENOTFOUND" });
    return r;
  };
  const fallback = ["http://127.0.0.1:2379"];
  const run = async (domain: string, insecure: boolean, serviceName?: string): Promise<{ eps: string[]; ignored: string[] }> => {
    const ignored: string[] = [];
    const eps = await discoverEndpoints(domain, fallback, {
      insecure,
      resolveSrv,
      onIgnored: (ep) => ignored.push(ep),
      ...(serviceName === undefined ? {} : { serviceName }),
    });
    return { eps, ignored };
  };
  // Secure discovery (v2's default): http endpoints dropped, each one told.
  assert.deepEqual(await run("both.test", false), { eps: ["https://s.both.test:2379"], ignored: ["http://p.both.test:2379"] });
  assert.deepEqual(await run("both.test", true), { eps: ["https://s.both.test:2379", "http://p.both.test:2379"], ignored: [] });
  // Nothing usable left: --endpoints, after the lines about what was dropped.
  assert.deepEqual(await run("plain.test", false), { eps: fallback, ignored: ["http://p1.plain.test:1", "http://p2.plain.test:2"] });
  assert.deepEqual(await run("plain.test", true), { eps: ["http://p1.plain.test:1", "http://p2.plain.test:2"], ignored: [] });
  asked.length = 0;
  assert.deepEqual(await run("plain.test", true, "blue"), { eps: ["http://b.plain.test:3"], ignored: [] });
  assert.deepEqual(asked, ["_etcd-client-ssl-blue._tcp.plain.test", "_etcd-client-blue._tcp.plain.test"]);
  // No records at all is an error whatever --insecure-discovery and --endpoints say.
  for (const insecure of [false, true]) {
    await assert.rejects(run("none.test", insecure), (e: unknown) => e instanceof SrvLookupError && e.message.startsWith("dns lookup errors: lookup _etcd-client-ssl._tcp.none.test"));
  }
});
