// --discovery-srv: the initial cluster from DNS SRV records, as etcd's pkg/srv GetCluster
// and embed.Config.GetDNSClusterNames build it.
//
// For a domain D (and an optional --discovery-srv-name N), two services are queried:
//   _etcd-server-ssl[-N]._tcp.D  -> https://<target>:<port>
//   _etcd-server[-N]._tcp.D      -> http://<target>:<port>
// Each target is resolved to an address; the record whose address and port equal one of
// this member's --initial-advertise-peer-urls (resolved the same way) is this member and
// takes --name; every other record gets a temporary name "0", "1", ... (members publish
// their real names once they run). URLs keep the target's host name, trailing dot dropped,
// so every member derives the same member IDs from the same records.
//
// Where kvctl departs from etcd 3.4.23, on purpose:
// - etcd appends the http records only when their lookup FAILED (a known bug that makes a
//   cluster with only _etcd-server._tcp records fail to bootstrap); kvctl takes the union
//   and fails only when neither service answers.
// - etcd restarts the temporary names at "0" for each service, so a mixed set can give two
//   records the same name (and merge them into one member); kvctl counts across both.
// - etcd checks the domain against peer certificates only when no --peer-trusted-ca-file
//   is given (it sets TLS ServerName); spec 5.2 requires it always: withSrvDomainCheck.
//
// KV_DNS_SERVER (test/debug setting, not a flag: etcd uses the system resolver) sends the
// SRV and address questions to the given servers ("127.0.0.1:5353", comma-separated)
// instead of the system's.
import type { PeerCertificate, ConnectionOptions } from "node:tls";
import { promises as dns } from "node:dns";
import { isIP } from "node:net";
import type { Logger } from "./logger.ts";
import type { ServerConfig } from "./config.ts";

export const DNS_SERVER_ENV = "KV_DNS_SERVER";

export interface SrvRecord {
  name: string;
  port: number;
  priority: number;
  weight: number;
}

/** What discovery needs of DNS; tests inject fakes. */
export interface SrvResolver {
  resolveSrv(name: string): Promise<SrvRecord[]>;
  /** One address of `host` for a TCP dial (Go's ResolveTCPAddr: IPv4 preferred). */
  lookupHost(host: string): Promise<string>;
}

const firstPreferV4 = (addrs: readonly string[]): string | undefined => addrs.find((a) => isIP(a) === 4) ?? addrs[0];

async function systemLookup(host: string): Promise<string> {
  const all = await dns.lookup(host, { all: true });
  const a = firstPreferV4(all.map((x) => x.address));
  if (a === undefined) throw new Error(`lookup ${host}: no such host`);
  return a;
}

/**
 * The resolver: the system's, or the servers of KV_DNS_SERVER. With KV_DNS_SERVER, a host
 * name is asked there first (A, then AAAA) and then of the system (/etc/hosts).
 */
export function srvResolver(env: NodeJS.ProcessEnv = process.env): SrvResolver {
  const servers = (env[DNS_SERVER_ENV] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  const r = new dns.Resolver({ timeout: 2000, tries: 2 });
  if (servers.length > 0) r.setServers(servers);
  return {
    resolveSrv: (name) => r.resolveSrv(name),
    async lookupHost(host) {
      const h = host.replace(/^\[|\]$/g, "");
      if (isIP(h) !== 0) return h;
      if (servers.length > 0) {
        const found = [...(await r.resolve4(h).catch(() => [])), ...(await r.resolve6(h).catch(() => []))];
        const a = firstPreferV4(found);
        if (a !== undefined) return a;
      }
      return systemLookup(h);
    },
  };
}

/** etcd's GetSRVService: etcd-server, -ssl for https, then -<name>. */
export function srvServiceName(scheme: "http" | "https", serviceName: string): string {
  const base = scheme === "https" ? "etcd-server-ssl" : "etcd-server";
  return serviceName === "" ? base : `${base}-${serviceName}`;
}

const hostPort = (host: string, port: string | number): string => (isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`);

export interface SrvClusterOptions {
  domain: string;
  serviceName: string;
  /** This member's --name, given to the record that resolves to its advertised peer URLs. */
  name: string;
  advertisePeerUrls: readonly string[];
  resolver: SrvResolver;
  log: Logger;
}

/**
 * Both services' records as `name=url` strings (etcd's GetDNSClusterNames). Throws when
 * neither service gives a usable record, with each service's error.
 */
export async function srvClusterStrings(o: SrvClusterOptions): Promise<string[]> {
  const local = new Map<string, URL>();
  for (const raw of o.advertisePeerUrls) {
    const u = new URL(raw);
    local.set(hostPort(await o.resolver.lookupHost(u.hostname), u.port), u);
  }
  let tempName = 0;
  const one = async (scheme: "http" | "https"): Promise<string[]> => {
    const service = srvServiceName(scheme, o.serviceName);
    const out: string[] = [];
    let lastErr: unknown;
    try {
      // Go sorts by priority and shuffles by weight; a stable order keeps temp names stable.
      const records = (await o.resolver.resolveSrv(`_${service}._tcp.${o.domain}`)).sort((a, b) => a.priority - b.priority || b.weight - a.weight);
      for (const r of records) {
        const target = r.name.replace(/\.$/, "");
        let addr: string;
        try {
          addr = await o.resolver.lookupHost(target);
        } catch (err) {
          lastErr = err;
          continue;
        }
        const url = `${scheme}://${hostPort(target, r.port)}`;
        const mine = local.get(hostPort(addr, r.port));
        if (mine !== undefined && mine.protocol !== `${scheme}:`) {
          lastErr = new Error(`bootstrap at ${url} from DNS for ${service} has scheme mismatch with expected peer ${mine.href.replace(/\/$/, "")}`);
          continue;
        }
        out.push(`${mine !== undefined ? o.name : String(tempName++)}=${url}`);
      }
    } catch (err) {
      lastErr = err;
    }
    o.log.info(`get cluster for ${service} SRV`, {
      "service-scheme": scheme,
      "service-name": service,
      "discovery-srv": o.domain,
      "advertise-peer-urls": o.advertisePeerUrls,
      "found-cluster": out,
      ...(lastErr === undefined ? {} : { error: errorText(lastErr) }),
    });
    if (out.length === 0) throw new Error(`error querying DNS SRV records for _${service} ${errorText(lastErr ?? new Error("no records"))}`);
    return out;
  };
  const [https, http] = await Promise.allSettled([one("https"), one("http")]);
  if (https.status === "rejected" && http.status === "rejected") {
    throw new Error(`${errorText(https.reason)}; ${errorText(http.reason)}`);
  }
  return [...(https.status === "fulfilled" ? https.value : []), ...(http.status === "fulfilled" ? http.value : [])];
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * The initial cluster from SRV records. A member (`requireLocal`) must find itself in it
 * ("cannot find local etcd member"); a proxy need not.
 */
export async function srvInitialCluster(o: SrvClusterOptions & { requireLocal: boolean }): Promise<Map<string, string[]>> {
  let found: string[];
  try {
    found = await srvClusterStrings(o);
  } catch (err) {
    o.log.warn("failed to resolve during SRV discovery", { error: errorText(err) });
    throw err;
  }
  const cluster = new Map<string, string[]>();
  for (const s of found) {
    o.log.info("got bootstrap from DNS for etcd-server", { node: s });
    const eq = s.indexOf("=");
    const name = s.slice(0, eq);
    cluster.set(name, [...(cluster.get(name) ?? []), s.slice(eq + 1)]);
  }
  if (o.requireLocal && !cluster.has(o.name)) throw new Error(`cannot find local etcd member ${JSON.stringify(o.name)} in SRV records`);
  return cluster;
}

/** Go's matchHostnames: exact (case-insensitive) or a leftmost `*` covering one label. */
function nameMatches(pattern: string, host: string): boolean {
  const p = pattern.toLowerCase().replace(/\.$/, "");
  const h = host.toLowerCase().replace(/\.$/, "");
  if (p === h) return true;
  if (!p.startsWith("*.")) return false;
  const dot = h.indexOf(".");
  return dot > 0 && h.slice(dot) === p.slice(1);
}

/**
 * Does the certificate list `domain` in its SAN? undefined if so, else the error Go's
 * VerifyHostname gives when TLS ServerName is the domain.
 */
export function checkSrvDomain(domain: string, cert: Pick<PeerCertificate, "subjectaltname">): Error | undefined {
  const entries = (cert.subjectaltname ?? "").split(/,\s*/).filter((e) => e !== "");
  const dnsNames = entries.filter((e) => e.startsWith("DNS:")).map((e) => e.slice(4));
  const ips = entries.filter((e) => e.startsWith("IP Address:")).map((e) => e.slice(11));
  const ok = isIP(domain) !== 0 ? ips.includes(domain) : dnsNames.some((n) => nameMatches(n, domain));
  if (ok) return undefined;
  const valid = isIP(domain) !== 0 ? ips : dnsNames;
  const err = new Error(
    valid.length === 0
      ? `x509: certificate is not valid for any names, but wanted to match ${domain}`
      : `x509: certificate is valid for ${valid.join(", ")}, not ${domain}`,
  );
  (err as NodeJS.ErrnoException).code = "ERR_SRV_DOMAIN_MISMATCH";
  return err;
}

/**
 * Peer TLS whose outgoing connections accept a member's certificate only when its SAN
 * lists the SRV domain (in place of the host name check, as Go's ServerName does). With
 * auto TLS (rejectUnauthorized false) Node skips the check, as Go skips verification.
 */
export function withSrvDomainCheck<T extends { clientOptions(): Promise<ConnectionOptions> }>(tls: T | undefined, domain: string): T | undefined {
  if (tls === undefined || domain === "") return tls;
  return {
    ...tls,
    async clientOptions(): Promise<ConnectionOptions> {
      return { ...(await tls.clientOptions()), checkServerIdentity: (_host: string, cert: PeerCertificate) => checkSrvDomain(domain, cert) };
    },
  };
}

/** srvInitialCluster with the flags of `config` and the resolver of KV_DNS_SERVER. */
export function srvClusterFromConfig(
  config: Pick<ServerConfig, "discoverySrv" | "discoverySrvName" | "name" | "initialAdvertisePeerUrls">,
  log: Logger,
  opts: { requireLocal: boolean; resolver?: SrvResolver },
): Promise<Map<string, string[]>> {
  return srvInitialCluster({
    domain: config.discoverySrv,
    serviceName: config.discoverySrvName,
    name: config.name,
    advertisePeerUrls: config.initialAdvertisePeerUrls,
    resolver: opts.resolver ?? srvResolver(),
    log,
    requireLocal: opts.requireLocal,
  });
}
