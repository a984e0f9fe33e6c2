// The three register operations over the v3 JSON gateway (POST /v3/kv/...), classified
// into the same outputs as the v2 client (register-model.ts), so one model checks both:
//
//   get → POST /v3/kv/range {key}: linearizable (serializable defaults to false). kvs[0]
//         → value; no kvs → not-found (null). Anything else: the read is dropped.
//   set → POST /v3/kv/put {key, value}: 200 with a header → ok; anything else → unknown.
//   cas → POST /v3/kv/txn: compare VALUE(key) EQUAL prevValue; success: put(key, value);
//         failure: range(key). succeeded → ok. Not succeeded: the failure branch's range
//         ran atomically with the failed compare, so it tells which way it failed: kvs
//         present → compare-failed (the key held another value), no kvs → not-found (a
//         missing key compares false on VALUE). That is exactly the v2 cas's pair of
//         failures, which is why the v2 register model fits unchanged.
//
// Outcome classes, as careful as v2-client.ts: only a refused connection (ECONNREFUSED:
// the request never left) is `refused`. Every gateway error is `unknown`, even those that
// look harmless: code 14 Unavailable ("etcdserver: request timed out", "no leader",
// "leader changed", "transport is closing") can follow a proposal that still commits,
// and "nothing was applied" is not provable from the client for any other code either.
// For a read, unknown just means "dropped". Keys and values are sent base64 (bytes in
// proto3 JSON); int64 fields come back as strings and zero values are omitted
// (`succeeded` false, empty `kvs`), which the parsing below relies on.

import type { RegisterInput, RegisterOutput } from "../linearizability/register-model.ts";
import { Outcome, send, type HttpAnswer, type OpResult } from "./v2-client.ts";

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");
const unb64 = (s: string): string => Buffer.from(s, "base64").toString("utf8");

const unknown = (detail: string): OpResult => ({ outcome: Outcome.unknown, output: { type: "unknown" }, detail });
const definite = (output: RegisterOutput): OpResult => ({ outcome: Outcome.definite, output });

type Json = Record<string, unknown>;

function isObject(x: unknown): x is Json {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function parse(body: string): Json | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** "HTTP 503 code 14: etcdserver: request timed out" (message cut short), for the summary. */
function describeError(answer: HttpAnswer): string {
  const err = parse(answer.body);
  const code = err?.["code"];
  const message = err?.["message"] ?? err?.["error"];
  const text = typeof message === "string" ? `: ${message.slice(0, 48)}` : "";
  return typeof code === "number" ? `HTTP ${answer.status} code ${code}${text}` : `HTTP ${answer.status}`;
}

/**
 * The value a range response holds for `key`: a string, null when the key is absent
 * (no `kvs`), undefined when the response is malformed (then nothing may be claimed).
 */
export function rangeValue(response: unknown, key: string): string | null | undefined {
  if (!isObject(response) || !isObject(response["header"])) return undefined;
  const kvs = response["kvs"];
  if (kvs === undefined) return null;
  if (!Array.isArray(kvs) || kvs.length !== 1) return undefined;
  const kv: unknown = kvs[0];
  if (!isObject(kv) || typeof kv["key"] !== "string" || unb64(kv["key"]) !== key) return undefined;
  const value = kv["value"];
  // An empty value is omitted in proto3 JSON; the workload never writes one, but it is a value.
  if (value === undefined) return "";
  return typeof value === "string" ? unb64(value) : undefined;
}

/** The body of each operation's request, and its route. */
export function v3Request(input: RegisterInput): { path: string; body: Json } {
  const key = b64(input.key);
  switch (input.op) {
    case "get":
      return { path: "/v3/kv/range", body: { key } };
    case "set":
      return { path: "/v3/kv/put", body: { key, value: b64(input.value) } };
    case "cas":
      return {
        path: "/v3/kv/txn",
        body: {
          compare: [{ key, target: "VALUE", result: "EQUAL", value: b64(input.prevValue) }],
          success: [{ request_put: { key, value: b64(input.value) } }],
          failure: [{ request_range: { key } }],
        },
      };
  }
}

/** What a 200 answer to `input` lets the history claim. */
export function classifyV3(input: RegisterInput, body: string): OpResult {
  const res = parse(body);
  if (res === undefined || !isObject(res["header"])) return unknown("200 without a header");
  switch (input.op) {
    case "get": {
      const v = rangeValue(res, input.key);
      return v === undefined ? unknown("200 with a malformed range") : definite({ type: "value", value: v });
    }
    case "set":
      return definite({ type: "ok" });
    case "cas": {
      const succeeded = res["succeeded"];
      const responses = res["responses"];
      const first: unknown = Array.isArray(responses) ? responses[0] : undefined;
      if (succeeded === true) {
        return isObject(first) && isObject(first["response_put"]) ? definite({ type: "ok" }) : unknown("txn succeeded without its put");
      }
      if (succeeded !== undefined && succeeded !== false) return unknown("txn with a malformed succeeded");
      const v = isObject(first) ? rangeValue(first["response_range"], input.key) : undefined;
      if (v === undefined) return unknown("failed txn without its range");
      // v === prevValue would contradict the failed compare (a non-atomic txn): it is
      // recorded as compare-failed all the same, and the checker judges whether the key
      // could have held another value at some point inside the call.
      return definite(v === null ? { type: "not-found" } : { type: "compare-failed" });
    }
  }
}

/** Runs one operation through the v3 gateway of the member at `baseUrl`; never throws. */
export async function runV3Op(baseUrl: string, input: RegisterInput, timeoutMs: number): Promise<OpResult> {
  const { path, body } = v3Request(input);
  let answer: HttpAnswer;
  try {
    answer = await send({ url: baseUrl + path, method: "POST", body: JSON.stringify(body), contentType: "application/json", timeoutMs });
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === "ECONNREFUSED") return { outcome: Outcome.refused, output: { type: "unknown" }, detail: "ECONNREFUSED" };
    return unknown(typeof code === "string" ? code : String(err));
  }
  return answer.status === 200 ? classifyV3(input, answer.body) : unknown(describeError(answer));
}

/**
 * Whether the member at `baseUrl` serves the v3 gateway: undefined when a range answers
 * 200, else why not (e.g. "HTTP 501 code 12: the v3 API (/v3/kv/range) is not served...").
 * Retries transient failures until `timeoutMs`; a run checks this before its clients
 * start, so a server without v3 fails at once instead of recording only unknowns.
 */
export async function probeV3(baseUrl: string, timeoutMs: number): Promise<string | undefined> {
  const deadline = Date.now() + timeoutMs;
  let why = "no answer";
  while (Date.now() < deadline) {
    try {
      const answer = await send({ url: `${baseUrl}/v3/kv/range`, method: "POST", body: JSON.stringify({ key: b64("lin3/probe") }), contentType: "application/json", timeoutMs: 2000 });
      if (answer.status === 200) return undefined;
      why = describeError(answer);
      // 404/405/501: the route is not there; that will not change by waiting.
      if ([404, 405, 501].includes(answer.status)) return why;
    } catch (err) {
      why = String((err as { code?: unknown }).code ?? err);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return why;
}
