// The v3 key space's requests and results in memory form (etcd's etcdserverpb / mvccpb
// messages, with wire details removed): keys and values are raw bytes (Buffer), revisions
// are numbers (they never approach 2^53), lease IDs are bigints (clients may choose any
// positive int64). Absent optional request fields take the protobuf zero value, so a
// decoded request always has every field. The JSON gateway converts to and from the wire
// (base64, int64 as strings, zero values omitted); the store and the log use these shapes.

export type LeaseId = bigint;
/** Lease ID 0 means "no lease". */
export const NO_LEASE: LeaseId = 0n;

/** mvccpb.KeyValue. `lease` is 0n when the key has no lease. */
export interface KeyValue {
  key: Buffer;
  createRevision: number;
  modRevision: number;
  version: number;
  value: Buffer;
  lease: LeaseId;
}

export const SortOrder = { NONE: 0, ASCEND: 1, DESCEND: 2 } as const;
export type SortOrderValue = (typeof SortOrder)[keyof typeof SortOrder];
export const SortTarget = { KEY: 0, VERSION: 1, CREATE: 2, MOD: 3, VALUE: 4 } as const;
export type SortTargetValue = (typeof SortTarget)[keyof typeof SortTarget];

/**
 * etcd's range_end rules: empty = the single key `key`; `\0` = every key >= key;
 * otherwise the half-open interval [key, rangeEnd). A key of `\0` with rangeEnd `\0` is all keys.
 */
export interface RangeRequest {
  key: Buffer;
  rangeEnd: Buffer;
  limit: number;
  /** 0 = the current revision. */
  revision: number;
  sortOrder: SortOrderValue;
  sortTarget: SortTargetValue;
  serializable: boolean;
  keysOnly: boolean;
  countOnly: boolean;
  minModRevision: number;
  maxModRevision: number;
  minCreateRevision: number;
  maxCreateRevision: number;
}

const NO_BYTES = Buffer.alloc(0);

/** A RangeRequest with every field at its protobuf zero value but those given. */
export function rangeRequest(fields?: Partial<RangeRequest>): RangeRequest {
  const r: RangeRequest = {
    key: NO_BYTES,
    rangeEnd: NO_BYTES,
    limit: 0,
    revision: 0,
    sortOrder: SortOrder.NONE,
    sortTarget: SortTarget.KEY,
    serializable: false,
    keysOnly: false,
    countOnly: false,
    minModRevision: 0,
    maxModRevision: 0,
    minCreateRevision: 0,
    maxCreateRevision: 0,
  };
  return fields === undefined ? r : Object.assign(r, fields);
}

/** `revision` is the store's revision when the range was served (the header revision). */
export interface RangeResponse {
  revision: number;
  kvs: KeyValue[];
  more: boolean;
  count: number;
}

export interface PutRequest {
  key: Buffer;
  value: Buffer;
  lease: LeaseId;
  prevKv: boolean;
  ignoreValue: boolean;
  ignoreLease: boolean;
}

export interface PutResponse {
  revision: number;
  prevKv?: KeyValue;
}

export interface DeleteRangeRequest {
  key: Buffer;
  rangeEnd: Buffer;
  prevKv: boolean;
}

export interface DeleteRangeResponse {
  revision: number;
  deleted: number;
  prevKvs: KeyValue[];
}

export const CompareResult = { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 } as const;
export type CompareResultValue = (typeof CompareResult)[keyof typeof CompareResult];
export const CompareTarget = { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 } as const;
export type CompareTargetValue = (typeof CompareTarget)[keyof typeof CompareTarget];

/** The operand matching `target` (etcd's target_union); the others are ignored. */
export type CompareOperand =
  | { target: typeof CompareTarget.VERSION; version: number }
  | { target: typeof CompareTarget.CREATE; createRevision: number }
  | { target: typeof CompareTarget.MOD; modRevision: number }
  | { target: typeof CompareTarget.VALUE; value: Buffer }
  | { target: typeof CompareTarget.LEASE; lease: LeaseId };

export type Compare = CompareOperand & {
  result: CompareResultValue;
  key: Buffer;
  /** Compare every key in [key, rangeEnd) (same rules as RangeRequest); empty = just `key`. */
  rangeEnd: Buffer;
};

export type RequestOp =
  | { range: RangeRequest }
  | { put: PutRequest }
  | { deleteRange: DeleteRangeRequest }
  | { txn: TxnRequest };

export interface TxnRequest {
  compare: Compare[];
  success: RequestOp[];
  failure: RequestOp[];
}

export type ResponseOp =
  | { range: RangeResponse }
  | { put: PutResponse }
  | { deleteRange: DeleteRangeResponse }
  | { txn: TxnResponse };

export interface TxnResponse {
  revision: number;
  succeeded: boolean;
  responses: ResponseOp[];
}

export interface CompactionRequest {
  revision: number;
  physical: boolean;
}

export const EventType = { PUT: 0, DELETE: 1 } as const;
export type EventTypeValue = (typeof EventType)[keyof typeof EventType];

/**
 * mvccpb.Event. A DELETE event's kv holds the key and the deletion's modRevision only
 * (etcd's tombstone). prevKv is filled only for watchers that asked for it.
 */
export interface V3Event {
  type: EventTypeValue;
  kv: KeyValue;
  prevKv?: KeyValue;
}

/** Everything one revision changed, in order: what a watcher receives as one message. */
export interface RevisionEvents {
  revision: number;
  events: V3Event[];
}

// ---- Leases (etcdserverpb.Lease*), added with the lessor ----

/** LeaseGrantResponse. `ttl` is what was granted (at least the minimum TTL). */
export interface LeaseGrantResponse {
  revision: number;
  id: LeaseId;
  ttl: number;
}

/** LeaseTimeToLiveResponse for an existing lease. `keys` is empty unless asked for. */
export interface LeaseTimeToLiveResponse {
  revision: number;
  id: LeaseId;
  /** Seconds left, truncated (etcd: int64(Remaining().Seconds())). */
  ttl: number;
  grantedTtl: number;
  keys: Buffer[];
}

/** One lease as the lessor holds it: granted TTL in seconds, expiry in ms since the epoch. */
export interface LeaseStatus {
  id: LeaseId;
  ttl: number;
  expiry: number;
  /**
   * Seconds left at the last lease checkpoint (etcd's remainingTTL, --experimental-enable-
   * lease-checkpoint); absent when none is in effect (etcd's 0): a new leader gives the
   * lease this instead of its full TTL.
   */
  remainingTtl?: number;
}
