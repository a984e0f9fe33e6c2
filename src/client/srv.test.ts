import { test } from "node:test";
import assert from "node:assert/strict";
import { SrvLookupError, srvClientEndpoints, srvService } from "./srv.ts";

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
