import { test } from "node:test";
import assert from "node:assert/strict";
import type { ConnectionOptions } from "node:tls";
import { silentLogger } from "./logger.ts";
import {
  checkSrvDomain,
  srvClusterStrings,
  srvInitialCluster,
  srvServiceName,
  withSrvDomainCheck,
  type SrvRecord,
  type SrvResolver,
} from "./discovery-srv.ts";

/** A resolver from tables: SRV by full name, addresses by host. */
function fakeResolver(srv: Record<string, SrvRecord[]>, hosts: Record<string, string>): SrvResolver & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async resolveSrv(name) {
      asked.push(name);
      const r = srv[name];
      if (r === undefined) throw Object.assign(new Error(`querySrv ENOTFOUND ${name}`), { code: "ENOTFOUND" });
      return r.map((x) => ({ ...x }));
    },
    async lookupHost(host) {
      const a = hosts[host] ?? (/^\d+\.\d+\.\d+\.\d+$/.test(host) ? host : undefined);
      if (a === undefined) throw new Error(`lookup ${host}: no such host`);
      return a;
    },
  };
}

const rec = (name: string, port: number, priority = 0): SrvRecord => ({ name, port, priority, weight: 0 });
const hosts = { "m1.example.test": "10.0.0.1", "m2.example.test": "10.0.0.2", "m3.example.test": "10.0.0.3" };

test("srvServiceName adds -ssl for https and the --discovery-srv-name suffix", () => {
  const cases: [scheme: "http" | "https", name: string, want: string][] = [
    ["http", "", "etcd-server"],
    ["https", "", "etcd-server-ssl"],
    ["http", "prod", "etcd-server-prod"],
    ["https", "prod", "etcd-server-ssl-prod"],
  ];
  for (const [scheme, name, want] of cases) assert.equal(srvServiceName(scheme, name), want);
});

interface ClusterCase {
  name: string;
  srv: Record<string, SrvRecord[]>;
  advertise: string[];
  serviceName?: string;
  want: string[] | RegExp;
}

const clusterCases: ClusterCase[] = [
  {
    name: "names the record that resolves to the advertised peer URL after the member, others 0, 1",
    srv: { "_etcd-server._tcp.example.test": [rec("m1.example.test.", 2380), rec("m2.example.test.", 2380), rec("m3.example.test.", 2380)] },
    advertise: ["http://10.0.0.2:2380"],
    want: ["0=http://m1.example.test:2380", "infra2=http://m2.example.test:2380", "1=http://m3.example.test:2380"],
  },
  {
    name: "takes https records from _etcd-server-ssl",
    srv: { "_etcd-server-ssl._tcp.example.test": [rec("m1.example.test", 2380), rec("m2.example.test", 2380)] },
    advertise: ["https://10.0.0.2:2380"],
    want: ["0=https://m1.example.test:2380", "infra2=https://m2.example.test:2380"],
  },
  {
    name: "joins both services, counting temporary names across them",
    srv: {
      "_etcd-server-ssl._tcp.example.test": [rec("m1.example.test", 2380)],
      "_etcd-server._tcp.example.test": [rec("m2.example.test", 2380), rec("m3.example.test", 2380)],
    },
    advertise: ["http://10.0.0.3:2380"],
    want: ["0=https://m1.example.test:2380", "1=http://m2.example.test:2380", "infra2=http://m3.example.test:2380"],
  },
  {
    name: "queries the suffixed services with --discovery-srv-name",
    srv: { "_etcd-server-prod._tcp.example.test": [rec("m1.example.test", 2380)], "_etcd-server._tcp.example.test": [rec("m3.example.test", 1)] },
    advertise: ["http://10.0.0.1:2380"],
    serviceName: "prod",
    want: ["infra2=http://m1.example.test:2380"],
  },
  {
    name: "matches the port as well as the address",
    srv: { "_etcd-server._tcp.example.test": [rec("m1.example.test", 2381)] },
    advertise: ["http://10.0.0.1:2380"],
    want: ["0=http://m1.example.test:2381"],
  },
  {
    name: "drops this member's record when its scheme differs, keeping the others",
    srv: { "_etcd-server-ssl._tcp.example.test": [rec("m1.example.test", 2380), rec("m2.example.test", 2380)] },
    advertise: ["http://10.0.0.1:2380"],
    want: ["0=https://m2.example.test:2380"],
  },
  {
    name: "fails with both services' errors when neither answers",
    srv: {},
    advertise: ["http://10.0.0.1:2380"],
    want: /error querying DNS SRV records for _etcd-server-ssl querySrv ENOTFOUND _etcd-server-ssl\._tcp\.example\.test; error querying DNS SRV records for _etcd-server querySrv ENOTFOUND/,
  },
  {
    name: "reports the scheme mismatch when it leaves no record",
    srv: { "_etcd-server-ssl._tcp.example.test": [rec("m1.example.test", 2380)] },
    advertise: ["http://10.0.0.1:2380"],
    want: /bootstrap at https:\/\/m1\.example\.test:2380 from DNS for etcd-server-ssl has scheme mismatch with expected peer http:\/\/10\.0\.0\.1:2380/,
  },
  {
    name: "skips a target that does not resolve",
    srv: { "_etcd-server._tcp.example.test": [rec("gone.example.test", 2380), rec("m1.example.test", 2380)] },
    advertise: ["http://10.0.0.1:2380"],
    want: ["infra2=http://m1.example.test:2380"],
  },
];

for (const c of clusterCases) {
  test(`srvClusterStrings ${c.name}`, async () => {
    const o = { domain: "example.test", serviceName: c.serviceName ?? "", name: "infra2", advertisePeerUrls: c.advertise, resolver: fakeResolver(c.srv, hosts), log: silentLogger };
    if (c.want instanceof RegExp) await assert.rejects(srvClusterStrings(o), c.want);
    else assert.deepEqual(await srvClusterStrings(o), c.want);
  });
}

test("srvInitialCluster refuses a member that is not in the records, but not a proxy", async () => {
  const srv = { "_etcd-server._tcp.example.test": [rec("m1.example.test", 2380)] };
  const o = { domain: "example.test", serviceName: "", name: "infra9", advertisePeerUrls: ["http://10.0.0.9:2380"], resolver: fakeResolver(srv, hosts), log: silentLogger };
  await assert.rejects(srvInitialCluster({ ...o, requireLocal: true }), /cannot find local etcd member "infra9" in SRV records/);
  assert.deepEqual([...(await srvInitialCluster({ ...o, requireLocal: false }))], [["0", ["http://m1.example.test:2380"]]]);
});

test("checkSrvDomain accepts the domain or a wildcard over it and words refusals as Go", () => {
  const cases: [san: string | undefined, domain: string, want: string | undefined][] = [
    ["DNS:example.test, IP Address:127.0.0.1", "example.test", undefined],
    ["DNS:EXAMPLE.test", "example.test", undefined],
    ["DNS:*.example.test", "a.example.test", undefined],
    ["DNS:*.example.test", "example.test", "x509: certificate is valid for *.example.test, not example.test"],
    ["DNS:localhost, IP Address:127.0.0.1", "example.test", "x509: certificate is valid for localhost, not example.test"],
    ["IP Address:127.0.0.1", "example.test", "x509: certificate is not valid for any names, but wanted to match example.test"],
    [undefined, "example.test", "x509: certificate is not valid for any names, but wanted to match example.test"],
  ];
  for (const [san, domain, want] of cases) {
    const cert = san === undefined ? {} : { subjectaltname: san };
    assert.equal(checkSrvDomain(domain, cert)?.message, want, `${san} vs ${domain}`);
  }
});

test("withSrvDomainCheck replaces the host check of outgoing peer connections and keeps the rest", async () => {
  const base = { marker: 1, clientOptions: async (): Promise<ConnectionOptions> => ({ rejectUnauthorized: true }) };
  assert.equal(withSrvDomainCheck(base, ""), base);
  assert.equal(withSrvDomainCheck(undefined, "example.test"), undefined);
  const wrapped = withSrvDomainCheck(base, "example.test");
  assert.equal(wrapped?.marker, 1);
  const opts = await wrapped!.clientOptions();
  assert.equal(opts.rejectUnauthorized, true);
  const check = opts.checkServerIdentity!;
  assert.equal(check("127.0.0.1", { subjectaltname: "DNS:example.test" } as never), undefined);
  assert.match(String(check("127.0.0.1", { subjectaltname: "DNS:other.test" } as never)), /valid for other\.test, not example\.test/);
});
