// Validates a /v2/keys request into a typed request, in exactly etcd's check order (the
// first failing check decides the error code clients see). Bad input is answered here and
// never reaches the log.
import { V2Error, V2ErrorCode } from "../../api/v2-errors.ts";
import type { V2Request } from "../request.ts";
import { first, parseGoBool, parseGoUint64, type FormValues } from "./form.ts";

export type KeyRequest =
  /** prevIndexText: the prevIndex as Go prints it, when it is above 2^53 (request.prevIndex holds it clamped). */
  | { kind: "write"; request: V2Request; noValueOnSuccess: boolean; prevIndexText?: string }
  | { kind: "get"; path: string; recursive: boolean; sorted: boolean; quorum: boolean; head: boolean; wait: boolean }
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

const NS_PER_MS = 1_000_000n;

/**
 * etcd's `clock.Now().Add(time.Duration(ttl) * time.Second).UnixNano()` with Go's int64
 * arithmetic: a TTL past about 292 years wraps (into the past, or anywhere), and so does
 * the sum. Returns the expiration as ms + ns within the ms, or undefined for 0, which
 * etcd's apply reads as "no TTL". A past time makes set/create permanent (the store's
 * check for times before 2000) and gives update/compareAndSwap a key the next SYNC
 * expires, as on etcd.
 */
export function goExpiration(ttl: bigint, nowMs: number, nowNs: number): { ms: number; ns: number } | undefined {
  const d = BigInt.asIntN(64, BigInt.asIntN(64, ttl) * 1_000_000_000n);
  const whole = Math.floor(nowMs);
  const now = BigInt(whole) * NS_PER_MS + BigInt(Math.round((nowMs - whole) * 1e6) + nowNs);
  const exp = BigInt.asIntN(64, now + d);
  if (exp === 0n) return undefined;
  let ms = exp / NS_PER_MS;
  let ns = exp % NS_PER_MS;
  if (ns < 0n) {
    ms -= 1n;
    ns += NS_PER_MS;
  }
  return { ms: Number(ms), ns: Number(ns) };
}

/**
 * @param keyPath the decoded key path after `/v2/keys` (already cleaned by the router)
 * @param now the proposer's clock (ms); TTLs become absolute expirations here
 * @param nowNs nanoseconds within now's millisecond (0..999999), carried beside the ms
 */
export function parseKeyRequest(method: string, keyPath: string, form: FormValues, now: number, nowNs = 0): KeyRequest {
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

  let ttl: bigint | undefined;
  const ttlRaw = first(form, "ttl");
  if (ttlRaw !== undefined && ttlRaw !== "") {
    if (parseGoUint64(ttlRaw) === undefined) throw paramError(V2ErrorCode.TtlNaN, `invalid value for "ttl"`);
    ttl = BigInt(ttlRaw); // exact: Go's arithmetic on it wraps
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
    return { kind: "get", path: keyPath, recursive, sorted, quorum, head: method === "HEAD", wait };
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
  const exp = ttl === undefined ? undefined : goExpiration(ttl, now, nowNs);
  if (exp !== undefined) {
    request.expiration = exp.ms;
    if (exp.ns !== 0) request.expirationNs = exp.ns;
  }
  const rawPrevIndex = first(form, "prevIndex");
  if (prevIndex === Number.MAX_SAFE_INTEGER && rawPrevIndex !== undefined && BigInt(rawPrevIndex) !== BigInt(prevIndex)) {
    return { kind: "write", request, noValueOnSuccess, prevIndexText: BigInt(rawPrevIndex).toString() };
  }
  return { kind: "write", request, noValueOnSuccess };
}

/**
 * A failed compare echoes the request's prevIndex (`[18446744073709551615 != 35]`), which
 * the log carries clamped to 2^53-1 (no index that large can match): the answer shows the
 * value as it was sent, as etcd's uint64 does.
 */
export function echoPrevIndex(err: unknown, kr: KeyRequest): unknown {
  if (kr.kind !== "write" || kr.prevIndexText === undefined || !(err instanceof V2Error) || err.errorCode !== V2ErrorCode.TestFailed) return err;
  const clamped = `[${kr.request.prevIndex} != `;
  if (!err.cause_.includes(clamped)) return err;
  return new V2Error(err.errorCode, err.cause_.replace(clamped, `[${kr.prevIndexText} != `), err.index);
}
