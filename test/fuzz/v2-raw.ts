// The fuzzer's raw HTTP client: each request as bytes on a connection of its own, so odd
// methods, targets and bodies reach a server exactly as written, and the answer as it came
// (head, body so far, whether it was still open when the wait ended).
import { connect } from "node:net";

export interface FuzzRequest {
  method: string;
  target: string;
  headers: [string, string][];
  body?: string;
  /** Sent as a chunked body with a broken chunk (the string is the raw body bytes). */
  rawBody?: string;
  /** A long poll: the answer is what arrived within the wait. */
  mayBlock: boolean;
  /** The body written in these pieces, `gapMs` apart (a stream of messages: the v3 watch). */
  bodyParts?: string[];
  gapMs?: number;
}

export interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: string;
  /** The connection closed (or timed out) before a complete head. */
  noHead?: boolean;
  /** The body was still open when the wait ended (a long poll). */
  pending?: boolean;
  /** A 100 Continue came before the answer (which is the rest). */
  continued?: boolean;
  /** Time the head arrived (ms since epoch): the reference for TTLs. */
  at: number;
}

function encodeRequest(req: FuzzRequest, host: string): string {
  let head = `${req.method} ${req.target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n`;
  for (const [k, v] of req.headers) head += `${k}: ${v}\r\n`;
  if (req.rawBody !== undefined) return head + "Transfer-Encoding: chunked\r\n\r\n" + req.rawBody;
  if (req.bodyParts !== undefined) return head + `Content-Length: ${Buffer.byteLength(req.bodyParts.join(""))}\r\n\r\n`;
  if (req.body !== undefined) return head + `Content-Length: ${Buffer.byteLength(req.body)}\r\n\r\n` + req.body;
  return head + "\r\n";
}

/** Decodes a chunked body as far as it is complete. */
function dechunk(raw: string): { body: string; complete: boolean } {
  let out = "";
  let pos = 0;
  for (;;) {
    const nl = raw.indexOf("\r\n", pos);
    if (nl < 0) return { body: out, complete: false };
    const size = parseInt(raw.slice(pos, nl), 16);
    if (Number.isNaN(size)) return { body: out, complete: false };
    if (size === 0) return { body: out, complete: true };
    if (raw.length < nl + 2 + size) return { body: out + raw.slice(nl + 2), complete: false };
    out += raw.slice(nl + 2, nl + 2 + size);
    pos = nl + 4 + size;
  }
}

/** Sends one request on a new connection; resolves with what came back within `waitMs`. */
export function send(port: number, req: FuzzRequest, waitMs: number): Promise<RawResponse> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let at = 0;
    const finish = (timedOut: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      let text = Buffer.concat(chunks).toString("latin1");
      // Interim answers to Expect: 100-continue, before the answer proper.
      let continued = false;
      while (/^HTTP\/1\.1 100 [^\r]*\r\n\r\n/.test(text)) {
        text = text.slice(text.indexOf("\r\n\r\n") + 4);
        continued = true;
      }
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) {
        resolve({ status: 0, headers: new Map(), body: "", noHead: true, at: at || Date.now() });
        return;
      }
      const lines = text.slice(0, end).split("\r\n");
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? "")?.[1] ?? 0);
      const headers = new Map<string, string>();
      for (const l of lines.slice(1)) {
        const c = l.indexOf(":");
        const k = l.slice(0, c).toLowerCase();
        const v = l.slice(c + 1).trim();
        headers.set(k, headers.has(k) ? `${headers.get(k)!}, ${v}` : v);
      }
      let body = text.slice(end + 4);
      let pending = timedOut;
      if (headers.get("transfer-encoding") === "chunked") {
        const d = dechunk(body);
        body = d.body;
        pending = !d.complete;
      }
      resolve({ status, headers, body: Buffer.from(body, "latin1").toString("utf8"), at, ...(pending ? { pending } : {}), ...(continued ? { continued } : {}) });
    };
    const timer = setTimeout(() => finish(true), waitMs);
    socket.on("data", (c: Buffer) => {
      if (at === 0) at = Date.now();
      chunks.push(c);
    });
    socket.on("close", () => finish(false));
    socket.on("error", () => undefined);
    socket.write(encodeRequest(req, `127.0.0.1:${port}`));
    req.bodyParts?.forEach((part, i) => setTimeout(() => socket.writable && socket.write(part), i * (req.gapMs ?? 0)));
  });
}

/** The request's first value of each query/form parameter (undecoded; enough to spot echoes). */
export function paramsOf(req: FuzzRequest): Map<string, string> {
  const m = new Map<string, string>();
  const q = req.target.includes("?") ? req.target.slice(req.target.indexOf("?") + 1) : "";
  for (const part of [...(req.body ?? "").split("&"), ...q.split("&")]) {
    const eq = part.indexOf("=");
    const k = eq < 0 ? part : part.slice(0, eq);
    if (!m.has(k)) m.set(k, eq < 0 ? "" : part.slice(eq + 1));
  }
  return m;
}
