// Request builders and a seeded generator for the v3 store's unit tests.

import type {
  Compare,
  DeleteRangeRequest,
  KeyValue,
  PutRequest,
  RangeRequest,
  RequestOp,
  TxnRequest,
} from "./types.ts";
import { CompareResult, CompareTarget, rangeRequest } from "./types.ts";

export const b = (s: string): Buffer => Buffer.from(s, "latin1");
export const NONE = Buffer.alloc(0);
export const FROM_KEY = Buffer.from([0]);

export function rangeReq(key: string, over: Partial<RangeRequest> = {}): RangeRequest {
  return rangeRequest({ key: b(key), ...over });
}

export function putReq(key: string, value: string, over: Partial<PutRequest> = {}): PutRequest {
  return { key: b(key), value: b(value), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false, ...over };
}

export function delReq(key: string, over: Partial<DeleteRangeRequest> = {}): DeleteRangeRequest {
  return { key: b(key), rangeEnd: NONE, prevKv: false, ...over };
}

export function txnReq(over: Partial<TxnRequest> = {}): TxnRequest {
  return { compare: [], success: [], failure: [], ...over };
}

export const opPut = (key: string, value: string, over: Partial<PutRequest> = {}): RequestOp => ({ put: putReq(key, value, over) });
export const opDel = (key: string, over: Partial<DeleteRangeRequest> = {}): RequestOp => ({ deleteRange: delReq(key, over) });
export const opRange = (key: string, over: Partial<RangeRequest> = {}): RequestOp => ({ range: rangeReq(key, over) });
export const opTxn = (over: Partial<TxnRequest> = {}): RequestOp => ({ txn: txnReq(over) });

type Result = (typeof CompareResult)[keyof typeof CompareResult];
const base = (key: string, result: Result, rangeEnd: Buffer = NONE) => ({ key: b(key), rangeEnd, result });
export const cmpVersion = (key: string, result: Result, version: number, rangeEnd: Buffer = NONE): Compare => ({
  ...base(key, result, rangeEnd),
  target: CompareTarget.VERSION,
  version,
});
export const cmpCreate = (key: string, result: Result, createRevision: number, rangeEnd: Buffer = NONE): Compare => ({
  ...base(key, result, rangeEnd),
  target: CompareTarget.CREATE,
  createRevision,
});
export const cmpMod = (key: string, result: Result, modRevision: number, rangeEnd: Buffer = NONE): Compare => ({
  ...base(key, result, rangeEnd),
  target: CompareTarget.MOD,
  modRevision,
});
export const cmpValue = (key: string, result: Result, value: string, rangeEnd: Buffer = NONE): Compare => ({
  ...base(key, result, rangeEnd),
  target: CompareTarget.VALUE,
  value: b(value),
});
export const cmpLease = (key: string, result: Result, lease: bigint, rangeEnd: Buffer = NONE): Compare => ({
  ...base(key, result, rangeEnd),
  target: CompareTarget.LEASE,
  lease,
});

/** A key-value as plain strings and numbers, for deepStrictEqual. */
export function plain(kv: KeyValue): { key: string; create: number; mod: number; version: number; value: string; lease: bigint } {
  return {
    key: kv.key.toString("latin1"),
    create: kv.createRevision,
    mod: kv.modRevision,
    version: kv.version,
    value: kv.value.toString("latin1"),
    lease: kv.lease,
  };
}

export const keysOf = (kvs: KeyValue[]): string[] => kvs.map((kv) => kv.key.toString("latin1"));

export { mulberry32 } from "../../prng.test-helper.ts";
