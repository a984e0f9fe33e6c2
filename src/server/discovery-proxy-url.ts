// --discovery-proxy's value read as etcd reads it. Apart from proxied-request.ts, which
// loads node:https and node:tls: the configuration is parsed on every start, and those
// load only when TLS or the proxy is used (peer-start-path.test.ts holds that).

/** etcd's newProxyFunc: a value that does not parse as an http(s) URL is retried with "http://" in front. */
export function discoveryProxyUrl(raw: string): URL {
  try {
    const u = new URL(raw);
    if (u.protocol.startsWith("http") && u.host !== "") return u;
  } catch {
    // Go retries with a scheme too.
  }
  try {
    return new URL(`http://${raw}`);
  } catch {
    throw new ProxyAddressError(raw);
  }
}

/** The proxy address cannot be read (etcd: 'invalid proxy address "<value>": <why>'). */
export class ProxyAddressError extends Error {
  override name = "ProxyAddressError";
  constructor(raw: string) {
    super(`invalid proxy address ${JSON.stringify(raw)}`);
  }
}
