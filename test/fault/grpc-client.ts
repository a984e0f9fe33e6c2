// The three register operations over etcd's gRPC API (etcdserverpb.KV on the client port,
// HTTP/2), classified exactly as the JSON gateway's (v3-client.ts), so the same register
// model checks them:
//
//   get → KV/Range {key}: linearizable (serializable false). kvs[0] → value; no kvs →
//         not-found (null).
//   set → KV/Put {key, value}: grpc-status 0 → ok.
//   cas → KV/Txn: compare VALUE(key) EQUAL prevValue; success put; failure range. As the
//         gateway's: succeeded → ok; else the failure branch's range tells compare-failed
//         (kvs present) from not-found (no kvs).
//
// Outcomes as careful as the HTTP clients': only a connection that was refused before the
// call was sent is `refused`; any non-zero grpc-status, reset stream, lost connection or
// timeout is `unknown` (a write may still commit). The messages are encoded and decoded
// by hand (the harness imports nothing from src/); one HTTP/2 connection per member is
// kept and replaced when it closes, as a gRPC client's channel does.

import http2 from "node:http2";
import type { RegisterInput, RegisterOutput } from "../linearizability/register-model.ts";
import { Outcome, type OpResult } from "./v2-client.ts";

const unknown = (detail: string): OpResult => ({ outcome: Outcome.unknown, output: { type: "unknown" }, detail });
const definite = (output: RegisterOutput): OpResult => ({ outcome: Outcome.definite, output });

// --- protobuf, the few fields used -------------------------------------------------------------

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n >>>= 7;
  }
  out.push(n);
  return out;
}
function bytesField(field: number, b: Uint8Array | readonly number[]): number[] {
  return [(field << 3) | 2, ...varint(b.length), ...b];
}
function intField(field: number, n: number): number[] {
  return n === 0 ? [] : [field << 3, ...varint(n)];
}
const utf8 = (s: string): Uint8Array => Buffer.from(s, "utf8");

/** A message's fields: number → the values in order (varints as numbers, the rest bytes). */
export function decodeFields(buf: Uint8Array): Map<number, Array<number | Uint8Array>> {
  const out = new Map<number, Array<number | Uint8Array>>();
  let i = 0;
  const readVarint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (i >= buf.length) throw new Error("truncated varint");
      const b = buf[i++]!;
      v += (b & 127) * mul;
      if (b < 128) return v;
      mul *= 128;
    }
  };
  while (i < buf.length) {
    const tag = readVarint();
    const field = Math.floor(tag / 8);
    let value: number | Uint8Array;
    switch (tag & 7) {
      case 0:
        value = readVarint();
        break;
      case 2: {
        const n = readVarint();
        if (i + n > buf.length) throw new Error("truncated field");
        value = buf.subarray(i, i + n);
        i += n;
        break;
      }
      case 1:
        value = buf.subarray(i, (i += 8));
        break;
      case 5:
        value = buf.subarray(i, (i += 4));
        break;
      default:
        throw new Error(`wire type ${tag & 7}`);
    }
    const list = out.get(field);
    if (list === undefined) out.set(field, [value]);
    else list.push(value);
  }
  return out;
}

const bytesOf = (v: number | Uint8Array | undefined): Uint8Array | undefined => (v instanceof Uint8Array ? v : undefined);

/** RangeRequest{key}. */
const rangeReq = (key: string): number[] => bytesField(1, utf8(key));
/** PutRequest{key, value}. */
const putReq = (key: string, value: string): number[] => [...bytesField(1, utf8(key)), ...bytesField(2, utf8(value))];

/** The request of each operation, and its method. */
export function grpcRequest(input: RegisterInput): { path: string; body: Uint8Array } {
  switch (input.op) {
    case "get":
      return { path: "/etcdserverpb.KV/Range", body: Uint8Array.from(rangeReq(input.key)) };
    case "set":
      return { path: "/etcdserverpb.KV/Put", body: Uint8Array.from(putReq(input.key, input.value)) };
    case "cas": {
      // Compare{result=1: EQUAL (0), target=2: VALUE (3), key=3, value=7}
      const compare = [...intField(2, 3), ...bytesField(3, utf8(input.key)), ...bytesField(7, utf8(input.prevValue))];
      // RequestOp{request_put=2} / RequestOp{request_range=1}
      const success = bytesField(2, putReq(input.key, input.value));
      const failure = bytesField(1, rangeReq(input.key));
      return { path: "/etcdserverpb.KV/Txn", body: Uint8Array.from([...bytesField(1, compare), ...bytesField(2, success), ...bytesField(3, failure)]) };
    }
  }
}

/** The value a RangeResponse holds for `key`; null: absent; undefined: malformed. */
export function rangeValueOf(response: Uint8Array, key: string): string | null | undefined {
  const f = decodeFields(response);
  if (bytesOf(f.get(1)?.[0]) === undefined) return undefined; // no header
  const kvs = f.get(2) ?? [];
  if (kvs.length === 0) return null;
  const kv = bytesOf(kvs[0]);
  if (kvs.length !== 1 || kv === undefined) return undefined;
  const k = decodeFields(kv);
  const gotKey = bytesOf(k.get(1)?.[0]);
  if (gotKey === undefined || Buffer.from(gotKey).toString("utf8") !== key) return undefined;
  const value = bytesOf(k.get(5)?.[0]);
  return value === undefined ? "" : Buffer.from(value).toString("utf8");
}

/** What an OK answer to `input` lets the history claim. */
export function classifyGrpc(input: RegisterInput, response: Uint8Array): OpResult {
  let f: Map<number, Array<number | Uint8Array>>;
  try {
    f = decodeFields(response);
  } catch (err) {
    return unknown(`malformed response: ${String(err)}`);
  }
  if (bytesOf(f.get(1)?.[0]) === undefined) return unknown("response without a header");
  switch (input.op) {
    case "get": {
      const v = rangeValueOf(response, input.key);
      return v === undefined ? unknown("malformed range") : definite({ type: "value", value: v });
    }
    case "set":
      return definite({ type: "ok" });
    case "cas": {
      const succeeded = f.get(2)?.[0] ?? 0;
      const first = bytesOf(f.get(3)?.[0]);
      const op = first === undefined ? undefined : decodeFields(first);
      if (succeeded === 1) return op?.has(2) === true ? definite({ type: "ok" }) : unknown("txn succeeded without its put");
      if (succeeded !== 0) return unknown("txn with a malformed succeeded");
      const range = bytesOf(op?.get(1)?.[0]);
      const v = range === undefined ? undefined : rangeValueOf(range, input.key);
      if (v === undefined) return unknown("failed txn without its range");
      return definite(v === null ? { type: "not-found" } : { type: "compare-failed" });
    }
  }
}

// --- the connection and the call ---------------------------------------------------------------

const sessions = new Map<string, http2.ClientHttp2Session>();

/** A connected session to `baseUrl`; rejects with the connect error (e.g. ECONNREFUSED). */
function sessionFor(baseUrl: string, timeoutMs: number): Promise<http2.ClientHttp2Session> {
  const existing = sessions.get(baseUrl);
  if (existing !== undefined && !existing.closed && !existing.destroyed) {
    if (!existing.connecting) return Promise.resolve(existing);
  }
  const s = http2.connect(baseUrl);
  sessions.set(baseUrl, s);
  s.unref();
  s.on("close", () => {
    if (sessions.get(baseUrl) === s) sessions.delete(baseUrl);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      s.destroy();
      reject(Object.assign(new Error("connect timeout"), { code: "TIMEOUT" }));
    }, timeoutMs);
    s.once("connect", () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once("error", (err) => {
      clearTimeout(timer);
      s.destroy();
      reject(err);
    });
  });
}

/** Closes every kept connection (end of a run). */
export function closeGrpcSessions(): void {
  for (const s of sessions.values()) s.destroy();
  sessions.clear();
}

interface GrpcAnswer {
  status: number;
  message: string;
  body: Uint8Array | undefined;
}

function call(session: http2.ClientHttp2Session, path: string, body: Uint8Array, timeoutMs: number): Promise<GrpcAnswer> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
    const chunks: Buffer[] = [];
    let status: number | undefined;
    let message = "";
    const timer = setTimeout(() => {
      req.close(http2.constants.NGHTTP2_CANCEL);
      reject(Object.assign(new Error("timeout"), { code: "TIMEOUT" }));
    }, timeoutMs);
    const statusFrom = (h: http2.IncomingHttpHeaders): void => {
      if (h["grpc-status"] !== undefined) {
        status = Number(h["grpc-status"]);
        message = String(h["grpc-message"] ?? "");
      }
    };
    req.on("response", statusFrom);
    req.on("trailers", statusFrom);
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.on("close", () => {
      clearTimeout(timer);
      if (status === undefined) {
        reject(Object.assign(new Error(`stream closed without a status (rst ${req.rstCode})`), { code: "RESET" }));
        return;
      }
      const all = Buffer.concat(chunks);
      const n = all.length >= 5 ? all.readUInt32BE(1) : -1;
      resolve({ status, message, body: n >= 0 && all.length >= 5 + n ? all.subarray(5, 5 + n) : undefined });
    });
    const framed = Buffer.alloc(5 + body.length);
    framed.writeUInt32BE(body.length, 1);
    framed.set(body, 5);
    req.end(framed);
  });
}

/** Runs one operation through the gRPC API of the member at `baseUrl`; never throws. */
export async function runGrpcOp(baseUrl: string, input: RegisterInput, timeoutMs: number): Promise<OpResult> {
  let session: http2.ClientHttp2Session;
  try {
    session = await sessionFor(baseUrl, timeoutMs);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    // Nothing was sent on a connection that never opened.
    if (code === "ECONNREFUSED") return { outcome: Outcome.refused, output: { type: "unknown" }, detail: "ECONNREFUSED" };
    return unknown(typeof code === "string" ? code : String(err));
  }
  const { path, body } = grpcRequest(input);
  let answer: GrpcAnswer;
  try {
    answer = await call(session, path, body, timeoutMs);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return unknown(typeof code === "string" ? code : String(err));
  }
  if (answer.status !== 0) return unknown(`grpc ${answer.status}: ${decodeURIComponent(answer.message).slice(0, 48)}`);
  if (answer.body === undefined) return unknown("OK without a message");
  return classifyGrpc(input, answer.body);
}

/** Whether the member at `baseUrl` answers a gRPC Range; undefined when it does, else why not. */
export async function probeGrpc(baseUrl: string, timeoutMs: number): Promise<string | undefined> {
  const deadline = Date.now() + timeoutMs;
  let why = "no answer";
  while (Date.now() < deadline) {
    const r = await runGrpcOp(baseUrl, { op: "get", key: "ling/probe" }, 2000);
    if (r.outcome === Outcome.definite) return undefined;
    why = r.detail ?? "unknown";
    if (why.startsWith("grpc 12")) return why;
    await new Promise((res) => setTimeout(res, 200));
  }
  return why;
}
