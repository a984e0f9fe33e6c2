// Request bodies: read with a size cap, parsed as a form only when Go's ParseForm would.
// The one reader of request bodies in the server (client port: v2 forms, auth JSON, the v3
// gateway, the v2 proxy; peer port: the lease endpoints): past the cap it drains the rest,
// so the answer is read by a client still sending, and reports how much came; each API
// answers that as its reference does. The Raft transport reads its own (transport may not
// import the server's HTTP layer, and it drops an oversized upload at once: a peer
// streaming a huge snapshot is not waited for).
import type { IncomingMessage } from "node:http";
import { parseQuery, type FormValues } from "./form.ts";

/** Go's ParseForm cap on form bodies (net/http maxFormSize). */
export const MAX_FORM_BYTES = 10 << 20;

export class BodyTooLargeError extends Error {
  override name = "BodyTooLargeError";
  /** Every byte the body had (it was drained to the end). */
  readonly size: number;
  constructor(message: string, size: number) {
    super(message);
    this.size = size;
  }
}

/** A body whose transfer coding broke while it was read; the message is Go's. */
export class BodyReadError extends Error {
  override name = "BodyReadError";
}

const broken = new WeakMap<IncomingMessage, string>();

/** The body of `req` ends here with Go's read error (client-error.ts). */
export function markBodyBroken(req: IncomingMessage, message: string): void {
  broken.set(req, message);
}

/** Reads the whole body; rejects with BodyTooLargeError past `limit` bytes (the rest is drained). */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (tooLarge) return;
      if (size > limit) {
        tooLarge = true;
        chunks.length = 0;
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      const readError = broken.get(req);
      if (readError !== undefined) reject(new BodyReadError(readError));
      else if (tooLarge) reject(new BodyTooLargeError("http: POST too large", size));
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.on("error", reject);
  });
}

const TSPECIALS = new Set('()<>@,;:\\"/[]?=');

function tokenEnd(s: string, from: number): number {
  let i = from;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f || TSPECIALS.has(s[i] ?? "")) break;
    i++;
  }
  return i;
}

function skipSpace(s: string, from: number): number {
  let i = from;
  while (i < s.length && /\s/.test(s[i] ?? "")) i++;
  return i;
}

/**
 * Go's mime.ParseMediaType, as far as its verdict goes: the media type (lower-cased) and
 * the error ParseForm returns for it. A bad parameter keeps the type (Go reads the body
 * and still fails the form); a bad type leaves "".
 */
export function goMediaType(header: string): { type: string; error?: string } {
  const semi = header.indexOf(";");
  const base = (semi < 0 ? header : header.slice(0, semi)).toLowerCase().trim();
  const t = tokenEnd(base, 0);
  if (t === 0) return { type: "", error: "mime: no media type" };
  if (t < base.length) {
    if (base[t] !== "/") return { type: "", error: "mime: expected slash after first token" };
    const st = tokenEnd(base, t + 1);
    if (st === t + 1) return { type: "", error: "mime: expected token after slash" };
    if (st < base.length) return { type: "", error: "mime: unexpected content after media subtype" };
  }
  const seen = new Set<string>();
  let v = semi < 0 ? "" : header.slice(semi);
  for (;;) {
    v = v.slice(skipSpace(v, 0));
    if (v === "") break;
    const bad = (): { type: string; error?: string } => (v.trim() === ";" ? { type: base } : { type: base, error: "mime: invalid media parameter" });
    if (v[0] !== ";") return bad();
    let i = skipSpace(v, 1);
    const k = tokenEnd(v, i);
    if (k === i) return bad();
    const key = v.slice(i, k).toLowerCase();
    i = skipSpace(v, k);
    if (v[i] !== "=") return bad();
    i = skipSpace(v, i + 1);
    let end: number;
    if (v[i] === '"') {
      end = i + 1;
      while (end < v.length && v[end] !== '"') end += v[end] === "\\" ? 2 : 1;
      if (end >= v.length) return bad();
      end += 1;
    } else {
      end = tokenEnd(v, i);
      if (end === i) return bad();
    }
    if (seen.has(key)) return { type: "", error: "mime: duplicate parameter name" };
    seen.add(key);
    v = v.slice(end);
  }
  return { type: base };
}

/**
 * Go's Request.ParseForm: for PUT/POST/PATCH with a urlencoded body the body values come
 * first, then the query's. Returns the first error in Go's wording (a Content-Type Go
 * cannot parse fails the form whatever the type: parsePostForm returns ParseMediaType's error).
 */
export async function parseForm(req: IncomingMessage, rawQuery: string): Promise<{ form: FormValues; error?: string }> {
  const form: FormValues = new Map();
  let error: string | undefined;
  const m = req.method;
  const post = m === "PUT" || m === "POST" || m === "PATCH";
  const media = post ? goMediaType(req.headers["content-type"] || "application/octet-stream") : { type: "" };
  error = media.error;
  if (media.type === "application/x-www-form-urlencoded") {
    try {
      const body = await readBody(req, MAX_FORM_BYTES);
      const r = parseQuery(body.toString("utf8"), form);
      error ??= r.error;
    } catch (err) {
      if (!(err instanceof BodyTooLargeError) && !(err instanceof BodyReadError)) throw err;
      error ??= err.message;
    }
  } else {
    req.resume();
  }
  const q = parseQuery(rawQuery, form);
  error ??= q.error;
  return error === undefined ? { form } : { form, error };
}
