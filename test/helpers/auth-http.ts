// HTTP helpers for the v2 auth integration tests: JSON bodies, Basic credentials, raw requests.
import { request } from "node:http";
import { connect } from "node:net";
import { agent } from "./http.ts";

export interface AuthResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body, or undefined when it is empty or not JSON. */
  json: unknown;
}

export interface CallOptions {
  /** [user, password] sent as HTTP Basic. */
  auth?: readonly [string, string];
  /** A raw Authorization header value (wins over `auth`). */
  authorization?: string;
  /** JSON-encoded unless a string or Buffer (sent as is). */
  body?: unknown;
  /** A form body (application/x-www-form-urlencoded). */
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

export function basic(user: string, password: string): string {
  return "Basic " + Buffer.from(`${user}:${password}`, "utf8").toString("base64");
}

/** One request on the shared keep-alive agent; `path` is sent as given (already escaped). */
export function call(base: string, method: string, path: string, opts: CallOptions = {}): Promise<AuthResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: Buffer | undefined;
  if (opts.form !== undefined) {
    body = Buffer.from(new URLSearchParams(opts.form).toString());
    headers["Content-Type"] = "application/x-www-form-urlencoded";
  } else if (opts.body !== undefined) {
    body = Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body));
    headers["Content-Type"] ??= "application/json";
  }
  if (opts.authorization !== undefined) headers["Authorization"] = opts.authorization;
  else if (opts.auth !== undefined) headers["Authorization"] = basic(opts.auth[0], opts.auth[1]);
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown;
        try {
          json = text === "" ? undefined : (JSON.parse(text) as unknown);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.setTimeout(15_000, () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    req.end(body);
  });
}

/** Sends raw bytes on a fresh connection and returns everything the server answered before closing. */
export function rawRequest(base: string, bytes: Buffer | string, timeoutMs = 5000): Promise<string> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    let data = "";
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on("data", (c: Buffer) => {
      data += c.toString("latin1");
      // one response is enough: stop once its head and (small) body have arrived
      if (/\r\n\r\n/.test(data) && /content-length: (\d+)/i.test(data)) {
        const len = Number(/content-length: (\d+)/i.exec(data)![1]);
        if (data.length - data.indexOf("\r\n\r\n") - 4 >= len) socket.end();
      }
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(data);
    });
    socket.write(bytes);
  });
}
