// Validates a /v2/keys request into a typed request, in exactly etcd's check order (the
// first failing check decides the error code clients see). Bad input is answered here and
// never reaches the log.
import { V2Error, V2ErrorCode } from "../../api/v2-errors.ts";
import type { V2Request } from "../request.ts";
import { first, parseGoBool, parseGoUint64, type FormValues } from "./form.ts";

export type KeyRequest =
  | { kind: "write"; request: V2Request; noValueOnSuccess: boolean }
  | { kind: "get"; path: string; recursive: boolean; sorted: boolean; quorum: boolean; head: boolean }
  | { kind: "watch"; path: string; recursive: boolean; stream: boolean; sinceIndex: number };

function paramError(code: number, cause: string): V2Error {
  return new V2Error(code, cause, 0);
}

function getBool(form: FormValues, key: string, cause = `invalid value for "${key}"`): boolean {
  const v = first(form, key);
  if (v === undefined) return false;
  const b = parseGoBool(v);
  if (b === undefined) throw paramError(V2ErrorCode.InvalidField, cause);
  return b;
}

function getIndex(form: FormValues, key: string): number {
  const v = first(form, key);
  if (v === undefined) return 0;
  const n = parseGoUint64(v);
  if (n === undefined) throw paramError(V2ErrorCode.IndexNaN, `invalid value for "${key}"`);
  return n;
}

/** Latest representable Go time (UnixNano fits int64): later expirations are permanent, as etcd ends up. */
const MAX_EXPIRATION_MS = 9223372036854;

/**
 * @param keyPath the decoded key path after `/v2/keys` (already cleaned by the router)
 * @param now the proposer's clock (ms); TTLs become absolute expirations here
 */
export function parseKeyRequest(method: string, keyPath: string, form: FormValues, now: number): KeyRequest {
  const prevIndex = getIndex(form, "prevIndex");
  const waitIndex = getIndex(form, "waitIndex");
  const recursive = getBool(form, "recursive");
  const sorted = getBool(form, "sorted");
  const wait = getBool(form, "wait");
  const dir = getBool(form, "dir");
  const quorum = getBool(form, "quorum");
  const stream = getBool(form, "stream");
  if (wait && method !== "GET") {
    throw paramError(V2ErrorCode.InvalidField, `"wait" can only be used with GET requests`);
  }
  const prevValue = first(form, "prevValue");
  if (prevValue === "") throw paramError(V2ErrorCode.PrevValueRequired, `"prevValue" cannot be empty`);
  const noValueOnSuccess = getBool(form, "noValueOnSuccess");

  let ttl: number | undefined;
  const ttlRaw = first(form, "ttl");
  if (ttlRaw !== undefined && ttlRaw !== "") {
    ttl = parseGoUint64(ttlRaw);
    if (ttl === undefined) throw paramError(V2ErrorCode.TtlNaN, `invalid value for "ttl"`);
  }
  let prevExist: boolean | undefined;
  if (form.has("prevExist")) prevExist = getBool(form, "prevExist", "invalid value for prevExist");
  let refresh: boolean | undefined;
  if (form.has("refresh")) {
    refresh = getBool(form, "refresh", "invalid value for refresh");
    if (refresh) {
      const val = first(form, "value");
      if (val !== undefined && val !== "") throw paramError(V2ErrorCode.RefreshValue, "A value was provided on a refresh");
      if (ttl === undefined) throw paramError(V2ErrorCode.RefreshTtlRequired, "No TTL value set");
    }
  }

  if (method === "GET" || method === "HEAD") {
    // quorum wins over wait: etcd turns the request into a QGET that answers at once.
    if (wait && !quorum) return { kind: "watch", path: keyPath, recursive, stream, sinceIndex: waitIndex };
    return { kind: "get", path: keyPath, recursive, sorted, quorum, head: method === "HEAD" };
  }

  const request: V2Request = {
    method: method as V2Request["method"],
    path: keyPath,
    val: first(form, "value") ?? "",
    dir,
    prevValue: prevValue ?? "",
    prevIndex,
    recursive,
    sorted,
  };
  if (prevExist !== undefined) request.prevExist = prevExist;
  if (refresh !== undefined) request.refresh = refresh;
  if (ttl !== undefined) {
    const exp = now + ttl * 1000;
    if (exp <= MAX_EXPIRATION_MS) request.expiration = exp;
  }
  return { kind: "write", request, noValueOnSuccess };
}
