// The gateway's server streams (POST /v3/watch, /v3/lease/keepalive): one request body,
// then a response body of newline-separated JSON messages, `{"result":…}` or
// `{"error":…}`, for as long as the stream lives. transport.ts buffers whole bodies, so
// streams get this small node:http(s) reader of their own.

import type { Agent as HttpAgent, IncomingMessage } from "node:http";
import { abortReason, readTlsFiles, toNetworkError, type TlsFiles } from "./transport.ts";
import { ClientError } from "./errors.ts";

export interface StreamRequest {
  origin: string;
  path: string;
  headers: Readonly<Record<string, string>>;
  body: string;
  tls?: TlsFiles;
  /** Aborting ends the stream: the promise resolves (it does not reject). */
  signal?: AbortSignal;
  /** No response headers within this time: HeaderTimeoutError-like failure; 0 = never. */
  connectTimeoutMs?: number;
}

/**
 * Sends the request and feeds each message to `onMessage` until the server ends the
 * stream or `signal` aborts. Resolves with the HTTP status; a non-200 answer's body is
 * parsed as one message. Rejects with a NetworkError when the connection fails.
 */
export async function openStream(req: StreamRequest, onMessage: (message: unknown) => void): Promise<number> {
  const url = new URL(req.origin);
  const https = url.protocol === "https:";
  const mod = https ? await import("node:https") : await import("node:http");
  const agent: HttpAgent | undefined = https ? new (await import("node:https")).Agent(readTlsFiles(req.tls ?? {})) : undefined;
  return new Promise<number>((resolve, reject) => {
    if (req.signal?.aborted) {
      resolve(0);
      return;
    }
    let status = 0;
    let timer: NodeJS.Timeout | undefined;
    const cr = mod.request({
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port,
      method: "POST",
      path: req.path,
      headers: { ...req.headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(req.body)) },
      ...(agent !== undefined ? { agent } : {}),
    });
    const done = (err?: Error): void => {
      if (timer !== undefined) clearTimeout(timer);
      req.signal?.removeEventListener("abort", onAbort);
      agent?.destroy();
      if (err !== undefined) reject(err);
      else resolve(status);
    };
    const onAbort = (): void => {
      cr.destroy();
      const reason = abortReason(req.signal);
      // A deadline is a failure; any other abort is the caller ending the stream.
      if (reason instanceof ClientError && reason.code === "DEADLINE_EXCEEDED") done(reason);
      else done();
    };
    req.signal?.addEventListener("abort", onAbort, { once: true });
    if ((req.connectTimeoutMs ?? 0) > 0) {
      timer = setTimeout(() => {
        cr.destroy();
        done(new ClientError("DEADLINE_EXCEEDED", "context deadline exceeded"));
      }, req.connectTimeoutMs);
    }
    cr.on("error", (err: NodeJS.ErrnoException) => {
      if (req.signal?.aborted) return;
      done(toNetworkError(err, url));
    });
    cr.on("response", (res: IncomingMessage) => {
      if (timer !== undefined) clearTimeout(timer);
      status = res.statusCode ?? 0;
      const parser = new MessageSplitter(onMessage);
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        try {
          parser.push(chunk);
        } catch (err) {
          cr.destroy();
          done(err instanceof Error ? err : new Error(String(err)));
        }
      });
      res.on("end", () => {
        try {
          parser.end();
          done();
        } catch (err) {
          done(err instanceof Error ? err : new Error(String(err)));
        }
      });
      res.on("error", () => done());
    });
    cr.end(req.body);
  });
}

/**
 * Splits a byte stream into top-level JSON values. grpc-gateway ends each message with
 * "\n", but a server may not: values are found by bracket depth outside strings.
 */
export class MessageSplitter {
  #buf = "";
  #depth = 0;
  #inString = false;
  #escaped = false;
  #start = -1;
  readonly #emit: (message: unknown) => void;

  constructor(emit: (message: unknown) => void) {
    this.#emit = emit;
  }

  push(chunk: string): void {
    const base = this.#buf.length;
    this.#buf += chunk;
    for (let i = base; i < this.#buf.length; i++) {
      const ch = this.#buf[i];
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (ch === "\\") this.#escaped = true;
        else if (ch === '"') this.#inString = false;
        continue;
      }
      if (ch === '"') this.#inString = true;
      else if (ch === "{" || ch === "[") {
        if (this.#depth === 0) this.#start = i;
        this.#depth++;
      } else if (ch === "}" || ch === "]") {
        this.#depth--;
        if (this.#depth === 0) {
          this.#emit(JSON.parse(this.#buf.slice(this.#start, i + 1)));
          this.#buf = this.#buf.slice(i + 1);
          i = -1;
          this.#start = -1;
        }
      }
    }
    if (this.#depth === 0) this.#buf = "";
  }

  end(): void {
    if (this.#depth !== 0) throw new ClientError("INVALID_JSON", "unexpected end of JSON stream");
  }
}
