// Client endpoints from DNS SRV records, as etcd's pkg/srv GetClient finds them for
// etcdctl's --discovery-srv (v2's -D and v3's -d): `_etcd-client-ssl[-<name>]._tcp.<domain>` gives https
// endpoints, `_etcd-client[-<name>]._tcp.<domain>` http ones (https first, each in the
// resolver's order); only both lookups failing is an error. KV_DNS_SERVER (host:port, comma
// separated) points the lookups at other servers than the system's, as for `kvctl serve
// --discovery-srv`.
//
// Targets are used as the resolver gives them, without Go's trailing dot (a host name
// ending in a dot does not resolve through getaddrinfo here).

import { Resolver } from "node:dns/promises";
import { ClientError } from "./errors.ts";

/** Both SRV lookups failed: etcdctl's "dns lookup errors: … and …". */
export class SrvLookupError extends ClientError {
  constructor(message: string, cause: unknown) {
    super("SRV_LOOKUP", message, { cause });
    this.name = "SrvLookupError";
  }
}

export interface SrvOptions {
  /** --discovery-srv-name: appended to the service as `-<name>`. */
  serviceName?: string;
  env?: NodeJS.ProcessEnv;
  /** For tests: the lookup itself. */
  resolveSrv?: (name: string) => Promise<{ name: string; port: number }[]>;
}

/** pkg/srv's GetSRVService. */
export function srvService(service: string, serviceName: string | undefined, scheme: "http" | "https"): string {
  const s = scheme === "https" ? `${service}-ssl` : service;
  return serviceName !== undefined && serviceName !== "" ? `${s}-${serviceName}` : s;
}

/** Go's DNSError text: `lookup <name> on <server>: no such host`. */
function lookupText(name: string, server: string | undefined, err: unknown): string {
  const code = (err as { code?: string }).code;
  const on = server === undefined ? "" : ` on ${server}`;
  if (code === "ENOTFOUND" || code === "ENODATA" || code === "NXDOMAIN") return `lookup ${name}${on}: no such host`;
  return `lookup ${name}${on}: ${code ?? (err instanceof Error ? err.message : String(err))}`;
}

/** The first server asked, as Go names it (host:port). */
function firstServer(r: Resolver): string | undefined {
  const s = r.getServers()[0];
  if (s === undefined) return undefined;
  if (/^\[.*\]:\d+$/.test(s) || /^[^:]+:\d+$/.test(s)) return s;
  return s.includes(":") ? `[${s}]:53` : `${s}:53`;
}

/** The client URLs `domain` advertises (https ones first). */
export async function srvClientEndpoints(domain: string, opts: SrvOptions = {}): Promise<string[]> {
  let resolve = opts.resolveSrv;
  let server: string | undefined;
  if (resolve === undefined) {
    const r = new Resolver({ timeout: 2000, tries: 2 });
    const servers = ((opts.env ?? process.env)["KV_DNS_SERVER"] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
    if (servers.length > 0) r.setServers(servers);
    server = firstServer(r);
    resolve = (name) => r.resolveSrv(name);
  }
  const out: string[] = [];
  const errors: string[] = [];
  let cause: unknown;
  for (const scheme of ["https", "http"] as const) {
    const name = `_${srvService("etcd-client", opts.serviceName, scheme)}._tcp.${domain}`;
    try {
      for (const rec of await resolve(name)) {
        const host = rec.name.replace(/\.$/, "");
        out.push(`${scheme}://${host.includes(":") ? `[${host}]` : host}:${rec.port}`);
      }
    } catch (err) {
      errors.push(lookupText(name, server, err));
      cause = err;
    }
  }
  if (errors.length === 2) throw new SrvLookupError(`dns lookup errors: ${errors[0]} and ${errors[1]}`, cause);
  return out;
}

export interface DiscoveryOptions extends SrvOptions {
  /** --insecure-discovery: keep the http:// endpoints found. */
  insecure: boolean;
  /** Told each http:// endpoint dropped (etcdctl prints `ignoring discovered insecure endpoint "…"`). */
  onIgnored?: (endpoint: string) => void;
}

/**
 * etcdctl v2's getEndpoints with --discovery-srv: the domain's client endpoints, the http
 * ones dropped unless `insecure`; when none remain, `fallback` (the --endpoints list:
 * etcdctl falls back to it rather than failing). Both lookups failing throws SrvLookupError.
 */
export async function discoverEndpoints(domain: string, fallback: readonly string[], opts: DiscoveryOptions): Promise<string[]> {
  const found = await srvClientEndpoints(domain, opts);
  const kept = opts.insecure
    ? found
    : found.filter((ep) => {
        if (!ep.startsWith("http://")) return true;
        opts.onIgnored?.(ep);
        return false;
      });
  return kept.length > 0 ? kept : [...fallback];
}
