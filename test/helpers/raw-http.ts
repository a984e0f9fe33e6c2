// Raw HTTP/1.1 exchanges on one connection, for tests that compare answers byte for byte
// (the fast lane against node:http and the router): the requests are written as given, the
// answers split by their Content-Length (or their chunks and trailer), each with its Date
// header blanked.
import { connect } from "node:net";
import { once } from "node:events";

/**
 * Sends `requests` on one connection to `url` and returns the raw responses in order.
 * `oneAtATime`: each request is written only once the answer before it arrived (answers
 * that depend on the writes before them); otherwise they are all written at once (pipelined).
 */
export async function rawExchange(url: string, requests: string[], opts: { oneAtATime?: boolean } = {}): Promise<string[]> {
  const s = connect(Number(new URL(url).port), "127.0.0.1");
  await once(s, "connect");
  const out: string[] = [];
  let buf = Buffer.alloc(0);
  let next = 0;
  if (opts.oneAtATime === true) s.write(requests[next++]!);
  else {
    s.write(requests.join(""));
    next = requests.length;
  }
  for await (const c of s) {
    buf = Buffer.concat([buf, c as Buffer]);
    for (;;) {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) break;
      const headText = buf.subarray(0, end).toString("latin1");
      const len = /\r\nTransfer-Encoding: chunked\r\n/i.test(headText + "\r\n") ? chunkedLength(buf, end + 4) : Number(/\r\nContent-Length: (\d+)/i.exec(headText)?.[1] ?? "0");
      if (len === undefined || buf.length < end + 4 + len) break;
      out.push(buf.subarray(0, end + 4 + len).toString("utf8").replace(/\r\nDate: [^\r]*/, "\r\nDate: -"));
      buf = buf.subarray(end + 4 + len);
      if (next < requests.length) s.write(requests[next++]!);
    }
    if (out.length === requests.length) break;
  }
  s.destroy();
  return out;
}

/** The bytes of a chunked body starting at `from`, its last chunk and trailer included; undefined until all arrived. */
function chunkedLength(buf: Buffer, from: number): number | undefined {
  let pos = from;
  for (;;) {
    const nl = buf.indexOf("\r\n", pos);
    if (nl < 0) return undefined;
    const size = parseInt(buf.subarray(pos, nl).toString("latin1"), 16);
    if (size === 0) {
      // The trailer's fields, then an empty line.
      const end = buf.subarray(nl).indexOf("\r\n\r\n");
      return end < 0 ? undefined : nl + end + 4 - from;
    }
    pos = nl + 2 + size + 2;
    if (pos > buf.length) return undefined;
  }
}
