// Minimal HTTP helpers for the bench driver: one-shot requests (no keep-alive, so nothing
// lingers between phases) and the /health poll used for start-up and restart times.
import { request } from "node:http";

/** The 64-byte value every workload writes (identical to VALUE64 in lib/wrk/common.lua and the shared harness). */
export const VALUE64 = "v".repeat(56) + "01234567";

export interface HttpResult {
  readonly status: number;
  readonly body: string;
}

export interface HttpOptions {
  readonly method?: "GET" | "PUT";
  /** Sent as application/x-www-form-urlencoded when present. */
  readonly form?: Readonly<Record<string, string>>;
  /** Sent as application/json when present (the v2 auth API's bodies); ignored when form is set. */
  readonly json?: unknown;
  /** The whole Authorization header value, e.g. basicAuth(user, password). */
  readonly authorization?: string;
  readonly timeoutMs?: number;
}

/** One request on a fresh connection; rejects on socket errors and on timeout. */
export function httpRequest(url: string, options: HttpOptions = {}): Promise<HttpResult> {
  const u = new URL(url);
  const headers: Record<string, string | number> = {};
  let body: string | undefined;
  if (options.form !== undefined) {
    body = new URLSearchParams(options.form).toString();
    headers["Content-Type"] = "application/x-www-form-urlencoded";
  } else if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers["Content-Type"] = "application/json";
  }
  if (body !== undefined) headers["Content-Length"] = Buffer.byteLength(body);
  if (options.authorization !== undefined) headers["Authorization"] = options.authorization;
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method: options.method ?? "GET", agent: false, headers },
      (res) => {
        let data = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (data += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: data }));
        res.on("error", reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? 5000, () => req.destroy(new Error(`Cannot reach ${url}: timeout`)));
    req.on("error", reject);
    req.end(body);
  });
}

/** `Basic base64(user:password)`: HTTP Basic credentials as etcd's v2 API reads them. */
export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;
}

/** PUT a v2 key (`value=`), resolving with the HTTP status; `authorization` = basicAuth(...) when auth is on. */
export async function putKey(base: string, key: string, value: string, authorization?: string): Promise<number> {
  const r = await httpRequest(`${base}/v2/keys/${key}`, { method: "PUT", form: { value }, ...(authorization === undefined ? {} : { authorization }) });
  return r.status;
}

/** GET a v2 key's value; null when the key is missing or the answer is not a v2 node. */
export async function getValue(base: string, key: string): Promise<string | null> {
  const r = await httpRequest(`${base}/v2/keys/${key}`);
  if (r.status !== 200) return null;
  try {
    const j = JSON.parse(r.body) as { node?: { value?: unknown } };
    return typeof j.node?.value === "string" ? j.node.value : null;
  } catch {
    return null;
  }
}

/** True when a /health answer means healthy: status 200 and etcd's {"health":"true"}. */
export function isHealthy(r: HttpResult): boolean {
  return r.status === 200 && /"health"\s*:\s*"true"/.test(r.body);
}

export interface WaitHealthyOptions {
  readonly deadlineMs: number;
  /** Poll interval; the shared harness polls about every 10 ms. */
  readonly intervalMs?: number;
  /** Stop early (with an error) when the server process died. */
  readonly alive?: () => boolean;
}

/** Poll GET /health until healthy; resolves with the time waited (ms), rejects at the deadline. */
export async function waitHealthy(base: string, options: WaitHealthyOptions): Promise<number> {
  const t0 = performance.now();
  const interval = options.intervalMs ?? 10;
  for (;;) {
    if (options.alive !== undefined && !options.alive()) throw new Error(`Cannot start server at ${base}: process exited`);
    try {
      if (isHealthy(await httpRequest(`${base}/health`, { timeoutMs: 1000 }))) return performance.now() - t0;
    } catch {
      // not listening yet
    }
    if (performance.now() - t0 > options.deadlineMs) {
      throw new Error(`Cannot start server at ${base}: not healthy after ${options.deadlineMs} ms`);
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}
