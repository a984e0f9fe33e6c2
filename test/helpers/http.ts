// A small keep-alive HTTP client for integration tests (the server's wire, not kvctl's client).
import { Agent, request } from "node:http";
import type { ChildProcess } from "node:child_process";
import { connect, type Socket } from "node:net";
import { until as untilShared } from "../../src/until.test-helper.ts";

export const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** A v3 gateway call that must answer 200: its JSON body. */
export async function gatewayPost(url: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(url + path, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

export interface HttpResult {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

export function http(method: string, url: string, form?: Record<string, string>, headers: Record<string, string> = {}): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const body = form ? new URLSearchParams(form).toString() : undefined;
    const h = body ? { "Content-Type": "application/x-www-form-urlencoded", ...headers } : headers;
    const req = request(url, { method, agent, headers: h }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
    req.end(body);
  });
}

export async function json<T>(method: string, url: string, form?: Record<string, string>): Promise<{ status: number; body: T; headers: HttpResult["headers"] }> {
  const r = await http(method, url, form);
  return { status: r.status, body: JSON.parse(r.body) as T, headers: r.headers };
}

/** A raw long-poll: resolves `head` when the response head arrived; `text()` has all bytes so far. */
export function rawLongPoll(port: number, path: string): { socket: Socket; head: Promise<void>; text(): string; closed: Promise<void> } {
  const socket = connect(port, "127.0.0.1");
  let data = "";
  let headResolve!: () => void;
  const head = new Promise<void>((r) => (headResolve = r));
  const closed = new Promise<void>((r) => socket.on("close", () => r()));
  socket.on("data", (c: Buffer) => {
    data += c.toString();
    if (data.includes("\r\n\r\n")) headResolve();
  });
  socket.on("error", () => undefined);
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  return { socket, head, text: () => data, closed };
}

/**
 * The shared polling wait (src/until.test-helper.ts), every 25 ms: conditions here ask a
 * server. `detail` (a log, what was read) goes into the timeout's message.
 */
export function until(pred: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = "condition", detail?: () => string): Promise<void> {
  return untilShared(pred, what, timeoutMs, { intervalMs: 25, ...(detail === undefined ? {} : { detail }) });
}

/**
 * Waits until `url`/health answers 200, polling every 50 ms (each try bounded by 1 s).
 * Fails at the deadline, or as soon as `child` has exited, with `log()` in the message.
 */
export async function waitHealthy(url: string, opts: { child?: ChildProcess; log?: () => string; timeoutMs?: number; what?: string } = {}): Promise<void> {
  const what = opts.what ?? `${url} healthy`;
  const log = opts.log ?? ((): string => "");
  await untilShared(
    async () => {
      const child = opts.child;
      if (child !== undefined && (child.exitCode !== null || child.signalCode !== null)) {
        throw new Error(`exited with ${child.exitCode ?? child.signalCode} before ${what}:\n${log()}`);
      }
      try {
        const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        return res.status === 200;
      } catch {
        return false; // not listening yet
      }
    },
    what,
    opts.timeoutMs ?? 20_000,
    { intervalMs: 50, detail: log },
  );
}

/**
 * A v3 gateway watch stream: POST /v3/watch with one create request, every `{"result":...}`
 * line kept as it arrives. The body is sent whole (etcd's gateway reads a request whole
 * before it opens the stream); the stream stays open after the client's side ends, in etcd
 * and kvctl alike.
 */
export function gatewayWatch(url: string, create: Record<string, unknown>): { results: Array<Record<string, unknown>>; close(): void } {
  const results: Array<Record<string, unknown>> = [];
  const req = request(`${url}/v3/watch`, { method: "POST" });
  let buf = "";
  req.on("response", (res) => {
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line !== "") results.push((JSON.parse(line) as { result: Record<string, unknown> }).result);
      }
    });
  });
  req.on("error", () => undefined);
  req.end(JSON.stringify({ create_request: create }));
  return { results, close: () => req.destroy() };
}
