// Request bodies: read with a size cap, parsed as a form only when Go's ParseForm would.
// The one reader of client request bodies on the client port (v2 forms, auth JSON, the v3
// gateway, the v2 proxy): past the cap it drains the rest, so the answer is read by a
// client still sending, and reports how much came. The peer port reads its own (transport
// may not import the server's HTTP layer, and it drops an oversized upload at once).
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

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaType(header: string | undefined): string {
  if (!header) return "";
  const semi = header.indexOf(";");
  return (semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase();
}

/**
 * Go's Request.ParseForm: for PUT/POST/PATCH with a urlencoded body the body values come
 * first, then the query's. Returns the first error in Go's wording.
 */
export async function parseForm(req: IncomingMessage, rawQuery: string): Promise<{ form: FormValues; error?: string }> {
  const form: FormValues = new Map();
  let error: string | undefined;
  const m = req.method;
  if ((m === "PUT" || m === "POST" || m === "PATCH") && mediaType(req.headers["content-type"]) === "application/x-www-form-urlencoded") {
    try {
      const body = await readBody(req, MAX_FORM_BYTES);
      const r = parseQuery(body.toString("utf8"), form);
      error = r.error;
    } catch (err) {
      if (!(err instanceof BodyTooLargeError) && !(err instanceof BodyReadError)) throw err;
      error = err.message;
    }
  } else {
    req.resume();
  }
  const q = parseQuery(rawQuery, form);
  error ??= q.error;
  return error === undefined ? { form } : { form, error };
}
