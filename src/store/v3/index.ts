// The v3 key space's public surface (the server, the gateway and tests import from here).

export * from "./types.ts";
export { AlarmAction, V3KeySpace } from "./key-space.ts";
export type { AlarmActionValue } from "./key-space.ts";
export { AlarmTable, AlarmType, alarmName } from "./alarms.ts";
export type { AlarmMember, AlarmTypeValue } from "./alarms.ts";
export type { KeySpaceImage } from "./key-space.ts";
export { MvccStore } from "./mvcc-store.ts";
export type { HistoryQuery, LeaseHooks, WriteResult } from "./mvcc-store.ts";
export type { MvccImage, ImageRecord } from "./image.ts";
export type { LeaseRecord, MvccBackend, MvccLoaded } from "./backend.ts";
export { StoredRecord } from "./key-index.ts";
export type { ValueSource } from "./key-index.ts";
export { Lessor, MAX_LEASE_TTL, MIN_LEASE_TTL } from "./lessor.ts";
export type { LessorImage } from "./lessor.ts";
export { WatchHub } from "./watch-hub.ts";
export { hashKV, type HashKvResult, type HashKvSource } from "./hash-kv.ts";
export { keyValueBytes, revisionKeyBytes, writeKeyValue, writeRevisionKey, type KeyRecordFields } from "./etcd-key-record.ts";
export { bigVarintBytes, int64FieldBytes, putBigVarint, putBytesField, putInt64Field, putVarint, varintBytes, type KeyValueFields } from "./keyvalue-proto.ts";
export type { WatchCreate, WatchHistory, WatchMessage, WatchSink } from "./watch-hub.ts";
export {
  DEFAULT_MAX_TXN_OPS,
  checkDeleteRangeRequest,
  checkPutRequest,
  checkRangeRequest,
  validateTxn,
} from "./txn-check.ts";
export { prefixEnd, prefixRangeEnd } from "./keys.ts";
export { isReadOnlyTxn, isSerializableTxn } from "./txn.ts";
export { compareKnown, sortOrderOf, sortTargetOf, unknownCompare } from "./unknown-enums.ts";
